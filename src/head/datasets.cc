#include "head/datasets.h"

#include "core/dataset_key.h"
#include "head/cluster_state.h"

namespace corral::head {

// --- DatasetCatalog ---
//
// Several versions under one name at once: the catalog is keyed by "NAME@VERSION"
// (core/dataset_key.h). DatasetRemoved names one version, or every version of its name without
// one (what it always meant when a name had one version). Find("NAME") is
// the name's latest version: the one added last (equal times: the greater version).

void DatasetCatalog::Apply(const DatasetAdded& c) {
  datasets_[DatasetKey(c.dataset.name, c.dataset.version)] = c.dataset;
}

void DatasetCatalog::Apply(const DatasetRemoved& c) {
  if (!c.version.empty()) {
    datasets_.erase(DatasetKey(c.name, c.version));
    return;
  }
  const std::string prefix = c.name + "@";
  auto it = datasets_.lower_bound(prefix);
  while (it != datasets_.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
    it = datasets_.erase(it);
  }
}

// The last measurement stands for the source: a source's rate changes with its load, and the
// latest stage-in says most about the next one.
void DatasetCatalog::Apply(const SourceRateMeasured& c, TimeMs at) {
  if (c.bytes > 0 && c.ms > 0) sources_[c.source] = SourceRate{c.bytes, c.ms, at};
}

std::vector<DatasetSourceRate> DatasetCatalog::SourceRates() const {
  std::vector<DatasetSourceRate> out;
  for (const auto& [source, r] : sources_) {
    out.push_back(DatasetSourceRate{source, r.BytesPerSecond(), r.bytes, r.ms, r.at});
  }
  return out;
}

const Dataset* DatasetCatalog::Find(const std::string& name) const {
  const auto [bare, version] = SplitDatasetKey(name);
  if (!version.empty()) {
    auto it = datasets_.find(name);
    return it == datasets_.end() ? nullptr : &it->second;
  }
  const std::string prefix = bare + "@";
  const Dataset* latest = nullptr;
  for (auto it = datasets_.lower_bound(prefix);
       it != datasets_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (latest == nullptr || it->second.added_at >= latest->added_at) latest = &it->second;
  }
  return latest;
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
    out.datasets_[DatasetKey(d->name, d->version)] = std::move(*d);
  }
  return out;
}

Json DatasetCatalog::SourcesToJson() const {
  Json all = Json::object();
  for (const auto& [source, r] : sources_) {
    all[source] = Json{{"bytes", r.bytes}, {"ms", r.ms}, {"at", r.at}};
  }
  return all;
}

Status DatasetCatalog::SourcesFromJson(const Json& j) {
  if (!j.is_object()) return Internal("dataset sources: not a JSON object");
  sources_.clear();
  for (const auto& [source, r] : j.items()) {
    if (!r.is_object() || !r.contains("bytes") || !r.contains("ms")) {
      return Internal("dataset sources: '" + source + "' wants bytes and ms");
    }
    sources_[source] = SourceRate{r.at("bytes").get<int64_t>(), r.at("ms").get<DurationMs>(),
                                  r.value("at", TimeMs{0})};
  }
  return Status::Ok();
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
      users_[DatasetKey(r.name, r.version)].insert(id);
    } else if (auto u = users_.find(DatasetKey(r.name, r.version)); u != users_.end()) {
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
    for (const DatasetRef& r : job.spec.datasets) users_[DatasetKey(r.name, r.version)].insert(id);
  }
}

const std::set<JobId>& DatasetUsers::Of(const std::string& name) const {
  static const std::set<JobId> kNone;
  auto it = users_.find(name);
  return it == users_.end() ? kNone : it->second;
}

}  // namespace corral::head
