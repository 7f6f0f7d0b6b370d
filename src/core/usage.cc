#include "core/usage.h"

#include <algorithm>

#include "core/usage_series.h"

namespace corral {

const char* UsageByName(UsageBy by) { return by == UsageBy::kUser ? "user" : "queue"; }

Result<UsageBy> ParseUsageBy(const std::string& field, const std::string& text) {
  if (text == "user") return UsageBy::kUser;
  if (text == "queue") return UsageBy::kQueue;
  return InvalidArgument(field + ": got \"" + text + "\", want user or queue");
}

double RunGpuSecondsIn(const Run& run, TimeMs from, TimeMs to) {
  if (run.started_at <= 0) return 0;  // never ran: it held GPUs only while being set up
  const TimeMs end = IsRunOver(run.state) ? run.ended_at : to;
  int64_t milli_ms = 0;
  // Each replica for as long as it held its GPUs: an elastic run's size changes over time.
  for (size_t r = 0; r < run.placement.size(); ++r) {
    const auto [held_from, held_to] = run.ReplicaHeld(static_cast<int32_t>(r), end);
    const TimeMs lo = std::max(held_from, from);
    const TimeMs hi = std::min(held_to, to);
    if (hi <= lo) continue;
    int64_t milli = 0;
    for (const GpuShare& s : Shares(run.placement[r])) milli += s.milli;
    milli_ms += milli * (hi - lo);
  }
  return static_cast<double>(milli_ms) / kGpuMilli / kSecond;
}

namespace {

// The job's samples taken in [from, to] added to `row`; returns whether they were any.
bool AddSampledUse(const Job& job, TimeMs from, TimeMs to, UsageRow* row) {
  const Resources& asked = job.spec.per_replica;
  const double gpus = static_cast<double>(asked.gpu_milli) / kGpuMilli;
  const double memory = static_cast<double>(asked.memory_mb) * 1024 * 1024;
  std::vector<ReplicaUsage> in_period;
  for (const Run& run : job.runs) {
    for (const ReplicaUsage& u : run.usage) {
      ReplicaUsage kept{u.replica, u.last_seq, {}};
      for (const UsagePoint& p : u.points) {
        if (p.at < from || p.at > to) continue;
        kept.points.push_back(p);
        const double n = p.samples;
        if (gpus > 0) {
          row->gpu_util_sum += p.gpu_util * n * gpus;
          row->gpu_weight += n * gpus;
        }
        if (asked.cpu_milli > 0) {
          row->cpu_used += p.cpu_milli * n;
          row->cpu_asked += asked.cpu_milli * n;
        }
        if (memory > 0 && p.mem_max > 0) {
          row->mem_used += static_cast<double>(p.mem) * n;
          row->mem_asked += memory * n;
        }
      }
      if (!kept.points.empty()) in_period.push_back(std::move(kept));
    }
  }
  if (in_period.empty()) return false;
  UsageRequest request{gpus, 0, asked.cpu_milli, asked.memory_mb * 1024 * 1024};
  for (const EfficiencyNote& n : JudgeUsage(SummarizeUsage(in_period), request)) {
    if (n.finding == EfficiencyFinding::kIdleGpus) ++row->idle_gpu_jobs;
  }
  return true;
}

}  // namespace

void UsageRow::AddEfficiency(const UsageRow& o) {
  gpu_util_sum += o.gpu_util_sum;
  gpu_weight += o.gpu_weight;
  cpu_used += o.cpu_used;
  cpu_asked += o.cpu_asked;
  mem_used += o.mem_used;
  mem_asked += o.mem_asked;
  idle_gpu_jobs += o.idle_gpu_jobs;
}

void UsageAccumulator::Add(const Job& job) {
  auto in = [&](TimeMs t) { return t > 0 && t >= from_ && t <= to_; };
  double gpu_seconds = 0;
  int64_t preemptions = 0;
  bool ran_in = false;
  TimeMs first_start = 0;
  for (const Run& r : job.runs) {
    if (r.started_at > 0 && first_start == 0) first_start = r.started_at;
    if (r.started_at > 0 && r.started_at <= to_ && (!IsRunOver(r.state) || r.ended_at >= from_)) {
      ran_in = true;
    }
    gpu_seconds += RunGpuSecondsIn(r, from_, to_);
    if (r.state == RunState::kPreempted && in(r.ended_at)) ++preemptions;
  }
  bool submitted_in = in(job.submitted_at);
  bool started_in = in(first_start);
  if (!submitted_in && !ran_in && preemptions == 0) return;
  const std::string& key = by_ == UsageBy::kUser ? job.owner : job.spec.queue;
  UsageRow& row = rows_[key];
  row.key = key;
  AddSampledUse(job, from_, to_, &row);
  row.gpu_seconds += gpu_seconds;
  row.jobs += 1;
  row.preemptions += preemptions;
  if (started_in) {
    row.started += 1;
    row.wait_seconds += static_cast<double>(first_start - job.submitted_at) / kSecond;
  }
}

UsageReport UsageAccumulator::Finish() const {
  UsageReport out;
  out.by = by_;
  out.from = from_;
  out.to = to_;
  out.total.key = "total";
  for (const auto& [key, row] : rows_) {
    out.rows.push_back(row);
    out.total.gpu_seconds += row.gpu_seconds;
    out.total.jobs += row.jobs;
    out.total.started += row.started;
    out.total.wait_seconds += row.wait_seconds;
    out.total.preemptions += row.preemptions;
    out.total.AddEfficiency(row);
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const UsageRow& a, const UsageRow& b) {
    return a.gpu_seconds > b.gpu_seconds;  // ties keep the map's order: by key
  });
  return out;
}

