// `corral up`: a whole cluster on one machine (DESIGN §2): the head and N agents with
// simulated GPUs as real child processes, in one foreground command. With --demo it runs a
// few sample jobs, prints their outcome, and stops.
#include <netdb.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "cli/config.h"
#include "cmd/child_process.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/head_tls.h"
#include "cmd/signals.h"
#include "core/codec.h"
#include "net/http_client.h"
#include "net/tls_context.h"

namespace corral::cmd {
namespace {

using namespace std::chrono_literals;

std::string ReadToken(const std::string& path) {
  std::ifstream in(path);
  std::string t;
  std::getline(in, t);
  return t;
}

// Polls `probe` every 100 ms until it returns true or `timeout` passes.
template <typename F>
bool WaitFor(std::chrono::milliseconds timeout, F probe) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

// Why the head could not listen on HOST:PORT ("" when it can): `corral up` checks before it
// starts one, so that it never waits on, nor talks to, whatever else answers there. The head
// binds with SO_REUSEADDR too, so a port left in TIME_WAIT counts as free, as it is for it.
std::string CannotListen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  std::string where = host + ":" + std::to_string(port);
  if (int err = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); err != 0) {
    return "cannot resolve " + where + ": " + gai_strerror(err);
  }
  std::string why;
  for (addrinfo* a = found; a != nullptr && why.empty(); a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1) != 0) {
      why =
          "cannot listen on " + where + ": " + std::strerror(errno) +
          (errno == EADDRINUSE ? " (another process listens there; choose another --listen)" : "");
    }
    close(fd);
  }
  freeaddrinfo(found);
  return why;
}

// The last lines of a log, for an error that says to look there.
std::string LogTail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (tail.size() > lines) tail.erase(tail.begin());
  }
  std::string out;
  for (const std::string& line : tail) out += "  " + line + "\n";
  return out;
}

struct SampleJob {
  const char* name;
  Json spec;
  bool should_succeed;
  size_t nodes = 1;  // distinct nodes its run must span
};

// The command `corral up` suggests: it works on simulated GPUs (which have no nvidia-smi) and
// shows the GPUs the job was given. tests/up_test.sh runs it as printed.
constexpr char kTryCommand[] = "sh -c 'echo GPUs $CUDA_VISIBLE_DEVICES on $CORRAL_NODE'";

// The CPUs each agent offers. Simulated nodes share this machine's CPUs: offer a typical GPU
// server's ratio so that CPUs do not cap the GPUs.
int CpusPerAgent(int gpus) { return std::max(gpus, 1) * 8; }

// The gang asks each replica for a whole node (all its GPUs and CPUs), so the scheduler, which
// packs a gang onto as few nodes as hold it, must spread it over two; it needs two agents.
std::vector<SampleJob> SampleJobs(int agents, int gpus) {
  const char* report =
      "echo \"job $CORRAL_JOB_ID run $CORRAL_RUN replica $CORRAL_REPLICA/$CORRAL_NUM_REPLICAS on "
      "$CORRAL_NODE GPUs $CUDA_VISIBLE_DEVICES\"";
  std::vector<SampleJob> jobs = {
      {"hello",
       {{"name", "hello"}, {"gpus", 1}, {"command", std::string(report) + "; sleep 1"}},
       true},
      {"train-4gpu",
       {{"name", "train-4gpu"},
        {"gpus", 4},
        {"command", std::string(report) + "; for e in 1 2 3; do echo epoch $e; sleep 0.5; done"}},
       true},
      {"fails",
       {{"name", "fails"}, {"gpus", 1}, {"command", "echo about to fail >&2; exit 3"}},
       false},
  };
  if (agents >= 2) {
    jobs.insert(
        jobs.begin() + 2,
        {"ddp-2-nodes",
         {{"name", "ddp-2-nodes"},
          {"gpus", gpus},
          {"cpus", CpusPerAgent(gpus)},
          {"replicas", 2},
          {"command", std::string(report) +
                          "; echo rank $RANK of $WORLD_SIZE master $MASTER_ADDR:$MASTER_PORT"}},
         true,
         2});
  }
  return jobs;
}

