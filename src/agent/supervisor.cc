#include "agent/supervisor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <vector>

namespace corral::agent {

Supervisor::Supervisor(std::unique_ptr<Launcher> launcher, const Clock* clock)
    : clock_(clock ? clock : &system_clock_),
      launcher_(std::move(launcher)),
      stage_outs_(std::make_unique<StageOutRunner>(false, "")) {
  std::lock_guard lock(mu_);
  exit_fd_ = launcher_->ExitFd();
  for (RecoveredRun& r : launcher_->Recover()) {
    RunKey key = r.run.key();
    if (r.released) {
      released_.insert(key);
      continue;
    }
    Entry e;
    e.run = std::move(r.run);
    // Signals asked for after the launch and before the agent's restart may be sent again.
    e.signals_sent = e.run.order.signals;
    e.peers_lost_seen = e.run.order.peers_lost;
    e.status = launcher_->Check(e.run);
    if (!e.status.running && !e.status.error.empty()) e.error = e.status.error;
    spdlog::info("re-adopted run {} replica {}: {}", key.run_id, key.replica,
                 e.status.running ? "running" : "exited " + std::to_string(e.status.exit_code));
    runs_.emplace(key, std::move(e));
  }
}

TimeMs Supervisor::Now() const { return clock_->Now(); }

// A peer replica of this elastic run was lost with its node: its torchrun workers are killed
// so that torchrun sees its worker group fail and re-rendezvouses with the replicas left now,
// instead of its workers waiting in a collective for the lost peer until the collective's
// timeout (NCCL's is 30 minutes). SIGKILL, not SIGTERM: a worker blocked inside a collective
// runs no Python signal handler, and the step it was in cannot complete anyway without the peer.
// torchrun itself is spared (its workers alone carry TORCHELASTIC_RUN_ID).
void Supervisor::KillElasticWorkers(Entry& e) {
  const int32_t killed = launcher_->SignalWorkers(e.run, SIGKILL, "TORCHELASTIC_RUN_ID");
  spdlog::info(
      "run {} replica {}: a peer replica was lost with its node; {} torchrun worker(s) "
      "killed so that they re-rendezvous",
      e.run.order.run_id, e.run.order.replica, killed);
}

void Supervisor::BeginStop(Entry& e, int signal, int64_t grace_ms, TimeMs now) {
  if (e.stopping || !e.status.running) return;
  e.stopping = true;
  e.kill_at = now + std::max<int64_t>(0, grace_ms);
  spdlog::info("stopping run {} replica {}: signal {}, grace {} ms", e.run.order.run_id,
               e.run.order.replica, signal, grace_ms);
  launcher_->Signal(e.run, signal);
}

void Supervisor::Reconcile(const SyncResponse& desired) {
  std::lock_guard lock(mu_);
  const TimeMs now = Now();
  StartNewRuns(desired, now);
  StopOrReleaseUnlisted(ApplyOrders(desired, now), now);
}

// New runs are launched together (their durable records and monitor starts overlap); a run
// that declares datasets is staged first.
void Supervisor::StartNewRuns(const SyncResponse& desired, TimeMs now) {
  std::set<RunKey> listed;
  std::vector<RunOrder> to_start;
  for (const RunOrder& desired_order : desired.runs) {
    RunKey key{desired_order.run_id, desired_order.replica};
    if (runs_.count(key) > 0 || desired_order.stop || released_.count(key) > 0) continue;
    if (!listed.insert(key).second) continue;  // never (re)start stopped ones
    RunOrder order = desired_order;
    if (!order.stage_out.empty()) order.local_env["CORRAL_STAGE_OUT"] = order.stage_out.dir;
    if (!Stages(order)) {
      to_start.push_back(order);
    } else if (stager_ == nullptr) {
      AddFailed(order, "node has no dataset cache for dataset " + order.datasets[0].name, now);
    } else {
      if (!staging_.count(key)) {
        spdlog::info("staging the datasets of run {} replica {}", key.run_id, key.replica);
      }
      stager_->Start(order);  // once per key
      staging_[key] = order;
    }
  }
  AddLaunched(to_start, launcher_->LaunchAll(to_start), now);
}

void Supervisor::AddLaunched(const std::vector<RunOrder>& orders,
                             std::vector<Result<LaunchedRun>> launched, TimeMs now) {
  for (size_t i = 0; i < orders.size(); ++i) {
    const RunOrder& order = orders[i];
    RunKey key{order.run_id, order.replica};
    Entry e;
    e.signals_sent = order.signals;  // those asked for before it ran are not its
    e.peers_lost_seen = order.peers_lost;
    if (launched[i].ok()) {
      e.run = std::move(launched[i].value());  // running: Poll() notices when it ends
      spdlog::info("started run {} replica {} (pgid {})", key.run_id, key.replica, e.run.pgid);
    } else if (launched[i].status().code() == ErrorCode::kAlreadyExists) {
      spdlog::error("not starting run {} again: {}", key.run_id, launched[i].status().message());
      continue;
    } else {
      spdlog::error("cannot start run {} replica {}: {}", key.run_id, key.replica,
                    launched[i].status().message());
      e.run.order = order;
      e.run.started_at = now;
      e.status = {false, kExitCannotExec, now};
      if (launched[i].status().code() == ErrorCode::kFailedPrecondition) {
        e.error = launched[i].status().message();  // refused, not a crash: say why
      }
      exited_since_poll_ = true;
    }
    runs_.emplace(key, std::move(e));
  }
}

// Every order in the head's order: new signals, lost peers, stops. Returns the runs listed.
std::set<RunKey> Supervisor::ApplyOrders(const SyncResponse& desired, TimeMs now) {
  std::set<RunKey> listed;
  for (const RunOrder& order : desired.runs) {
    RunKey key{order.run_id, order.replica};
    listed.insert(key);
    if (order.stop) staging_.erase(key);  // answered as stopped before it started, below
    auto it = runs_.find(key);
    if (it == runs_.end() && order.stop && released_.count(key) == 0) {
      // Stopped before it ever ran here (an array cancelled while its element was being
      // placed): answered as ended, or the head would wait for an exit that never comes and
      // hold the run's GPUs.
      Entry e;
      e.run.order = order;
      e.status = {false, -order.stop_signal, now};
      e.error = "stopped before it started";
      runs_.emplace(key, std::move(e));
      exited_since_poll_ = true;
      continue;
    }
    if (it == runs_.end()) continue;  // released before it ran, or refused again
    Entry& e = it->second;
    if (order.signals > e.signals_sent && e.status.running && !e.stopping && !order.stop) {
      spdlog::info("signal {} to run {} replica {}", order.signal, key.run_id, key.replica);
      launcher_->Signal(e.run, order.signal);
    }
    e.signals_sent = std::max(e.signals_sent, order.signals);
    if (order.peers_lost > e.peers_lost_seen && e.status.running && !e.stopping && !order.stop) {
      KillElasticWorkers(e);
    }
    e.peers_lost_seen = std::max(e.peers_lost_seen, order.peers_lost);
    if (order.stop) BeginStop(e, order.stop_signal, order.grace_ms, now);
    // A grace cut short while stopping (the job reported its checkpoint): the kill comes now.
    if (order.stop && e.stopping)
      e.kill_at = std::min(e.kill_at, now + std::max<int64_t>(0, order.grace_ms));
  }
  return listed;
}

// A run the head no longer lists: stopped while it runs, released once its exit was told.
void Supervisor::StopOrReleaseUnlisted(const std::set<RunKey>& listed, TimeMs now) {
  std::erase_if(staging_, [&](const auto& kv) { return listed.count(kv.first) == 0; });
  for (auto it = runs_.begin(); it != runs_.end();) {
    Entry& e = it->second;
    if (listed.count(it->first) > 0) {
      ++it;
    } else if (e.status.running) {
      BeginStop(e, SIGTERM, e.run.order.grace_ms, now);
      ++it;
    } else if (e.exit_reported) {
      launcher_->Release(it->first);
      if (stager_ != nullptr) stager_->Release({it->first.run_id, it->first.replica});
      stage_outs_->Forget(it->first);
      released_.insert(it->first);
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<RunReport> Supervisor::Report() {
  std::lock_guard lock(mu_);
  std::vector<RunReport> out;
  for (auto& [key, e] : runs_) {
    if (StagingOut(key, e)) {  // its GPUs stay held until what it made is back
      RunReport r{key.run_id, key.replica, true, 0, e.run.started_at, 0};
      r.staging = true;  // started: its stage-out copies, and the note says how far
      r.note = stage_outs_->Note(key);
      e.stage_out_told_tenth = stage_outs_->Percent(key) / 10;
      out.push_back(std::move(r));
      continue;
    }
    if (!e.status.running) e.exit_reported = true;
    RunReport r{key.run_id,         key.replica,      e.status.running,
                e.status.exit_code, e.run.started_at, e.status.ended_at};
    if (!e.status.running) {
      if (auto done = stage_outs_->Result(key)) r.stage_out = *done;
    }
    r.fenced = e.fenced;
    r.vanished = !e.status.running && e.status.vanished;
    r.failed_task = e.status.running ? -1 : e.status.failed_task;
    r.error = e.error;
    r.note = e.status.note;
    // The launcher's clock (the wall clock) is the one its activity times were read on.
    if (e.status.running && e.status.notebook_busy) {
      r.notebook_idle_ms = 0;
    } else if (e.status.running && e.status.notebook_active_at > 0) {
      r.notebook_idle_ms = std::max<int64_t>(1, SystemClock().Now() - e.status.notebook_active_at);
    }
    if (!e.status.running) {
      r.oom_killed = e.status.usage.oom_killed;
      r.peak_memory_bytes = e.status.usage.peak_memory_bytes;
      r.cpu_ms = e.status.usage.cpu_ns / 1000000;
    }
    out.push_back(std::move(r));
  }
  for (const auto& [key, order] : staging_) {
    RunReport r{key.run_id, key.replica, true, 0, 0, 0};
    r.staging = true;
    r.note = stager_->Note({key.run_id, key.replica});
    staging_notes_[key] = r.note;
    out.push_back(std::move(r));
  }
  return out;
}

std::map<int32_t, std::set<JobId>> Supervisor::GpuHolders() {
  std::lock_guard lock(mu_);
  std::map<int32_t, std::set<JobId>> out;
  for (const auto& [key, e] : runs_) {
    if (!e.status.running) continue;
    for (int32_t gpu : e.run.order.gpus) out[gpu].insert(e.run.order.job_id);
  }
  return out;
}

std::vector<LiveReplica> Supervisor::LiveReplicas() {
  std::lock_guard lock(mu_);
  std::vector<LiveReplica> out;
  for (const auto& [key, e] : runs_) {
    if (!e.status.running || e.run.started_at <= 0) continue;
    out.push_back({key, launcher_->RunDirectory(key), e.run.order.gpus, e.run.started_at,
                   launcher_->LiveUsage(key)});
  }
  return out;
}

std::map<RunKey, std::string> Supervisor::RunDirectories() {
  std::lock_guard lock(mu_);
  std::map<RunKey, std::string> out;
  for (const auto& [key, e] : runs_) out[key] = launcher_->RunDirectory(key);
  return out;
}

namespace {

// A note without its last two characters: "... 41%" and "... 47%" read alike, so that the
// head hears of each tenth of the way, not of every percent.
std::string CoarseNote(const std::string& note) {
  return note.substr(0, note.size() > 2 ? note.size() - 2 : 0);
}

// Whether the head should hear of the node's fetches ahead now: one began, ended (its data is
// now in the cache, which the head places by), or went a tenth further.
bool PrefetchNews(const std::vector<PrefetchReport>& told, const std::vector<PrefetchReport>& now) {
  if (told.size() != now.size()) return true;
  for (size_t i = 0; i < now.size(); ++i) {
    if (told[i].job_id != now[i].job_id || CoarseNote(told[i].note) != CoarseNote(now[i].note)) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool Supervisor::Poll() {
  std::lock_guard lock(mu_);
  const TimeMs now = Now();
  StartStaged(now);
  bool changed = exited_since_poll_;
  exited_since_poll_ = false;
  for (const auto& [key, order] : staging_) {
    // The head hears of each tenth of the way (not of every percent).
    const std::string note = stager_->Note({key.run_id, key.replica});
    const std::string& told = staging_notes_[key];
    changed = changed || note.substr(0, note.size() > 2 ? note.size() - 2 : 0) !=
                             told.substr(0, told.size() > 2 ? told.size() - 2 : 0);
  }
  if (stager_ != nullptr) changed = changed || PrefetchNews(prefetch_told_, stager_->Prefetching());
  launcher_->DrainExitFd();  // before looking: an exit after this wakes the next wait
  for (auto& [key, e] : runs_) {
    if (!e.status.running) continue;
    const std::string note = e.status.note;
    e.status = launcher_->Check(e.run);
    changed = changed || e.status.note != note;           // the head hears of a pull at once
    changed = changed || e.status.notebook_busy_changed;  // and of a kernel at work, or done
    if (!e.status.running) {
      spdlog::info("run {} replica {} exited with {}", key.run_id, key.replica, e.status.exit_code);
      if (!e.status.error.empty()) e.error = e.status.error;
      changed = true;
    } else if (e.stopping && !e.killed && now >= e.kill_at) {
      spdlog::warn("run {} replica {} outlived its grace: SIGKILL", key.run_id, key.replica);
      launcher_->Signal(e.run, SIGKILL);
      e.killed = true;
    }
  }
  StartStageOuts();
  for (auto& [key, e] : runs_) {  // the head hears at once that a stage-out is over
    if (!e.stage_out_told && stage_outs_->Result(key)) {
      e.stage_out_told = true;
      changed = true;
    }
    // and of each tenth of its copy while it goes on
    if (StagingOut(key, e) && stage_outs_->Percent(key) / 10 != e.stage_out_told_tenth) {
      changed = true;
    }
  }
  return changed;
}

int Supervisor::StopAll() {
  std::lock_guard lock(mu_);
  const TimeMs now = Now();
  int n = 0;
  for (auto& [key, e] : runs_) {
    if (e.status.running && !e.stopping) {
      e.fenced = true;  // the head learns it was stopped for this, not by the job's own doing
      BeginStop(e, SIGTERM, e.run.order.grace_ms, now);
      ++n;
    }
  }
  return n;
}

void Supervisor::SetGpuDevices(const std::map<int32_t, int32_t>& minors,
                               const std::map<int32_t, std::string>& names) {
  std::lock_guard lock(mu_);
  launcher_->SetGpuDevices(minors);
  launcher_->SetGpuNames(names);
}

void Supervisor::AddFailed(const RunOrder& order, const std::string& error, TimeMs now) {
  Entry e;
  e.run.order = order;
  e.run.started_at = now;
  e.status = {false, kExitCannotExec, now};
  e.error = error;
  runs_.emplace(RunKey{order.run_id, order.replica}, std::move(e));
  exited_since_poll_ = true;
}

bool Supervisor::StagingOut(const RunKey& key, const Entry& e) const {
  return WantsStageOut(e.run.order, e.run.pgid, e.status.running, e.error) &&
         !stage_outs_->Result(key);
}

void Supervisor::StartStageOuts() {
  for (const auto& [key, e] : runs_) {
    if (WantsStageOut(e.run.order, e.run.pgid, e.status.running, e.error) && !e.exit_reported) {
      stage_outs_->Start(key, e.run.order);  // once per key
    }
  }
}

void Supervisor::SetStageOutIdentity(bool as_owner, const std::string& node) {
  std::lock_guard lock(mu_);
  stage_outs_ = std::make_unique<StageOutRunner>(as_owner, node);
}

void Supervisor::StartStaged(TimeMs now) {
  for (auto it = staging_.begin(); it != staging_.end();) {
    const RunKey key = it->first;
    auto staged = stager_->Take({key.run_id, key.replica});
    if (!staged) {
      ++it;
      continue;
    }
    const RunOrder order = std::move(it->second);
    it = staging_.erase(it);
    staging_notes_.erase(key);
    if (!staged->ok()) {  // failed, never retried: the reason names the dataset and source
      spdlog::error("cannot stage run {} replica {}: {}", key.run_id, key.replica,
                    staged->status().message());
      stager_->Release({key.run_id, key.replica});
      AddFailed(order, staged->status().message(), now);
      continue;
    }
    Result<LaunchedRun> launched = launcher_->Launch(**staged);
    if (!launched.ok()) {
      AddFailed(**staged, launched.status().message(), now);
      continue;
    }
    spdlog::info("started run {} replica {} (pgid {}), its datasets staged", key.run_id,
                 key.replica, launched->pgid);
    Entry e;
    e.signals_sent = (*staged)->signals;
    e.peers_lost_seen = (*staged)->peers_lost;
    e.run = std::move(*launched);
    runs_.emplace(key, std::move(e));
    exited_since_poll_ = true;  // the head hears it started at once
  }
}

void Supervisor::SetDatasetCache(DatasetCacheConfig config, bool as_owner, const std::string& node,
                                 const NodeClock& clock) {
  std::lock_guard lock(mu_);
  stager_ = std::make_unique<DatasetStager>(std::move(config), as_owner, node, clock);
  for (const auto& [key, e] : runs_) {
    if (e.status.running && !e.run.order.datasets.empty()) stager_->Repin(e.run.order);
  }
}

std::vector<std::string> Supervisor::HeldDatasets() {
  std::lock_guard lock(mu_);
  return stager_ == nullptr ? std::vector<std::string>{} : stager_->Held();
}

void Supervisor::Prefetch(const std::vector<PrefetchOrder>& orders) {
  std::lock_guard lock(mu_);
  if (stager_ != nullptr) stager_->Prefetch(orders);
}

std::vector<PrefetchReport> Supervisor::Prefetching() {
  std::lock_guard lock(mu_);
  if (stager_ != nullptr) prefetch_told_ = stager_->Prefetching();
  return prefetch_told_;
}

std::string Supervisor::RenderDatasetMetrics() {
  std::lock_guard lock(mu_);
  return stager_ == nullptr ? std::string() : stager_->RenderMetrics();
}

int Supervisor::RunningCount() {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& [key, e] : runs_) n += e.status.running ? 1 : 0;
  return n;
}

Result<std::string> Supervisor::ReadRunLog(const std::string& run_id, int32_t replica, int32_t task,
                                           const std::string& stream, int64_t offset,
                                           int64_t max_bytes) {
  std::lock_guard lock(mu_);
  return launcher_->ReadLog({run_id, replica}, task, stream, offset, max_bytes);
}

}  // namespace corral::agent

namespace corral::agent {

Result<ExecTarget> Supervisor::ExecTargetOf(const std::string& run_id, int32_t replica) {
  std::lock_guard lock(mu_);
  auto it = runs_.find(RunKey{run_id, replica});
  if (it == runs_.end() || !it->second.status.running) {
    return NotFound("run " + run_id + " replica " + std::to_string(replica) +
                    " is not running on this node");
  }
  if (it->second.run.pgid <= 0) {
    return Unavailable("run " + run_id + " is still starting; try again in a moment");
  }
  ExecTarget target;
  target.pid = it->second.run.pgid;
  if (!it->second.run.order.container.empty()) {
    target.container_run_dir = launcher_->RunDirectory(it->first);
  }
  return target;
}

}  // namespace corral::agent
