#include "sim/emulated_node.h"

#include <set>

namespace corral::sim {

void EmulatedNode::Registered(uint64_t agent_epoch) {
  up_ = true;
  agent_epoch_ = agent_epoch;
  desired_.Reset();
  processes_.clear();
}

bool EmulatedNode::Apply(SyncResponse answer, TimeMs now, std::vector<ProcessChange>* changes) {
  if (!up_ || answer.reregister || !desired_.Apply(std::move(answer))) return false;
  std::set<std::pair<std::string, int32_t>> wanted;
  for (const auto& [job, orders] : desired_.by_job()) {
    for (const RunOrder& o : orders) {
      auto key = std::pair(o.run_id, o.replica);
      wanted.insert(key);
      auto it = processes_.find(key);
      if (it == processes_.end()) {
        if (o.stop) continue;  // stopped before it started: nothing to run
        Process p;
        p.number = next_process_++;
        p.report.run_id = o.run_id;
        p.report.replica = o.replica;
        p.report.running = true;
        p.report.started_at = now;
        processes_.emplace(key, p);
        changes->push_back(
            {ProcessChange::Kind::kStarted, o.job_id, o.attempt, o.replica, p.number, o.datasets});
      } else if (o.stop && it->second.report.running && !it->second.stopping) {
        it->second.stopping = true;
        changes->push_back(
            {ProcessChange::Kind::kStopOrdered, o.job_id, o.attempt, o.replica, it->second.number});
      }
    }
  }
  // What the head no longer lists is over for it: a process still running is killed (as the
  // real agent stops a run it is not asked to run), an exited one forgotten.
  std::erase_if(processes_, [&](const auto& e) {
    if (wanted.count(e.first)) return false;
    if (e.second.report.running) {
      RunId id;
      if (ParseRunId(e.first.first, &id)) {
        changes->push_back(
            {ProcessChange::Kind::kGone, id.job, id.attempt, e.first.second, e.second.number});
      }
    }
    return true;
  });
  return true;
}

bool EmulatedNode::Exit(uint64_t process, int32_t exit_code, TimeMs now) {
  for (auto& [key, p] : processes_) {
    if (p.number != process) continue;
    if (!p.report.running) return false;
    p.report.running = false;
    p.report.exit_code = exit_code;
    p.report.ended_at = now;
    return true;
  }
  return false;
}

void EmulatedNode::Fail() {
  up_ = false;
  processes_.clear();
  desired_.Reset();
}

bool EmulatedNode::Staging(uint64_t process, const std::string& note) {
  for (auto& [key, p] : processes_) {
    if (p.number != process) continue;
    p.report.staging = true;
    p.report.note = note;
    return true;
  }
  return false;
}

bool EmulatedNode::Begin(uint64_t process, TimeMs now) {
  for (auto& [key, p] : processes_) {
    if (p.number != process) continue;
    if (!p.report.running) return false;
    p.report.staging = false;
    p.report.note.clear();
    p.report.started_at = now;
    return true;
  }
  return false;
}

SyncRequest EmulatedNode::Report() const {
  SyncRequest r;
  r.node = registration_.name;
  r.agent_epoch = agent_epoch_;
  r.desired_version = desired_.version();
  r.deltas = true;
  r.datasets = datasets_;
  r.runs.reserve(processes_.size());
  for (const auto& [key, p] : processes_) r.runs.push_back(p.report);
  return r;
}

}  // namespace corral::sim
