#include "agents/emulated_agent.h"

#include <set>

#include "core/usage_series.h"

namespace corral::bench {

EmulatedAgent::EmulatedAgent(std::string name, int32_t gpus, int64_t runtime_ms, bool deltas,
                             int64_t usage_every_ms)
    : name_(std::move(name)),
      gpus_(gpus),
      runtime_ms_(runtime_ms),
      deltas_(deltas),
      usage_every_ms_(usage_every_ms) {}

RegisterRequest EmulatedAgent::MakeRegisterRequest() const {
  RegisterRequest req;
  req.name = name_;
  req.address = "127.0.0.1:1";  // no log endpoint: nobody asks an emulated agent for logs
  req.cpu_milli = 64000;
  req.memory_mb = 512 * 1024;
  for (int32_t i = 0; i < gpus_; ++i) {
    Gpu g;
    g.index = i;
    g.uuid = "GPU-" + name_ + "-" + std::to_string(i);
    g.model = "emulated";
    g.memory_mb = 81920;
    g.group = i / 4;
    req.gpus.push_back(std::move(g));
  }
  req.labels["gpu_model"] = "emulated";
  return req;
}

void EmulatedAgent::OnRegistered(const RegisterResponse& r) {
  registered_ = true;
  agent_epoch_ = r.agent_epoch;
  desired_.Reset();  // the first sync is answered at once with the whole desired state
  unreported_ = true;
}

SyncRequest EmulatedAgent::MakeSync(int64_t wait_ms, TimeMs now) {
  FinishDue(now);
  SyncRequest req;
  req.node = name_;
  req.agent_epoch = agent_epoch_;
  req.desired_version = desired_.version();
  req.deltas = deltas_;
  req.wait_ms = unreported_ ? 0 : wait_ms;
  unreported_ = false;
  req.runs.reserve(runs_.size());
  for (const auto& [key, report] : runs_) {
    req.runs.push_back(report);
    // Each sample once: the head takes a number once, so one that an unanswered sync carried
    // is simply missing from its series, which a bench does not mind.
    if (usage_every_ms_ > 0) req.runs.back().usage = SamplesDue(key, report, now);
  }
  return req;
}

std::vector<UsagePoint> EmulatedAgent::SamplesDue(const Key& key, const RunReport& report,
                                                  TimeMs now) {
  std::vector<UsagePoint> out;
  int64_t& last = samples_[key];
  const TimeMs until = report.running ? now : report.ended_at;
  for (TimeMs at = report.started_at + (last + 1) * usage_every_ms_; at <= until;
       at += usage_every_ms_) {
    out.push_back(RawUsagePoint(++last, at, 50, int64_t{8} << 30, 1000, int64_t{2} << 30));
  }
  return out;
}

int EmulatedAgent::Apply(SyncResponse r, TimeMs now) {
  if (r.reregister) {
    registered_ = false;
    return 0;
  }
  if (!desired_.Apply(std::move(r))) return 0;
  int started = 0;
  std::set<Key> desired;
  for (const auto& [job, orders] : desired_.by_job()) {
    for (const RunOrder& o : orders) started += Follow(o, now, &desired);
  }
  for (auto it = runs_.begin(); it != runs_.end();) {
    if (desired.count(it->first)) {
      ++it;
      continue;
    }
    if (!it->second.running) ++forgotten_;
    ends_at_.erase(it->first);
    samples_.erase(it->first);
    it = runs_.erase(it);
  }
  return started;
}

int EmulatedAgent::Follow(const RunOrder& o, TimeMs now, std::set<Key>* desired) {
  Key key{o.run_id, o.replica};
  desired->insert(key);
  auto it = runs_.find(key);
  if (o.stop) {
    if (it != runs_.end() && it->second.running) {
      it->second.running = false;
      it->second.exit_code = -o.stop_signal;
      it->second.ended_at = now;
      ends_at_.erase(key);
      unreported_ = true;
    }
    return 0;
  }
  if (it != runs_.end()) return 0;  // a run id starts at most once
  RunReport rep;
  rep.run_id = o.run_id;
  rep.replica = o.replica;
  rep.started_at = now;
  if (runtime_ms_ > 0) {
    rep.running = true;
    ends_at_[key] = now + runtime_ms_;
  } else {
    rep.running = false;
    rep.exit_code = 0;
    rep.ended_at = now;
    unreported_ = true;
  }
  runs_.emplace(key, std::move(rep));
  return 1;
}

TimeMs EmulatedAgent::NextExitAt() const {
  TimeMs next = 0;
  for (const auto& [key, at] : ends_at_) {
    if (next == 0 || at < next) next = at;
  }
  return next;
}

void EmulatedAgent::FinishDue(TimeMs now) {
  for (auto it = ends_at_.begin(); it != ends_at_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    RunReport& rep = runs_.at(it->first);
    rep.running = false;
    rep.exit_code = 0;
    rep.ended_at = it->second;
    unreported_ = true;
    it = ends_at_.erase(it);
  }
}

}  // namespace corral::bench
