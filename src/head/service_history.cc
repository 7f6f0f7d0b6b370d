#include "head/service_history.h"

#include <tuple>
#include <type_traits>
#include <variant>

#include "core/service.h"
#include "core/stop_cause.h"

namespace corral::head {
namespace {

std::string ReplicaText(JobId job, const std::string& what) {
  return "replica " + std::to_string(job) + " " + what;
}

// A change about a service itself: its name and the line it reads as; nullopt for others.
std::optional<std::pair<std::string, std::string>> ServiceLine(const ChangeKind& what) {
  return std::visit(
      [](const auto& c) -> std::optional<std::pair<std::string, std::string>> {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, ServiceCreated>) {
          return std::pair{c.service->spec.name,
                           "created with " + std::to_string(c.service->desired) + " replica(s)"};
        } else if constexpr (std::is_same_v<T, ServiceUpdated>) {
          return std::pair{c.service->spec.name,
                           "updated: version " + std::to_string(c.service->version) +
                               ", replicas " + std::to_string(c.service->spec.min_replicas) +
                               " to " + std::to_string(c.service->spec.max_replicas)};
        } else if constexpr (std::is_same_v<T, ServiceRemoved>) {
          return std::pair{c.name, std::string("removed")};
        } else if constexpr (std::is_same_v<T, ServiceRolloutStarted>) {
          return std::pair{c.name, "rolling update started (ready timeout " +
                                       ServiceDurationText(c.ready_timeout_ms) + ")"};
        } else if constexpr (std::is_same_v<T, ServiceRolloutEnded>) {
          return std::pair{c.name,
                           (c.rolled_back ? "update rolled back: " : "update done: ") + c.reason};
        } else if constexpr (std::is_same_v<T, ServiceReplicaMarked>) {
          return std::pair{c.name, ReplicaText(c.job, ReplicaMarkName(c.mark))};
        } else if constexpr (std::is_same_v<T, ServiceScaled>) {
          return std::pair{c.name, c.reason};
        } else {
          return std::nullopt;
        }
      },
      what);
}

// A change about a job: its id and the line it reads as when the job is a replica.
std::optional<std::pair<JobId, std::string>> ReplicaLine(const ChangeKind& what) {
  if (const auto* s = std::get_if<StopRequested>(&what)) {
    return std::pair{s->job, ReplicaText(s->job, std::string("stopping (") +
                                                     StopCauseName(s->cause) + "): " + s->reason)};
  }
  if (const auto* r = std::get_if<RunEnded>(&what)) {
    std::string line = std::string("run ended ") + RunStateName(r->run_state);
    if (r->exit_code != 0) line += " (exit " + std::to_string(r->exit_code) + ")";
    if (!r->reason.empty()) line += ": " + r->reason;
    return std::pair{r->job, ReplicaText(r->job, line)};
  }
  if (const auto* e = std::get_if<JobEnded>(&what)) {
    return std::pair{e->job, ReplicaText(e->job, std::string("ended ") + JobStateName(e->state) +
                                                     (e->reason.empty() ? "" : ": " + e->reason))};
  }
  return std::nullopt;
}

// The service among `names` that `what` concerns, or nullptr; a replica's submission is noted
// in `replicas`, so that its later changes are recognised. Decided before any line is written:
// most changes kept concern no service asked for.
const std::string* ConcernedService(const ChangeKind& what, const std::set<std::string>& names,
                                    std::map<JobId, std::string>& replicas) {
  const std::string* own = std::visit(
      [](const auto& c) -> const std::string* {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, ServiceCreated> || std::is_same_v<T, ServiceUpdated>) {
          return &c.service->spec.name;
        } else if constexpr (std::is_same_v<T, ServiceRemoved> ||
                             std::is_same_v<T, ServiceRolloutStarted> ||
                             std::is_same_v<T, ServiceRolloutEnded> ||
                             std::is_same_v<T, ServiceReplicaMarked> ||
                             std::is_same_v<T, ServiceScaled>) {
          return &c.name;
        } else {
          return nullptr;
        }
      },
      what);
  if (own) return names.count(*own) ? own : nullptr;
  if (const auto* s = std::get_if<JobSubmitted>(&what)) {
    if (!names.count(s->job->spec.service)) return nullptr;
    return &(replicas[s->job->id] = s->job->spec.service);
  }
  JobId job = 0;
  if (const auto* r = std::get_if<StopRequested>(&what)) job = r->job;
  if (const auto* r = std::get_if<RunEnded>(&what)) job = r->job;
  if (const auto* r = std::get_if<JobEnded>(&what)) job = r->job;
  auto it = job == 0 ? replicas.end() : replicas.find(job);
  return it == replicas.end() ? nullptr : &it->second;
}

void AddEvent(ServiceHistory& h, ServiceEvent e, size_t max) {
  if (max == 0) return;
  h.events.push_back(std::move(e));
  if (h.events.size() > max) h.events.erase(h.events.begin());
}

}  // namespace

std::map<std::string, ServiceHistory> ServiceHistories(const std::deque<Change>& recent,
                                                       const std::set<std::string>& names,
                                                       size_t max) {
  std::map<std::string, ServiceHistory> out;
  for (const std::string& n : names) out[n];
  std::map<JobId, std::string> replicas;  // replicas submitted within `recent`: their service
  for (const Change& c : recent) {
    const std::string* service = ConcernedService(c.what, names, replicas);
    if (!service) continue;
    ServiceEvent e{c.revision, c.at, ChangeName(c.what), 0, "", ""};
    if (auto line = ServiceLine(c.what)) {
      e.text = std::move(line->second);
      if (const auto* m = std::get_if<ServiceReplicaMarked>(&c.what)) e.job = m->job;
    } else if (const auto* s = std::get_if<JobSubmitted>(&c.what)) {
      e.job = s->job->id;
      e.text = ReplicaText(s->job->id, "submitted");
    } else if (auto r = ReplicaLine(c.what)) {
      std::tie(e.job, e.text) = std::move(*r);
    }
    ServiceHistory& h = out[*service];
    if (const auto* s = std::get_if<ServiceScaled>(&c.what)) {
      e.cause = ScaleCauseName(s->cause);
      h.last_scale = e;
    }
    AddEvent(h, std::move(e), max);
  }
  return out;
}

}  // namespace corral::head
