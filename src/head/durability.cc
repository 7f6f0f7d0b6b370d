#include "head/durability.h"

#include <charconv>

#include "head/change_tail.h"

namespace corral::head {
namespace {

constexpr char kCredentialsKey[] = "credentials";

bool ParseU64(const std::string& s, uint64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

}  // namespace

void EncodeChangeRecords(const std::vector<Change>& changes, std::vector<store::StateEdit>* batch) {
  for (const Change& c : changes) {
    batch->push_back(store::AppendChange{{c.revision, ToJson(c).dump()}});
  }
}

void EditLog::Append(const std::vector<Change>& changes, const ClusterState& state,
                     std::vector<store::StateEdit>* batch) const {
  EncodeChangeRecords(changes, batch);
  AppendRetirements(changes, state, batch);
}

void EditLog::AppendRetirements(const std::vector<Change>& changes, const ClusterState& state,
                                std::vector<store::StateEdit>* batch) const {
  bool retired = false;
  for (const Change& c : changes) {
    if (const auto* r = std::get_if<JobsRetired>(&c.what)) {
      for (JobId id : r->jobs) {
        batch->push_back(store::RetireJob{id, JobStateName(state.retired.at(id))});
      }
      retired = true;
    }
  }
  if (retired) {
    batch->push_back(store::PutMeta{SnapshotMeta::kRetiredUsage,
                                    RetiredUsageToJson(state.retired_usage).dump()});
  }
}

void EditLog::MaybeSnapshot(HeadCore& core, bool force, std::vector<store::StateEdit>* batch) {
  uint64_t rev = core.revision();
  if (rev == snapshot_revision_ || (!force && rev - snapshot_revision_ < config_.snapshot_every)) {
    return;
  }
  HeadCore::Dirty dirty = core.TakeDirty();
  const ClusterState& s = core.state();
  for (JobId id : dirty.jobs) {
    auto it = s.jobs.find(id);
    if (it == s.jobs.end()) continue;  // retired, and its row already holds it as it ended
    Job job = it->second;
    job.pending_code = PendingCode::kNone;
    job.pending_reason.clear();
    batch->push_back(store::PutJob{std::move(job)});
  }
  for (const std::string& n : dirty.nodes) {
    auto it = s.nodes.find(n);
    if (it == s.nodes.end()) {
      batch->push_back(store::DeleteNode{n});  // removed
    } else {
      batch->push_back(store::PutNode{it->second});
    }
  }
  for (const std::string& q : dirty.queues) batch->push_back(store::PutQueue{s.queues.at(q)});
  if (dirty.credentials) {
    Json creds = Json::array();
    for (const auto& [hash, c] : s.credentials) creds.push_back(ToJson(c));
    batch->push_back(store::PutMeta{kCredentialsKey, creds.dump()});
  }
  if (dirty.qos) {
    Json qos = Json::array();
    for (const auto& [name, q] : s.qos) qos.push_back(ToJson(q));
    batch->push_back(store::PutMeta{SnapshotMeta::kQos, qos.dump()});
  }
  if (dirty.reservations) {
    Json all = Json::array();
    for (const auto& [name, r] : s.reservations) all.push_back(ToJson(r));
    batch->push_back(store::PutMeta{SnapshotMeta::kReservations, all.dump()});
  }
  if (dirty.datasets) {
    batch->push_back(store::PutMeta{SnapshotMeta::kDatasets, s.datasets.ToJson().dump()});
    batch->push_back(
        store::PutMeta{SnapshotMeta::kDatasetSources, s.datasets.SourcesToJson().dump()});
    batch->push_back(
        store::PutMeta{SnapshotMeta::kDatasetBudgets, s.datasets.BudgetsToJson().dump()});
  }
  if (dirty.services) {
    Json all = Json::array();
    for (const auto& [name, v] : s.services) all.push_back(ToJson(v));
    batch->push_back(store::PutMeta{SnapshotMeta::kServices, all.dump()});
  }
  if (dirty.meta) {
    batch->push_back(store::PutMeta{SnapshotMeta::kEpoch, std::to_string(s.epoch)});
    batch->push_back(store::PutMeta{SnapshotMeta::kNextJobId, std::to_string(s.next_job_id)});
    if (!s.step_key.empty()) batch->push_back(store::PutMeta{SnapshotMeta::kStepKey, s.step_key});
  }
  batch->push_back(store::PutMeta{store::kSnapshotRevisionKey, std::to_string(rev)});
  if (rev > config_.keep_changes)
    batch->push_back(store::TruncateChanges{rev - config_.keep_changes});
  snapshot_revision_ = rev;
}

namespace {

// A number in the store's meta table; 0 where the key is absent.
Result<uint64_t> StoredMetaNumber(const store::StoredState& stored, const char* key) {
  auto it = stored.meta.find(key);
  if (it == stored.meta.end()) return uint64_t{0};
  uint64_t v = 0;
  if (!ParseU64(it->second, &v)) {
    return Internal(std::string("store meta '") + key + "': not a number: " + it->second);
  }
  return v;
}

// Each element of a JSON array kept under `key` in the meta table, decoded and added by `add`.
template <typename Decode, typename Add>
Status ForEachStoredMetaItem(const store::StoredState& stored, const char* key, const char* what,
                             Decode decode, Add add) {
  auto it = stored.meta.find(key);
  if (it == stored.meta.end()) return Status::Ok();
  Json arr = Json::parse(it->second, nullptr, false);
  if (!arr.is_array()) return Internal(std::string("store meta '") + what + "': not a JSON array");
  for (const Json& j : arr) {
    auto v = decode(j);
    if (!v.ok()) return v.status();
    add(std::move(*v));
  }
  return Status::Ok();
}

// The jobs, live and retired, and the next job id past all of them.
Status AddStoredJobs(store::StoredState& stored, ClusterState* s) {
  for (Job& j : stored.jobs) {
    s->next_job_id = std::max(s->next_job_id, j.id + 1);
    JobId id = j.id;
    // The store's jobs come in ascending id: each goes at the end, moved once.
    s->jobs.insert_or_assign(s->jobs.end(), id, std::move(j));
  }
  for (const auto& [id, state] : stored.retired) {
    JobState js;
    if (!ParseJobState(state, &js)) {
      return Internal("store: retired job " + std::to_string(id) + " has state '" + state + "'");
    }
    s->retired[id] = js;
    s->next_job_id = std::max(s->next_job_id, id + 1);
  }
  if (auto it = stored.meta.find(SnapshotMeta::kRetiredUsage); it != stored.meta.end()) {
    Json j = Json::parse(it->second, nullptr, false);
    if (!j.is_array()) return Internal("store meta 'retired_usage': not a JSON array");
    auto usage = RetiredUsageFromJson(j);
    if (!usage.ok()) return usage.status();
    s->retired_usage = std::move(*usage);
  }
  return Status::Ok();
}

// Credentials, QoS, reservations, datasets and services: the meta table's JSON documents.
Status AddStoredCatalogs(const store::StoredState& stored, ClusterState* s) {
  CORRAL_RETURN_IF_ERROR(
      ForEachStoredMetaItem(stored, kCredentialsKey, "credentials", CredentialFromJson,
                            [&](Credential c) { s->credentials[c.hash] = std::move(c); }));
  CORRAL_RETURN_IF_ERROR(ForEachStoredMetaItem(stored, SnapshotMeta::kQos, "qos", QosFromJson,
                                               [&](QosClass q) { s->qos[q.name] = std::move(q); }));
  CORRAL_RETURN_IF_ERROR(ForEachStoredMetaItem(
      stored, SnapshotMeta::kReservations, "reservations", NodeReservationFromJson,
      [&](NodeReservationSpec r) { s->reservations[r.name] = std::move(r); }));
  if (auto it = stored.meta.find(SnapshotMeta::kDatasets); it != stored.meta.end()) {
    auto datasets = DatasetCatalog::FromJson(Json::parse(it->second, nullptr, false));
    if (!datasets.ok()) return Internal("store meta 'datasets': " + datasets.status().message());
    s->datasets = std::move(*datasets);
  }
  // A store written before sources were measured has no row: no source measured yet.
  if (auto it = stored.meta.find(SnapshotMeta::kDatasetSources); it != stored.meta.end()) {
    Status st = s->datasets.SourcesFromJson(Json::parse(it->second, nullptr, false));
    if (!st.ok()) return Internal("store meta 'dataset_sources': " + st.message());
  }
  // A store written before budgets existed has no row: no budget, no line.
  if (auto it = stored.meta.find(SnapshotMeta::kDatasetBudgets); it != stored.meta.end()) {
    Status st = s->datasets.BudgetsFromJson(Json::parse(it->second, nullptr, false));
    if (!st.ok()) return Internal("store meta 'dataset_budgets': " + st.message());
  }
  return ForEachStoredMetaItem(stored, SnapshotMeta::kServices, "services", ServiceFromJson,
                               [&](Service v) { s->services[v.spec.name] = std::move(v); });
}

}  // namespace

Result<LoadedState> DecodeStoredState(store::StoredState stored) {
  LoadedState out;
  ClusterState& s = out.snapshot;
  auto rev = StoredMetaNumber(stored, store::kSnapshotRevisionKey);
  auto epoch = StoredMetaNumber(stored, SnapshotMeta::kEpoch);
  auto next = StoredMetaNumber(stored, SnapshotMeta::kNextJobId);
  for (const auto* r : {&rev, &epoch, &next}) {
    if (!r->ok()) return r->status();
  }
  s.revision = *rev;
  s.epoch = *epoch;
  s.next_job_id = std::max<uint64_t>(1, *next);
  CORRAL_RETURN_IF_ERROR(AddStoredJobs(stored, &s));
  for (Node& n : stored.nodes) {
    std::string name = n.name;
    s.nodes[name] = std::move(n);
  }
  for (QueueConfig& q : stored.queues) s.queues[q.name] = q;
  if (auto it = stored.meta.find(SnapshotMeta::kStepKey); it != stored.meta.end()) {
    s.step_key = it->second;
  }
  CORRAL_RETURN_IF_ERROR(AddStoredCatalogs(stored, &s));
  for (const store::ChangeRecord& rec : stored.changes) {
    Result<Change> c = DecodeChangeRecord(rec);
    if (!c.ok()) return c.status();
    out.tail.push_back(std::move(*c));
  }
  return out;
}

}  // namespace corral::head
