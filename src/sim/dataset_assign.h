// Datasets for traces that name none (docs/simulation.md, "Datasets"): public traces carry no
// dataset identity or size, so each job is given one by a fixed, documented rule, the same for
// the same trace, rule and seed.
//
//  - A job's family: its (user, name) where it has a name; else its submission burst, found as
//    --infer-job-names finds them (a job submitted within `family_window` of the previous one
//    of its queue and GPU count joins its burst): a sweep's jobs read one dataset.
//  - Each queue reads `per_queue` datasets, named "<queue>-data-<k>" (k from 0). A family takes
//    dataset k with Zipf probability 1/(k+1) (normalised), drawn from a hash of the seed and
//    the family: a few datasets are read by most of a queue's jobs, as in a team.
//  - Dataset k of a queue has a log-normal size: median `median_bytes`, sigma `sigma`, drawn
//    from a hash of the seed, the queue and k, bounded to [median / 64, median x 64], in whole
//    MiB. Its digest is made from its index among all datasets (no content is read).
// Pure; no state.
#pragma once

#include <cstdint>
#include <vector>

#include "core/time.h"
#include "sim/data_world.h"
#include "sim/trace.h"

namespace corral::sim {

struct DatasetRule {
  int32_t per_queue = 0;  // datasets each queue reads; 0: none
  int64_t median_bytes = int64_t{100} << 30;
  double sigma = 1.0;
  DurationMs family_window = 10 * kMinute;
  uint64_t seed = 1;
};

// Sets TraceJob::dataset of every job that has none and returns the datasets so named, in
// name order. REQUIRES: jobs sorted by submit_ms.
std::vector<SimDataset> AssignDatasets(std::vector<TraceJob>* jobs, const DatasetRule& rule);

}  // namespace corral::sim
