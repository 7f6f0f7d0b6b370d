// AgentFleet: N emulated agents (EmulatedAgent) on a few threads, each registering with the
// head and then keeping one long-poll sync open over its own keep-alive connection, exactly
// as `corral agent` does, but forking nothing. Owned by corral_agents' main; Start and Stop
// from that thread. Each agent lives on one of `threads` event loops (one thread each) and is
// touched only there; the counters are atomics, read from any thread.
#pragma once

#include <utility>  // before Boost.Asio (DESIGN §13)

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agents/latency_stats.h"

namespace corral::bench {

struct FleetConfig {
  boost::asio::ip::tcp::endpoint head;
  std::string host_header;  // "127.0.0.1:7070"
  std::string join_token;
  std::string name_prefix = "emu";
  int agents = 2000;
  int gpus_per_agent = 8;
  int threads = 2;
  int64_t runtime_ms = 0;        // how long each run "runs"
  int64_t sync_wait_ms = 20000;  // long-poll hold asked of the head (it caps it)
  int max_registering = 64;      // registrations in flight at once
  bool deltas = true;            // ask for delta answers, as the real agent does
  int64_t usage_every_ms = 0;    // a usage sample of each running run this often (0: none)
};

struct FleetCounters {
  int64_t registered = 0;
  int64_t runs_started = 0;
  int64_t runs_done = 0;  // exited, reported, and released by the head
  int64_t syncs = 0;
  int64_t answers = 0;  // sync answers received, and their bodies' bytes
  int64_t answer_bytes = 0;
  int64_t errors = 0;
};

class AgentFleet {
 public:
  explicit AgentFleet(FleetConfig config);
  ~AgentFleet();
  AgentFleet(const AgentFleet&) = delete;
  AgentFleet& operator=(const AgentFleet&) = delete;

  void Start();
  void Stop();  // stops the event loops; calls in flight are dropped

  FleetCounters counters() const;
  std::string first_error() const;

  // After Stop: round trips of syncs that asked not to be held (wait_ms 0: first syncs and
  // exit reports), and of registrations.
  LatencyStats SyncRoundTrips() const;
  LatencyStats RegisterRoundTrips() const;
  // Forgets the sync round trips so far (e.g. once every agent is registered).
  void ResetStats();

  struct Shard;  // public only for the .cc's helpers
  struct Slot;

 private:
  FleetConfig config_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;
};

}  // namespace corral::bench
