#include "agent/data/dataset_stager.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <thread>

#include "core/dataset_key.h"

namespace corral::agent {

struct DatasetStager::Job {
  RunOrder order;
  std::string note;  // GUARDED_BY(DatasetStager::mu_) and the rest below
  bool done = false;
  Status status;
  std::vector<std::string> paths;
  std::vector<int> pins;
  void Unpin() {
    for (int fd : pins) close(fd);
    pins.clear();
  }
};

namespace {

constexpr char kCacheBytes[] = "corral_dataset_cache_bytes";
constexpr char kCacheLimit[] = "corral_dataset_cache_limit_bytes";
constexpr char kCacheDatasets[] = "corral_dataset_cache_datasets";
constexpr char kStageIns[] = "corral_dataset_stage_ins_total";
constexpr char kSourceBytes[] = "corral_dataset_source_read_bytes_total";
constexpr char kFetchSeconds[] = "corral_dataset_fetch_seconds";
constexpr char kEvictions[] = "corral_dataset_evictions_total";

void DescribeDatasetMetrics(MetricsRegistry& m) {
  using T = MetricsRegistry::Type;
  m.Describe(kCacheBytes, T::kGauge, "Bytes of complete datasets in the node's cache.");
  m.Describe(kCacheLimit, T::kGauge, "The cache's size limit in bytes (0: none).");
  m.Describe(kCacheDatasets, T::kGauge, "Complete dataset versions in the cache.");
  m.Describe(kStageIns, T::kCounter,
             "Datasets staged for runs, by result: cached (a hit), fetched, failed.");
  m.Describe(kSourceBytes, T::kCounter, "Bytes fetched from each dataset source.");
  m.Describe(kFetchSeconds, T::kHistogram, "Time to fetch a dataset into the cache.",
             MetricsRegistry::LatencyBuckets());
  m.Describe(kEvictions, T::kCounter, "Unpinned datasets evicted over the high watermark.");
}

}  // namespace

DatasetStager::DatasetStager(DatasetCacheConfig config, bool as_owner, std::string node,
                             const NodeClock& clock)
    : cache_(std::move(config), clock), as_owner_(as_owner), node_(std::move(node)) {
  cache_.CleanInterrupted();
  DescribeDatasetMetrics(metrics_);
  for (const char* result : {"cached", "fetched", "failed"}) {
    metrics_.Add(kStageIns, {{"result", result}}, 0);  // each result present from the start
  }
  metrics_.Add(kEvictions, {}, 0);
}

void DatasetStager::Count(const DatasetRef& r, const Result<StagedDataset>& staged) {
  if (!staged.ok()) return metrics_.Add(kStageIns, {{"result", "failed"}}, 1);
  metrics_.Add(kStageIns, {{"result", staged->fetched ? "fetched" : "cached"}}, 1);
  if (!staged->fetched) return;
  metrics_.Add(kSourceBytes, {{"source", r.source}}, static_cast<double>(staged->source_bytes));
  metrics_.Observe(kFetchSeconds, {}, static_cast<double>(staged->fetch_ms) / 1000.0);
}

std::string DatasetStager::RenderMetrics() const {
  DatasetCacheUsage u = cache_.Usage();
  metrics_.Set(kCacheBytes, {}, static_cast<double>(u.bytes));
  metrics_.Set(kCacheLimit, {}, static_cast<double>(u.limit_bytes));
  metrics_.Set(kCacheDatasets, {}, u.datasets);
  return metrics_.Render();
}

DatasetStager::~DatasetStager() {
  std::lock_guard lock(mu_);
  for (auto& [key, job] : jobs_) {
    if (job->done) job->Unpin();
  }
}

void DatasetStager::Start(const RunOrder& order) {
  auto job = std::make_shared<Job>();
  job->order = order;
  {
    std::lock_guard lock(mu_);
    if (!jobs_.emplace(StagingKey{order.run_id, order.replica}, job).second) return;
  }
  // Detached: the thread holds its job; a stager gone before it ends leaves the result unread.
  std::thread([this, job] { Stage(job); }).detach();
}

void DatasetStager::Stage(std::shared_ptr<Job> job) {
  std::optional<UnixIdentity> who;
  Status status;
  if (as_owner_) {
    auto id = IdentityForJob(job->order.user, node_, /*allow_root=*/true);
    if (id.ok()) {
      who = *id;
    } else {
      status = id.status();
    }
  }
  std::vector<std::string> paths;
  std::vector<int> pins;
  int64_t total = 0;
  for (const DatasetRef& r : job->order.datasets) total += r.bytes;
  int64_t before = 0;
  for (const DatasetRef& r : job->order.datasets) {
    if (!status.ok()) break;
    auto progress = [&](int64_t bytes) {
      const int64_t pct = total > 0 ? (before + bytes) * 100 / total : 100;
      std::lock_guard lock(mu_);
      job->note = "staging " + r.name + " on " + node_ + ": " + std::to_string(pct) + "%";
    };
    auto queued = [&](int32_t place) {  // waiting for a turn at its source (source_gate.h)
      std::lock_guard lock(mu_);
      job->note = "staging " + r.name + " on " + node_ + ": queued for its source, " +
                  std::to_string(place) + (place == 1 ? " (next)" : " in line");
    };
    progress(0);
    // The head's cap on this node's fetch from the source: its share of the source's budget.
    auto cap = job->order.source_rates.find(DatasetSourceKey(r.source));
    auto staged = cache_.Acquire(r, who ? &*who : nullptr, progress, queued,
                                 cap == job->order.source_rates.end() ? 0 : cap->second);
    Count(r, staged);
    if (!staged.ok()) {
      status = staged.status();
      break;
    }
    if (staged->fetched) {
      spdlog::info("dataset {} ({}) fetched from {} in {} ms", r.name, r.digest, r.source,
                   staged->fetch_ms);
    }
    before += r.bytes;
    paths.push_back(staged->path);
    pins.push_back(staged->use_fd);
  }
  std::lock_guard lock(mu_);
  job->paths = std::move(paths);
  job->pins = std::move(pins);
  job->status = status;
  job->note.clear();
  job->done = true;
  if (!status.ok()) job->Unpin();
}

bool DatasetStager::Started(const StagingKey& key) const {
  std::lock_guard lock(mu_);
  return jobs_.count(key) > 0;
}

std::optional<Result<RunOrder>> DatasetStager::Take(const StagingKey& key) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end() || !it->second->done) return std::nullopt;
  Job& job = *it->second;
  if (!job.status.ok()) return Result<RunOrder>(job.status);
  RunOrder order = job.order;
  PlaceDatasets(job.paths, &order);
  return Result<RunOrder>(std::move(order));
}

