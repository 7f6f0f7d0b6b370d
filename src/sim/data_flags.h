// The simulator's flags for datasets (docs/simulation.md, "Datasets"): which datasets the
// trace's jobs read (dataset_assign.h), the nodes' caches, the shared source's bandwidth and
// whether placement knows where the data is. Without --datasets the simulation has no data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace CLI {
class App;
}

namespace corral::sim {

struct DataFlags {
  int32_t per_queue = 0;              // --datasets
  std::string dataset_size = "100G";  // median
  double dataset_size_sigma = 1.0;
  std::string family_window = "10m";
  std::string node_cache = "2T";
  std::string source_bandwidth = "1G";  // per second
  std::string placement = "on";         // --placement-data on|off
};

void AddDataFlags(CLI::App& app, DataFlags* f);

// With --datasets K > 0: gives each job its dataset (TraceJob::dataset) by the rule seeded with
// `seed`, and sets cfg->data. A bad value is an error naming its flag, and changes nothing.
Status ApplyDataFlags(const DataFlags& f, uint64_t seed, SimConfig* cfg,
                      std::vector<TraceJob>* jobs);

}  // namespace corral::sim
