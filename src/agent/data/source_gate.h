// Stage-ins share each source's bandwidth (docs/datasets.md): a shared file system or a web
// server that running jobs also read directly must not be taken over by the fetches of jobs
// that wait. The gate queues the fetches of each source, first come first served, so that at
// most `fetches_per_source` run at once on this node, and paces the bytes all of them read
// from it to `bytes_per_second` (a token bucket with no burst: a fetch never runs ahead of
// the rate). One per node's dataset cache, used by every staging thread at once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "agent/node/node_env.h"

namespace corral::agent {

struct SourceGateConfig {
  int32_t fetches_per_source = 2;  // at once, per source (0: no limit)
  int64_t bytes_per_second = 0;    // per source, all its fetches together (0: no limit)
  bool operator==(const SourceGateConfig&) const = default;
};

// Which source a dataset's source is, for sharing its bandwidth: an http(s) URL's scheme, host
// and port; a path's file system ("file system <device>", as stat's st_dev says), so that
// every dataset on one NFS mount is one source.
std::string SourceOfDataset(const std::string& source);

class SourceGate {
 public:
  // The rate is kept on `clock`'s steady clock, which must outlive the gate.
  SourceGate(SourceGateConfig config, const NodeClock& clock) : config_(config), clock_(clock) {}
  SourceGate(const SourceGate&) = delete;
  SourceGate& operator=(const SourceGate&) = delete;

  // A place among the source's running fetches, held while it lives.
  class Slot {
   public:
    Slot(SourceGate* gate, std::string source) : gate_(gate), source_(std::move(source)) {}
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    SourceGate* gate_;
    std::string source_;
  };

  // Waits, in line behind the fetches from `source` that asked first, until fewer than
  // fetches_per_source of them run. `queued` gets this fetch's place in line (1: next) each
  // time it changes while it waits; it is not called when the fetch goes at once.
  Slot Enter(const std::string& source, const std::function<void(int32_t)>& queued);

  // Counts `bytes` more read from `source` and waits until the source's rate allows them.
  void Pace(const std::string& source, int64_t bytes);
  // Counts `bytes` more read by one fetch and waits until `bytes_per_second` allows them:
  // the head's cap on that fetch alone, its share of a cluster-wide budget (docs/datasets.md).
  // `paid_until_ms` is the fetch's own bucket (start at 0); a rate <= 0 paces nothing.
  void PaceFetch(double* paid_until_ms, int64_t bytes, int64_t bytes_per_second);

  const SourceGateConfig& config() const { return config_; }

 private:
  struct Line {
    int32_t running = 0;
    std::deque<uint64_t> waiting;  // tickets, first come first
    // The bucket: when the bytes counted so far are allowed, in milliseconds on the steady
    // clock, with their fraction (a fetch's small reads must not each round a millisecond up).
    double paid_until_ms = 0;
  };
  void Leave(const std::string& source);

  const SourceGateConfig config_;
  const NodeClock& clock_;
  std::mutex mu_;
  std::condition_variable changed_;
  uint64_t next_ticket_ = 0;           // GUARDED_BY(mu_)
  std::map<std::string, Line> lines_;  // GUARDED_BY(mu_)
};

}  // namespace corral::agent
