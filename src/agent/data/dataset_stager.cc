#include "agent/data/dataset_stager.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <thread>

#include "core/dataset_key.h"

namespace corral::agent {

struct DatasetStager::Job {
  RunOrder order;
  bool ahead = false;    // a fetch ahead (Prefetch): unpinned once done
  std::string note;      // GUARDED_BY(DatasetStager::mu_) and the rest below
  bool dropped = false;  // a fetch ahead no longer asked: stop after the current dataset
  bool no_room = false;  // a fetch ahead not begun for want of space (note says why)
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
    : cache_(config, clock), as_owner_(as_owner), node_(std::move(node)), config_(config) {
  cache_.CleanInterrupted();
  DescribeDatasetMetrics(metrics_);
  for (const char* result : {"cached", "fetched", "failed"}) {
    metrics_.Add(kStageIns, {{"result", result}}, 0);  // each result present from the start
  }
  metrics_.Add(kEvictions, {}, 0);
}

// A fetch ahead is no run's stage-in (the run's own staging counts, a hit once it is fetched
// ahead); what it reads from the source counts all the same.
void DatasetStager::Count(const DatasetRef& r, const Result<StagedDataset>& staged, bool ahead) {
  if (!staged.ok()) {
    if (!ahead) metrics_.Add(kStageIns, {{"result", "failed"}}, 1);
    return;
  }
  if (!ahead) metrics_.Add(kStageIns, {{"result", staged->fetched ? "fetched" : "cached"}}, 1);
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
    if (std::lock_guard lock(mu_); job->dropped) break;
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
    Count(r, staged, job->ahead);
    if (!staged.ok()) {
      status = staged.status();
      break;
    }
    if (staged->fetched) {
      spdlog::info("dataset {} ({}) fetched from {} in {} ms{}", r.name, r.digest, r.source,
                   staged->fetch_ms,
                   job->ahead ? " ahead of job " + std::to_string(job->order.job_id) : "");
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
  if (!status.ok() || job->ahead) job->Unpin();
}

std::string DatasetStager::NoRoomFor(const std::vector<DatasetRef>& datasets) const {
  if (config_.limit_bytes <= 0) return "";
  const DatasetCacheUsage u = cache_.Usage();
  int64_t lacking = 0;
  std::string names;
  for (const DatasetRef& d : datasets) {
    if (std::find(u.digests.begin(), u.digests.end(), d.digest) != u.digests.end()) continue;
    lacking += d.bytes;
    names += (names.empty() ? "" : ", ") + d.name;
  }
  const auto room = static_cast<int64_t>(config_.high_watermark * config_.limit_bytes) - u.bytes;
  if (lacking <= room) return "";
  return "not fetching " + names + " ahead on " + node_ + ": " + std::to_string(lacking) +
         " bytes wanted, " + std::to_string(std::max<int64_t>(0, room)) +
         " free in its cache (it starts once the job is placed)";
}

std::shared_ptr<DatasetStager::Job> DatasetStager::NewPrefetch(const PrefetchOrder& order) {
  auto job = std::make_shared<Job>();
  job->ahead = true;
  job->order.run_id = "ahead." + std::to_string(order.job_id);
  job->order.job_id = order.job_id;
  job->order.user = order.user;
  job->order.datasets = order.datasets;
  ahead_[order.job_id] = job;
  return job;
}

void DatasetStager::Prefetch(const std::vector<PrefetchOrder>& orders) {
  std::vector<std::shared_ptr<Job>> to_start;
  std::lock_guard lock(mu_);
  std::set<JobId> asked;
  for (const PrefetchOrder& o : orders) asked.insert(o.job_id);
  for (auto it = ahead_.begin(); it != ahead_.end();) {
    // Forgotten when no longer asked; left out for want of room: weighed again below.
    const bool forget = !asked.count(it->first) || it->second->no_room;
    if (forget) it->second->dropped = true;  // its thread, if any, stops at the next dataset
    it = forget ? ahead_.erase(it) : std::next(it);
  }
  for (const PrefetchOrder& o : orders) {
    if (ahead_.count(o.job_id) || o.datasets.empty()) continue;
    std::shared_ptr<Job> job = NewPrefetch(o);
    if (std::string why = NoRoomFor(o.datasets); !why.empty()) {
      job->no_room = job->done = true;
      job->note = std::move(why);
      continue;
    }
    to_start.push_back(std::move(job));
  }
  for (auto& job : to_start) {
    spdlog::info("fetching the datasets of job {} ahead (reserved here)", job->order.job_id);
    std::thread([this, job] { Stage(job); }).detach();
  }
}

std::vector<PrefetchReport> DatasetStager::Prefetching() const {
  std::vector<PrefetchReport> out;
  std::lock_guard lock(mu_);
  for (const auto& [id, job] : ahead_) {
    if (!job->done || job->no_room) {
      out.push_back({id, job->note});
    } else if (!job->status.ok()) {
      out.push_back({id, "fetching ahead on " + node_ + " failed: " + job->status.message()});
    }
  }
  return out;
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
