// The cluster's use over the last hours, for the dashboard's plots (GET /v1/cluster/series):
// one point a step (a minute by default) of the GPUs alive and held, their mean measured
// utilisation, and the jobs pending and running, the newest `capacity` points kept.
//
// A sampled observation kept by the shell, not a change of the core: half of each point is the
// GPUs' measured utilisation, which agents report with each sync and the core keeps only as
// each node's last sample (never a change), so no replay of the change log could rebuild it;
// and a change a minute would grow the change log, the standby's replay and the event stream
// with a fact no decision reads. So it is not durable: a head that restarts, or a standby that
// takes the lead, starts an empty series and the plots begin there.
//
// Owned by the head's shell (Head), used on its state-machine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/codec.h"
#include "core/time.h"
#include "core/views.h"

namespace corral::head {

struct ClusterPoint {
  TimeMs at = 0;
  int32_t gpus = 0;       // the GPUs of the nodes alive
  int32_t gpus_used = 0;  // of those, the ones runs hold (whole or a share of them)
  int32_t gpu_util = -1;  // their mean measured utilisation, percent; -1: none measured
  int32_t pending = 0;    // jobs waiting to be placed
  int32_t running = 0;    // jobs placed (scheduled or running)
  bool operator==(const ClusterPoint&) const = default;
};

// What GET /v1/cluster/series answers.
struct ClusterSeriesView {
  DurationMs step_ms = 0;
  int64_t capacity = 0;
  std::vector<ClusterPoint> points;  // oldest first
};

// The point the head's views give at `now` (HeadCore::ListNodes and ListQueues).
ClusterPoint SampleCluster(const std::vector<NodeView>& nodes, const std::vector<QueueView>& queues,
                           TimeMs now);

class ClusterSeries {
 public:
  // REQUIRES: step_ms > 0, capacity > 0.
  ClusterSeries(DurationMs step_ms, size_t capacity);

  // Whether `now` is in a step after the last point's (true before the first point): points
  // fall one a step, at most, however often the shell's tick asks.
  bool Due(TimeMs now) const;
  // Appends `p`, dropping the oldest point past the capacity.
  void Add(ClusterPoint p);
  // The points taken at or after `from` (0: all kept).
  ClusterSeriesView Since(TimeMs from) const;
  size_t size() const { return points_.size(); }

 private:
  DurationMs step_ms_;
  size_t capacity_;
  std::deque<ClusterPoint> points_;
};

// {"step_ms", "capacity", "points": [[at, gpus, gpus_used, gpu_util (null: none measured),
// pending, running], ...]} (docs/api.md).
Json ToJson(const ClusterSeriesView& v);

}  // namespace corral::head
