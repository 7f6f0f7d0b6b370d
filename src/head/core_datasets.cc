// Datasets (core/dataset.h, head/datasets.h): users register them, each a typed change; a job
// may declare only registered ones, and the head resolves each to the content it names at
// submission, so that a later re-registration never changes what a queued job reads.
#include "head/head_core.h"

namespace corral::head {

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
  for (JobId id : indexes_.get<DatasetUsers>().Of(d.name)) v.users.push_back(id);
  for (const auto& [node, held] : node_watch_.dataset_holders()) {
    if (held.count(d.digest)) v.nodes.push_back(node);
  }
  return v;
}

Result<DatasetView> HeadCore::AddDataset(const Caller& by, Dataset d, TimeMs now) {
  if (by.kind != Caller::Kind::kUser && by.kind != Caller::Kind::kSystem) {
    return PermissionDenied("only users add datasets");
  }
  if (state_.datasets.Find(d.name) != nullptr) {
    return Status{ErrorCode::kAlreadyExists,
                  "field 'name': dataset '" + d.name + "' exists (remove it first)"};
  }
  d.owner = by.name;
  d.added_at = now;
  Emit(by, now, DatasetAdded{d});
  return ViewOfDataset(d);
}

Result<DatasetView> HeadCore::RemoveDataset(const Caller& by, const std::string& name, TimeMs now) {
  const Dataset* d = state_.datasets.Find(name);
  if (d == nullptr) return NotFound("no dataset '" + name + "'");
  if (!by.IsAdmin() && by.name != d->owner) {
    return PermissionDenied("dataset '" + name + "' is " + d->owner +
                            "'s: only they or an admin may remove it");
  }
  const std::set<JobId>& users = indexes_.get<DatasetUsers>().Of(name);
  if (!users.empty()) {
    std::string ids;
    for (JobId id : users) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    return FailedPrecondition("dataset '" + name + "' is used by jobs not yet over (" + ids +
                              "): cancel them or wait for them to end");
  }
  DatasetView gone = ViewOfDataset(*d);
  Emit(by, now, DatasetRemoved{name});
  return gone;
}

void HeadCore::ObserveDatasets(const std::string& node, const std::vector<std::string>& digests) {
  if (!node_watch_.ObserveDatasets(node, digests)) return;
  // The scheduler's copy of the node, for placements near the data.
  if (auto n = state_.nodes.find(node); n != state_.nodes.end()) {
    scheduler_->UpsertNode(ToNodeInfo(n->second));
    WantSchedule();
  }
}

Status HeadCore::ResolveDatasets(JobSpec* spec) const {
  for (size_t i = 0; i < spec->datasets.size(); ++i) {
    DatasetRef& r = spec->datasets[i];
    const std::string field = "datasets[" + std::to_string(i) + "]";
    const Dataset* d = state_.datasets.Find(r.name);
    if (d == nullptr) {
      return InvalidArgument("field '" + field + "': no dataset '" + r.name +
                             "' (corral datasets add)");
    }
    if (!r.version.empty() && r.version != d->version) {
      return InvalidArgument("field '" + field + "': dataset '" + r.name + "' has version '" +
                             d->version + "', not '" + r.version + "'");
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
