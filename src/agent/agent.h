// The node agent (DESIGN §7): discovers GPUs, registers with the head, then keeps one
// long-poll sync open — reporting what runs here, receiving what should — and reconciles.
//
// Threads (all owned by Agent, started by Run(), joined before it returns):
//  - the caller of Run(): registration and the long-poll sync loop;
//  - the poller: woken at once when a run exits (the monitors write to a FIFO), and every
//    poll_interval_ms otherwise, notices exits, sends SIGKILL after grace, and fences (stops
//    every run) when the head has been unreachable for longer than lease_ms;
//  - the reporter: when a run exits while the long poll is held, sends an extra sync with
//    wait_ms = 0 at once, so that the head learns of an exit as soon as it happens;
//  - the lease keeper: renews the agent's lease file (agent_lease.h) several times a lease, on
//    a thread of its own so that no slow launch or sync delays it; the monitors of interactive
//    sessions end them when it stops.
// Stop() may be called from any thread (not from a signal handler).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/containers/container.h"
#include "agent/data/dataset_cache.h"
#include "agent/gpus/gpu_monitor.h"
#include "agent/gpus/gpu_probe.h"
#include "agent/gpus/health_program.h"
#include "agent/launch/cgroup.h"
#include "agent/launch/usage_recorder.h"
#include "agent/node/node_env.h"
#include "agent/node/ports.h"
#include "agent/node/run_as.h"
#include "agent/supervisor.h"
#include "core/agent_protocol.h"
#include "core/desired_runs.h"
#include "core/status.h"