int RunDemo(net::HttpClient& client, int agents, int gpus) {
  std::vector<std::pair<SampleJob, JobId>> submitted;
  for (SampleJob& s : SampleJobs(agents, gpus)) {
    auto r = client.Post("/v1/jobs", Json{{"spec", s.spec}, {"user", "demo"}}.dump(), 10s);
    if (!r.ok() || r->status != 201) {
      std::cerr << "corral up: submitting sample " << s.name
                << " failed: " << (r.ok() ? r->body : r.status().ToString()) << "\n";
      return 1;
    }
    JobId id = Json::parse(r->body)["job"]["id"].get<JobId>();
    std::cout << "submitted sample job " << id << " (" << s.name << ")" << std::endl;
    submitted.push_back({s, id});
  }
  std::map<JobId, Job> final_state;
  bool done = WaitFor(120s, [&] {
    for (auto& [s, id] : submitted) {
      if (final_state.count(id)) continue;
      auto r = client.Get("/v1/jobs/" + std::to_string(id), 10s);
      if (!r.ok() || r->status != 200) continue;
      auto job = JobFromJson(Json::parse(r->body)["job"]);
      if (job.ok() && IsTerminal(job->state)) final_state[id] = *job;
    }
    return final_state.size() == submitted.size();
  });
  if (!done) {
    std::cerr << "corral up: sample jobs did not finish within 120 s\n";
    return 1;
  }
  bool as_expected = true;
  std::cout << "\nsample job outcomes:\n";
  for (auto& [s, id] : submitted) {
    const Job& job = final_state[id];
    const Run& run = job.runs.back();
    std::string where;
    std::set<std::string> nodes;
    for (const ReplicaPlacement& p : run.placement) {
      nodes.insert(p.node);
      where += (where.empty() ? "" : " ") + p.node + ":[";
      for (size_t i = 0; i < p.gpus.size(); ++i)
        where += (i ? "," : "") + std::to_string(p.gpus[i]);
      where += "]";
    }
    auto logs = client.Get("/v1/jobs/" + std::to_string(id) +
                               "/logs?stream=" + (s.should_succeed ? "stdout" : "stderr"),
                           10s);
    std::string first_line = logs.ok() && logs->status == 200 ? logs->body : "";
    first_line = first_line.substr(0, first_line.find('\n'));
    bool ok = (job.state == JobState::kSucceeded) == s.should_succeed && nodes.size() == s.nodes;
    as_expected &= ok;
    std::cout << "  job " << id << " " << s.name << ": " << JobStateName(job.state) << " (exit "
              << job.exit_code << ") on " << where << " in " << (run.ended_at - run.started_at)
              << " ms" << (ok ? "" : "  <-- unexpected") << "\n      log: " << first_line << "\n";
  }
  std::cout << (as_expected ? "\nall sample jobs ended as expected\n"
                            : "\nsome sample jobs did not end as expected\n");
  return as_expected ? 0 : 1;
}

// Job processes outlive their agents by design; a local cluster that stops takes its jobs
// with it, so cancel what still runs and give the agents a moment to stop it.
void CancelActiveJobs(net::HttpClient& client) {
  auto active = [&] {
    std::vector<JobId> ids;
    auto r = client.Get("/v1/jobs?state=pending,scheduled,running", 5s);
    if (!r.ok() || r->status != 200) return ids;
    Json body = Json::parse(r->body, nullptr, false);
    if (!body.is_object()) return ids;
    for (const Json& j : body["jobs"]) ids.push_back(j["id"].get<JobId>());
    return ids;
  };
  std::vector<JobId> ids = active();
  if (ids.empty()) return;
  std::cout << "corral up: cancelling " << ids.size() << " unfinished job(s)" << std::endl;
  for (JobId id : ids) (void)client.Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", 5s);
  WaitFor(15s, [&] { return active().empty(); });
}

// A local cluster as `corral up` was asked for it.
struct UpPlan {
  int agents = 2, gpus = 4;
  std::string state_dir = ".corral", listen = "127.0.0.1:7070", model = "SimGPU";
  bool demo = false, no_user_config = false, tls = false;
  std::vector<std::string> head_args;
  // Derived once the flags are parsed.
  std::string exe, addr, ca_path;
};

