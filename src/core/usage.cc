#include "core/usage.h"

#include <algorithm>

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
  return Json{{"key", row.key},
              {"gpu_seconds", row.gpu_seconds},
              {"gpu_hours", row.gpu_seconds / 3600.0},
              {"jobs", row.jobs},
              {"started", row.started},
              {"avg_wait_seconds", row.AverageWaitSeconds()},
              {"preemptions", row.preemptions}};
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
