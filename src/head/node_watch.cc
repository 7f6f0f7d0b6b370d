// Each node's orders log, liveness clock and last reports (see node_watch.h).
#include "head/node_watch.h"

#include <algorithm>

namespace corral::head {

void NodeWatch::Rebuild(const ClusterState& s, TimeMs now) {
  logs_.clear();
  last_heard_.clear();
  for (const auto& [name, node] : s.nodes) {
    logs_[name] = DesiredLog(s.epoch << 32);
    last_heard_[name] = now;  // give every agent a full timeout to reconnect
  }
}

void NodeWatch::NewEpoch(const ClusterState& s) {
  for (const auto& [name, node] : s.nodes) logs_[name] = DesiredLog(s.epoch << 32);
}

void NodeWatch::Registered(const std::string& node, uint64_t epoch, TimeMs at) {
  logs_.try_emplace(node, epoch << 32);
  last_heard_[node] = at;
}

void NodeWatch::Forget(const std::string& node) {
  logs_.erase(node);
  last_heard_.erase(node);
  busy_ports_.erase(node);
  image_caches_.erase(node);
  dataset_holders_.erase(node);
}

uint64_t NodeWatch::Version(const std::string& node, uint64_t epoch) const {
  auto it = logs_.find(node);
  return it == logs_.end() ? epoch << 32 : it->second.version();
}

const DesiredLog* NodeWatch::LogOf(const std::string& node) const {
  auto it = logs_.find(node);
  return it == logs_.end() ? nullptr : &it->second;
}

TimeMs NodeWatch::LastHeard(const std::string& node, TimeMs now) {
  return last_heard_.try_emplace(node, now).first->second;
}

std::optional<TimeMs> NodeWatch::LastHeardIfAny(const std::string& node) const {
  auto it = last_heard_.find(node);
  if (it == last_heard_.end()) return std::nullopt;
  return it->second;
}

void NodeWatch::ObservePorts(const std::string& node, const std::vector<int32_t>& ports) {
  // Rebuilt only when it changed: most syncs report the same ports (often none).
  std::set<int32_t>& known = busy_ports_[node];
  if (known.size() != ports.size() ||
      !std::all_of(ports.begin(), ports.end(), [&](int32_t p) { return known.count(p) > 0; })) {
    known = std::set<int32_t>(ports.begin(), ports.end());
  }
}

const std::set<int32_t>& NodeWatch::BusyPorts(const std::string& node) const {
  static const std::set<int32_t> kNone;
  auto it = busy_ports_.find(node);
  return it == busy_ports_.end() ? kNone : it->second;
}

void NodeWatch::ObserveImageCache(const std::string& node, const ImageCacheReport& cache) {
  if (cache.limit_bytes > 0) image_caches_[node] = cache;
}

const ImageCacheReport* NodeWatch::ImageCacheOf(const std::string& node) const {
  auto it = image_caches_.find(node);
  return it == image_caches_.end() ? nullptr : &it->second;
}

bool NodeWatch::ObserveDatasets(const std::string& node, const std::vector<std::string>& digests) {
  std::set<std::string> held(digests.begin(), digests.end());
  auto it = dataset_holders_.find(node);
  if (it == dataset_holders_.end() ? held.empty() : it->second == held) return false;
  if (held.empty()) {
    dataset_holders_.erase(it);
  } else {
    dataset_holders_[node] = std::move(held);
  }
  return true;
}

}  // namespace corral::head
