// corral_agents: N emulated agents (default 2,000; 8 GPUs each) speaking the real agent
// protocol to a real head, while 100,000 short one-GPU jobs flow through it as arrays.
// Prints the head's CPU seconds and peak RSS (--head-pid), sync round trips, jobs/s, and
// submit-to-start from the head's own records. docs/benchmarks.md has the recipe:
//
//   corral head --state-dir D --listen 127.0.0.1:17480 --rate-limit 0
//     --rate-limit-unauthenticated 0 --max-connections-per-address 0 &
//   corral_agents --addr http://127.0.0.1:17480 --state-dir D --head-pid $! --agents 10000
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "agents/agent_fleet.h"
#include "agents/job_records.h"
#include "agents/proc_stats.h"
#include "net/http_client.h"
#include "net/url.h"

namespace corral::bench {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

struct Flags {
  std::string addr = "http://127.0.0.1:7070";
  std::string state_dir;  // the head's: admin.token and join.token
  std::string token, join_token;
  int head_pid = 0;
  int agents = 2000;
  int gpus = 8;
  int threads = 2;
  int64_t runtime_ms = 0;
  int64_t usage_every_ms = 0;
  int64_t sync_wait_ms = 20000;
  int jobs = 100000;
  int array_size = 1000;
  double submit_rate = 0;  // jobs/s; 0: the next array as soon as the last is acknowledged
  std::string command = "true";
  double max_wait_s = 600;
  bool no_deltas = false;
};

std::string ReadToken(const std::string& path) {
  std::ifstream in(path);
  std::string t;
  in >> t;
  return t;
}

TimeMs WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double SecondsSince(Steady::time_point t0) {
  return std::chrono::duration<double>(Steady::now() - t0).count();
}

// Peak RSS seen while sampling; VmHWM covers what the samples miss.
struct HeadWatch {
  int pid = 0;
  ProcUsage start{};
  int64_t max_rss_kb = 0;
  void Sample() {
    if (pid <= 0) return;
    if (auto u = ReadProcUsage(pid)) max_rss_kb = std::max(max_rss_kb, u->rss_kb);
  }
};

struct Submitted {
  JobId first = 0;
  JobId last = 0;
  int jobs = 0;
  TimeMs wall_before_first = 0;
  double seconds = 0;
  std::string error;
};

// Submits `jobs` one-GPU jobs as arrays of `array_size`, each element id consecutive.
Submitted SubmitArrays(net::HttpClient& client, const Flags& f) {
  Submitted out;
  auto t0 = Steady::now();
  out.wall_before_first = WallMs();
  for (int done = 0; done < f.jobs;) {
    int n = std::min(f.array_size, f.jobs - done);
    Json spec{{"command", {"/bin/sh", "-c", f.command}},
              {"gpus", 1},
              {"name", "agents-load"},
              {"array", "0-" + std::to_string(n - 1)}};
    auto r = client.Post("/v1/jobs", Json{{"spec", spec}, {"user", "load"}}.dump(), 60s);
    if (!r.ok() || r->status != 201) {
      out.error =
          r.ok() ? "HTTP " + std::to_string(r->status) + ": " + r->body : r.status().ToString();
      break;
    }
    JobId id = Json::parse(r->body)["job"]["id"].get<JobId>();
    if (out.first == 0) out.first = id;
    out.last = id + n - 1;
    done += n;
    out.jobs = done;
    if (f.submit_rate > 0) {
      auto due = t0 + std::chrono::duration<double>(done / f.submit_rate);
      std::this_thread::sleep_until(std::chrono::time_point_cast<Steady::duration>(due));
    }
  }
  out.seconds = SecondsSince(t0);
  return out;
}

JobTimes ReadRecords(net::HttpClient& client, JobId first, JobId last) {
  JobTimes t;
  JobId after = first - 1;
  while (true) {
    auto r = client.Get("/v1/jobs?limit=5000&after=" + std::to_string(after), 60s);
    if (!r.ok() || r->status != 200) break;
    Json page = Json::parse(r->body, nullptr, false);
    AddJobPage(page, first, last, &t);
    if (!page.contains("next_after") || page["next_after"].is_null()) break;
    after = page["next_after"].get<JobId>();
    if (after >= last) break;
  }
  return t;
}

void PrintHead(const HeadWatch& w, const char* when, double seconds) {
  if (w.pid <= 0) return;
  auto u = ReadProcUsage(w.pid);
  if (!u) {
    std::printf("head pid %d: gone\n", w.pid);
    return;
  }
  double cpu = u->cpu_s - w.start.cpu_s;
  std::printf(
      "head %s: %.1f CPU s in %.1f s (%.2f cores), RSS %.0f MiB now, peak %.0f MiB "
      "(VmHWM)\n",
      when, cpu, seconds, seconds > 0 ? cpu / seconds : 0, u->rss_kb / 1024.0,
      u->peak_rss_kb / 1024.0);
}

int Main(int argc, char** argv) {
  CLI::App app{"corral_agents: emulated agents and a flow of short jobs against a real head"};
  Flags f;
  app.add_option("--addr", f.addr, "the head's URL (http only)");
  app.add_option("--state-dir", f.state_dir, "the head's state dir: its admin and join tokens");
  app.add_option("--token", f.token, "admin token (default STATE_DIR/admin.token)");
  app.add_option("--join-token", f.join_token, "join token (default STATE_DIR/join.token)");
  app.add_option("--head-pid", f.head_pid, "the head's pid: its CPU and RSS are printed");
  app.add_option("--agents", f.agents, "emulated agents")->check(CLI::Range(1, 100000));
  app.add_option("--gpus-per-agent", f.gpus, "GPUs of each")->check(CLI::Range(1, 64));
  app.add_option("--threads", f.threads, "event-loop threads")->check(CLI::Range(1, 64));
  app.add_option("--runtime-ms", f.runtime_ms, "how long a run runs (0: exits at once)");
  app.add_option("--sync-wait-ms", f.sync_wait_ms, "long-poll hold asked of the head");
  app.add_option("--usage-every-ms", f.usage_every_ms,
                 "a usage sample of each running run this often, as agents keep (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{3600000}));
  app.add_option("--jobs", f.jobs, "one-GPU jobs to submit (0: only the agents)");
  app.add_option("--array-size", f.array_size, "jobs per array submission")
      ->check(CLI::Range(1, 100000));
  app.add_option("--submit-rate", f.submit_rate, "jobs/s offered (0: back to back)");
  app.add_option("--command", f.command, "the jobs' shell command (the agents run nothing)");
  app.add_flag("--no-deltas", f.no_deltas,
               "ask for full sync answers, as agents before delta answers did");
  app.add_option("--max-wait", f.max_wait_s, "seconds to wait for the jobs to finish");
  CLI11_PARSE(app, argc, argv);
  if (f.token.empty() && !f.state_dir.empty()) f.token = ReadToken(f.state_dir + "/admin.token");
  if (f.join_token.empty() && !f.state_dir.empty()) {
    f.join_token = ReadToken(f.state_dir + "/join.token");
  }
  if (f.token.empty() || f.join_token.empty()) {
    spdlog::error("need --state-dir, or --token and --join-token");
    return 2;
  }
  auto url = net::ParseUrl(f.addr);
  if (!url.ok() || url->scheme != "http") {
    spdlog::error("--addr {}: want http://IP:PORT", f.addr);
    return 2;
  }
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(url->host, ec);
  if (ec) {
    spdlog::error("--addr {}: want a numeric IP", f.addr);
    return 2;
  }
  FleetConfig fc;
  fc.head = {ip, static_cast<unsigned short>(url->port)};
  fc.host_header = url->HostPort();
  fc.join_token = f.join_token;
  fc.agents = f.agents;
  fc.gpus_per_agent = f.gpus;
  fc.threads = f.threads;
  fc.runtime_ms = f.runtime_ms;
  fc.sync_wait_ms = f.sync_wait_ms;
  fc.deltas = !f.no_deltas;
  fc.usage_every_ms = f.usage_every_ms;

  HeadWatch head{f.head_pid};
  if (f.head_pid > 0) {
    auto u = ReadProcUsage(f.head_pid);
    if (!u) {
      spdlog::error("--head-pid {}: no such process", f.head_pid);
      return 2;
    }
    head.start = *u;
  }
  AgentFleet fleet(fc);
  auto t0 = Steady::now();
  fleet.Start();
  while (fleet.counters().registered < f.agents) {
    std::this_thread::sleep_for(200ms);
    head.Sample();
    if (SecondsSince(t0) > f.max_wait_s) {
      spdlog::error("only {} of {} agents registered: {}", fleet.counters().registered, f.agents,
                    fleet.first_error());
      return 1;
    }
  }
  double reg_s = SecondsSince(t0);
  std::printf("%d agents x %d GPUs registered in %.1f s\n", f.agents, f.gpus, reg_s);
  PrintHead(head, "after registration", reg_s);
  std::this_thread::sleep_for(1s);  // every agent's first sync answered; long-polls parked

  if (f.head_pid > 0) head.start = *ReadProcUsage(f.head_pid);
  fleet.ResetStats();
  FleetCounters c0 = fleet.counters();
  auto flow0 = Steady::now();
  Submitted sub;
  std::thread submitter([&] {
    net::HttpClient client(f.addr, f.token);
    sub = SubmitArrays(client, f);
  });
  auto last_print = Steady::now();
  while (true) {
    std::this_thread::sleep_for(100ms);
    head.Sample();
    FleetCounters c = fleet.counters();
    if (Steady::now() - last_print >= 2s) {
      last_print = Steady::now();
      spdlog::info("{:.0f} s: {} runs started, {} done, {} syncs, {} errors", SecondsSince(flow0),
                   c.runs_started - c0.runs_started, c.runs_done - c0.runs_done, c.syncs - c0.syncs,
                   c.errors);
    }
    if (c.runs_done - c0.runs_done >= f.jobs) break;
    if (SecondsSince(flow0) > f.max_wait_s) {
      spdlog::error("gave up after {} s", f.max_wait_s);
      break;
    }
  }
  double flow_s = SecondsSince(flow0);
  submitter.join();
  FleetCounters c = fleet.counters();
  PrintHead(head, "during the job flow", flow_s);
  if (head.pid > 0)
    std::printf("head RSS peak sampled every 100 ms: %.0f MiB\n", head.max_rss_kb / 1024.0);
  fleet.Stop();

  std::printf("submitted %d jobs as arrays of %d in %.2f s (%.0f jobs/s acknowledged)%s%s\n",
              sub.jobs, f.array_size, sub.seconds, sub.jobs / std::max(sub.seconds, 1e-9),
              sub.error.empty() ? "" : "; first failure: ", sub.error.c_str());
  std::printf("agents: %lld runs started, %lld done, %lld syncs (%.0f/s), %lld errors%s%s\n",
              static_cast<long long>(c.runs_started - c0.runs_started),
              static_cast<long long>(c.runs_done - c0.runs_done),
              static_cast<long long>(c.syncs - c0.syncs), (c.syncs - c0.syncs) / flow_s,
              static_cast<long long>(c.errors), c.errors ? "; first: " : "",
              fleet.first_error().c_str());
  std::printf("sync answers (%s): %lld, %.0f bytes on average\n", f.no_deltas ? "full" : "deltas",
              static_cast<long long>(c.answers - c0.answers),
              static_cast<double>(c.answer_bytes - c0.answer_bytes) /
                  std::max<int64_t>(1, c.answers - c0.answers));
  std::printf("sync round trip (calls not held: exit reports), %s\n",
              fleet.SyncRoundTrips().Summary().c_str());
  std::printf("register round trip, %s\n", fleet.RegisterRoundTrips().Summary().c_str());
  if (sub.first == 0) return 1;
  net::HttpClient client(f.addr, f.token);
  JobTimes t = ReadRecords(client, sub.first, sub.last);
  double rec_s = (t.last_ended - sub.wall_before_first) / 1000.0;
  std::printf(
      "head records: %zu jobs, %zu ended (%zu not succeeded); last ended %.2f s after "
      "the first POST: %.0f jobs/s\n",
      t.seen, t.terminal, t.failed, rec_s, t.terminal / std::max(rec_s, 1e-9));
  std::printf("  submit-to-start          %s\n", t.submit_to_start.Summary().c_str());
  std::printf("  queued (submit->sched)   %s\n", t.queued.Summary().c_str());
  std::printf("  dispatch (sched->start)  %s\n", t.dispatch.Summary().c_str());
  std::printf("  exit seen (start->end)   %s\n", t.exit_seen.Summary().c_str());
  return t.terminal == static_cast<size_t>(sub.jobs) && t.failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace corral::bench

int main(int argc, char** argv) { return corral::bench::Main(argc, argv); }
