// What the agent samples of each running replica's use over time (core/usage_series.h): once an
// interval, the replica's GPUs (utilisation, the mean over them; memory, their sum; through the
// agent's GPU probe: NVML, or simulated GPUs) and its cgroup (the CPU it used since the last
// sample, the memory it holds). Each sample is numbered (1, 2, ...) and appended to the run's
// record before any report carries it; a sync's reports carry the samples no sync has yet
// delivered, and a delivered sync is written to the record too (samples-sent). An agent that
// restarts reads both back: it loses no sample and sends again only those it cannot know
// arrived, which the head, taking each number once, does not count twice. A replica that ends
// between two samples gets a last one, from the poller's last look at it (a tenth of an interval
// or less before its end): a run shorter than an interval has one point, and no run loses the
// end of its last interval.
//
// Owned by the Agent. Thread-safe: the poller samples, the sync threads attach and deliver.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/launch/cgroup.h"
#include "agent/launch/launcher.h"
#include "core/agent_protocol.h"
#include "core/time.h"

#ifndef GUARDED_BY
#define GUARDED_BY(x)  // documentation: the member is accessed only with `x` held
#endif

namespace corral::agent {

// A running replica as the recorder samples it.
struct LiveReplica {
  RunKey key;
  std::string dir;  // its record's directory ("": none, nothing is kept)
  std::vector<int32_t> gpus;
  TimeMs started_at = 0;
  CgroupUsage cgroup;  // now (zeros where runs have no cgroups)
};

class UsageRecorder {
 public:
  // `interval_ms`: between two samples of a replica (> 0); `clock`: the node's wall clock (the
  // samples' times), which must outlive the recorder.
  UsageRecorder(int64_t interval_ms, const Clock* clock);

  // Looks at the replicas of `live` and samples those whose interval has passed, given the
  // GPUs' samples now. Replicas not in `live` are left as they are (an exited run's samples are
  // still reported).
  void Sample(const std::vector<LiveReplica>& live, const std::vector<GpuSample>& gpus);
  // The replicas looked at since their last sample that are no longer in `live` (they ended)
  // get their last sample, once, from that look.
  void CloseEnded(const std::vector<LiveReplica>& live);
  // Adds to each report the samples not yet delivered (read from the record the first time a
  // replica is seen); replicas no longer reported (released) are forgotten.
  void Attach(std::vector<RunReport>* reports, const std::map<RunKey, std::string>& dirs);
  // The sync that carried `reports` reached the head.
  void Delivered(const std::vector<RunReport>& reports);

 private:
  // What one look at a live replica saw.
  struct Look {
    TimeMs at = 0;
    TimeMs started_at = 0;
    int32_t gpu_util = 0;
    int64_t gpu_mem = 0;
    CgroupUsage cgroup;
  };
  struct Replica {
    std::string dir;
    int64_t last_seq = 0;
    TimeMs last_at = 0;  // of the last sample (0: none yet: counted from the run's start)
    int64_t last_cpu_ns = 0;
    int64_t sent = 0;  // delivered up to this sample number
    std::vector<UsagePoint> unsent;
    std::optional<Look> last_look;  // by this recorder (none after a restart)
    bool closed = false;            // its last sample taken
  };
  // The replica's entry, loaded from its record the first time. REQUIRES: mu_ held.
  Replica& Load(const RunKey& key, const std::string& dir);
  // Numbers `look` as the replica's next sample, keeps it in the record, queues it to be sent
  // (nothing where the record refuses it). REQUIRES: mu_ held.
  void Append(const RunKey& key, Replica& r, const Look& look);

  const int64_t interval_ms_;
  const Clock* clock_;
  std::mutex mu_;
  std::map<RunKey, Replica> replicas_ GUARDED_BY(mu_);
};

// The replica's GPUs' utilisation (mean) and memory (sum) in `gpus`.
void ReplicaGpuUse(const std::vector<int32_t>& held, const std::vector<GpuSample>& gpus,
                   int32_t* util, int64_t* memory);

}  // namespace corral::agent
