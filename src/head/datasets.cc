#include "head/datasets.h"

#include "head/cluster_state.h"

namespace corral::head {

// --- DatasetCatalog ---

void DatasetCatalog::Apply(const DatasetAdded& c) { datasets_[c.dataset.name] = c.dataset; }

void DatasetCatalog::Apply(const DatasetRemoved& c) { datasets_.erase(c.name); }

const Dataset* DatasetCatalog::Find(const std::string& name) const {
  auto it = datasets_.find(name);
  return it == datasets_.end() ? nullptr : &it->second;
}

Json DatasetCatalog::ToJson() const {
  Json all = Json::array();
  for (const auto& [name, d] : datasets_) all.push_back(corral::ToJson(d));
  return all;
}

Result<DatasetCatalog> DatasetCatalog::FromJson(const Json& j) {
  if (!j.is_array()) return Internal("datasets: not a JSON array");
  DatasetCatalog out;
  for (const Json& e : j) {
    auto d = DatasetFromJson(e);
    if (!d.ok()) return d.status();
    out.datasets_[d->name] = std::move(*d);
  }
  return out;
}

// --- DatasetUsers ---

void DatasetUsers::Update(const ClusterState& s, JobId id) {
  auto it = s.jobs.find(id);
  const bool uses = it != s.jobs.end() && !IsTerminal(it->second.state);
  if (it == s.jobs.end()) {
    for (auto u = users_.begin(); u != users_.end();) {
      u->second.erase(id);
      u = u->second.empty() ? users_.erase(u) : std::next(u);
    }
    return;
  }
  for (const DatasetRef& r : it->second.spec.datasets) {
    if (uses) {
      users_[r.name].insert(id);
    } else if (auto u = users_.find(r.name); u != users_.end()) {
      u->second.erase(id);
      if (u->second.empty()) users_.erase(u);
    }
  }
}

void DatasetUsers::Apply(const ClusterState& s, const Change& c) {
  if (const auto* e = std::get_if<JobSubmitted>(&c.what)) {
    Update(s, e->job.id);
  } else if (const auto* e = std::get_if<ArraySubmitted>(&c.what)) {
    for (size_t i = 0; i < e->size(); ++i) Update(s, e->job.id + i);
  } else if (const auto* e = std::get_if<RunEnded>(&c.what)) {
    Update(s, e->job);
  } else if (const auto* e = std::get_if<JobEnded>(&c.what)) {
    Update(s, e->job);
  } else if (const auto* e = std::get_if<JobsRetired>(&c.what)) {
    for (JobId id : e->jobs) Update(s, id);
  }
}

void DatasetUsers::Rebuild(const ClusterState& s, TimeMs) {
  users_.clear();
  for (const auto& [id, job] : s.jobs) {
    if (IsTerminal(job.state)) continue;
    for (const DatasetRef& r : job.spec.datasets) users_[r.name].insert(id);
  }
}

const std::set<JobId>& DatasetUsers::Of(const std::string& name) const {
  static const std::set<JobId> kNone;
  auto it = users_.find(name);
  return it == users_.end() ? kNone : it->second;
}

}  // namespace corral::head
