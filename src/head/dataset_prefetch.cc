#include "head/dataset_prefetch.h"

#include <algorithm>
#include <set>

#include "core/dataset_key.h"
#include "head/datasets_lacked.h"

namespace corral::head {
namespace {

// The job's datasets that `node` does not hold, but those of budgeted sources.
std::vector<DatasetRef> DatasetsLackedOn(const Job& job, const std::string& node,
                                         const DatasetHolders& holders,
                                         const std::set<std::string>& budgeted) {
  std::vector<DatasetRef> out;
  for (const DatasetRef* d : DatasetsLacked(job, node, holders)) {
    if (!budgeted.count(DatasetSourceKey(d->source))) out.push_back(*d);
  }
  return out;
}

// Every (node, job) pair that has an order in one plan and not the other, or a different one.
std::vector<std::pair<std::string, JobId>> OrdersChanged(
    const std::map<std::string, std::vector<PrefetchOrder>>& before,
    const std::map<std::string, std::vector<PrefetchOrder>>& after) {
  std::set<std::pair<std::string, JobId>> changed;
  auto diff = [&](const auto& a, const auto& b) {
    for (const auto& [node, orders] : a) {
      auto other = b.find(node);
      for (const PrefetchOrder& o : orders) {
        const bool same = other != b.end() && std::find(other->second.begin(), other->second.end(),
                                                        o) != other->second.end();
        if (!same) changed.emplace(node, o.job_id);
      }
    }
  };
  diff(before, after);
  diff(after, before);
  return {changed.begin(), changed.end()};
}

}  // namespace

std::vector<std::pair<std::string, JobId>> DatasetPrefetch::Plan(
    const std::vector<sched::Reservation>& reservations, const std::map<JobId, Job>& jobs,
    const DatasetHolders& holders, const std::set<std::string>& budgeted) {
  std::map<std::string, std::vector<PrefetchOrder>> orders;
  reserved_.clear();
  for (const sched::Reservation& r : reservations) {
    if (reserved_.size() >= kJobs) break;
    auto it = jobs.find(r.job);
    if (it == jobs.end() || it->second.state != JobState::kPending ||
        it->second.spec.datasets.empty()) {
      continue;
    }
    const Job& job = it->second;
    reserved_[job.id] = r.nodes;
    for (const std::string& node : r.nodes) {
      std::vector<DatasetRef> lacked = DatasetsLackedOn(job, node, holders, budgeted);
      if (!lacked.empty()) orders[node].push_back(PrefetchOrder{job.id, job.owner, lacked});
    }
  }
  auto changed = OrdersChanged(orders_, orders);
  orders_ = std::move(orders);
  return changed;
}

const std::vector<PrefetchOrder>& DatasetPrefetch::For(const std::string& node) const {
  static const std::vector<PrefetchOrder> kNone;
  auto it = orders_.find(node);
  return it == orders_.end() ? kNone : it->second;
}

bool DatasetPrefetch::Asked(JobId job, const std::string& node) const {
  for (const PrefetchOrder& o : For(node)) {
    if (o.job_id == job) return true;
  }
  return false;
}

void DatasetPrefetch::Observe(const std::string& node, const std::vector<PrefetchReport>& reports) {
  if (reports.empty()) {
    notes_.erase(node);
    return;
  }
  std::map<JobId, std::string>& notes = notes_[node];
  notes.clear();
  for (const PrefetchReport& r : reports) notes[r.job_id] = r.note;
}

// A reserved job's reason gains, per reserved node, the note of its fetch ahead there while
// it goes on, or that the node holds its data once it does.
void DatasetPrefetch::Explain(Job* view) const {
  auto r = reserved_.find(view->id);
  if (r == reserved_.end() || view->state != JobState::kPending) return;
  for (const std::string& node : r->second) {
    std::string note;
    if (!Asked(view->id, node)) {
      note = "its data is cached on " + node;
    } else if (auto n = notes_.find(node); n != notes_.end() && n->second.count(view->id)) {
      note = n->second.at(view->id);
    } else {
      note = "its data is to be fetched ahead on " + node;
    }
    view->pending_reason += (view->pending_reason.empty() ? "" : "; ") + note;
  }
}

}  // namespace corral::head