UsageReport ComputeUsage(const std::vector<Job>& jobs, UsageBy by, TimeMs from, TimeMs to) {
  UsageAccumulator acc(by, from, to);
  for (const Job& j : jobs) acc.Add(j);
  return acc.Finish();
}

Json ToJson(const UsageRow& row) {
  Json j{{"key", row.key},
         {"gpu_seconds", row.gpu_seconds},
         {"gpu_hours", row.gpu_seconds / 3600.0},
         {"jobs", row.jobs},
         {"started", row.started},
         {"avg_wait_seconds", row.AverageWaitSeconds()},
         {"preemptions", row.preemptions}};
  // Percentages (null: nothing measured) and the weights behind them (docs/efficiency.md).
  auto pct = [](double v) { return v < 0 ? Json(nullptr) : Json(v); };
  j["efficiency"] = Json{{"gpu_util", pct(row.GpuUtil())},
                         {"gpu_weight", row.gpu_weight},
                         {"cpu_efficiency", pct(row.CpuEfficiency())},
                         {"cpu_asked", row.cpu_asked},
                         {"memory_efficiency", pct(row.MemoryEfficiency())},
                         {"memory_asked", row.mem_asked},
                         {"idle_gpu_jobs", row.idle_gpu_jobs}};
  return j;
}

Json ToJson(const UsageReport& report) {
  Json rows = Json::array();
  for (const UsageRow& r : report.rows) rows.push_back(ToJson(r));
  return Json{{"by", UsageByName(report.by)},
              {"from", report.from},
              {"to", report.to},
              {"rows", rows},
              {"total", ToJson(report.total)}};
}

namespace {

UsageRow DecodeUsageRow(const Json& j) {
  UsageRow r;
  r.key = j.at("key").get<std::string>();
  r.gpu_seconds = j.value("gpu_seconds", 0.0);
  r.jobs = j.value("jobs", int64_t{0});
  r.started = j.value("started", int64_t{0});
  r.wait_seconds = j.value("avg_wait_seconds", 0.0) * static_cast<double>(r.started);
  r.preemptions = j.value("preemptions", int64_t{0});
  if (auto e = j.find("efficiency"); e != j.end() && e->is_object()) {
    auto pct = [&](const char* key) {
      auto v = e->find(key);
      return v == e->end() || v->is_null() ? 0.0 : v->get<double>();
    };
    r.gpu_weight = e->value("gpu_weight", 0.0);
    r.gpu_util_sum = pct("gpu_util") * r.gpu_weight;
    r.cpu_asked = e->value("cpu_asked", 0.0);
    r.cpu_used = pct("cpu_efficiency") / 100 * r.cpu_asked;
    r.mem_asked = e->value("memory_asked", 0.0);
    r.mem_used = pct("memory_efficiency") / 100 * r.mem_asked;
    r.idle_gpu_jobs = e->value("idle_gpu_jobs", int64_t{0});
  }
  return r;
}

}  // namespace

Result<UsageReport> UsageReportFromJson(const Json& j) {
  try {
    if (!j.is_object()) return InvalidArgument("usage: expected a JSON object");
    UsageReport r;
    auto by = ParseUsageBy("by", j.value("by", "user"));
    if (!by.ok()) return by.status();
    r.by = *by;
    r.from = j.value("from", TimeMs{0});
    r.to = j.value("to", TimeMs{0});
    for (const Json& row : j.value("rows", Json::array())) r.rows.push_back(DecodeUsageRow(row));
    r.total = DecodeUsageRow(j.value("total", Json{{"key", "total"}}));
    return r;
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("usage: ") + e.what());
  }
}

}  // namespace corral
