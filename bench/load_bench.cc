// Whole-system load tool: submits N jobs to a running cluster (`corral up`) from C client
// threads and reports acknowledged submissions per second, then waits for every job and
// reports submit-to-start latency (p50, p99) from the head's own job records.
//
//   corral_load --addr http://127.0.0.1:7070 --token $(cat DIR/admin.token) --jobs 1000
//               --concurrency 8 --gpus 1 [--cmd true] [--idle 1]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/codec.h"
#include "net/http_client.h"

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
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      corral::net::HttpClient client(addr, token);
      while (next.fetch_add(1) < jobs) {
        auto r = client.Post("/v1/jobs", body, 30s);
        if (!r.ok() || r->status != 201) {
          ++failed;
          continue;
        }
        corral::JobId id = Json::parse(r->body)["job"]["id"].get<corral::JobId>();
        ids[t].push_back(id);
        while (idle) {
          auto j = client.Get("/v1/jobs/" + std::to_string(id), 30s);
          if (!j.ok()) break;
          std::string st = Json::parse(j->body)["job"]["state"];
          if (st == "succeeded" || st == "failed" || st == "cancelled") break;
          std::this_thread::sleep_for(20ms);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  double submit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<corral::JobId> all;
  for (auto& v : ids) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  std::printf("submitted %zu jobs (%d failed) in %.2f s: %.0f acknowledged jobs/s\n", all.size(),
              failed.load(), submit_s, static_cast<double>(all.size()) / submit_s);

  // Wait until every job is over, then read the head's records.
  corral::net::HttpClient client(addr, token);
  std::vector<double> latency_ms;
  while (true) {
    latency_ms.clear();
    size_t done = 0;
    corral::JobId after = all.empty() ? 0 : all.front() - 1;
    while (true) {
      auto r = client.Get("/v1/jobs?limit=5000&after=" + std::to_string(after), 30s);
      if (!r.ok() || r->status != 200) break;
      Json page = Json::parse(r->body);
      for (const Json& j : page["jobs"]) {
        corral::JobId id = j["id"].get<corral::JobId>();
        if (!std::binary_search(all.begin(), all.end(), id)) continue;
        std::string st = j["state"];
        if (st == "succeeded" || st == "failed" || st == "cancelled") ++done;
        if (!j["runs"].empty() && j["runs"][0]["started_at"].get<int64_t>() > 0) {
          latency_ms.push_back(static_cast<double>(j["runs"][0]["started_at"].get<int64_t>() -
                                                   j["submitted_at"].get<int64_t>()));
        }
      }
      if (page["next_after"].is_null()) break;
      after = page["next_after"].get<corral::JobId>();
    }
    if (done >= all.size()) break;
    std::this_thread::sleep_for(500ms);
  }
  double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("all %zu jobs done in %.2f s: %.0f jobs/s end to end\n", all.size(), total_s,
              static_cast<double>(all.size()) / total_s);
  std::printf("submit-to-start latency: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
              Percentile(latency_ms, 0.5), Percentile(latency_ms, 0.99),
              Percentile(latency_ms, 1.0));
  return failed.load() == 0 ? 0 : 1;
}
