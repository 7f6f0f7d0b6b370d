// Interactive sessions against a real local cluster (docs/interactive.md): `corral run --pty`
// driven through a real terminal (tests/interactive/pty_session.py), `corral exec` into a
// running job, who may exec, salloc + srun through the Slurm shims, a lost client's session
// freed after the inactive limit, a session that can never start, and idle culling.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

constexpr char kPython[] = "/usr/bin/python3";

bool Skip(const std::string& why) {
  if (const char* ci = getenv("CI"); ci != nullptr && std::string(ci) == "true") {
    ADD_FAILURE() << "CI must run this: " << why;
    return true;
  }
  GTEST_LOG_(INFO) << "skipped: " << why;
  return true;
}

class Interactive : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A short inactive limit, so that a lost client's session goes within the test.
    cluster_ = new LocalCluster("interactive", 1, 2,
                                {"--inactive-limit", "5s", "--idle-stop-warning", "2s"});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  LocalCluster& c() { return *cluster_; }
  std::map<std::string, std::string> Env(const std::string& token = "") {
    std::map<std::string, std::string> env = {{"CORRAL_ADDR", c().addr()},
                                              {"CORRAL_TOKEN", token.empty() ? c().token() : token},
                                              {"CORRAL_CONFIG", c().dir() + "/no-config.json"}};
    if (c().tls()) env["CORRAL_CA"] = c().ca_path();
    return env;
  }
  Json Job(const std::string& id) {
    auto r = c().Corral({"show", id, "-o", "json"});
    Json j = Json::parse(r.out, nullptr, false);
    return j.is_object() && j.contains("job") ? j["job"] : j;
  }
  std::string State(const std::string& id) { return Job(id).value("state", ""); }
  bool WaitState(const std::string& id, const std::string& state, int ms = 20000) {
    return WaitUntil(ms, [&] { return State(id) == state; });
  }
  std::string Log(const std::string& id) { return c().Corral({"logs", id}).out; }

  static LocalCluster* cluster_;
};

LocalCluster* Interactive::cluster_ = nullptr;