std::string DatasetStager::Note(const StagingKey& key) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(key);
  return it == jobs_.end() || it->second->done ? "" : it->second->note;
}

void DatasetStager::Repin(const RunOrder& order) {
  auto job = std::make_shared<Job>();
  job->order = order;
  job->done = true;
  for (const DatasetRef& r : order.datasets) {
    auto staged = cache_.Acquire(r, nullptr);  // it ran before: already checked
    if (staged.ok()) job->pins.push_back(staged->use_fd);
  }
  std::lock_guard lock(mu_);
  jobs_[StagingKey{order.run_id, order.replica}] = job;
}

void DatasetStager::Release(const StagingKey& key) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end() || !it->second->done) return;  // a staging thread still holds it
  it->second->Unpin();
  jobs_.erase(it);
}

std::vector<std::string> DatasetStager::Held() {
  int evicted = cache_.Evict();
  if (evicted > 0) {
    spdlog::info("dataset cache: evicted {} unused datasets", evicted);
    metrics_.Add(kEvictions, {}, evicted);
  }
  return cache_.Usage().digests;
}

void PlaceDatasets(const std::vector<std::string>& paths, RunOrder* order) {
  for (size_t i = 0; i < paths.size() && i < order->datasets.size(); ++i) {
    const DatasetRef& r = order->datasets[i];
    std::string where = paths[i];
    if (!order->container.empty()) {
      where = r.mount.empty() ? DefaultDatasetMount(r.name) : r.mount;
      order->container.mounts.push_back(ContainerMount{paths[i], where, true});
    }
    order->local_env[DatasetEnvName(r.name)] = where;
  }
}

}  // namespace corral::agent
