#include "sim/data_world.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/status.h"

namespace corral::sim {

void SimNodeCache::Pin(const std::string& digest, TimeMs now) {
  Entry& e = entries_.at(digest);
  ++e.pins;
  e.last_use = now;
}

void SimNodeCache::Unpin(const std::string& digest, TimeMs now) {
  auto it = entries_.find(digest);
  if (it == entries_.end()) return;
  it->second.pins = std::max(0, it->second.pins - 1);
  it->second.last_use = now;
}

int64_t SimNodeCache::Publish(const std::string& digest, int64_t bytes, int32_t pins, TimeMs now) {
  Entry& e = entries_[digest];
  if (e.bytes == 0) bytes_ += bytes;
  e.bytes = bytes;
  e.pins += pins;
  e.last_use = now;
  return Evict();
}

int64_t SimNodeCache::Evict() {
  // Integer watermarks: over 95/100 of the limit, down to 70/100 of it.
  if (limit_ <= 0 || bytes_ * 100 <= limit_ * 95) return 0;
  std::vector<std::tuple<TimeMs, std::string>> unpinned;
  for (const auto& [digest, e] : entries_) {
    if (e.pins == 0) unpinned.emplace_back(e.last_use, digest);
  }
  std::sort(unpinned.begin(), unpinned.end());
  int64_t evicted = 0;
  for (const auto& [last_use, digest] : unpinned) {
    if (bytes_ * 100 <= limit_ * 70) break;
    bytes_ -= entries_.at(digest).bytes;
    entries_.erase(digest);
    ++evicted;
  }
  return evicted;
}

std::vector<std::string> SimNodeCache::Digests() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [digest, e] : entries_) out.push_back(digest);
  return out;
}

namespace {
constexpr double kDoneBytes = 1e-3;
}  // namespace

SharedSource::SharedSource(int64_t bytes_per_s)
    : bytes_per_ms_(static_cast<double>(bytes_per_s) / 1000.0) {}

void SharedSource::Advance(TimeMs now) {
  if (!left_.empty() && now > at_) {
    const double each =
        static_cast<double>(now - at_) * bytes_per_ms_ / static_cast<double>(left_.size());
    for (auto& [fetch, left] : left_) left -= each;
  }
  at_ = std::max(at_, now);
}

void SharedSource::Start(uint64_t fetch, int64_t bytes, TimeMs now) {
  Advance(now);
  left_[fetch] = static_cast<double>(bytes);
}

void SharedSource::Cancel(uint64_t fetch, TimeMs now) {
  Advance(now);
  left_.erase(fetch);
}

std::vector<uint64_t> SharedSource::Finish(TimeMs now) {
  Advance(now);
  std::vector<uint64_t> done;
  // A thousandth of a byte: floating-point rounding (a fetch left with more completes at
  // most a millisecond later).
  for (auto it = left_.begin(); it != left_.end();) {
    if (it->second <= kDoneBytes) {
      done.push_back(it->first);
      it = left_.erase(it);
    } else {
      ++it;
    }
  }
  return done;
}

TimeMs SharedSource::NextEnd() const {
  if (left_.empty()) return -1;
  double least = left_.begin()->second;
  for (const auto& [fetch, left] : left_) least = std::min(least, left);
  if (least <= kDoneBytes) return at_;
  const double ms = least * static_cast<double>(left_.size()) / bytes_per_ms_;
  return at_ + static_cast<TimeMs>(std::ceil(ms));
}

DataWorld::DataWorld(const DataConfig& config, size_t nodes)
    : caches_(nodes, SimNodeCache(config.node_cache_bytes)), source_(config.source_bytes_per_s) {
  CORRAL_CHECK(config.source_bytes_per_s > 0, "the data source needs a bandwidth above 0");
}

bool DataWorld::Stage(size_t node, uint64_t process, const std::vector<DatasetRef>& datasets,
                      TimeMs now) {
  const Key key{node, process};
  Waiter w;
  w.since = now;
  for (const DatasetRef& d : datasets) {
    ++stats_.stage_ins;
    if (caches_[node].Holds(d.digest)) {
      ++stats_.hits;
      caches_[node].Pin(d.digest, now);
      pins_[key].push_back(d.digest);
      continue;
    }
    w.missing[d.digest] = d.name;
    auto [it, fresh] = fetching_.try_emplace({node, d.digest}, next_fetch_);
    if (!fresh) {  // another replica's fetch for this node: one copy, read once
      ++stats_.hits;
      continue;
    }
    fetches_[next_fetch_] = Fetch{node, d.digest, d.bytes};
    source_.Start(next_fetch_, d.bytes, now);
    ++next_fetch_;
  }
  if (w.missing.empty()) return true;
  waiting_[key] = std::move(w);
  return false;
}

void DataWorld::Publish(const Fetch& f, TimeMs now, std::vector<Key>* ready) {
  ++stats_.fetches;
  stats_.fetched_bytes += f.bytes;
  // The replicas on the node that waited for it pin it as it lands.
  std::vector<Key> waited;
  for (auto it = waiting_.lower_bound({f.node, 0});
       it != waiting_.end() && it->first.first == f.node; ++it) {
    if (it->second.missing.count(f.digest)) waited.push_back(it->first);
  }
  stats_.evictions +=
      caches_[f.node].Publish(f.digest, f.bytes, static_cast<int32_t>(waited.size()), now);
  for (const Key& key : waited) {
    Waiter& w = waiting_.at(key);
    w.missing.erase(f.digest);
    pins_[key].push_back(f.digest);
    if (!w.missing.empty()) continue;
    ++stats_.staged_replicas;
    stats_.staging_ms += now - w.since;
    waiting_.erase(key);
    ready->push_back(key);
  }
}

std::vector<std::pair<size_t, uint64_t>> DataWorld::FetchesDone(TimeMs now,
                                                                std::set<size_t>* nodes_changed) {
  std::vector<Key> ready;
  for (uint64_t id : source_.Finish(now)) {
    const Fetch f = fetches_.at(id);
    fetches_.erase(id);
    fetching_.erase({f.node, f.digest});
    nodes_changed->insert(f.node);
    Publish(f, now, &ready);
  }
  std::sort(ready.begin(), ready.end());
  return ready;
}

void DataWorld::StopWaiting(size_t node, uint64_t process) { waiting_.erase({node, process}); }

void DataWorld::Release(size_t node, uint64_t process, TimeMs now) {
  waiting_.erase({node, process});
  auto it = pins_.find({node, process});
  if (it == pins_.end()) return;
  for (const std::string& digest : it->second) caches_[node].Unpin(digest, now);
  pins_.erase(it);
}

void DataWorld::NodeFailed(size_t node, TimeMs now) {
  for (auto it = fetches_.begin(); it != fetches_.end();) {
    if (it->second.node != node) {
      ++it;
      continue;
    }
    source_.Cancel(it->first, now);
    fetching_.erase({node, it->second.digest});
    it = fetches_.erase(it);
  }
  std::erase_if(waiting_, [&](const auto& e) { return e.first.first == node; });
  for (auto it = pins_.lower_bound({node, 0}); it != pins_.end() && it->first.first == node;) {
    for (const std::string& digest : it->second) caches_[node].Unpin(digest, now);
    it = pins_.erase(it);
  }
}

std::string DataWorld::Awaited(size_t node, uint64_t process) const {
  auto it = waiting_.find({node, process});
  if (it == waiting_.end() || it->second.missing.empty()) return "";
  return it->second.missing.begin()->second;
}

}  // namespace corral::sim
