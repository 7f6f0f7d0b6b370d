// Services in the core (core/service.h): the Services bookkeeping and the decisions that keep
// each service's desired replicas alive.
#include "head/core_services.h"

#include <algorithm>

#include "core/spec.h"
#include "head/head_core.h"

namespace corral::head {
namespace {

const std::set<JobId>& NoServiceReplicas() {
  static const std::set<JobId> kNone;
  return kNone;
}

const std::vector<TimeMs>& NoServiceFailures() {
  static const std::vector<TimeMs> kNone;
  return kNone;
}

bool MayManageService(const Caller& by, const Service& s) {
  return by.IsAdmin() || (by.kind == Caller::Kind::kUser && by.name == s.spec.owner);
}

// The owner and admins; any authenticated user where the service says so.
bool MayCallService(const Caller& by, const Service& s) {
  return MayManageService(by, s) || (by.kind == Caller::Kind::kUser && s.spec.any_user);
}

}  // namespace

// --- the bookkeeping ---

void Services::Ended(const ClusterState& s, const Job& job) {
  auto it = live_.find(job.spec.service);
  if (it != live_.end() && it->second.erase(job.id) && it->second.empty()) live_.erase(it);
  // Failures count for the service as it is now: not for one removed, nor for the replicas of
  // an earlier service of the same name.
  auto service = s.services.find(job.spec.service);
  if (job.state != JobState::kFailed || service == s.services.end() ||
      job.submitted_at < service->second.created_at) {
    return;
  }
  std::vector<TimeMs>& f = failed_at_[job.spec.service];
  f.insert(std::upper_bound(f.begin(), f.end(), job.ended_at), job.ended_at);
  if (f.size() > kKeptFailures) f.erase(f.begin(), f.end() - kKeptFailures);
}

void Services::Apply(const ClusterState& s, const Change& c) {
  if (const auto* e = std::get_if<JobSubmitted>(&c.what)) {
    if (!e->job.spec.service.empty()) live_[e->job.spec.service].insert(e->job.id);
    return;
  }
  JobId ended = 0;
  if (const auto* e = std::get_if<RunEnded>(&c.what); e && IsTerminal(e->job_state)) ended = e->job;
  if (const auto* e = std::get_if<JobEnded>(&c.what)) ended = e->job;
  if (ended != 0) {
    auto it = s.jobs.find(ended);
    if (it != s.jobs.end() && !it->second.spec.service.empty()) Ended(s, it->second);
    return;
  }
  if (const auto* e = std::get_if<ServiceRemoved>(&c.what)) failed_at_.erase(e->name);
}

void Services::Rebuild(const ClusterState& s, TimeMs) {
  live_.clear();
  failed_at_.clear();
  for (const auto& [id, job] : s.jobs) {
    if (job.spec.service.empty()) continue;
    if (!IsTerminal(job.state)) {
      live_[job.spec.service].insert(id);
    } else {
      Ended(s, job);
    }
  }
}

Json Services::Summary() const {
  Json out = Json::object();
  for (const auto& [name, jobs] : live_)
    out[name]["live"] = Json(std::vector<JobId>(jobs.begin(), jobs.end()));
  for (const auto& [name, at] : failed_at_) out[name]["failed_at"] = Json(at);
  return out;
}

const std::set<JobId>& Services::Live(const std::string& service) const {
  auto it = live_.find(service);
  return it == live_.end() ? NoServiceReplicas() : it->second;
}

const std::vector<TimeMs>& Services::FailedAt(const std::string& service) const {
  auto it = failed_at_.find(service);
  return it == failed_at_.end() ? NoServiceFailures() : it->second;
}

DurationMs CrashBackoff(const std::vector<TimeMs>& failed_at, TimeMs now, int32_t* recent) {
  *recent = static_cast<int32_t>(
      failed_at.end() - std::lower_bound(failed_at.begin(), failed_at.end(), now - kCrashWindow));
  if (*recent == 0) return 0;
  const DurationMs delay = std::min<DurationMs>(kSecond << std::min(*recent - 1, 6), kMinute);
  return std::max<DurationMs>(0, failed_at.back() + delay - now);
}

// --- the core's commands ---

Result<Service> HeadCore::CreateService(const Caller& by, ServiceSpec spec, TimeMs now) {
  if (by.kind != Caller::Kind::kUser) return PermissionDenied("only users create services");
  if (state_.services.count(spec.name)) {
    return Status(ErrorCode::kAlreadyExists,
                  "field 'name': a service '" + spec.name + "' exists already");
  }
  spec.owner = by.name;
  Job replica;
  replica.spec = ReplicaSpec(spec, false);
  replica.owner = spec.owner;
  CORRAL_RETURN_IF_ERROR(CheckNewJob(by, replica, now));
  Service s;
  s.desired = std::clamp(spec.min_replicas, 1, spec.max_replicas);
  s.spec = std::move(spec);
  s.created_at = now;
  const std::string name = s.spec.name;
  Emit(by, now, ServiceCreated{std::move(s)});
  KeepReplicas(state_.services.at(name), now);
  return state_.services.at(name);
}

Result<Service> HeadCore::RemoveService(const Caller& by, const std::string& name, TimeMs now) {
  auto it = state_.services.find(name);
  if (it == state_.services.end()) return NotFound("no service '" + name + "'");
  if (!MayManageService(by, it->second)) {
    return PermissionDenied("user '" + by.name + "' may not remove service '" + name + "' of '" +
                            it->second.spec.owner + "'");
  }
  Service gone = it->second;
  Emit(by, now, ServiceRemoved{name});
  explained_.ServiceFine(name);
  const std::set<JobId> live = services().Live(name);  // a copy: the stops change it
  for (JobId id : live) StopReplica(by, state_.jobs.at(id), "service removed by " + by.name, now);
  return gone;
}

Result<Service> HeadCore::ScaleService(const Caller& by, const std::string& name, int32_t replicas,
                                       TimeMs now) {
  auto it = state_.services.find(name);
  if (it == state_.services.end() || !MayCallService(by, it->second)) {
    return NotFound("no service '" + name + "'");
  }
  if (!MayManageService(by, it->second)) {
    return PermissionDenied("user '" + by.name + "' may not scale service '" + name + "' of '" +
                            it->second.spec.owner + "'");
  }
  const ServiceSpec& spec = it->second.spec;
  if (replicas < std::max(spec.min_replicas, 1) || replicas > spec.max_replicas) {
    return InvalidArgument("field 'replicas': " + std::to_string(replicas) +
                           " is outside the service's range [" +
                           std::to_string(std::max(spec.min_replicas, 1)) + ", " +
                           std::to_string(spec.max_replicas) + "]");
  }
  if (replicas != it->second.desired) {
    Service s = it->second;
    s.desired = replicas;
    Emit(by, now, ServiceUpdated{std::move(s)});
    KeepReplicas(state_.services.at(name), now);
  }
  return state_.services.at(name);
}

Result<Job> HeadCore::ReplaceReplica(const Caller& by, JobId id, const std::string& reason,
                                     TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("only the head replaces a service's replicas");
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  if (it->second.spec.service.empty()) {
    return InvalidArgument("job " + std::to_string(id) + " is no service's replica");
  }
  if (IsTerminal(it->second.state)) {
    return FailedPrecondition("job " + std::to_string(id) + " already ended");
  }
  StopReplica(by, it->second, reason, now);
  return state_.jobs.at(id);
}

std::vector<ServiceView> HeadCore::ListServices(const Caller& by) const {
  std::vector<ServiceView> out;
  for (const auto& [name, s] : state_.services) {
    if (MayCallService(by, s)) out.push_back(ViewOf(by, s));
  }
  return out;
}

Result<ServiceView> HeadCore::GetService(const Caller& by, const std::string& name) const {
  auto it = state_.services.find(name);
  // Another user's private service is reported as absent: names are not for everyone to probe.
  if (it == state_.services.end() || !MayCallService(by, it->second)) {
    return NotFound("no service '" + name + "'");
  }
  return ViewOf(by, it->second);
}

// --- keeping replicas alive ---

ServiceView HeadCore::ViewOf(const Caller& by, const Service& s) const {
  ServiceView v{s, {}, ""};
  // Its environment (which may hold secrets) only to those who manage it, as a job's.
  if (!MayManageService(by, s)) v.service.spec.job.env.clear();
  v.note = explained_.ServiceNote(s.spec.name);
  for (JobId id : services().Live(s.spec.name)) {
    const Job& job = state_.jobs.at(id);
    ServiceReplica r{id, job.state};
    if (const Run* run = job.CurrentRun(); run && !IsRunOver(run->state)) {
      r.run_id = std::to_string(id) + "." + std::to_string(run->attempt);
      r.running = run->state == RunState::kRunning && !run->stop_requested;
      if (!run->placement.empty()) {
        r.node = run->placement[0].node;
        r.host = LayoutFor(job, *run).replica_hosts[0];
        r.port = s.spec.port > 0 ? s.spec.port : run->master_port;
      }
    }
    v.replicas.push_back(std::move(r));
  }
  return v;
}

void HeadCore::StopReplica(const Caller& by, const Job& job, const std::string& reason,
                           TimeMs now) {
  if (job.state == JobState::kPending) {
    Emit(by, now, JobEnded{job.id, JobState::kCancelled, reason});
  } else if (const Run* run = job.CurrentRun(); run && !run->stop_requested) {
    RequestStop(job, StopCause::kCancelled, reason, now);
  }
}

void HeadCore::KeepServices(TimeMs now) {
  std::vector<std::string> names;
  for (const auto& [name, s] : state_.services) names.push_back(name);
  for (const std::string& name : names) KeepReplicas(state_.services.at(name), now);
}

// Starts replicas up to `desired` (after a crash loop's backoff), or stops the newest above it.
void HeadCore::KeepReplicas(const Service& s, TimeMs now) {
  const std::string& name = s.spec.name;
  std::vector<JobId> live(services().Live(name).begin(), services().Live(name).end());
  int32_t count = 0;
  for (JobId id : live) {
    const Run* run = state_.jobs.at(id).CurrentRun();
    if (!(run && run->stop_requested)) ++count;  // one being stopped is no longer counted
  }
  for (auto it = live.rbegin(); it != live.rend() && count > s.desired; ++it) {
    StopReplica(Caller::System(), state_.jobs.at(*it),
                "service scaled to " + std::to_string(s.desired), now);
    --count;
  }
  explained_.ServiceFine(name);
  if (count >= s.desired) return;
  int32_t recent = 0;
  if (DurationMs wait = CrashBackoff(services().FailedAt(name), now, &recent); wait > 0) {
    explained_.ServiceShort(
        name, "crash loop: " + std::to_string(recent) + " replicas failed in the last " +
                  FormatDuration(kCrashWindow) + "; next replica in " + FormatDuration(wait));
    return;
  }
  for (; count < s.desired; ++count) {
    JobSpec spec = ReplicaSpec(s.spec, count >= s.spec.min_replicas);
    auto job = Submit(Caller::System(), std::move(spec), s.spec.owner, now);
    if (!job.ok()) {
      explained_.ServiceShort(name, "cannot start a replica: " + job.status().message());
      return;
    }
  }
}

}  // namespace corral::head
