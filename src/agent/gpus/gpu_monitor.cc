#include "agent/gpus/gpu_monitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace corral::agent {
namespace {

constexpr double kBytesPerMib = 1024.0 * 1024.0;

}  // namespace

GpuMonitor::GpuMonitor(GpuProbe* probe, std::string job_map_dir, NodeEnv env)
    : probe_(probe), job_map_dir_(std::move(job_map_dir)), env_(env) {
  using T = MetricsRegistry::Type;
  metrics_.Describe("corral_gpu_utilization_ratio", T::kGauge,
                    "Fraction of the last sample period a kernel ran on the GPU (NVML).");
  metrics_.Describe("corral_gpu_memory_used_bytes", T::kGauge, "GPU memory in use.");
  metrics_.Describe("corral_gpu_memory_total_bytes", T::kGauge, "GPU memory in all.");
  metrics_.Describe("corral_gpu_temperature_celsius", T::kGauge,
                    "The GPU's core temperature (NVML; nvidia-smi's temperature.gpu).");
  metrics_.Describe("corral_gpu_runs", T::kGauge, "Runs this agent placed on the GPU.");
  metrics_.Describe(
      "corral_gpu_healthy", T::kGauge,
      "1 if the GPU passed its last probe, 0 if it failed it (NVML error, vanished).");
  metrics_.Describe("corral_gpu_health", T::kGauge,
                    "The last health check's verdict: 0 ok, 1 warn, 2 critical.");
  metrics_.Describe("corral_gpu_xid_total", T::kCounter,
                    "Xid events seen on the GPU since the agent started, by Xid.");
  metrics_.Describe("corral_gpu_ecc_errors", T::kGauge,
                    "ECC error counts (NVML): type sbe|dbe, counter volatile|aggregate.");
  metrics_.Describe("corral_gpu_retired_pages", T::kGauge,
                    "Pages retired (or rows remapped) over the GPU's life.");
}

std::vector<GpuSample> GpuMonitor::SampleAndCheck() {
  std::vector<GpuSample> out = Sample();
  std::lock_guard lock(mu_);
  if (out.empty()) return out;
  Result<std::vector<GpuHealthReading>> read = probe_->ReadHealth();
  if (!read.ok()) {
    spdlog::warn("GPU health check failed: {}", read.status().ToString());
    read = std::vector<GpuHealthReading>{};
  }
  std::optional<HealthProgramResult> program;
  if (program_ != nullptr) program = program_->Last();
  if (read->empty() && program_ == nullptr) return out;  // no health is checked here
  bool news = false;  // an Xid, or a GPU not ok: a new check at once
  for (GpuSample& s : out) {
    GpuHealthReading reading{s.index, counters_[s.index], {}};  // unread: as last time
    for (const GpuHealthReading& r : *read) {
      if (r.index == s.index) reading = r;
    }
    auto& pending = undelivered_[s.index];
    for (int32_t xid : reading.xids) {
      pending.emplace_back(check_ + 1, xid);  // this check's number (it is a new one)
      ++xid_total_[{s.index, xid}];
      spdlog::error("GPU {}: {}", s.index, XidText(xid));
    }
    GpuAssessment a = AssessGpu(counters_[s.index], reading.counters, reading.xids);
    counters_[s.index] = reading.counters;
    // The node's health program speaks for every GPU where it is the worse verdict.
    if (program && program->health != GpuHealth::kOk) {
      a.health = std::max(a.health, program->health);
      a.reason +=
          (a.reason.empty() ? "" : "; ") + std::string("health program: ") + program->reason;
    }
    auto last = health_.find(s.index);
    if (last == health_.end() || last->second.health != a.health) {
      if (a.health == GpuHealth::kOk) {
        spdlog::info("GPU {}: health ok", s.index);
      } else {
        spdlog::warn("GPU {}: health {}: {}", s.index, GpuHealthName(a.health), a.reason);
      }
    }
    health_[s.index] = a;
    news |= !reading.xids.empty() || a.health != GpuHealth::kOk;
    s.health = a.health;
    s.health_reason = a.reason;
    s.counters = reading.counters;
  }
  const TimeMs now = env_.clock.Steady().Now();
  if (check_ == 0 || news || now - checked_at_ >= check_interval_ms_) {
    ++check_;
    checked_at_ = now;
  }
  for (GpuSample& s : out) {
    s.check = check_;
    for (const auto& [when, xid] : undelivered_[s.index]) s.xids.push_back(xid);
  }
  UpdateGauges(out);
  return out;
}

void GpuMonitor::SetCheckInterval(int64_t ms) {
  std::lock_guard lock(mu_);
  check_interval_ms_ = ms;
}

void GpuMonitor::UseHealthProgram(const HealthProgramRunner* runner) {
  std::lock_guard lock(mu_);
  program_ = runner;
}

void GpuMonitor::HealthDelivered(uint64_t check) {
  std::lock_guard lock(mu_);
  for (auto& [gpu, pending] : undelivered_) {
    std::erase_if(pending, [&](const auto& p) { return p.first <= check; });
  }
}

void GpuMonitor::SetGpus(std::vector<Gpu> gpus) {
  std::lock_guard lock(mu_);
  gpus_ = std::move(gpus);
}

