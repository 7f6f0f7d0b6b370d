#include "head/explanations.h"

namespace corral::head {

void Explanations::Clear() {
  waiting_.clear();
  staging_.clear();
  estimates_.clear();
  service_notes_.clear();
}

void Explanations::Estimated(std::vector<sched::StartEstimate> estimates) {
  estimates_.clear();
  for (sched::StartEstimate& e : estimates) {
    JobId id = e.job;
    estimates_.emplace(id, std::move(e));
  }
}

void Explanations::Ended(JobId job) {
  waiting_.erase(job);
  staging_.erase(job);
}

void Explanations::Explain(Job* view) const {
  if (auto r = waiting_.find(view->id); r != waiting_.end()) {
    view->pending_code = r->second.code;
    view->pending_reason = r->second.text;
  }
  // A placed run's staging, or a running one's stage-out.
  if (auto s = staging_.find(view->id);
      s != staging_.end() &&
      (view->state == JobState::kScheduled || view->state == JobState::kRunning)) {
    view->pending_reason = s->second;
  }
  if (auto e = estimates_.find(view->id);
      e != estimates_.end() && view->state == JobState::kPending && !view->held) {
    view->estimated_start = e->second.start == sched::kUnknownTime ? 0 : e->second.start;
    view->estimated_nodes = e->second.nodes;
    view->estimate_confidence = e->second.confidence;
  }
}

std::string Explanations::ServiceNote(const std::string& service) const {
  auto n = service_notes_.find(service);
  return n == service_notes_.end() ? std::string() : n->second;
}

}  // namespace corral::head
