#include "agent/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/launch/agent_lease.h"
#include "agent/node/ports.h"

namespace corral::agent {

int32_t MachineCpuMilli() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int n = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, n) * 1000;
}

int64_t MachineMemoryMb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb / 1024;
  }
  return 0;
}

Agent::Agent(AgentConfig config, std::unique_ptr<GpuProbe> probe, std::unique_ptr<HeadChannel> head,
             NodeEnv env)
    : config_(std::move(config)),
      env_(env),
      probe_(std::move(probe)),
      head_(std::move(head)),
      supervisor_(std::make_unique<Supervisor>(
          [this] {
            auto launcher = std::make_unique<PosixLauncher>(
                config_.state_dir, config_.name, config_.job_env, config_.run_as, config_.cgroups,
                config_.monitor_exe, config_.gpushare_lib);
            launcher->SetContainerConfig(config_.containers);
            launcher->SetMpsControl(config_.mps_control);
            launcher->SetSessionLease(AgentLeasePath(config_.state_dir), config_.lease_ms);
            return launcher;
          }(),
          &env_.clock.Wall())),
      monitor_(std::make_unique<GpuMonitor>(probe_.get(), config_.job_map_dir, env_)),
      usage_(config_.usage_interval_ms, &env_.clock.Wall()),
      busy_ports_(config_.port_lo, config_.port_hi, config_.busy_ports_every_ms) {
  DatasetCacheConfig datasets = config_.datasets;
  if (datasets.dir.empty()) datasets.dir = config_.state_dir + "/datasets";
  supervisor_->SetDatasetCache(datasets, config_.run_as.as_owner, config_.name, env_.clock);
  supervisor_->SetStageOutIdentity(config_.run_as.as_owner, config_.name);
  std::lock_guard lock(mu_);
  last_contact_ = env_.clock.Steady().Now();
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) wake_pipe_[0] = wake_pipe_[1] = -1;
}

Agent::~Agent() {
  for (int fd : wake_pipe_) {
    if (fd >= 0) close(fd);
  }
}

Status Agent::Init() {
  std::error_code ec;
  std::filesystem::create_directories(config_.state_dir, ec);
  if (ec) {
    return Internal("cannot create --state-dir " + config_.state_dir + ": " + ec.message());
  }
  Result<std::vector<Gpu>> gpus = probe_->Probe();
  if (!gpus.ok())
    return Status(gpus.status().code(), "GPU discovery failed: " + gpus.status().message());
  gpus_ = std::move(gpus.value());
  monitor_->SetGpus(gpus_);
  monitor_->SetCheckInterval(config_.gpu_check_interval_ms);
  if (!config_.health_program.empty() && health_program_ == nullptr) {
    // Its first run starts now, before the agent registers (as slurmd's does).
    health_program_ = std::make_unique<HealthProgramRunner>(
        config_.health_program, config_.health_interval_ms, config_.health_limit_ms, env_);
    monitor_->UseHealthProgram(health_program_.get());
  }
  std::map<int32_t, int32_t> minors = probe_->DeviceMinors();
  supervisor_->SetGpuDevices(minors, probe_->VisibleDeviceNames());
  cpu_milli_ = config_.cpu_milli > 0 ? config_.cpu_milli : MachineCpuMilli();
  memory_mb_ = config_.memory_mb > 0 ? config_.memory_mb : MachineMemoryMb();
  Result<std::string> saved = env_.files.Read(config_.state_dir + "/head_epoch");
  std::istringstream in(saved.ok() ? *saved : "");
  uint64_t epoch = 0;
  std::lock_guard lock(mu_);
  if (in >> epoch) max_head_epoch_ = epoch;
  last_contact_ = env_.clock.Steady().Now();  // the lease runs from the start, too
  spdlog::info("agent {}: {} GPUs, {} mCPU, {} MiB, state in {}", config_.name, gpus_.size(),
               cpu_milli_, memory_mb_, config_.state_dir);
  spdlog::info("runs are isolated with {}; tasks run as {}; monitors are {}",
               config_.cgroups.Describe(),
               config_.run_as.as_owner ? "their owners" : "this agent's user",
               config_.monitor_exe.empty() ? "forks of this agent (no corral-monitor beside it)"
                                           : config_.monitor_exe);
  if (!minors.empty()) {
    spdlog::info(
        "GPU devices: each run may open only its own /dev/nvidia*: {}",
        config_.cgroups.isolates_devices()
            ? "enforced (" + config_.cgroups.Describe() + ")"
            : std::string("NOT enforced (needs the cgroup v1 devices controller, or cgroup v2 "
                          "with a kernel that loads cgroup device programs)"));
  }
  return Status::Ok();
}

void Agent::SaveHeadEpoch(uint64_t epoch) {
  const std::string path = config_.state_dir + "/head_epoch";
  if (Status st = env_.files.Replace(path, path + ".tmp", std::to_string(epoch) + "\n"); !st.ok())
    spdlog::warn("cannot save the head epoch: {}", st.message());
}

