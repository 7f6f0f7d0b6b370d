#include "head/datasets.h"

#include <algorithm>

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

// --- the sources' budgets and the line of stage-ins ---
//
// The budget holds by construction: at most Slots() nodes of admitted stage-ins fetch from a
// source at once, and each reads at most rate / Slots() (NodeRate), so together they read at
// most the rate. A run whose nodes alone are more than the slots is admitted only when nothing
// else fetches from the source, and its nodes share the rate among themselves.

void DatasetCatalog::Apply(const SourceLimitSet& c) {
  if (c.rate == 0 && c.fetches == 0) {
    limits_.erase(c.source);
  } else {
    limits_[c.source] = SourceLimit{c.rate, c.fetches};
  }
  ++budget_version_;
}

void DatasetCatalog::Apply(const StageInQueued& c) {
  stage_ins_.push_back(StageIn{c.job, c.attempt, c.fetches, false});
  ++budget_version_;
}

void DatasetCatalog::Apply(const StageInAdmitted& c) {
  for (StageIn& in : stage_ins_) {
    if (in.job == c.job && in.attempt == c.attempt) in.admitted = true;
  }
  ++budget_version_;
}

void DatasetCatalog::PruneStageIns(const std::map<JobId, Job>& jobs) {
  const size_t before = stage_ins_.size();
  std::erase_if(stage_ins_, [&](const StageIn& in) {
    auto it = jobs.find(in.job);
    if (it == jobs.end() || it->second.state != JobState::kScheduled) return true;
    const Run* run = it->second.CurrentRun();
    return run == nullptr || run->attempt != in.attempt || run->stop_requested;
  });
  if (stage_ins_.size() != before) ++budget_version_;
}

std::vector<const DatasetCatalog::StageIn*> DatasetCatalog::Admissible() const {
  std::map<std::string, int32_t> used;
  for (const StageIn& in : stage_ins_) {
    if (!in.admitted) continue;
    for (const auto& [source, nodes] : in.fetches) used[source] += nodes;
  }
  std::set<std::string> behind;  // sources with a run waiting earlier in the line
  std::vector<const StageIn*> out;
  for (const StageIn& in : stage_ins_) {
    if (in.admitted) continue;
    bool fits = true;
    for (const auto& [source, nodes] : in.fetches) {
      auto limit = limits_.find(source);
      const int32_t slots = limit == limits_.end() ? 0 : limit->second.Slots();
      const int32_t now = used[source];
      if (behind.count(source) || (slots > 0 && now > 0 && now + nodes > slots)) fits = false;
    }
    if (fits) {
      out.push_back(&in);
      for (const auto& [source, nodes] : in.fetches) used[source] += nodes;
    } else {
      for (const auto& [source, nodes] : in.fetches) behind.insert(source);
    }
  }
  return out;
}

int64_t DatasetCatalog::NodeRate(const StageIn& in, const std::string& source) const {
  auto limit = limits_.find(source);
  auto nodes = in.fetches.find(source);
  if (limit == limits_.end() || limit->second.rate <= 0 || nodes == in.fetches.end()) return 0;
  const int64_t shares = std::max<int64_t>(limit->second.Slots(), nodes->second);
  return std::max<int64_t>(1, limit->second.rate / shares);
}

int32_t DatasetCatalog::Fetching(const std::string& source) const {
  int32_t n = 0;
  for (const StageIn& in : stage_ins_) {
    auto f = in.fetches.find(source);
    if (in.admitted && f != in.fetches.end()) n += f->second;
  }
  return n;
}

std::pair<std::string, int32_t> DatasetCatalog::PlaceInLine(const StageIn& in) const {
  // Its place among the waiting runs of each of its sources; the source where it stands
  // farthest back is what it waits for.
  std::pair<std::string, int32_t> worst{in.fetches.empty() ? "" : in.fetches.begin()->first, 1};
  for (const auto& [source, nodes] : in.fetches) {
    int32_t place = 1;
    for (const StageIn& other : stage_ins_) {
      if (&other == &in) break;
      if (!other.admitted && other.fetches.count(source)) ++place;
    }
    if (place > worst.second) worst = {source, place};
  }
  return worst;
}

Json DatasetCatalog::BudgetsToJson() const {
  Json limits = Json::object();
  for (const auto& [source, l] : limits_) {
    limits[source] = Json{{"rate", l.rate}, {"fetches", l.fetches}};
  }
  Json line = Json::array();
  for (const StageIn& in : stage_ins_) {
    line.push_back(Json{{"job", in.job},
                        {"attempt", in.attempt},
                        {"fetches", in.fetches},
                        {"admitted", in.admitted}});
  }
  return Json{{"limits", limits}, {"stage_ins", line}};
}

Status DatasetCatalog::BudgetsFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("limits") || !j.contains("stage_ins")) {
    return Internal("dataset budgets: want an object with limits and stage_ins");
  }
  try {
    limits_.clear();
    for (const auto& [source, l] : j.at("limits").items()) {
      limits_[source] = SourceLimit{l.at("rate").get<int64_t>(), l.at("fetches").get<int32_t>()};
    }
    stage_ins_.clear();
    for (const Json& e : j.at("stage_ins")) {
      stage_ins_.push_back(StageIn{e.at("job").get<JobId>(), e.at("attempt").get<int32_t>(),
                                   e.at("fetches").get<std::map<std::string, int32_t>>(),
                                   e.at("admitted").get<bool>()});
    }
  } catch (const Json::exception& e) {
    return Internal(std::string("dataset budgets: ") + e.what());
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
    Update(s, e->job->id);
  } else if (const auto* e = std::get_if<ArraySubmitted>(&c.what)) {
    for (size_t i = 0; i < e->size(); ++i) Update(s, e->job->id + i);
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