void AddUpFlags(CLI::App& app, UpPlan& up) {
  app.add_option("--agents", up.agents, "number of node agents")->check(CLI::Range(1, 256));
  app.add_option("--gpus-per-agent", up.gpus, "simulated GPUs per agent")->check(CLI::Range(0, 64));
  app.add_option("--gpu-model", up.model, "model name of the simulated GPUs");
  app.add_option("--state-dir", up.state_dir, "where the head and agents keep their state");
  app.add_option("--listen", up.listen, "HOST:PORT of the head's API");
  app.add_flag("--demo", up.demo, "run sample jobs, print their outcome, then stop");
  app.add_flag("--no-user-config", up.no_user_config,
               "do not write ~/.config/corral/config.json (only STATE_DIR/client.json)");
  app.add_option("--head-arg", up.head_args,
                 "an option for the head, passed to `corral head` as it is; repeat it for "
                 "several (e.g. --head-arg=--min-runtime-before-preempt=0s)");
  app.add_flag("--tls", up.tls,
               "HTTPS between the CLI, the head and the agents (the head's CA in STATE_DIR/tls; "
               "the default when --listen is not a loopback address)");
}

// Starts the head and waits for it to answer (trusting the CA it makes, with TLS). Null after
// saying why where it exited or did not come up.
std::unique_ptr<ChildProcess> StartHead(const UpPlan& up) {
  // A single-user cluster: its admin is the user who started it, so jobs are theirs.
  const passwd* pw = ::getpwuid(::getuid());
  std::string me = pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : "admin";
  std::vector<std::string> head_argv{up.exe,         "head",     "--state-dir",
                                     up.state_dir,   "--listen", up.listen,
                                     "--admin-user", me,         up.tls ? "--tls" : "--no-tls"};
  head_argv.insert(head_argv.end(), up.head_args.begin(), up.head_args.end());
  auto head = std::make_unique<ChildProcess>(head_argv, up.state_dir + "/head.log");
  net::HttpClient probe(up.addr, "");
  bool trusted = !up.tls;
  bool head_exited = false;
  if (!WaitFor(20s,
               [&] {
                 // A head that exited (its port taken since the check) must not be mistaken for
                 // whatever else answers on its address.
                 if (!head->Alive()) return head_exited = true;
                 if (!trusted) {  // the head makes its CA as it starts; every client here trusts it
                   auto ca = net::TlsClientContext::FromCaFile(up.ca_path);
                   if (!ca.ok()) return false;
                   net::SetDefaultClientTls(*ca);
                   trusted = true;
                 }
                 auto r = probe.Get("/healthz", 1s);
                 return r.ok() && r->status == 200;
               }) ||
      head_exited) {
    std::cerr << "corral up: the head " << (head_exited ? "exited" : "did not come up")
              << "; the end of " << up.state_dir << "/head.log:\n"
              << LogTail(up.state_dir + "/head.log", 5);
    return nullptr;
  }
  return head;
}

std::vector<std::unique_ptr<ChildProcess>> StartAgents(const UpPlan& up) {
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 1; i <= up.agents; ++i) {
    std::string name = "node" + std::to_string(i);
    std::vector<std::string> argv{
        up.exe, "agent", "--head", up.addr, "--join-token-file", up.state_dir + "/join.token",
        "--name", name, "--state-dir", up.state_dir + "/agents/" + name, "--simulate-gpus",
        std::to_string(up.gpus) + "x" + up.model, "--cpus", std::to_string(CpusPerAgent(up.gpus)),
        "--memory", std::to_string(std::max(up.gpus, 1) * 64) + "G",
        // One user's cluster: jobs run as whoever started it.
        "--run-as", "agent"};
    if (up.tls) argv.insert(argv.end(), {"--ca", up.ca_path});
    agents.push_back(
        std::make_unique<ChildProcess>(argv, up.state_dir + "/agents/" + name + ".log"));
  }
  return agents;
}