bool Agent::WaitForExit(int64_t ms) {
  struct pollfd fds[2] = {{supervisor_->ExitFd(), POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
  (void)poll(fds, 2, static_cast<int>(ms));  // negative fds are ignored by poll
  std::lock_guard lock(mu_);
  return !stopping_;
}

bool Agent::SleepFor(int64_t ms) {
  std::unique_lock lock(mu_);
  return !env_.clock.WaitFor(lock, cv_, ms, [&] { return stopping_; });
}

Status Agent::DoRegister() {
  RegisterRequest req;
  req.name = config_.name;
  req.address = config_.address;
  req.port_lo = config_.port_lo;
  req.port_hi = config_.port_hi;
  req.cpu_milli = cpu_milli_;
  req.memory_mb = memory_mb_;
  req.gpus = gpus_;
  req.labels = config_.labels;
  if (!gpus_.empty() && std::all_of(gpus_.begin(), gpus_.end(),
                                    [&](const Gpu& g) { return g.model == gpus_[0].model; })) {
    req.labels.try_emplace("gpu_model", gpus_[0].model);
  }
  Result<RegisterResponse> resp = head_->Register(req);
  if (!resp.ok()) return resp.status();
  uint64_t save = 0;
  {
    std::lock_guard lock(mu_);
    if (resp->head_epoch < max_head_epoch_) {
      return FailedPrecondition("head epoch " + std::to_string(resp->head_epoch) +
                                " is older than " + std::to_string(max_head_epoch_) +
                                " already seen: a deposed leader");
    }
    if (resp->head_epoch > max_head_epoch_) save = max_head_epoch_ = resp->head_epoch;
    agent_epoch_ = resp->agent_epoch;
    registered_ = true;
    desired_.Reset();  // the first sync must not be held: get the whole desired state
    unreported_exit_ = true;
    last_contact_ = env_.clock.Steady().Now();
    fenced_ = false;
  }
  if (save != 0) SaveHeadEpoch(save);
  spdlog::info("registered with the head: head epoch {}, agent epoch {}, protocol {} (ours {})",
               resp->head_epoch, resp->agent_epoch, resp->protocol, kAgentProtocol);
  return Status::Ok();
}

Status Agent::SyncOnce(int64_t wait_ms) {
  SyncRequest req;
  {
    std::lock_guard lock(mu_);
    req.agent_epoch = agent_epoch_;
    req.desired_version = desired_.version();
  }
  req.node = config_.name;
  req.wait_ms = wait_ms;
  req.deltas = true;
  req.runs = supervisor_->Report();
  usage_.Attach(&req.runs, supervisor_->RunDirectories());
  req.busy_ports = busy_ports_.At(env_.clock.Steady().Now());
  req.gpu_samples = monitor_->SampleAndCheck();
  if (config_.containers.enabled() && !config_.containers.cache.dir.empty()) {
    ImageCacheUsage u = ImageCache(config_.containers.cache).Usage();
    req.image_cache = {u.bytes, u.images, u.limit_bytes};
  }
  req.datasets = supervisor_->HeldDatasets();
  req.prefetching = supervisor_->Prefetching();
  monitor_->MapJobs(supervisor_->GpuHolders());  // exits: a GPU's file goes with its run
  Result<SyncResponse> resp = head_->Sync(req);
  if (!resp.ok()) return resp.status();
  usage_.Delivered(req.runs);
  if (!req.gpu_samples.empty() && req.gpu_samples[0].check > 0) {
    monitor_->HealthDelivered(req.gpu_samples[0].check);
  }

  std::lock_guard apply_lock(apply_mu_);
  const bool reregister = resp->reregister;
  uint64_t save = 0;
  bool apply = false;
  SyncResponse desired;
  const std::vector<PrefetchOrder> prefetch = resp->prefetch;  // the head's wish now, in any answer
  {
    std::lock_guard lock(mu_);
    if (resp->head_epoch < max_head_epoch_) {
      return FailedPrecondition("refusing orders of head epoch " +
                                std::to_string(resp->head_epoch) + ": epoch " +
                                std::to_string(max_head_epoch_) + " already seen");
    }
    if (resp->head_epoch > max_head_epoch_) save = max_head_epoch_ = resp->head_epoch;
    last_contact_ = env_.clock.Steady().Now();
    if (fenced_) spdlog::info("the head is reachable again");
    fenced_ = false;
    if (reregister) {
      registered_ = false;  // and never reconcile against this answer: it lists nothing
    } else if (desired_.Apply(std::move(*resp))) {
      // (Not applied: two syncs crossed, and this answer is older than, or a delta from other
      // than, the state already applied. The next sync asks from that state.)
      desired = desired_.Full();
      apply = true;
    }
  }
  if (save != 0) SaveHeadEpoch(save);
  if (reregister) spdlog::info("the head asks this agent to register again");
  if (!reregister) supervisor_->Prefetch(prefetch);
  if (apply) {
    supervisor_->Reconcile(desired);
    monitor_->MapJobs(supervisor_->GpuHolders());  // starts
  }
  return Status::Ok();
}

void Agent::SyncLoop() {
  int64_t backoff = config_.retry_min_ms;
  auto failed = [&](const Status& st, const char* what) {
    spdlog::warn("{} failed: {}; retrying in {} ms", what, st.ToString(), backoff);
    bool go_on = SleepFor(backoff);
    backoff = std::min(backoff * 2, config_.retry_max_ms);
    return go_on;
  };
  for (;;) {
    bool registered = false;
    int64_t wait_ms = 0;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      registered = registered_;
      // A held sync must come back well inside the lease, or a quiet head looks like a dead one.
      wait_ms =
          unreported_exit_ ? 0 : std::min<int64_t>(config_.sync_wait_ms, config_.lease_ms / 3);
      unreported_exit_ = false;
      in_long_poll_ = registered && wait_ms > 0;
    }
    if (!registered) {
      Status st = DoRegister();
      if (st.ok()) {
        backoff = config_.retry_min_ms;
        if (config_.on_registered) config_.on_registered();
      } else if (!failed(st, "register")) {
        return;
      }
      continue;
    }
    Status st = SyncOnce(wait_ms);
    {
      std::lock_guard lock(mu_);
      in_long_poll_ = false;
      if (!st.ok()) unreported_exit_ = true;  // after the backoff, sync without waiting
      // The head refuses this node's credential (the node was removed, or registered again
      // elsewhere): register again, which asks for a new one.
      if (st.code() == ErrorCode::kUnauthenticated) registered_ = false;
    }
    if (st.ok()) {
      backoff = config_.retry_min_ms;
    } else if (!failed(st, "sync")) {
      return;
    }
  }
}

void Agent::SampleUsage(bool exited) {
  // Each replica is sampled on its own interval; looking a few times an interval keeps a
  // sample within a tenth of it of its time without reading every cgroup at every poll.
  const TimeMs now = env_.clock.Wall().Now();
  const int64_t step = std::clamp<int64_t>(config_.usage_interval_ms / 10, 100, 5000);
  const bool look = now - usage_checked_at_ >= step;
  if (!look && !exited) return;
  std::vector<LiveReplica> live = supervisor_->LiveReplicas();
  // Before the sync that reports the exit: its last sample goes with it.
  if (exited) usage_.CloseEnded(live);
  if (!look) return;
  usage_checked_at_ = now;
  if (live.empty()) return;
  usage_.Sample(live, monitor_->Sample());
}

void Agent::PollLoop() {
  // Exits wake this loop at once (the monitors write to the exit FIFO); the interval only
  // paces grace-period kills and the lease check.
  while (WaitForExit(config_.poll_interval_ms)) {
    if (config_.on_poll) config_.on_poll();
    bool exited = supervisor_->Poll();
    SampleUsage(exited);
    bool fence = false;
    {
      std::lock_guard lock(mu_);
      DurationMs silent = env_.clock.Steady().Now() - last_contact_;
      if (!fenced_ && silent > config_.lease_ms) {
        fenced_ = fence = true;
      }
      if (exited) {
        if (in_long_poll_) {
          urgent_ = true;
        } else {
          unreported_exit_ = true;
        }
        cv_.notify_all();
      }
    }
    if (fence) {
      int n = supervisor_->StopAll();
      spdlog::error("the head has been unreachable for more than {} ms: fencing, stopping {} runs",
                    config_.lease_ms, n);
    }
  }
}

void Agent::KeepLease() {
  const std::string path = AgentLeasePath(config_.state_dir);
  bool warned = false;
  do {
    if (!RenewAgentLease(path) && !warned) {
      warned = true;  // once: its sessions end after the lease, which says why in the docs
      spdlog::error("cannot renew the agent's lease {}: interactive sessions here end after {} ms",
                    path, config_.lease_ms);
    }
  } while (SleepFor(AgentLeaseRenewMs(config_.lease_ms)));
}

void Agent::ReportLoop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || urgent_; });
      if (stopping_) return;
      urgent_ = false;
    }
    Status st = SyncOnce(0);
    if (!st.ok()) {
      spdlog::warn("immediate sync after an exit failed: {}", st.ToString());
      std::lock_guard lock(mu_);
      unreported_exit_ = true;
    }
  }
}

int Agent::Run() {
  if (Status st = Init(); !st.ok()) {
    spdlog::error("agent {} cannot start: {}", config_.name, st.ToString());
    return 1;
  }
  std::thread poller([this] { PollLoop(); });
  std::thread reporter([this] { ReportLoop(); });
  std::thread lease_keeper([this] { KeepLease(); });
  SyncLoop();
  Stop();  // SyncLoop returns only when stopping; make sure the helpers see it
  poller.join();
  reporter.join();
  lease_keeper.join();
  spdlog::info("agent {} stopped; its runs keep running", config_.name);
  return 0;
}

void Agent::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (wake_pipe_[1] >= 0) (void)write(wake_pipe_[1], "x", 1);
  head_->Cancel();
}

Result<std::string> Agent::ReadRunLog(const std::string& run_id, int32_t replica, int32_t task,
                                      const std::string& stream, int64_t offset,
                                      int64_t max_bytes) {
  return supervisor_->ReadRunLog(run_id, replica, task, stream, offset, max_bytes);
}

}  // namespace corral::agent
