// The Supervisor owns the runs on this node (DESIGN §7): it reconciles the head's desired runs
// against what runs, starts each run id at most once ever, stops runs (signal, grace, SIGKILL)
// and reports what is alive or exited-but-unacknowledged.
//
// Owned by the Agent. Thread-safe: the agent's sync loop calls Report/Reconcile, its poller
// thread calls Poll/StopAll, and log readers call ReadRunLog, concurrently.
//
// Protocol: call Report(), send it to the head, and pass the head's answer to Reconcile().
// An exited run is forgotten only when the head no longer lists it AND its exit was in a
// report taken before that Reconcile — so the head has seen every exit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/data/dataset_stager.h"
#include "agent/launch/launcher.h"
#include "agent/launch/usage_recorder.h"
#include "agent/sessions/exec_context.h"
#include "agent/stage_out_runner.h"
#include "core/agent_protocol.h"

#ifndef GUARDED_BY
#define GUARDED_BY(x)  // documentation: the member is accessed only with `x` held
#endif

namespace corral::agent {

class Supervisor {
 public:
  // Re-adopts every run the launcher recovers from the state directory: alive ones are watched
  // again, exited ones are reported, released ones are only remembered as started.
  // `clock`: when grace periods end (the wall clock when null); tests pass a virtual one.
  explicit Supervisor(std::unique_ptr<Launcher> launcher, const Clock* clock = nullptr);
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Start desired runs never started here; stop runs with stop=true (their signal and grace);
  // stop (SIGTERM, the run's grace, SIGKILL) running runs the head no longer lists; forget
  // reported exited runs the head no longer lists.
  void Reconcile(const SyncResponse& desired);

  // Everything alive or exited-but-unacknowledged, ordered by (run_id, replica).
  std::vector<RunReport> Report();

  // Notices exits and sends SIGKILL to runs whose grace has passed. Call every ~100 ms.
  // Returns true if a run exited since the last call.
  bool Poll();

  // Self-fencing: stop every running run (SIGTERM, its grace, then SIGKILL via Poll).
  // Returns how many runs were told to stop.
  int StopAll();

  // See Launcher::SetGpuDevices. Call before the first Reconcile.
  // `names`: Launcher::SetGpuNames.
  void SetGpuDevices(const std::map<int32_t, int32_t>& minors,
                     const std::map<int32_t, std::string>& names = {});

  int RunningCount();
  // Whose identity stage-outs copy as (stage_out_runner.h): each run's owner with `as_owner`,
  // else the agent's own user (the default).
  void SetStageOutIdentity(bool as_owner, const std::string& node);
  // Runs that declare datasets are staged into this cache before they start (dataset_stager.h),
  // its sources' fetches paced on `clock`. Without one, such a run fails, saying the node has
  // no dataset cache.
  void SetDatasetCache(DatasetCacheConfig config, bool as_owner, const std::string& node,
                       const NodeClock& clock);
  // The digests of the datasets the node's cache holds (after evicting over its watermark).
  std::vector<std::string> HeldDatasets();
  // Fetches ahead what the head asks for jobs reserved on this node (DatasetStager::Prefetch;
  // nothing without a cache), and how far those fetches are.
  void Prefetch(const std::vector<PrefetchOrder>& orders);
  std::vector<PrefetchReport> Prefetching();
  // The dataset cache's metrics ("" without a cache).
  std::string RenderDatasetMetrics();
  // The jobs of the running runs on each GPU index (several with shared GPUs).
  std::map<int32_t, std::set<JobId>> GpuHolders();

  // The running replicas with their cgroups' use now (for the UsageRecorder), and the record
  // directory of every replica it holds.
  std::vector<LiveReplica> LiveReplicas();
  std::map<RunKey, std::string> RunDirectories();

  // Readable when a run has exited since the last Poll (-1: none, poll on a timer). Any thread.
  int ExitFd() const { return exit_fd_; }

  Result<std::string> ReadRunLog(const std::string& run_id, int32_t replica, int32_t task,
                                 const std::string& stream, int64_t offset, int64_t max_bytes);
  // Where `corral exec` into a running replica goes: its main process (task 0, its process
  // group's leader), whose context the command takes, and its container if it has one.
  // kNotFound when it does not run here.
  Result<ExecTarget> ExecTargetOf(const std::string& run_id, int32_t replica);

 private:
  struct Entry {
    LaunchedRun run;
    RunStatus status;
    bool exit_reported = false;  // an exited status went out in a Report()
    bool fenced = false;         // stopped by StopAll (self-fencing)
    bool stopping = false;
    int32_t signals_sent = 0;     // of the order's `signals`
    int32_t peers_lost_seen = 0;  // of the order's `peers_lost`
    TimeMs kill_at = 0;           // SIGKILL the group at this time if still running
    bool killed = false;
    std::string error;                  // why it could not start (refused by the node's policy)
    bool stage_out_told = false;        // Poll has noticed its stage-out end
    int32_t stage_out_told_tenth = -1;  // the tenth of its copy the head last heard of
  };

  void BeginStop(Entry& e, int signal, int64_t grace_ms, TimeMs now);
  void KillElasticWorkers(Entry& e);
  // Reconcile's steps, under mu_: the new orders launched together (or staged first), each
  // order's signals and stop applied, and the runs the head no longer lists stopped or
  // released.
  void StartNewRuns(const SyncResponse& desired, TimeMs now);
  void AddLaunched(const std::vector<RunOrder>& orders, std::vector<Result<LaunchedRun>> launched,
                   TimeMs now);
  std::set<RunKey> ApplyOrders(const SyncResponse& desired, TimeMs now);
  void StopOrReleaseUnlisted(const std::set<RunKey>& listed, TimeMs now);
  // A new order: launched now, or (declaring datasets) staged first.
  bool Stages(const RunOrder& order) const { return !order.datasets.empty(); }
  void StartStaged(TimeMs now);  // launches the runs whose staging is over
  void AddFailed(const RunOrder& order, const std::string& error, TimeMs now);
  // Exited, but its stage-out is not over: reported as running, its GPUs still held.
  bool StagingOut(const RunKey& key, const Entry& e) const;
  void StartStageOuts();  // of the runs that have just ended
  TimeMs Now() const;

  std::mutex mu_;
  SystemClock system_clock_;
  const Clock* clock_;
  std::unique_ptr<Launcher> launcher_ GUARDED_BY(mu_);
  int exit_fd_ = -1;                                // the launcher's, fixed at construction
  std::map<RunKey, Entry> runs_ GUARDED_BY(mu_);    // alive, or exited and not yet released
  std::set<RunKey> released_ GUARDED_BY(mu_);       // started once, acknowledged, forgotten
  bool exited_since_poll_ GUARDED_BY(mu_) = false;  // a run failed to launch: Poll says so
  std::unique_ptr<DatasetStager> stager_ GUARDED_BY(mu_);
  std::map<RunKey, RunOrder> staging_ GUARDED_BY(mu_);           // new runs whose data is staging
  std::map<RunKey, std::string> staging_notes_ GUARDED_BY(mu_);  // as last reported
  std::vector<PrefetchReport> prefetch_told_ GUARDED_BY(mu_);    // fetches ahead, as reported
  std::unique_ptr<StageOutRunner> stage_outs_ GUARDED_BY(mu_);
};

}  // namespace corral::agent
