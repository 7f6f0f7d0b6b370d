// Whole-system load tool: submits N jobs to a running cluster (`corral up`) from C client
// threads and reports acknowledged submissions per second, then waits for every job and
// reports submit-to-start latency (p50, p99) from the head's own job records.
//
//   corral_load --addr http://127.0.0.1:7070 --token $(cat DIR/admin.token) --jobs 1000
//               --concurrency 8 --gpus 1 [--cmd true] [--idle 1]
//               [--ca STATE_DIR/tls/ca.pem] [--fresh-connections 1]
//
// --ca: an https head's CA (bench/tls_bench.sh compares HTTP and HTTPS side by side);
// --fresh-connections 1: a new connection (and TLS handshake) for every submission, as each
// `corral submit` process makes.
//
// Besides the headline numbers it prints where the time goes, from the head's records
// (all times are the same machine's wall clock, in ms):
//   ack          client-side time of each POST /v1/jobs (includes the fsync'd group commit)
//   queued       submitted_at -> run scheduled_at (the head's scheduling pass)
//   dispatch     scheduled_at -> started_at (durable commit, long-poll answer, agent launch)
//   exit seen    run started_at -> job ended_at (job runtime + the agent noticing the exit
//                and reporting it)
// "all done (records)" is the last job's ended_at minus the wall-clock time before the first
// POST, so it does not depend on this tool's own polling period.
// With --idle 1 it also prints "client submit-to-start": started_at minus the wall-clock time
// just before the POST, i.e. including the HTTP round trip, as the Slurm anchor measures
// (its clock starts before sbatch).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/codec.h"
#include "net/http_client.h"
#include "net/tls_context.h"

using namespace std::chrono_literals;
using corral::Json;