std::vector<GpuSample> GpuMonitor::Sample() {
  std::lock_guard lock(mu_);
  if (gpus_.empty()) return {};
  Result<std::vector<GpuSample>> samples = probe_->Sample();
  if (!samples.ok() && samples.status().code() != ErrorCode::kUnavailable) {
    // No way to sample (no sampling call in the library): unmeasured, not unhealthy.
    spdlog::warn("GPU sample failed: {}", samples.status().ToString());
    return {};
  }
  std::vector<GpuSample> out;
  for (const Gpu& g : gpus_) {
    // Every GPU found at start is reported: one the probe no longer answers for is faulty.
    GpuSample s{g.index, 0, 0, ""};
    if (!samples.ok()) {
      s.fault = samples.status().message();  // the driver failed as a whole (NVML init, count)
    } else {
      auto it = std::find_if(samples->begin(), samples->end(),
                             [&](const GpuSample& x) { return x.index == g.index; });
      if (it == samples->end()) {
        s.fault = "vanished (the GPU probe no longer finds it)";
      } else {
        s = *it;
      }
    }
    if (!s.fault.empty() && !faulty_.count(g.index)) {
      spdlog::error("GPU {} ({}) failed its probe: {}", g.index, g.uuid, s.fault);
    } else if (s.fault.empty() && faulty_.count(g.index)) {
      spdlog::info("GPU {} ({}) passes its probe again", g.index, g.uuid);
    }
    if (s.fault.empty()) {
      faulty_.erase(g.index);
    } else {
      faulty_.insert(g.index);
    }
    out.push_back(std::move(s));
  }
  UpdateGauges(out);
  return out;
}

void GpuMonitor::UpdateGauges(const std::vector<GpuSample>& samples) {
  // Recomputed from scratch: a GPU that stopped answering drops out rather than keeping its
  // last value.
  for (const char* name : {"corral_gpu_utilization_ratio", "corral_gpu_memory_used_bytes",
                           "corral_gpu_memory_total_bytes", "corral_gpu_runs", "corral_gpu_healthy",
                           "corral_gpu_health", "corral_gpu_xid_total", "corral_gpu_ecc_errors",
                           "corral_gpu_retired_pages", "corral_gpu_temperature_celsius"}) {
    metrics_.Clear(name);
  }
  const std::map<int32_t, int32_t> temperatures = probe_->Temperatures();
  for (const auto& [key, n] : xid_total_) {
    metrics_.Set("corral_gpu_xid_total",
                 {{"gpu", std::to_string(key.first)}, {"xid", std::to_string(key.second)}},
                 static_cast<double>(n));
  }
  for (const auto& [gpu, a] : health_) {
    metrics_.Set("corral_gpu_health", {{"gpu", std::to_string(gpu)}},
                 static_cast<double>(static_cast<int>(a.health)));
  }
  for (const auto& [gpu, c] : counters_) {
    const std::string g = std::to_string(gpu);
    auto ecc = [&](const char* type, const char* counter, int64_t v) {
      if (v >= 0) {
        metrics_.Set("corral_gpu_ecc_errors", {{"gpu", g}, {"type", type}, {"counter", counter}},
                     static_cast<double>(v));
      }
    };
    ecc("sbe", "volatile", c.ecc_sbe_volatile);
    ecc("dbe", "volatile", c.ecc_dbe_volatile);
    ecc("sbe", "aggregate", c.ecc_sbe_aggregate);
    ecc("dbe", "aggregate", c.ecc_dbe_aggregate);
    if (c.retired_pages >= 0) {
      metrics_.Set("corral_gpu_retired_pages", {{"gpu", g}}, static_cast<double>(c.retired_pages));
    }
  }
  for (const Gpu& g : gpus_) {
    MetricLabels labels = {{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}};
    metrics_.Set("corral_gpu_memory_total_bytes", labels,
                 static_cast<double>(g.memory_mb) * kBytesPerMib);
    auto held = runs_per_gpu_.find(g.index);
    metrics_.Set("corral_gpu_runs", labels, held == runs_per_gpu_.end() ? 0 : held->second);
    for (const GpuSample& s : samples) {
      if (s.index != g.index) continue;
      metrics_.Set("corral_gpu_healthy", labels, s.fault.empty() ? 1 : 0);
      if (!s.fault.empty()) continue;
      metrics_.Set("corral_gpu_utilization_ratio", labels, s.utilization_percent / 100.0);
      metrics_.Set("corral_gpu_memory_used_bytes", labels,
                   static_cast<double>(s.memory_used_bytes));
      if (auto t = temperatures.find(g.index); t != temperatures.end()) {
        metrics_.Set("corral_gpu_temperature_celsius", labels, t->second);
      }
    }
  }
}

std::string GpuMonitor::RenderMetrics() {
  (void)Sample();
  return metrics_.Render();
}

void GpuMonitor::MapJobs(const std::map<int32_t, std::set<JobId>>& holders) {
  std::lock_guard lock(mu_);
  runs_per_gpu_.clear();
  for (const auto& [index, jobs] : holders)
    runs_per_gpu_[index] = static_cast<int32_t>(jobs.size());
  if (job_map_dir_.empty()) return;
  if (Status st = env_.files.MakeDirs(job_map_dir_); !st.ok()) {
    spdlog::warn("cannot create the job mapping directory: {}", st.message());
    return;
  }
  for (const Gpu& g : gpus_) {
    std::string path = job_map_dir_ + "/" + std::to_string(g.index);
    auto held = holders.find(g.index);
    if (held == holders.end() || held->second.empty()) {
      if (mapped_.erase(g.index) > 0 || !map_cleaned_) (void)env_.files.Remove(path);
      continue;
    }
    std::string content;
    for (JobId id : held->second) content += std::to_string(id) + "\n";
    auto it = mapped_.find(g.index);
    if (it != mapped_.end() && it->second == content) continue;
    // A dot name, so that an exporter listing the directory never takes it for a GPU.
    std::string tmp = job_map_dir_ + "/." + std::to_string(g.index) + ".tmp";
    if (Status st = env_.files.Replace(path, tmp, content); !st.ok()) {
      spdlog::warn("{}", st.message());
      continue;
    }
    mapped_[g.index] = content;
  }
  map_cleaned_ = true;
}

}  // namespace corral::agent
