// Datasets (core/dataset.h, head/datasets.h): users register them, each a typed change; a job
// may declare only registered ones, and the head resolves each to the content it names at
// submission, so that a later re-registration never changes what a queued job reads. A name
// may hold several versions at once (core/dataset_key.h): "NAME" is its latest, "NAME@V" one.
#include <set>

#include "core/dataset_key.h"
#include "head/datasets_lacked.h"
#include "head/head_core.h"

namespace corral::head {
namespace {

// Every version registered under `name`, in version order.
std::vector<const Dataset*> VersionsNamed(const DatasetCatalog& catalog, const std::string& name) {
  std::vector<const Dataset*> out;
  const std::string prefix = name + "@";
  for (auto it = catalog.all().lower_bound(prefix);
       it != catalog.all().end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    out.push_back(&it->second);
  }
  return out;
}

std::string DatasetVersionList(const std::vector<const Dataset*>& versions) {
  std::string out;
  for (const Dataset* d : versions) out += (out.empty() ? "" : ", ") + d->version;
  return out;
}

}  // namespace

std::vector<DatasetView> HeadCore::ListDatasets() const {
  std::vector<DatasetView> out;
  for (const auto& [name, d] : state_.datasets.all()) out.push_back(ViewOfDataset(d));
  return out;
}

Result<DatasetView> HeadCore::GetDataset(const std::string& name) const {
  const Dataset* d = state_.datasets.Find(name);
  if (d == nullptr) return NotFound("no dataset '" + name + "'");
  return ViewOfDataset(*d);
}

DatasetView HeadCore::ViewOfDataset(const Dataset& d) const {
  DatasetView v;
  v.dataset = d;
  for (JobId id : indexes_.get<DatasetUsers>().Of(DatasetKey(d.name, d.version))) {
    v.users.push_back(id);
  }
  for (const auto& [node, held] : node_watch_.dataset_holders()) {
    if (held.count(d.digest)) v.nodes.push_back(node);
  }
  return v;
}

Result<DatasetView> HeadCore::AddDataset(const Caller& by, Dataset d, TimeMs now) {
  if (by.kind != Caller::Kind::kUser && by.kind != Caller::Kind::kSystem) {
    return PermissionDenied("only users add datasets");
  }
  const std::vector<const Dataset*> versions = VersionsNamed(state_.datasets, d.name);
  for (const Dataset* other : versions) {
    if (other->version == d.version) {
      return Status{ErrorCode::kAlreadyExists,
                    "field 'version': dataset '" + DatasetKey(d.name, d.version) +
                        "' exists (remove it first, or add another version)"};
    }
  }
  // A name's versions are its owner's: another user's data under a trusted name is refused.
  if (!versions.empty() && by.name != versions[0]->owner && !by.IsAdmin()) {
    return PermissionDenied("field 'name': dataset '" + d.name + "' is " + versions[0]->owner +
                            "'s: only they or an admin may add versions of it");
  }
  d.owner = by.name;
  d.added_at = now;
  Emit(by, now, DatasetAdded{d});
  return ViewOfDataset(d);
}

Result<DatasetView> HeadCore::RemoveDataset(const Caller& by, const std::string& name, TimeMs now) {
  // "NAME@V": that version; "NAME": every version of NAME.
  const auto [bare, version] = SplitDatasetKey(name);
  std::vector<const Dataset*> gone_versions;
  for (const Dataset* d : VersionsNamed(state_.datasets, bare)) {
    if (version.empty() || d->version == version) gone_versions.push_back(d);
  }
  if (gone_versions.empty()) return NotFound("no dataset '" + name + "'");
  std::set<JobId> users;
  for (const Dataset* d : gone_versions) {
    if (!by.IsAdmin() && by.name != d->owner) {
      return PermissionDenied("dataset '" + name + "' is " + d->owner +
                              "'s: only they or an admin may remove it");
    }
    const auto& of = indexes_.get<DatasetUsers>().Of(DatasetKey(d->name, d->version));
    users.insert(of.begin(), of.end());
  }
  if (!users.empty()) {
    std::string ids;
    for (JobId id : users) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    return FailedPrecondition("dataset '" + name + "' is used by jobs not yet over (" + ids +
                              "): cancel them or wait for them to end");
  }
  DatasetView gone = ViewOfDataset(*gone_versions.back());
  Emit(by, now, DatasetRemoved{bare, version});
  return gone;
}

void HeadCore::ObserveDatasets(const std::string& node, const std::vector<std::string>& digests) {
  if (!node_watch_.ObserveDatasets(node, digests)) return;
  // The scheduler's copy of the node, for placements near the data.
  if (auto n = state_.nodes.find(node); n != state_.nodes.end()) {
    model_.UpsertNode(n->second, node_watch_.dataset_holders());
    WantSchedule();
  }
}

void HeadCore::NoteLacking(const Job& job, int32_t attempt,
                           const std::vector<ReplicaPlacement>& where) {
  // Runs that ended before they started (cancelled while staging) are measured by no start.
  for (auto it = lacking_.begin(); it != lacking_.end();) {
    auto j = state_.jobs.find(it->first);
    const bool staging = j != state_.jobs.end() && j->second.state == JobState::kScheduled;
    it = staging ? std::next(it) : lacking_.erase(it);
  }
  lacking_.erase(job.id);
  if (job.spec.datasets.empty()) return;
  Lacking l;
  l.attempt = attempt;
  const DatasetHolders& holders = node_watch_.dataset_holders();
  for (const ReplicaPlacement& p : where) {
    // A node that fetched ahead for the job took part of the fetch before its placement: its
    // start says nothing of the source's rate.
    if (l.bytes.count(p.node) || prefetch_.Asked(job.id, p.node)) continue;
    std::map<std::string, int64_t>& lacks = l.bytes[p.node];
    for (const DatasetRef* d : DatasetsLacked(job, p.node, holders)) {
      lacks[DatasetSourceKey(d->source)] += d->bytes;
    }
  }
  lacking_[job.id] = std::move(l);
}

// A run's first replica started on `node`: if that node lacked its data from one source, the
// time from its placement to its start is what fetching those bytes took (a lack from several
// sources at once says nothing of each one's rate, and is not measured).
void HeadCore::MeasureStageIn(const Job& job, const std::string& node, TimeMs started_at,
                              TimeMs now) {
  auto it = lacking_.find(job.id);
  if (it == lacking_.end()) return;
  const Lacking l = std::move(it->second);
  lacking_.erase(it);
  const Run& run = *job.CurrentRun();
  auto lacks = l.bytes.find(node);
  if (l.attempt != run.attempt || lacks == l.bytes.end() || lacks->second.size() != 1) return;
  const auto& [source, bytes] = *lacks->second.begin();
  const DurationMs ms = started_at - run.scheduled_at;
  if (bytes <= 0 || ms <= 0) return;
  Emit(Caller::Node(node), now, SourceRateMeasured{source, bytes, ms});
}

// The pass's reservations: their nodes are asked to fetch ahead what they lack of the first
// few reserved jobs' datasets (dataset_prefetch.h); a node whose orders changed is answered.
void HeadCore::PlanPrefetch(const std::vector<sched::Reservation>& reservations) {
  std::set<std::string> budgeted;
  for (const auto& [source, limit] : state_.datasets.limits()) budgeted.insert(source);
  for (const auto& [node, job] :
       prefetch_.Plan(reservations, state_.jobs, node_watch_.dataset_holders(), budgeted)) {
    Bump(node, job);
  }
}

Status HeadCore::ResolveDatasets(JobSpec* spec) const {
  for (size_t i = 0; i < spec->datasets.size(); ++i) {
    DatasetRef& r = spec->datasets[i];
    const std::string field = "datasets[" + std::to_string(i) + "]";
    const std::vector<const Dataset*> versions = VersionsNamed(state_.datasets, r.name);
    if (versions.empty()) {
      return InvalidArgument("field '" + field + "': no dataset '" + r.name +
                             "' (corral datasets add)");
    }
    const Dataset* d =
        state_.datasets.Find(r.version.empty() ? r.name : DatasetKey(r.name, r.version));
    if (d == nullptr) {
      return InvalidArgument("field '" + field + "': dataset '" + r.name + "' has no version '" +
                             r.version + "' (it has " + DatasetVersionList(versions) + ")");
    }
    r.version = d->version;
    r.digest = d->digest;
    r.source = d->source;
    r.files = d->files;
    r.bytes = d->bytes;
  }
  return Status::Ok();
}

}  // namespace corral::head