namespace corral::agent {

// The agent's side of the head protocol; the lead implements it over HTTP (the join token and
// the node_token of the RegisterResponse are the channel's business).
class HeadChannel {
 public:
  virtual ~HeadChannel() = default;
  virtual Result<RegisterResponse> Register(const RegisterRequest& request) = 0;
  // May be held by the head for up to request.wait_ms. Called from two threads at once (the
  // long poll and the reporter's immediate sync), so it must be thread-safe.
  virtual Result<SyncResponse> Sync(const SyncRequest& request) = 0;
  // Makes calls in flight return soon with an error (used by Agent::Stop). The default does
  // nothing: Stop then waits for a held sync to end.
  virtual void Cancel() {}
};

struct AgentConfig {
  std::string name;       // this node's name (CORRAL_NODE)
  std::string state_dir;  // created if missing; holds runs/ and head_epoch
  std::string address;    // how the head and other nodes reach this one (MASTER_ADDR)
  std::map<std::string, std::string> labels;  // gpu_model is added when all GPUs agree
  int32_t cpu_milli = 0;                      // 0: the CPUs this process may run on
  int64_t memory_mb = 0;                      // 0: MemTotal of /proc/meminfo
  int64_t sync_wait_ms = 20000;               // long-poll hold asked of the head
  // Stop every run after this long without reaching the head; interactive sessions' monitors
  // end them after this long without this agent (agent_lease.h).
  int64_t lease_ms = 60000;
  int64_t poll_interval_ms = 100;
  int64_t retry_min_ms = 200;  // backoff between failed calls, doubling up to retry_max_ms
  int64_t retry_max_ms = 5000;
  std::map<std::string, std::string> job_env;  // defaults in every task's environment
  RunAsPolicy run_as;                          // whose identity tasks take
  Cgroups cgroups = Cgroups::None();           // where each replica gets its own group
  std::string monitor_exe;     // corral-monitor, started for each replica; empty: fork the agent
  ContainerConfig containers;  // how replicas with an image run (container.h)
  // Where runs' datasets are cached (dataset_cache.h); an empty dir: STATE_DIR/datasets.
  DatasetCacheConfig datasets;
  std::string gpushare_lib;  // the share shim preloaded into replicas holding a GPU share
  std::string mps_control;   // nvidia-cuda-mps-control: a daemon per owner per GPU (mps.h)
  int32_t port_lo = 29500;   // MASTER_PORT range of runs whose replica 0 is here
  int32_t port_hi = 29999;
  int64_t busy_ports_every_ms = 1000;  // how often the range's busy ports are probed (ports.h)
  // Where the DCGM exporter's HPC job mapping files go (gpu_monitor.h); empty: none.
  std::string job_map_dir;
  // An operator's health check program (health_program.h); empty: none. It runs at Init, then
  // every health_interval_ms, killed after health_limit_ms.
  std::string health_program;
  int64_t health_interval_ms = 5 * 60 * 1000;
  int64_t health_limit_ms = 60 * 1000;
  // How often the GPUs' health checks count as a new check (GpuMonitor::SampleAndCheck).
  int64_t gpu_check_interval_ms = 10 * 1000;
  // How often each running replica's use is sampled for its job's series (usage_recorder.h).
  int64_t usage_interval_ms = 60 * 1000;
  // For the service manager (Type=notify): called after each registration with the head, on
  // the sync thread, and on every turn of the poller (at least every poll_interval_ms) while
  // it supervises runs, so a keep-alive stops when the agent hangs.
  std::function<void()> on_registered;
  std::function<void()> on_poll;
};

// CPUs this process may run on (sched_getaffinity), in milli-CPUs.
int32_t MachineCpuMilli();
// MemTotal from /proc/meminfo, in MiB; 0 if unreadable.
int64_t MachineMemoryMb();

class Agent {
 public:
  // `env`: the node's clocks (the lease, backoffs and the lease keeper on its steady clock; the
  // runs' grace periods and usage samples on its wall clock), its health program runner and
  // the files of the head epoch and the GPU job map. The machine's is RealNodeEnv(); tests pass
  // fakes (fake_node_env.h).
  Agent(AgentConfig config, std::unique_ptr<GpuProbe> probe, std::unique_ptr<HeadChannel> head,
        NodeEnv env);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs until Stop(). Returns 0 after Stop(), 1 if the agent cannot start (GPU probe or state
  // directory failed; the reason is logged). Job processes are left running on return: a
  // restarted agent re-adopts them.
  int Run();
  void Stop();

  // A replica's log (see ReadRunLog in launcher.h). Usable before, during and after Run().
  Result<std::string> ReadRunLog(const std::string& run_id, int32_t replica, int32_t task,
                                 const std::string& stream, int64_t offset, int64_t max_bytes);
  // Where `corral exec` into a running replica here goes (Supervisor::ExecTargetOf). Any
  // thread.
  Result<ExecTarget> ExecTargetOf(const std::string& run_id, int32_t replica) {
    return supervisor_->ExecTargetOf(run_id, replica);
  }
  // The agent's Prometheus metrics (per-GPU use, the dataset cache). Any thread, before or
  // during Run().
  std::string RenderMetrics() {
    return monitor_->RenderMetrics() + supervisor_->RenderDatasetMetrics();
  }

 private:
  Status Init();
  Status DoRegister();
  Status SyncOnce(int64_t wait_ms);
  void SyncLoop();
  void PollLoop();
  void ReportLoop();
  void KeepLease();
  // The poller's: samples replicas' use when an interval may have passed, and the last of
  // those that `exited`.
  void SampleUsage(bool exited);
  // Sleeps up to `ms`; returns false if stopping.
  bool SleepFor(int64_t ms);
  // Waits up to `ms` or until a run exits (the supervisor's exit descriptor) or Stop();
  // returns false if stopping.
  bool WaitForExit(int64_t ms);
  void SaveHeadEpoch(uint64_t epoch);

  const AgentConfig config_;
  const NodeEnv env_;
  std::unique_ptr<GpuProbe> probe_;
  std::unique_ptr<HeadChannel> head_;
  std::unique_ptr<Supervisor> supervisor_;               // thread-safe itself
  std::unique_ptr<GpuMonitor> monitor_;                  // thread-safe itself
  UsageRecorder usage_;                                  // thread-safe itself
  BusyPortsProbe busy_ports_;                            // thread-safe itself
  TimeMs usage_checked_at_ = 0;                          // the poller's own
  std::unique_ptr<HealthProgramRunner> health_program_;  // none without --health-program
  std::vector<Gpu> gpus_;                                // set by Init, then read-only
  int32_t cpu_milli_ = 0;
  int64_t memory_mb_ = 0;

  std::mutex apply_mu_;  // serialises applying sync responses (two syncs may be in flight)

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool registered_ GUARDED_BY(mu_) = false;
  uint64_t agent_epoch_ GUARDED_BY(mu_) = 0;
  uint64_t max_head_epoch_ GUARDED_BY(mu_) = 0;  // persisted: refuse older leaders' orders
  DesiredRuns desired_ GUARDED_BY(mu_);          // the desired state last applied, kept from deltas
  bool in_long_poll_ GUARDED_BY(mu_) = false;
  bool unreported_exit_ GUARDED_BY(mu_) = false;  // the next sync must not be held
  bool urgent_ GUARDED_BY(mu_) = false;           // the reporter should sync now
  TimeMs last_contact_ GUARDED_BY(mu_) = 0;       // on env_'s steady clock
  bool fenced_ GUARDED_BY(mu_) = false;
  int wake_pipe_[2] = {-1, -1};  // Stop() writes here: wakes WaitForExit's poll()
};

}  // namespace corral::agent
