// Services in the core (core/service.h): the Services bookkeeping and the decisions that keep
// each service's desired replicas alive.
#include "head/core_services.h"

#include <algorithm>

#include "core/spec.h"
#include "head/head_core.h"
#include "head/service_guarantee.h"

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
  auto& v = failed_versions_[job.spec.service];
  const std::pair<TimeMs, int32_t> failure{job.ended_at, service->second.VersionOf(job.id)};
  v.insert(std::upper_bound(v.begin(), v.end(), failure), failure);
  if (v.size() > kKeptFailures) v.erase(v.begin(), v.end() - kKeptFailures);
}

void Services::Apply(const ClusterState& s, const Change& c) {
  if (const auto* e = std::get_if<JobSubmitted>(&c.what)) {
    if (!e->job->spec.service.empty()) live_[e->job->spec.service].insert(e->job->id);
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
  if (const auto* e = std::get_if<ServiceRemoved>(&c.what)) {
    failed_at_.erase(e->name);
    failed_versions_.erase(e->name);
  }
}

void Services::Rebuild(const ClusterState& s, TimeMs) {
  live_.clear();
  failed_at_.clear();
  failed_versions_.clear();
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

int32_t Services::FailuresSince(const std::string& service, int32_t version, TimeMs since) const {
  auto it = failed_versions_.find(service);
  if (it == failed_versions_.end()) return 0;
  return static_cast<int32_t>(
      std::count_if(it->second.begin(), it->second.end(),
                    [&](const auto& f) { return f.first >= since && f.second == version; }));
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
  if (auto it = state_.services.find(spec.name); it != state_.services.end()) {
    return Status(ErrorCode::kAlreadyExists,
                  "field 'name': a service '" + spec.name + "' exists already" +
                      (it->second.removing ? " (its replicas are draining)" : ""));
  }
  spec.owner = by.name;
  Job replica;
  replica.spec = ReplicaSpec(spec, false);
  replica.owner = spec.owner;
  CORRAL_RETURN_IF_ERROR(CheckNewJob(by, replica, now));
  CORRAL_RETURN_IF_ERROR(
      CheckServiceGuarantee(spec, state_.services, state_.queues, "min_replicas"));
  Service s;
  s.desired = std::clamp(spec.min_replicas, 1, spec.max_replicas);
  s.spec = std::move(spec);
  s.created_at = now;
  const std::string name = s.spec.name;
  Emit(by, now, ServiceCreated{std::move(s)});
  KeepReplicas(state_.services.at(name), now);
  return state_.services.at(name);
}

// The service `by` may manage, or why not (a removed one is absent; another user's private one
// too where `hide_private`).
Result<const Service*> HeadCore::ManagedService(const Caller& by, const std::string& name,
                                                const char* verb, bool hide_private) const {
  auto it = state_.services.find(name);
  if (it == state_.services.end() || it->second.removing ||
      (hide_private && !MayCallService(by, it->second))) {
    return NotFound("no service '" + name + "'");
  }
  if (!MayManageService(by, it->second)) {
    return PermissionDenied("user '" + by.name + "' may not " + verb + " service '" + name +
                            "' of '" + it->second.spec.owner + "'");
  }
  return &it->second;
}

Result<Service> HeadCore::RemoveService(const Caller& by, const std::string& name, TimeMs now) {
  auto found = ManagedService(by, name, "remove", false);
  if (!found.ok()) return found.status();
  Service gone = **found;
  explained_.ServiceFine(name);
  // Its replicas leave as in a scale-down: those serving drain first, and the service goes once
  // none is left to drain (KeepReplicas); the name is taken until then.
  Service removing = gone;
  removing.removing = true;
  Emit(by, now, ServiceUpdated{std::move(removing)});
  const std::set<JobId> live = services().Live(name);  // a copy: the stops change it
  for (JobId id : live) {
    LeaveReplica(state_.services.at(name), state_.jobs.at(id), "service removed by " + by.name,
                 now);
  }
  KeepReplicas(state_.services.at(name), now);
  return gone;
}

Result<Service> HeadCore::ScaleService(const Caller& by, const std::string& name, int32_t replicas,
                                       TimeMs now) {
  auto found = ManagedService(by, name, "scale", true);
  if (!found.ok()) return found.status();
  const Service& current = **found;
  const ServiceSpec& spec = current.spec;
  // To zero only where the service may be at zero (min_replicas 0): a request wakes it.
  const int32_t least = spec.min_replicas;
  if (replicas < least || replicas > spec.max_replicas) {
    return InvalidArgument("field 'replicas': " + std::to_string(replicas) +
                           " is outside the service's range [" + std::to_string(least) + ", " +
                           std::to_string(spec.max_replicas) + "]");
  }
  if (replicas != current.desired) {
    Emit(by, now,
         ServiceScaled{name, current.desired, replicas, ScaleCause::kHand,
                       "scaled " + std::to_string(current.desired) + " \u2192 " +
                           std::to_string(replicas) + " by " + by.name});
    KeepReplicas(state_.services.at(name), now);
  }
  return state_.services.at(name);
}

Result<int32_t> HeadCore::ReportServiceLoad(const Caller& by,
                                            const std::map<std::string, ServiceLoad>& load,
                                            TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("only the head reports services' load");
  int32_t scaled = 0;
  for (const auto& [name, sample] : load) {
    auto it = state_.services.find(name);
    if (it == state_.services.end() || it->second.removing) continue;
    autoscaler_.Record(name, now, sample, LongestScaleWindow(it->second.spec));
    auto decision = autoscaler_.Decide(it->second, now);
    if (!decision) continue;
    Emit(Caller::System(), now,
         ServiceScaled{name, it->second.desired, decision->to, ScaleCause::kAutoscaler,
                       std::move(decision->reason)});
    KeepReplicas(state_.services.at(name), now);
    ++scaled;
  }
  return scaled;
}

Result<Service> HeadCore::WakeService(const Caller& by, const std::string& name, TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("only the head wakes a service");
  auto it = state_.services.find(name);
  if (it == state_.services.end() || it->second.removing)
    return NotFound("no service '" + name + "'");
  if (it->second.desired == 0) {
    Emit(Caller::System(), now,
         ServiceScaled{name, 0, 1, ScaleCause::kRequest,
                       "scaled 0 \u2192 1: a request came with no replica"});
    KeepReplicas(state_.services.at(name), now);
  }
  return state_.services.at(name);
}

Result<Service> HeadCore::UpdateService(const Caller& by, const std::string& name,
                                        ServiceTemplatePatch patch, TimeMs now) {
  auto found = ManagedService(by, name, "update", true);
  if (!found.ok()) return found.status();
  const Service& s = **found;
  if (s.rollout) {
    return FailedPrecondition("service '" + name + "' is being updated to version " +
                              std::to_string(s.version) + " already; wait until it ends");
  }
  if (!patch.settings.empty()) return UpdateServiceSettings(by, s, patch.settings, now);
  auto job = PatchedTemplate(s.spec.job, patch);
  if (!job.ok()) return job.status();
  if (ToJson(*job) == ToJson(s.spec.job)) {
    return InvalidArgument("field 'spec': the update changes nothing in the replica template");
  }
  ServiceSpec next = s.spec;
  next.job = std::move(*job);
  Job replica;
  replica.spec = ReplicaSpec(next, false);
  replica.owner = s.spec.owner;
  CORRAL_RETURN_IF_ERROR(CheckNewJob(by, replica, now));
  // A new queue or new GPUs per replica must hold the guaranteed replicas as well (only then:
  // a quota lowered since bars no other update).
  if (patch.fields.count("queue") || patch.fields.count("gpus")) {
    CORRAL_RETURN_IF_ERROR(CheckServiceGuarantee(next, state_.services, state_.queues,
                                                 patch.fields.count("queue") ? "queue" : "gpus"));
  }
  Emit(by, now, ServiceRolloutStarted{name, std::move(next), patch.ready_timeout_ms});
  KeepReplicas(state_.services.at(name), now);
  return state_.services.at(name);
}

// Settings change at once and replace no replica: one service_updated change with the new
// spec, then, where `desired` falls outside the new range, a service_scaled change into it
// (cause hand) whose replicas leave or start as in any scaling.
Result<Service> HeadCore::UpdateServiceSettings(const Caller& by, const Service& s,
                                                const Json& settings, TimeMs now) {
  auto spec = PatchedSettings(s.spec, settings);
  if (!spec.ok()) return spec.status();
  if (ToJson(*spec) == ToJson(s.spec)) {
    return InvalidArgument("field '" + settings.begin().key() +
                           "': the update changes nothing in the service's settings");
  }
  if (settings.contains("replicas") || settings.contains("min_replicas")) {
    CORRAL_RETURN_IF_ERROR(
        CheckServiceGuarantee(*spec, state_.services, state_.queues,
                              settings.contains("replicas") ? "replicas" : "min_replicas"));
  }
  const std::string name = s.spec.name;
  const int32_t desired = s.desired;
  Service next = s;
  next.spec = std::move(*spec);
  const int32_t lo = next.spec.min_replicas, hi = next.spec.max_replicas;
  Emit(by, now, ServiceUpdated{std::move(next)});
  // Held at zero only while the service may be there.
  const int32_t into = std::clamp(desired, lo, hi);
  if (into != desired) {
    Emit(by, now,
         ServiceScaled{name, desired, into, ScaleCause::kHand,
                       "scaled " + std::to_string(desired) + " \u2192 " + std::to_string(into) +
                           ": the range is now [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           "] (updated by " + by.name + ")"});
  }
  KeepReplicas(state_.services.at(name), now);
  return state_.services.at(name);
}

// A live replica of a service that exists, for the head's own reports.
Result<const Job*> HeadCore::LiveReplica(const Caller& by, JobId id) const {
  if (!by.IsAdmin()) return PermissionDenied("only the head reports on a service's replicas");
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  if (it->second.spec.service.empty() || !state_.services.count(it->second.spec.service)) {
    return InvalidArgument("job " + std::to_string(id) + " is no service's replica");
  }
  if (IsTerminal(it->second.state)) {
    return FailedPrecondition("job " + std::to_string(id) + " already ended");
  }
  return &it->second;
}

Result<Job> HeadCore::ReplaceReplica(const Caller& by, JobId id, const std::string& reason,
                                     TimeMs now) {
  auto job = LiveReplica(by, id);
  if (!job.ok()) return job.status();
  StopReplica(by, **job, reason, now);
  return state_.jobs.at(id);
}

Result<Job> HeadCore::ReportReplicaReady(const Caller& by, JobId id, TimeMs now) {
  auto job = LiveReplica(by, id);
  if (!job.ok()) return job.status();
  const std::string name = (*job)->spec.service;
  if (!state_.services.at(name).ready.count(id)) {
    Emit(by, now, ServiceReplicaMarked{name, id, ReplicaMark::kReady, 0});
    KeepReplicas(state_.services.at(name), now);  // an update goes on at once
  }
  return state_.jobs.at(id);
}

Result<Job> HeadCore::ReportReplicaDrained(const Caller& by, JobId id, TimeMs now) {
  auto job = LiveReplica(by, id);
  if (!job.ok()) return job.status();
  const std::string name = (*job)->spec.service;
  if (state_.services.at(name).draining.count(id)) {
    StopReplica(Caller::System(), **job, "drained: no request in flight", now);
    KeepReplicas(state_.services.at(name), now);
  }
  return state_.jobs.at(id);
}

std::vector<ServiceView> HeadCore::ListServices(const Caller& by) const {
  std::vector<ServiceView> out;
  for (const auto& [name, s] : state_.services) {
    // One being removed only for admins: the head's proxy drains its replicas.
    if (MayCallService(by, s) && (!s.removing || by.IsAdmin())) out.push_back(ViewOf(by, s));
  }
  return out;
}

Result<ServiceView> HeadCore::GetService(const Caller& by, const std::string& name) const {
  auto it = state_.services.find(name);
  // Another user's private service is reported as absent: names are not for everyone to probe.
  if (it == state_.services.end() || it->second.removing || !MayCallService(by, it->second)) {
    return NotFound("no service '" + name + "'");
  }
  return ViewOf(by, it->second);
}

ServiceView HeadCore::ViewOf(const Caller& by, const Service& s) const {
  ServiceView v{s, {}, ""};
  // Its environment (which may hold secrets) only to those who manage it, as a job's.
  if (!MayManageService(by, s)) {
    v.service.spec.job.env.clear();
    if (v.service.rollout) v.service.rollout->from.job.env.clear();
  }
  v.note = explained_.ServiceNote(s.spec.name);
  for (JobId id : services().Live(s.spec.name)) {
    const Job& job = state_.jobs.at(id);
    ServiceReplica r{id, job.state};
    r.version = s.VersionOf(id);
    r.ready = s.ready.count(id) > 0;
    r.draining = s.draining.count(id) > 0;
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

}  // namespace corral::head
