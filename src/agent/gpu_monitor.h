// What the agent knows about its GPUs' use (DESIGN §11): utilisation and memory sampled
// through the GpuProbe, as Prometheus gauges for the agent's own /metrics, and which job
// holds each GPU, written as one file per GPU index in the layout DCGM exporter's HPC job
// mapping reads (`dcgm-exporter --hpc-job-mapping-dir DIR`: file DIR/<gpu index> lists the ids
// of the jobs on that GPU, one per line), so a site's DCGM dashboards gain a job label.
//
// Owned by the Agent. Thread-safe: the sync threads sample and map jobs, the log endpoint's
// thread renders metrics; one mutex serialises them (and the probe, which need not be).
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/gpu_probe.h"
#include "core/agent_protocol.h"
#include "core/metrics.h"

#ifndef GUARDED_BY
#define GUARDED_BY(x)  // documentation: the member is accessed only with `x` held
#endif

namespace corral::agent {

class GpuMonitor {
 public:
  // `probe` must outlive the monitor. `job_map_dir` empty: no mapping files.
  GpuMonitor(GpuProbe* probe, std::string job_map_dir);

  // The GPUs found at start (before this, Sample() reports nothing).
  void SetGpus(std::vector<Gpu> gpus);
  // Samples every GPU found at start, in their order. A GPU that fails its probe (an NVML
  // error for it, the driver failing as a whole, or a GPU no longer found) is reported with a
  // fault; a probe that cannot sample at all (no library or sampling call) gives no samples
  // (the head then shows the GPUs as unmeasured rather than idle).
  std::vector<GpuSample> Sample();
  // Prometheus text of a fresh sample: per-GPU utilisation, memory and runs held.
  std::string RenderMetrics();
  // Writes DIR/<index> for each GPU held by a run (the jobs' ids), removes it for the others.
  // Files are replaced atomically (write, then rename) and only when their content changes.
  void MapJobs(const std::map<int32_t, std::set<JobId>>& holders);

 private:
  void UpdateGauges(const std::vector<GpuSample>& samples);  // REQUIRES: mu_ held

  GpuProbe* const probe_;
  const std::string job_map_dir_;
  std::mutex mu_;
  std::vector<Gpu> gpus_ GUARDED_BY(mu_);
  std::map<int32_t, std::string> mapped_ GUARDED_BY(mu_);  // index -> file content written
  bool map_cleaned_ GUARDED_BY(mu_) = false;  // stale files of an earlier agent removed
  std::map<int32_t, int32_t> runs_per_gpu_ GUARDED_BY(mu_);
  std::set<int32_t> faulty_ GUARDED_BY(mu_);  // GPUs whose last sample was a fault (logged once)
  MetricsRegistry metrics_;                   // thread-safe itself
};

}  // namespace corral::agent
