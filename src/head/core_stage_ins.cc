// The sources' cluster-wide budgets (docs/datasets.md, "Sharing a source's bandwidth"). An
// admin limits what every node's stage-ins together read from a source: at most `fetches`
// nodes fetch from it at once, each at rate / fetches, so the total holds by construction.
// A placed run whose nodes lack data of a budgeted source joins that source's line
// (StageInQueued) and its orders stay at the head until its turn (StageInAdmitted), in the
// scheduler's order; its admitted orders carry each node's cap (RunOrder::source_rates).
#include "core/dataset_key.h"
#include "head/datasets_lacked.h"
#include "head/head_core.h"

namespace corral::head {
namespace {

// The source's budget as listed.
SourceBudget BudgetView(const DatasetCatalog& catalog, const std::string& source) {
  SourceBudget b;
  b.source = source;
  if (auto l = catalog.limits().find(source); l != catalog.limits().end()) {
    b.rate = l->second.rate;
    b.fetches = l->second.Slots();
  }
  b.fetching = catalog.Fetching(source);
  for (const DatasetCatalog::StageIn& in : catalog.stage_ins()) {
    if (!in.admitted && in.fetches.count(source)) ++b.waiting;
  }
  return b;
}

// A bound on what one budget may say, so that a typo fails instead of overflowing a cap.
constexpr int64_t kMaxBudgetRate = int64_t{1} << 50;  // 1 PiB/s
constexpr int32_t kMaxBudgetFetches = 100000;

}  // namespace

Result<SourceBudget> HeadCore::SetSourceLimit(const Caller& by, const std::string& source,
                                              int64_t rate, int32_t fetches, TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("only admins set a source's budget");
  auto key = ParseSourceKey(source);
  if (!key.ok()) return key.status();
  if (rate < 0 || rate > kMaxBudgetRate) {
    return InvalidArgument("field 'rate': got " + std::to_string(rate) +
                           ", want bytes per second from 0 (no budget) to 2^50");
  }
  if (fetches < 0 || fetches > kMaxBudgetFetches) {
    return InvalidArgument("field 'fetches': got " + std::to_string(fetches) +
                           ", want nodes fetching at once from 0 (the default, " +
                           std::to_string(DatasetCatalog::kDefaultFetches) + ") to " +
                           std::to_string(kMaxBudgetFetches));
  }
  if (rate == 0 && fetches == 0 && !state_.datasets.limits().count(*key)) {
    return NotFound("field 'source': " + *key + " has no budget to remove");
  }
  Emit(by, now, SourceLimitSet{*key, rate, fetches});
  return BudgetView(state_.datasets, *key);
}

std::vector<SourceBudget> HeadCore::ListSourceBudgets() const {
  std::vector<SourceBudget> out;
  for (const auto& [source, limit] : state_.datasets.limits()) {
    out.push_back(BudgetView(state_.datasets, source));
  }
  return out;
}

void HeadCore::QueueStageIn(const Job& job, int32_t attempt,
                            const std::vector<ReplicaPlacement>& where, TimeMs now) {
  const auto& limits = state_.datasets.limits();
  if (limits.empty() || job.spec.datasets.empty()) return;
  const DatasetHolders& holders = node_watch_.dataset_holders();
  std::map<std::string, std::set<std::string>> lacking;  // budgeted source -> nodes
  for (const ReplicaPlacement& p : where) {
    for (const DatasetRef* d : DatasetsLacked(job, p.node, holders)) {
      const std::string source = DatasetSourceKey(d->source);
      if (limits.count(source)) lacking[source].insert(p.node);
    }
  }
  if (lacking.empty()) return;
  std::map<std::string, int32_t> fetches;
  for (const auto& [source, nodes] : lacking) {
    fetches[source] = static_cast<int32_t>(nodes.size());
  }
  Emit(Caller::System(), now, StageInQueued{job.id, attempt, std::move(fetches)});
}

void HeadCore::AdmitStageIns(TimeMs now) {
  if (state_.datasets.stage_ins().empty()) return;
  std::vector<std::pair<JobId, int32_t>> turn;
  for (const DatasetCatalog::StageIn* in : state_.datasets.Admissible()) {
    turn.emplace_back(in->job, in->attempt);
  }
  for (const auto& [job, attempt] : turn) {
    Emit(Caller::System(), now, StageInAdmitted{job, attempt});
    explained_.StagingDone(job);  // its nodes say how far they are from now on
    for (const ReplicaPlacement& p : state_.jobs.at(job).CurrentRun()->placement) {
      Bump(p.node, job);
    }
  }
  // The others say where they stand: `staging cifar on node1: queued for /shared (cluster
  // budget), 2 in line`.
  for (const DatasetCatalog::StageIn& in : state_.datasets.stage_ins()) {
    if (in.admitted) continue;
    const auto [source, place] = state_.datasets.PlaceInLine(in);
    const Job& job = state_.jobs.at(in.job);
    std::string dataset;
    for (const DatasetRef& d : job.spec.datasets) {
      if (dataset.empty() && DatasetSourceKey(d.source) == source) dataset = d.name;
    }
    explained_.Staging(in.job, "staging " + dataset + " on " +
                                   job.CurrentRun()->placement.front().node + ": queued for " +
                                   source + " (cluster budget), " + std::to_string(place) +
                                   (place == 1 ? " (next)" : " in line"));
  }
}

const DatasetCatalog::StageIn* HeadCore::StageInOf(JobId job) const {
  for (const DatasetCatalog::StageIn& in : state_.datasets.stage_ins()) {
    if (in.job == job) return &in;
  }
  return nullptr;
}

bool HeadCore::StageInWaits(JobId job) const {
  const DatasetCatalog::StageIn* in = StageInOf(job);
  return in != nullptr && !in->admitted;
}

std::map<std::string, int64_t> HeadCore::StageInRates(JobId job) const {
  std::map<std::string, int64_t> out;
  const DatasetCatalog::StageIn* in = StageInOf(job);
  if (in == nullptr || !in->admitted) return out;
  for (const auto& [source, nodes] : in->fetches) {
    if (int64_t rate = state_.datasets.NodeRate(*in, source); rate > 0) out[source] = rate;
  }
  return out;
}

}  // namespace corral::head