namespace {

std::string Arg(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return def;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void PrintDist(const char* what, const std::vector<double>& v) {
  std::printf("  %-24s p50 %6.0f ms  p99 %6.0f ms  max %6.0f ms  (n=%zu)\n", what,
              Percentile(v, 0.5), Percentile(v, 0.99), Percentile(v, 1.0), v.size());
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Terminal(const std::string& st) {
  return st == "succeeded" || st == "failed" || st == "cancelled";
}

}  // namespace

int main(int argc, char** argv) {
  std::string addr = Arg(argc, argv, "--addr", "http://127.0.0.1:7070");
  std::string token = Arg(argc, argv, "--token", "");
  int jobs = std::stoi(Arg(argc, argv, "--jobs", "1000"));
  int concurrency = std::stoi(Arg(argc, argv, "--concurrency", "8"));
  int gpus = std::stoi(Arg(argc, argv, "--gpus", "1"));
  std::string cmd = Arg(argc, argv, "--cmd", "true");
  if (token.empty()) {
    std::fprintf(stderr, "corral_load: --token is required\n");
    return 2;
  }
  if (std::string ca = Arg(argc, argv, "--ca", ""); !ca.empty()) {
    auto trust = corral::net::TlsClientContext::FromCaFile(ca);
    if (!trust.ok()) {
      std::fprintf(stderr, "corral_load: --ca: %s\n", trust.status().message().c_str());
      return 2;
    }
    corral::net::SetDefaultClientTls(*trust);
  }
  const bool fresh = Arg(argc, argv, "--fresh-connections", "0") == "1";
  std::string body =
      Json{{"spec", {{"command", {"/bin/sh", "-c", cmd}}, {"gpus", gpus}, {"name", "load"}}},
           {"user", "load"}}
          .dump();
  // --idle: one job at a time (each waits for the previous to end), so latency is measured
  // on an idle cluster as the Slurm anchor in shared/tools/README.md does.
  bool idle = Arg(argc, argv, "--idle", "0") == "1";
  if (idle) concurrency = 1;
  std::atomic<int> next{0}, failed{0};
  std::vector<std::vector<corral::JobId>> ids(concurrency);
  std::vector<std::vector<double>> ack_ms(concurrency);
  std::vector<std::pair<corral::JobId, int64_t>> client_submit;  // idle: wall ms before POST
  std::mutex first_error_mu;
  std::string first_error;
  int64_t wall0 = WallMs();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      corral::net::HttpClient client(addr, token);
      while (next.fetch_add(1) < jobs) {
        int64_t before_wall = WallMs();
        auto before = std::chrono::steady_clock::now();
        if (fresh) client.CloseConnection();
        auto r = client.Post("/v1/jobs", body, 30s);
        if (!r.ok() || r->status != 201) {
          ++failed;
          std::lock_guard lock(first_error_mu);
          if (first_error.empty()) {
            first_error = r.ok() ? "HTTP " + std::to_string(r->status) + ": " + r->body
                                 : r.status().ToString();
          }
          continue;
        }
        ack_ms[t].push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before)
                .count());
        corral::JobId id = Json::parse(r->body)["job"]["id"].get<corral::JobId>();
        ids[t].push_back(id);
        if (idle) client_submit.emplace_back(id, before_wall);
        while (idle) {
          auto j = client.Get("/v1/jobs/" + std::to_string(id), 30s);
          if (!j.ok()) break;
          if (Terminal(Json::parse(j->body)["job"]["state"])) break;
          std::this_thread::sleep_for(20ms);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  double submit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<corral::JobId> all;
  std::vector<double> acks;
  for (auto& v : ids) all.insert(all.end(), v.begin(), v.end());
  for (auto& v : ack_ms) acks.insert(acks.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  std::printf("submitted %zu jobs (%d failed) in %.2f s: %.0f acknowledged jobs/s\n", all.size(),
              failed.load(), submit_s, static_cast<double>(all.size()) / submit_s);
  std::printf("ack (POST round trip): p50 %.2f ms, p99 %.2f ms\n", Percentile(acks, 0.5),
              Percentile(acks, 0.99));
  if (!first_error.empty()) std::printf("first failure: %s\n", first_error.c_str());

  // Wait until every job is over, then read the head's records.
  corral::net::HttpClient client(addr, token);
  std::vector<double> latency_ms, queued_ms, dispatch_ms, exit_ms;
  std::vector<std::pair<corral::JobId, int64_t>> started;  // id, started_at
  int64_t last_end = 0;
  while (true) {
    latency_ms.clear();
    queued_ms.clear();
    dispatch_ms.clear();
    exit_ms.clear();
    started.clear();
    last_end = 0;
    size_t done = 0;
    corral::JobId after = all.empty() ? 0 : all.front() - 1;
    while (true) {
      auto r = client.Get("/v1/jobs?limit=5000&after=" + std::to_string(after), 30s);
      if (!r.ok() || r->status != 200) break;
      Json page = Json::parse(r->body);
      for (const Json& j : page["jobs"]) {
        corral::JobId id = j["id"].get<corral::JobId>();
        if (!std::binary_search(all.begin(), all.end(), id)) continue;
        if (Terminal(j["state"])) {
          ++done;
          last_end = std::max(last_end, j["ended_at"].get<int64_t>());
        }
        if (j["runs"].empty()) continue;
        const Json& run = j["runs"][0];
        int64_t submitted = j["submitted_at"].get<int64_t>();
        int64_t scheduled = run["scheduled_at"].get<int64_t>();
        int64_t start = run["started_at"].get<int64_t>();
        if (scheduled > 0) queued_ms.push_back(static_cast<double>(scheduled - submitted));
        if (start > 0) {
          latency_ms.push_back(static_cast<double>(start - submitted));
          started.emplace_back(id, start);
          if (scheduled > 0) dispatch_ms.push_back(static_cast<double>(start - scheduled));
          int64_t ended = j["ended_at"].get<int64_t>();
          if (ended > 0) exit_ms.push_back(static_cast<double>(ended - start));
        }
      }
      if (page["next_after"].is_null()) break;
      after = page["next_after"].get<corral::JobId>();
    }
    if (done >= all.size()) break;
    std::this_thread::sleep_for(100ms);
  }
  double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("all %zu jobs done in %.2f s: %.0f jobs/s end to end\n", all.size(), total_s,
              static_cast<double>(all.size()) / total_s);
  if (last_end > 0) {
    double rec_s = static_cast<double>(last_end - wall0) / 1000.0;
    std::printf("all done (records): last job ended %.2f s after the first POST: %.0f jobs/s\n",
                rec_s, static_cast<double>(all.size()) / rec_s);
  }
  std::printf("submit-to-start latency: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
              Percentile(latency_ms, 0.5), Percentile(latency_ms, 0.99),
              Percentile(latency_ms, 1.0));
  std::printf("breakdown:\n");
  PrintDist("ack (POST round trip)", acks);
  PrintDist("queued (submit->sched)", queued_ms);
  PrintDist("dispatch (sched->start)", dispatch_ms);
  PrintDist("exit seen (start->end)", exit_ms);
  if (idle) {
    std::vector<double> client_lat;
    std::sort(started.begin(), started.end());
    for (const auto& [id, before] : client_submit) {
      auto it = std::lower_bound(started.begin(), started.end(), std::make_pair(id, int64_t{0}));
      if (it != started.end() && it->first == id) {
        client_lat.push_back(static_cast<double>(it->second - before));
      }
    }
    PrintDist("client submit-to-start", client_lat);
  }
  return failed.load() == 0 ? 0 : 1;
}