// Whether every agent registered and is ready within 30 s; says why not where not.
bool WaitForAgents(const UpPlan& up, net::HttpClient& client) {
  std::string last_error;
  if (WaitFor(30s, [&] {
        auto r = client.Get("/v1/nodes", 2s);
        if (!r.ok() || r->status != 200) {
          last_error = r.ok() ? r->body : r.status().ToString();
          return false;
        }
        int ready = 0;
        Json body = Json::parse(r->body, nullptr, false);
        if (!body.is_object() || !body.contains("nodes")) return false;
        for (const Json& n : body["nodes"]) ready += n.value("state", "") == "ready";
        return ready >= up.agents;
      })) {
    return true;
  }
  std::cerr << "corral up: the agents did not register (" << last_error << "); see " << up.state_dir
            << "/agents/*.log\n";
  return false;
}

// Writes the CLI's configuration (STATE_DIR/client.json, and the user's unless told not to)
// and says how to use the cluster.
void WriteConfigAndWelcome(const UpPlan& up, const std::string& token) {
  std::string config_path = up.state_dir + "/client.json";
  (void)cli::WriteClientConfig(config_path, up.addr, token, up.ca_path);
  if (!up.no_user_config) {
    auto user_config = cli::DefaultConfigPath(cli::ProcessEnv());
    Status st = cli::WriteClientConfig(user_config, up.addr, token, up.ca_path);
    if (st.ok()) config_path = user_config;
  }
  std::cout << "corral up: head on " << up.addr << ", " << up.agents << " agent(s) x " << up.gpus
            << " " << up.model << " GPU(s); state in " << up.state_dir << "\n"
            << "the CLI reads " << config_path << "; or set:\n"
            << "  export CORRAL_ADDR=" << up.addr << " CORRAL_TOKEN=$(cat " << up.state_dir
            << "/admin.token)" << (up.tls ? " CORRAL_CA=" + up.ca_path : "") << "\n"
            << "try: corral submit --gpus " << std::min(up.gpus, 2) << " -- " << kTryCommand
            << "; corral jobs; corral logs JOB; corral nodes\n"
            << "Slurm's commands: corral slurm install-shims " << up.state_dir
            << "/bin && export PATH=" << up.state_dir << "/bin:$PATH" << std::endl;
}

}  // namespace

int UpMain(std::vector<std::string> args) {
  CLI::App app{"corral up: a local cluster (head + agents with simulated GPUs)"};
  UpPlan up;
  AddUpFlags(app, up);
  if (auto code = ParseFlags(app, std::move(args))) return *code;
  auto hp = ListenFlag("up", up.listen);
  if (!hp) return 2;
  up.tls = up.tls || !IsLoopbackHost(hp->first);
  BlockStopSignals();
  std::error_code ec;
  std::filesystem::create_directories(up.state_dir + "/agents", ec);
  up.state_dir = std::filesystem::absolute(up.state_dir).lexically_normal().string();
  if (!up.state_dir.empty() && up.state_dir.back() == '/') up.state_dir.pop_back();
  up.exe = SelfExe();
  up.addr = (up.tls ? "https://" : "http://") + up.listen;
  up.ca_path = up.tls ? up.state_dir + "/tls/ca.pem" : "";
  if (std::string why = CannotListen(hp->first, hp->second); !why.empty()) {
    std::cerr << "corral up: " << why << "\n";
    return 1;
  }
  std::unique_ptr<ChildProcess> head = StartHead(up);
  if (head == nullptr) return 1;
  std::string token = ReadToken(up.state_dir + "/admin.token");
  std::vector<std::unique_ptr<ChildProcess>> agent_procs = StartAgents(up);
  net::HttpClient client(up.addr, token);
  if (!WaitForAgents(up, client)) return 1;
  WriteConfigAndWelcome(up, token);
  int rc = 0;
  if (up.demo) {
    rc = RunDemo(client, up.agents, up.gpus);
  } else {
    std::cout << "press Ctrl-C to stop" << std::endl;
    WaitForStopSignal();
    CancelActiveJobs(client);
  }
  std::cout << "corral up: stopping" << std::endl;
  for (auto& a : agent_procs) a->Stop();
  head->Stop();
  return rc;
}

}  // namespace corral::cmd