TEST_F(Interactive, RunPtyIsARealTerminal) {
  if (access(kPython, X_OK) != 0 && Skip("no /usr/bin/python3")) return;
  auto env = Env();
  env["TERM"] = "xterm";
  auto r =
      RunCommand({kPython, std::string(CORRAL_SOURCE_DIR) + "/tests/interactive/pty_session.py",
                  "run", CorralBin(), "run", "--pty", "--"},
                 env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The session's job ends with its client, and holds nothing (its stop takes the agent a
  // moment to confirm).
  std::string left;
  EXPECT_TRUE(WaitUntil(10000, [&] {
    auto jobs = Json::parse(c().Corral({"jobs", "-o", "json"}).out, nullptr, false);
    left.clear();
    for (const auto& j : jobs.is_array() ? jobs : Json::array()) {
      if (j["spec"].value("kind", "") == "interactive" && j.value("state", "") == "running") {
        left += j.dump() + "\n";
      }
    }
    return jobs.is_array() && left.empty();
  })) << left;
}

TEST_F(Interactive, ExecRunsInsideARunningJob) {
  std::string id = c().Submit({"--gpus", "1", "--", "sh", "-c",
                               "echo job=$CORRAL_JOB_ID; grep -h corral /proc/self/cgroup | sort; "
                               "echo cgroup-end; exec sleep 120"});
  ASSERT_TRUE(WaitState(id, "running"));
  ASSERT_TRUE(WaitUntil(10000, [&] { return Log(id).find("cgroup-end") != std::string::npos; }));
  std::string job_log = Log(id);
  auto r = RunCommand({CorralBin(), "exec", id, "--", "sh", "-c",
                       "echo job=$CORRAL_JOB_ID gpus=$CUDA_VISIBLE_DEVICES; grep -h corral "
                       "/proc/self/cgroup | sort; echo cgroup-end; echo to-stderr >&2; exit 3"},
                      Env());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("job=" + id + " gpus="), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("to-stderr"), std::string::npos) << r.err;
  // The same cgroups as the job's own process (none listed where the node has no cgroups).
  auto groups = [](const std::string& text) {
    std::string g = text.substr(0, text.find("cgroup-end"));
    return g.substr(g.find('\n') + 1);
  };
  EXPECT_EQ(groups(r.out), groups(job_log)) << "exec:\n" << r.out << "job:\n" << job_log;
  // Input reaches the command, and its end closes the command's input.
  auto piped = RunCommand(
      {"/bin/sh", "-c", "printf 'one\\ntwo\\n' | " + CorralBin() + " exec " + id + " -- wc -l"},
      Env());
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(piped.out.find("2"), std::string::npos) << piped.out;
  EXPECT_EQ(State(id), "running") << "the job is not disturbed";

  // Someone else's job: 403, saying why.
  auto token = c().Corral({"token", "create", "--user", "mallory"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  std::string secret = token.out.substr(token.out.rfind(' ') + 1);
  while (!secret.empty() && secret.back() == '\n') secret.pop_back();
  auto refused = RunCommand({CorralBin(), "exec", id, "--", "true"}, Env(secret));
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("is for its owner"), std::string::npos) << refused.err;
  std::string audit;
  WaitUntil(5000, [&] {
    std::ifstream in(c().head_dir() + "/audit.log");
    std::stringstream s;
    s << in.rdbuf();
    audit = s.str();
    return audit.find("/exec") != std::string::npos;
  });
  EXPECT_NE(audit.find("\"status\":403"), std::string::npos) << audit;
  c().Corral({"cancel", id});
}

TEST_F(Interactive, SallocHoldsAnAllocationForSrunSteps) {
  std::string shims = c().dir() + "/shims";
  ASSERT_EQ(c().Corral({"slurm", "install-shims", shims}).exit_code, 0);
  auto env = Env();
  env["PATH"] = shims + ":" + (getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  auto r = RunCommand({shims + "/salloc", "-N", "1", "sh", "-c",
                       "srun hostname; srun printenv CORRAL_JOB_ID; echo slurm=$SLURM_JOB_ID"},
                      env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_NE(r.out.find(std::string(host) + "\n"), std::string::npos) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("slurm=([0-9]+)"))) << r.out;
  EXPECT_NE(r.out.find(m[1].str() + "\n"), std::string::npos)
      << "srun ran inside the allocation: " << r.out;
  EXPECT_NE(r.err.find("Granted job allocation " + m[1].str()), std::string::npos) << r.err;
  EXPECT_TRUE(WaitUntil(10000, [&] { return State(m[1].str()) == "cancelled"; }))
      << "salloc's end gives the allocation back";
}

// Inside a 2-node salloc, srun runs a step on both nodes (one task each, as Slurm's steps), or
// on the first -N; more nodes than the allocation has is refused; the step's code is its tasks'
// highest.
TEST_F(Interactive, SrunInsideATwoNodeSallocRunsOnBothNodes) {
  LocalCluster two("interactive-2n", 2, 1);
  std::string shims = two.dir() + "/shims";
  ASSERT_EQ(two.Corral({"slurm", "install-shims", shims}).exit_code, 0);
  std::map<std::string, std::string> env = {
      {"CORRAL_ADDR", two.addr()},
      {"CORRAL_TOKEN", two.token()},
      {"CORRAL_CONFIG", two.dir() + "/no-config.json"},
      {"PATH", shims + ":" + (getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin")}};
  auto r =
      RunCommand({shims + "/salloc", "-N", "2", "sh", "-c",
                  "srun printenv CORRAL_NODE; srun -N 1 sh -c 'echo one=$CORRAL_NODE'; "
                  "srun sh -c 'echo task=$SLURM_PROCID/$SLURM_NTASKS'; "
                  "srun -N 3 true; echo three=$?; "
                  "srun sh -c 'exit $((SLURM_PROCID + 4))'; echo worst=$?; "
                  "srun --pty -N 2 true; echo pty=$?; srun -N 2 --pty true; echo pty_after=$?; "
                  "srun -l sh -c 'echo labelled=$SLURM_PROCID'"},
                 env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("node1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node2\n"), std::string::npos) << r.out;
  std::smatch one;
  ASSERT_TRUE(std::regex_search(r.out, one, std::regex("one=(node[12])\n"))) << r.out;
  EXPECT_EQ(std::regex_search(one.suffix().str(), std::regex("one=")), false) << r.out;
  EXPECT_NE(r.out.find("task=0/2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("task=1/2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("three=1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("-N/--nodes: got \"3\", want 1..2"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("worst=5\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pty=1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pty_after=1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("--pty: a terminal is for one task"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("0: labelled=0\n"), std::string::npos) << r.out;  // -l: "TASK: line"
  EXPECT_NE(r.out.find("1: labelled=1\n"), std::string::npos) << r.out;
}

TEST_F(Interactive, SrunPtyRunsInASession) {
  if (access(kPython, X_OK) != 0 && Skip("no /usr/bin/python3")) return;
  std::string shims = c().dir() + "/shims2";
  ASSERT_EQ(c().Corral({"slurm", "install-shims", shims}).exit_code, 0);
  auto r =
      RunCommand({kPython, std::string(CORRAL_SOURCE_DIR) + "/tests/interactive/pty_session.py",
                  "srun", shims + "/srun", "--pty"},
                 Env());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(Interactive, ALostClientFreesItsSessionAfterTheInactiveLimit) {
  std::string batch = c().Submit({"--", "sleep", "120"});
  auto env = Env();
  std::vector<std::string> argv = {"/usr/bin/env"};
  for (const auto& [k, v] : env) argv.push_back(k + "=" + v);
  argv.insert(argv.end(),
              {CorralBin(), "run", "--gpus", "1", "--name", "lost", "--", "sleep", "600"});
  Daemon client(argv, c().dir() + "/lost-client.log");
  std::string id;
  ASSERT_TRUE(WaitUntil(20000, [&] {
    auto jobs =
        Json::parse(c().Corral({"jobs", "--state", "running", "-o", "json"}).out, nullptr, false);
    for (const auto& j : jobs) {
      if (j["spec"].value("name", "") == "lost") id = std::to_string(j["id"].get<uint64_t>());
    }
    return !id.empty();
  }));
  client.Kill(SIGKILL);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitState(id, "cancelled", 20000)) << Job(id).dump();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 20.0);
  std::string reason = Job(id)["runs"].back().value("reason", "");
  EXPECT_NE(reason.find("its client has not been heard from"), std::string::npos) << reason;
  EXPECT_EQ(State(batch), "running") << "a batch job is never ended for that";
  c().Corral({"cancel", batch});
}

TEST_F(Interactive, ASessionThatCanNeverStartFailsAtOnce) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunCommand({CorralBin(), "run", "--gpus", "64", "--", "true"}, Env());
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("never fit"), std::string::npos) << r.err;
  EXPECT_LT(took, 5.0);
}

TEST_F(Interactive, AnIdleSessionIsCulledWithTheReason) {
  ASSERT_EQ(c().Corral({"queues", "set", "idle", "--idle-timeout", "2s"}).exit_code, 0);
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunCommand(
      {CorralBin(), "run", "--queue", "idle", "--name", "idler", "--", "sleep", "120"}, Env());
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_LT(took, 60.0) << "ended by its queue's idle_timeout, not by sleep";
  auto jobs = Json::parse(c().Corral({"jobs", "-o", "json"}).out, nullptr, false);
  std::string reason;
  for (const auto& j : jobs) {
    if (j["spec"].value("name", "") == "idler" && !j["runs"].empty()) {
      reason = j["runs"].back().value("reason", "");
      bool warned = false;
      for (const auto& e : j["events"]) warned = warned || e.value("what", "") == "idle warning";
      EXPECT_TRUE(warned) << j.dump();
    }
  }
  EXPECT_NE(reason.find("idle for"), std::string::npos) << reason;
  EXPECT_NE(reason.find("no terminal input"), std::string::npos) << reason;
}

std::string NewUserToken(LocalCluster& c, const std::string& user) {
  auto token = c.Corral({"token", "create", "--user", user});
  EXPECT_EQ(token.exit_code, 0) << token.err;
  std::string secret = token.out.substr(token.out.rfind(' ') + 1);
  while (!secret.empty() && secret.back() == '\n') secret.pop_back();
  return secret;
}

// `corral notebook` on cluster `c`, then a browser's traffic through the head: the token swapped
// for a cookie, the page, a kernel and a cell run over its WebSocket, and the refusals.
void CheckNotebookThroughTheHead(LocalCluster& c) {
  const std::string owner = NewUserToken(c, "nbuser");
  const std::string other = NewUserToken(c, "nbother");
  std::map<std::string, std::string> env = {{"CORRAL_ADDR", c.addr()},
                                            {"CORRAL_TOKEN", owner},
                                            {"CORRAL_CONFIG", c.dir() + "/no-config.json"}};
  if (c.tls()) env["CORRAL_CA"] = c.ca_path();
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunCommand({CorralBin(), "notebook", "--gpus", "1"}, env);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  GTEST_LOG_(INFO) << "corral notebook ready after " << took << " s";
  // One URL, on the head, carrying a one-time ticket, never the owner's token.
  std::smatch m;
  std::string url = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(
      std::regex_match(url, m, std::regex(R"((https?://[^/]+)/s/([0-9]+)/tree\?ticket=(.+))")))
      << r.out;
  EXPECT_EQ(m[1].str(), c.addr());
  EXPECT_EQ(r.out.find(owner), std::string::npos) << "the API token is in the output: " << r.out;
  const std::string id = m[2].str();
  auto show = Json::parse(c.Corral({"show", id, "-o", "json"}).out, nullptr, false);
  Json job = show.contains("job") ? show["job"] : show;
  EXPECT_EQ(job["spec"].value("kind", ""), "interactive");
  EXPECT_TRUE(job["spec"].value("notebook", false)) << job.dump();
  bool ready = false;
  for (const auto& e : job["events"]) ready = ready || e.value("what", "") == "notebook ready";
  EXPECT_TRUE(ready) << job.dump();

  std::vector<std::string> argv = {
      kPython, std::string(CORRAL_SOURCE_DIR) + "/tests/interactive/notebook_session.py", url,
      other};
  if (c.tls()) argv.push_back(c.ca_path());
  auto drive = RunCommand(argv, {});
  ASSERT_EQ(drive.exit_code, 0) << drive.out << drive.err;
  Json seen = Json::parse(drive.out, nullptr, false);
  ASSERT_TRUE(seen.is_object()) << drive.out;
  EXPECT_EQ(seen.value("first_status", 0), 302) << seen.dump();
  const std::string cookie = seen.value("set_cookie", "");
  EXPECT_NE(cookie.find("corral_session="), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("Path=/s/" + id + "/"), std::string::npos) << cookie;
  EXPECT_EQ(cookie.find("Secure") != std::string::npos, c.tls()) << cookie;
  EXPECT_EQ(seen.value("location", "?").find("token"), std::string::npos) << seen.dump();
  EXPECT_EQ(seen.value("page_status", 0), 200) << seen.dump();
  EXPECT_TRUE(seen.value("page_is_jupyter", false)) << seen.dump();
  EXPECT_EQ(seen.value("anonymous_status", 0), 401) << seen.dump();
  EXPECT_EQ(seen.value("other_status", 0), 403) << seen.dump();
  EXPECT_EQ(seen.value("kernel_status", 0), 201) << seen.dump();
  EXPECT_EQ(seen.value("reply", ""), "ok") << seen.dump();
  // The cell ran on the allocation: its one (simulated) GPU.
  const std::string gpu = std::to_string(job["runs"].back()["placement"][0]["gpus"][0].get<int>());
  EXPECT_EQ(seen.value("output", ""), "CVD=" + gpu + "\n") << seen.dump();
  EXPECT_EQ(seen.value("delete_status", 0), 204) << seen.dump();
  // The ticket was spent opening the session: the same URL again is refused, and
  // `corral notebook --url` gives a new one that opens it.
  const char* status_of = R"(import sys, ssl, urllib.request, urllib.error
ctx = ssl.create_default_context(cafile=sys.argv[2]) if len(sys.argv) > 2 else None
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
opener = urllib.request.build_opener(NoRedirect, urllib.request.HTTPSHandler(context=ctx))
try:
    print(opener.open(sys.argv[1], timeout=30).status)
except urllib.error.HTTPError as e:
    print(e.code))";
  std::vector<std::string> again = {kPython, "-c", status_of, url};
  if (c.tls()) again.push_back(c.ca_path());
  EXPECT_EQ(RunCommand(again, {}).out, "401\n") << "a ticket opens once";
  auto fresh = RunCommand({CorralBin(), "notebook", "--url", id}, env);
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  again[3] = fresh.out.substr(0, fresh.out.find('\n'));
  EXPECT_NE(again[3], url);
  EXPECT_EQ(RunCommand(again, {}).out, "302\n") << again[3];
  show = Json::parse(c.Corral({"show", id, "-o", "json"}).out, nullptr, false);
  job = show.contains("job") ? show["job"] : show;
  EXPECT_EQ(job.value("state", ""), "running") << "a notebook outlives the CLI that started it";
  // The session opened is in the head's audit log: who, which job, from where; the other
  // user's refusal too.
  bool opened = false, refused = false;
  std::ifstream audit(c.head_dir() + "/audit.log");
  for (std::string line; std::getline(audit, line);) {
    Json a = Json::parse(line, nullptr, false);
    if (!a.is_object()) continue;
    opened =
        opened || (a.value("what", "") == "notebook_opened" && a.value("who", "") == "nbuser" &&
                   a.value("job", uint64_t{0}) == std::stoull(id) &&
                   a.value("from", "").rfind("127.0.0.1:", 0) == 0);
    refused = refused || (a.value("status", 0) == 403 &&
                          a.value("request", "").rfind("GET /s/" + id + "/", 0) == 0);
  }
  EXPECT_TRUE(opened) << "no notebook_opened line for job " << id;
  EXPECT_TRUE(refused) << "no audited 403 for job " << id;
  c.Corral({"cancel", id});
}

bool NotebookTools() {
  if (access("/usr/bin/jupyter-notebook", X_OK) != 0 &&
      Skip("no /usr/bin/jupyter-notebook (Debian's jupyter-notebook)")) {
    return false;
  }
  if (RunCommand({kPython, "-c", "import websocket"}, {}).exit_code != 0 &&
      Skip("no python3-websocket")) {
    return false;
  }
  return true;
}

TEST_F(Interactive, ANotebookIsServedThroughTheHeadToItsOwnerOnly) {
  if (!NotebookTools()) return;
  CheckNotebookThroughTheHead(c());
}

// The same over TLS: the head's and the agent's connections both taken over TLS streams.
TEST_F(Interactive, ANotebookIsServedThroughAHeadThatServesTls) {
  if (!NotebookTools()) return;
  LocalCluster tls("interactive-tls", 1, 1, {"--tls"});
  ASSERT_TRUE(tls.tls());
  CheckNotebookThroughTheHead(tls);
}

// A notebook's kernel at work keeps it alive through more than its queue's idle_timeout (its
// GPU-less allocation shows no other use), even while Jupyter's own /api/kernels says the kernel
// is idle: a kernel_info_request on the control channel after the cell started (what Jupyter's
// server sends on each new WebSocket) leaves Jupyter's execution_state "idle" for the rest of the
// cell, and the agent follows the kernel's WebSocket instead. Once the kernel is gone the
// notebook is culled, with a reason that names kernel activity.
TEST_F(Interactive, ANotebookIsKeptWhileItsKernelWorksThenCulled) {
  if (!NotebookTools()) return;
  ASSERT_EQ(c().Corral({"queues", "set", "nbidle", "--idle-timeout", "8s"}).exit_code, 0);
  auto r = RunCommand({CorralBin(), "notebook", "--queue", "nbidle"}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string url = r.out.substr(0, r.out.find('\n'));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(url, m, std::regex(R"(/s/([0-9]+)/)"))) << r.out;
  const std::string id = m[1].str();
  // 11 s of a busy kernel: past the 8 s timeout and the 2 s warning.
  auto drive = RunCommand(
      {kPython, std::string(CORRAL_SOURCE_DIR) + "/tests/interactive/notebook_session.py", url,
       NewUserToken(c(), "nbidle-other")},
      {{"NOTEBOOK_CELL", "import time; time.sleep(11); print('slept')"}, {"NOTEBOOK_NUDGE", "1"}});
  const auto cell_end = std::chrono::steady_clock::now();
  ASSERT_EQ(drive.exit_code, 0) << drive.out << drive.err;
  Json seen = Json::parse(drive.out, nullptr, false);
  // What Jupyter itself said while the cell ran: not busy ("idle", or "starting" where its own
  // watch missed the kernel's first messages), so its word alone would have culled the notebook.
  ASSERT_TRUE(seen.contains("jupyter_state_during_cell")) << drive.out;
  EXPECT_NE(seen.value("jupyter_state_during_cell", ""), "busy")
      << "Jupyter's word was not put to the test: " << drive.out;
  EXPECT_EQ(seen.value("reply", ""), "ok") << drive.out;
  EXPECT_EQ(seen.value("output", ""), "slept\n") << drive.out;
  EXPECT_EQ(State(id), "running") << "culled while its kernel worked: " << Job(id).dump();
  // The kernel is gone (the script deleted it): idle from its last activity, then ended.
  ASSERT_TRUE(WaitState(id, "cancelled", 30000)) << Job(id).dump();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - cell_end).count();
  GTEST_LOG_(INFO) << "notebook culled " << took << " s after its cell ended";
  const std::string reason = Job(id)["runs"].back().value("reason", "");
  EXPECT_NE(reason.find("no kernel or terminal activity in its notebook"), std::string::npos)
      << reason;
}

TEST_F(Interactive, ANotebookThatDiesBeforeItAnswersFailsWithItsLog) {
  auto r = RunCommand(
      {CorralBin(), "notebook", "--", "sh", "-c", "echo no-jupyter-here >&2; exit 3"}, Env());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited before it answered"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no-jupyter-here"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace corral::testing
