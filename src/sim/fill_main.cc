// corral_fill: packing of GPU shares on the Alibaba trace (fill_eval.h), for every policy.
//   corral_fill --trace DIR [--runs N] [--seed S] [--policy corral|fgd|bestfit|whole]...
// DIR holds openb_node_list_gpu_node.csv and openb_pod_list_default.csv.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sim/fill_eval.h"

int main(int argc, char** argv) {
  using namespace corral::sim;
  std::string dir;
  int32_t runs = 10;
  uint64_t seed = 1;
  std::vector<FillPolicy> policies;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "corral_fill: flag %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--trace") {
      dir = value();
    } else if (a == "--runs") {
      runs = std::atoi(value().c_str());
    } else if (a == "--seed") {
      seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--policy") {
      FillPolicy p;
      std::string v = value();
      if (!ParseFillPolicy(v, &p)) {
        std::fprintf(stderr,
                     "corral_fill: flag --policy: got \"%s\", want corral, fgd, bestfit "
                     "or whole\n",
                     v.c_str());
        return 2;
      }
      policies.push_back(p);
    } else {
      std::fprintf(stderr,
                   "usage: corral_fill --trace DIR [--runs N] [--seed S] [--policy P]...\n");
      return 2;
    }
  }
  if (dir.empty() || runs < 1) {
    std::fprintf(stderr, "corral_fill: --trace DIR is required and --runs must be >= 1\n");
    return 2;
  }
  if (policies.empty()) {
    policies = {FillPolicy::kCorral, FillPolicy::kFgd, FillPolicy::kBestFit,
                FillPolicy::kWholeGpus};
  }
  auto nodes = ReadAlibabaNodes(dir + "/openb_node_list_gpu_node.csv");
  auto tasks = ReadAlibabaTasks(dir + "/openb_pod_list_default.csv");
  if (!nodes.ok() || !tasks.ok()) {
    std::fprintf(stderr, "corral_fill: %s\n",
                 (!nodes.ok() ? nodes.status() : tasks.status()).message().c_str());
    return 1;
  }
  int64_t shares = 0;
  for (const AlibabaTask& t : *tasks) shares += t.IsShare();
  std::printf("%zu nodes, %zu tasks (%lld shares of a GPU), %d runs from seed %llu\n",
              nodes->size(), tasks->size(), static_cast<long long>(shares), runs,
              static_cast<unsigned long long>(seed));
  std::printf("%-8s %10s %22s %22s %10s %8s\n", "policy", "GPUs", "unallocated at 100%",
              "at first failure", "placed", "failed");
  for (FillPolicy p : policies) {
    FillSummary s = RunFill(*nodes, *tasks, p, runs, seed);
    double placed = 0, failed = 0;
    for (const FillRun& r : s.runs) {
      placed += static_cast<double>(r.placed);
      failed += static_cast<double>(r.failed);
    }
    std::printf("%-8s %10lld %13.2f%% +- %4.2f %13.2f%% +- %4.2f %10.0f %8.0f\n", FillPolicyName(p),
                static_cast<long long>(s.capacity_milli / 1000),
                100 * s.Mean(&FillRun::unallocated), 100 * s.Stddev(&FillRun::unallocated),
                100 * s.Mean(&FillRun::first_failure), 100 * s.Stddev(&FillRun::first_failure),
                placed / runs, failed / runs);
    std::fflush(stdout);
  }
  return 0;
}
