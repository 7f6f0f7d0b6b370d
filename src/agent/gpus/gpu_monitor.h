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

#include "agent/gpus/gpu_probe.h"
#include "agent/gpus/health_program.h"
#include "agent/node/node_env.h"
#include "core/agent_protocol.h"
#include "core/metrics.h"

#ifndef GUARDED_BY
#define GUARDED_BY(x)  // documentation: the member is accessed only with `x` held
#endif

namespace corral::agent {

class GpuMonitor {
 public:
  // `probe` must outlive the monitor. `job_map_dir` empty: no mapping files. The check
  // interval runs on `env`'s steady clock; the mapping files are written through its files.
  GpuMonitor(GpuProbe* probe, std::string job_map_dir, NodeEnv env);

  // The GPUs found at start (before this, Sample() reports nothing).
  void SetGpus(std::vector<Gpu> gpus);
  // Samples every GPU found at start, in their order. A GPU that fails its probe (an NVML
  // error for it, the driver failing as a whole, or a GPU no longer found) is reported with a
  // fault; a probe that cannot sample at all (no library or sampling call) gives no samples
  // (the head then shows the GPUs as unmeasured rather than idle).
  std::vector<GpuSample> Sample();
  // Sample(), and a health check of every GPU (the sync's; /metrics only samples): its error
  // counters against the last check's, its new Xid events, and the verdict (AssessGpu).
  // Checks are numbered from 1: a new number when the check interval has passed, or at once
  // when a GPU is not ok; in between the last number is repeated (the head counts each number
  // once, so clean checks in a row mean clean intervals, not syncs). Xids stay in the samples
  // until HealthDelivered.
  std::vector<GpuSample> SampleAndCheck();
  void SetCheckInterval(int64_t ms);  // default 10 s
  // The head took the checks up to `check`: their Xids are not sent again.
  void HealthDelivered(uint64_t check);
  // The node's health program, whose last verdict every GPU's check takes on where it is
  // worse (nullptr: none). It must outlive the monitor's use of it.
  void UseHealthProgram(const HealthProgramRunner* runner);
  // Prometheus text of a fresh sample: per-GPU utilisation, memory and runs held.
  std::string RenderMetrics();
  // Writes DIR/<index> for each GPU held by a run (the jobs' ids), removes it for the others.
  // Files are replaced atomically (write, then rename) and only when their content changes.
  void MapJobs(const std::map<int32_t, std::set<JobId>>& holders);

 private:
  void UpdateGauges(const std::vector<GpuSample>& samples);  // REQUIRES: mu_ held

  GpuProbe* const probe_;
  const std::string job_map_dir_;
  const NodeEnv env_;
  std::mutex mu_;
  std::vector<Gpu> gpus_ GUARDED_BY(mu_);
  std::map<int32_t, std::string> mapped_ GUARDED_BY(mu_);  // index -> file content written
  bool map_cleaned_ GUARDED_BY(mu_) = false;  // stale files of an earlier agent removed
  std::map<int32_t, int32_t> runs_per_gpu_ GUARDED_BY(mu_);
  std::set<int32_t> faulty_ GUARDED_BY(mu_);  // GPUs whose last sample was a fault (logged once)
  uint64_t check_ GUARDED_BY(mu_) = 0;        // the last health check's number
  int64_t check_interval_ms_ GUARDED_BY(mu_) = 10000;
  TimeMs checked_at_ GUARDED_BY(mu_) = 0;  // on env_'s steady clock
  const HealthProgramRunner* program_ GUARDED_BY(mu_) = nullptr;
  std::map<int32_t, GpuErrorCounters> counters_ GUARDED_BY(mu_);  // at the last check
  // Xids read but not yet delivered: (check that read it, Xid), per GPU.
  std::map<int32_t, std::vector<std::pair<uint64_t, int32_t>>> undelivered_ GUARDED_BY(mu_);
  std::map<int32_t, GpuAssessment> health_ GUARDED_BY(mu_);  // the last check's verdict
  std::map<std::pair<int32_t, int32_t>, int64_t> xid_total_ GUARDED_BY(mu_);  // (gpu, xid)
  MetricsRegistry metrics_;                                                   // thread-safe itself
};

}  // namespace corral::agent
