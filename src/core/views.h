// What the head shows of a node and a queue: the durable record with what is derived from
// the live state beside it (use, shares, the agent's last samples). The head's core builds
// them, the API encodes them, and the CLI reads its answers back into the same types.
#pragma once

#include <string>
#include <vector>

#include "core/agent_protocol.h"
#include "core/node.h"
#include "core/resources.h"

namespace corral {

// One share of a GPU on a node and who holds it.
struct GpuShareHolder {
  int32_t gpu = 0;  // GPU index
  JobId job = 0;
  std::string owner;
  int32_t milli = 0;
  int64_t memory_mb = 0;
  GpuIsolation isolation = GpuIsolation::kMemory;
};

struct NodeView {
  Node node;
  int32_t gpus_used = 0;  // GPUs held whole or holding shares
  std::vector<GpuShareHolder> shares;
  std::vector<std::string> runs;
  std::vector<GpuSample> gpu_samples;  // as the agent last reported; empty: not measured
  ImageCacheReport image_cache;        // as the agent last reported (not durable)
  // The admin reservation the node is in at the time of the listing ("": none), and whether
  // it is a maintenance window (`corral nodes` and sinfo show "maint", else "reserved").
  std::string reservation;
  bool maintenance = false;
};

struct QueueView {
  QueueConfig config;
  int32_t used_gpus = 0;
  int32_t pending = 0;
  int32_t running = 0;
};

}  // namespace corral
