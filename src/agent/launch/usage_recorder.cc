#include "agent/launch/usage_recorder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "agent/launch/run_record.h"

namespace corral::agent {

void ReplicaGpuUse(const std::vector<int32_t>& held, const std::vector<GpuSample>& gpus,
                   int32_t* util, int64_t* memory) {
  int64_t util_sum = 0, count = 0;
  *memory = 0;
  for (const GpuSample& g : gpus) {
    if (std::find(held.begin(), held.end(), g.index) == held.end() || !g.fault.empty()) continue;
    util_sum += g.utilization_percent;
    *memory += g.memory_used_bytes;
    ++count;
  }
  *util = count == 0 ? 0 : static_cast<int32_t>((util_sum + count / 2) / count);
}

UsageRecorder::UsageRecorder(int64_t interval_ms, const Clock* clock)
    : interval_ms_(std::max<int64_t>(1, interval_ms)), clock_(clock) {}

UsageRecorder::Replica& UsageRecorder::Load(const RunKey& key, const std::string& dir) {
  auto it = replicas_.find(key);
  if (it != replicas_.end()) return it->second;
  Replica& r = replicas_[key];
  r.dir = dir;
  if (dir.empty()) return r;
  RunRecord record = ReadRunRecord(dir, RecordPart::kStatus);
  r.sent = record.samples_sent;
  for (const RecordedSample& s : record.samples) {
    if (s.point.seq <= r.last_seq) continue;  // never written twice; read defensively
    r.last_seq = s.point.seq;
    r.last_at = s.point.at;
    r.last_cpu_ns = s.cpu_ns;
    if (s.point.seq > r.sent) r.unsent.push_back(s.point);
  }
  return r;
}

void UsageRecorder::Append(const RunKey& key, Replica& r, const Look& look) {
  const TimeMs since = r.last_at > 0 ? r.last_at : look.started_at;
  const int64_t cpu_ns = std::max(look.cgroup.cpu_ns - r.last_cpu_ns, int64_t{0});
  const auto cpu_milli =
      static_cast<int32_t>(cpu_ns / 1000 / std::max<int64_t>(1, look.at - since));
  RecordedSample s{RawUsagePoint(r.last_seq + 1, look.at, look.gpu_util, look.gpu_mem, cpu_milli,
                                 look.cgroup.memory_bytes),
                   look.cgroup.cpu_ns};
  // In the record before any report: a sample the head may hold is never numbered again.
  if (!r.dir.empty()) {
    if (Status st = AppendRunRecord(r.dir, SampleLine(s), false); !st.ok()) {
      spdlog::warn("run {} replica {}: usage sample not kept: {}", key.run_id, key.replica,
                   st.ToString());
      return;
    }
  }
  r.last_seq = s.point.seq;
  r.last_at = look.at;
  r.last_cpu_ns = look.cgroup.cpu_ns;
  r.unsent.push_back(s.point);
}

void UsageRecorder::Sample(const std::vector<LiveReplica>& live,
                           const std::vector<GpuSample>& gpus) {
  std::lock_guard lock(mu_);
  const TimeMs now = clock_->Now();
  for (const LiveReplica& l : live) {
    Replica& r = Load(l.key, l.dir);
    Look look{now, l.started_at, 0, 0, l.cgroup};
    ReplicaGpuUse(l.gpus, gpus, &look.gpu_util, &look.gpu_mem);
    const TimeMs since = r.last_at > 0 ? r.last_at : l.started_at;
    if (since <= 0 || now <= since) continue;
    r.last_look = look;
    if (now - since >= interval_ms_) Append(l.key, r, look);
  }
}

void UsageRecorder::CloseEnded(const std::vector<LiveReplica>& live) {
  std::lock_guard lock(mu_);
  std::set<RunKey> running;
  for (const LiveReplica& l : live) running.insert(l.key);
  for (auto& [key, r] : replicas_) {
    if (r.closed || running.count(key) > 0 || !r.last_look) continue;
    r.closed = true;
    if (r.last_look->at > r.last_at) Append(key, r, *r.last_look);
  }
}

void UsageRecorder::Attach(std::vector<RunReport>* reports,
                           const std::map<RunKey, std::string>& dirs) {
  std::lock_guard lock(mu_);
  std::set<RunKey> reported;
  for (RunReport& report : *reports) {
    if (report.staging) continue;
    RunKey key{report.run_id, report.replica};
    reported.insert(key);
    auto dir = dirs.find(key);
    Replica& r = Load(key, dir == dirs.end() ? std::string() : dir->second);
    report.usage = r.unsent;
  }
  std::erase_if(replicas_, [&](const auto& kv) { return reported.count(kv.first) == 0; });
}

void UsageRecorder::Delivered(const std::vector<RunReport>& reports) {
  std::lock_guard lock(mu_);
  for (const RunReport& report : reports) {
    if (report.usage.empty()) continue;
    auto it = replicas_.find(RunKey{report.run_id, report.replica});
    if (it == replicas_.end()) continue;
    Replica& r = it->second;
    const int64_t upto = report.usage.back().seq;
    if (upto <= r.sent) continue;
    r.sent = upto;
    std::erase_if(r.unsent, [&](const UsagePoint& p) { return p.seq <= upto; });
    // Not fsynced: a lost line only means these samples are sent again, and taken once.
    if (!r.dir.empty()) (void)AppendRunRecord(r.dir, SamplesSentLine(upto), false);
  }
}

}  // namespace corral::agent
