#include "sim/data_flags.h"

#include <CLI/CLI.hpp>
#include <cmath>

#include "core/spec.h"
#include "sim/dataset_assign.h"

namespace corral::sim {

namespace {

// A size as --node-cache takes it ("2T", "100G", "512M"; a plain number is MiB), in bytes.
Status DataSizeBytes(const std::string& flag, const std::string& text, int64_t* out) {
  Result<int64_t> mb = ParseMemoryMb(flag, text);
  if (!mb.ok()) return mb.status();
  if (*mb < 0 || *mb > (int64_t{1} << 40)) {
    return InvalidArgument("field '" + flag + "': got \"" + text +
                           "\", want a size from 0 to 1024P, such as 2T or 100G");
  }
  *out = *mb << 20;
  return Status::Ok();
}

}  // namespace

void AddDataFlags(CLI::App& app, DataFlags* f) {
  app.add_option("--datasets", f->per_queue,
                 "give every job a dataset: each queue reads this many, a job's family (its user "
                 "and name, or its submission burst) picks one, Zipf-weighted (default 0: no "
                 "datasets)");
  app.add_option("--dataset-size", f->dataset_size,
                 "median dataset size (log-normal, default 100G; sizes as 512M, 100G, 2T)");
  app.add_option("--dataset-size-sigma", f->dataset_size_sigma,
                 "sigma of the log-normal dataset sizes (default 1)");
  app.add_option("--dataset-family-window", f->family_window,
                 "jobs without a name submitted within this of the previous one of their queue "
                 "and GPU count are one family and read one dataset (default 10m)");
  app.add_option("--node-cache", f->node_cache,
                 "each node's dataset cache (default 2T; 0: no limit); over 95% of it, unpinned "
                 "datasets are evicted, least recently used first, down to 70%");
  app.add_option("--source-bandwidth", f->source_bandwidth,
                 "bytes per second the shared source serves, split equally among all fetches "
                 "under way in the cluster (default 1G, i.e. 1 GiB/s)");
  app.add_option("--placement-data", f->placement,
                 "on: the scheduler prefers nodes holding a job's dataset (default); off: "
                 "cache-blind placement, the agents still stage and cache");
}

Status ApplyDataFlags(const DataFlags& f, uint64_t seed, SimConfig* cfg,
                      std::vector<TraceJob>* jobs) {
  if (f.per_queue < 0 || f.per_queue > 10000) {
    return InvalidArgument("field '--datasets': got " + std::to_string(f.per_queue) +
                           ", want datasets per queue from 0 (none) to 10000");
  }
  if (f.placement != "on" && f.placement != "off") {
    return InvalidArgument("field '--placement-data': got \"" + f.placement + "\", want on or off");
  }
  if (f.per_queue == 0) return Status::Ok();
  DatasetRule rule;
  rule.per_queue = f.per_queue;
  rule.seed = seed;
  CORRAL_RETURN_IF_ERROR(DataSizeBytes("--dataset-size", f.dataset_size, &rule.median_bytes));
  if (rule.median_bytes <= 0) {
    return InvalidArgument("field '--dataset-size': got \"" + f.dataset_size +
                           "\", want a size above 0, such as 100G");
  }
  if (!(f.dataset_size_sigma >= 0 && f.dataset_size_sigma <= 4)) {
    return InvalidArgument("field '--dataset-size-sigma': got " +
                           std::to_string(f.dataset_size_sigma) + ", want 0 to 4");
  }
  rule.sigma = f.dataset_size_sigma;
  Result<DurationMs> window = ParseDuration("--dataset-family-window", f.family_window);
  if (!window.ok()) return window.status();
  if (*window < 0) {
    return InvalidArgument("field '--dataset-family-window': got \"" + f.family_window +
                           "\", want a duration >= 0");
  }
  rule.family_window = *window;
  DataConfig data;
  CORRAL_RETURN_IF_ERROR(DataSizeBytes("--node-cache", f.node_cache, &data.node_cache_bytes));
  CORRAL_RETURN_IF_ERROR(
      DataSizeBytes("--source-bandwidth", f.source_bandwidth, &data.source_bytes_per_s));
  if (data.source_bytes_per_s <= 0) {
    return InvalidArgument("field '--source-bandwidth': got \"" + f.source_bandwidth +
                           "\", want bytes per second above 0, such as 1G");
  }
  data.placement_aware = f.placement == "on";
  std::vector<TraceJob> assigned = *jobs;
  data.datasets = AssignDatasets(&assigned, rule);
  *jobs = std::move(assigned);
  cfg->data = std::move(data);
  return Status::Ok();
}

}  // namespace corral::sim
