// Packing of shares of GPUs measured as in "Beware of Fragmentation" (ATC'23): tasks drawn at
// random (with replacement) from the Alibaba trace arrive one after another on its real node
// list and never leave; a task that does not fit anywhere is dropped. When the GPUs asked for
// by the arrivals reach the cluster's GPU capacity, the share of that capacity not given to
// any task is what fragmentation (and rounding) left unallocatable.
//
// Policies:
//  - kCorral: Corral's scheduler (sched::Placer on a sched::ClusterModel) as the head runs it.
//  - kFgd: Fragmentation Gradient Descent: the node and GPU that least increase the expected
//    fragmentation of the node under the trace's task mix.
//  - kBestFit: the node with the least CPU and GPU left after placing (normalised sum), the
//    GPU with the least left inside it.
//  - kWholeGpus: Corral's scheduler with every share rounded up to a whole GPU (no sharing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/alibaba_trace.h"

namespace corral::sim {

enum class FillPolicy { kCorral, kFgd, kBestFit, kWholeGpus };
const char* FillPolicyName(FillPolicy p);
bool ParseFillPolicy(const std::string& text, FillPolicy* out);

struct FillRun {
  double unallocated = 0;    // of GPU capacity, when the arrivals asked for all of it
  double first_failure = 0;  // of GPU capacity, when the first GPU task did not fit
  int64_t placed = 0;        // tasks placed
  int64_t failed = 0;        // tasks that fit nowhere
};

struct FillSummary {
  FillPolicy policy = FillPolicy::kCorral;
  int64_t capacity_milli = 0;  // the cluster's GPUs in milli-GPUs
  std::vector<FillRun> runs;
  double Mean(double FillRun::*field) const;
  double Stddev(double FillRun::*field) const;
};

// `runs` arrival sequences, the k-th seeded with seed + k (the same for every policy).
FillSummary RunFill(const std::vector<AlibabaNode>& nodes, const std::vector<AlibabaTask>& tasks,
                    FillPolicy policy, int32_t runs, uint64_t seed);

}  // namespace corral::sim
