// Hands prepared runs to monitors: an idle monitor from the pool when there is one, else a new
// one spawned with the plan in a memfd; then waits for each monitor's report of its tasks.
#include <poll.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "agent/launch/launcher.h"
#include "agent/launch/launcher_internal.h"
#include "agent/launch/monitor.h"
#include "agent/launch/run_record.h"

namespace corral::agent {
namespace {

using internal::ChildPlan;
using internal::WriteAll;
using launcher_detail::AdoptPids;
using launcher_detail::ErrnoText;
using launcher_detail::FsyncPath;
using launcher_detail::NowMs;

// The plan as bytes in a memfd, read from its start; -1 and errno set on failure.
int PlanMemfd(const internal::ChildPlan& plan) {
  const std::string bytes = internal::EncodePlan(plan);
  int memfd = memfd_create("corral-monitor-plan", MFD_CLOEXEC);
  if (memfd < 0) return -1;
  if (!internal::WriteAll(memfd, bytes.data(), bytes.size()) || lseek(memfd, 0, SEEK_SET) != 0) {
    int err = errno;
    close(memfd);
    errno = err != 0 ? err : EIO;
    return -1;
  }
  return memfd;
}

// posix_spawn of the monitor executable, its plan in a memfd and its end of a new control
// socket beside it (monitor.h); the agent's end goes to *control. -1 and errno set on failure.
// The sources are first moved above the descriptors they go to, so that no dup2 overwrites
// another's source.
pid_t SpawnMonitor(const std::string& exe, const internal::ChildPlan& plan, int null_fd,
                   int pipe_fd, int* control) {
  int memfd = PlanMemfd(plan);
  if (memfd < 0) return -1;
  int pair[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    int err = errno;
    close(memfd);
    errno = err;
    return -1;
  }
  const int sources[4] = {fcntl(null_fd, F_DUPFD_CLOEXEC, 10), fcntl(pipe_fd, F_DUPFD_CLOEXEC, 10),
                          fcntl(memfd, F_DUPFD_CLOEXEC, 10), fcntl(pair[1], F_DUPFD_CLOEXEC, 10)};
  const int targets[4] = {internal::kMonitorFdNull, internal::kMonitorFdPipe,
                          internal::kMonitorFdPlan, internal::kMonitorFdControl};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  int rc = 0;
  for (int i = 0; i < 4 && rc == 0; ++i) {
    rc =
        sources[i] < 0 ? errno : posix_spawn_file_actions_adddup2(&actions, sources[i], targets[i]);
  }
  pid_t pid = -1;
  char name[] = "corral-monitor";
  char* const argv[] = {name, nullptr};
  char* const envp[] = {nullptr};
  if (rc == 0) rc = posix_spawn(&pid, exe.c_str(), &actions, &attr, argv, envp);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  for (int fd : sources) {
    if (fd >= 0) close(fd);
  }
  close(memfd);
  close(pair[1]);
  if (rc != 0) {
    close(pair[0]);
    errno = rc;
    return -1;
  }
  *control = pair[0];
  return pid;
}

// Hands a plan to an idle monitor: one byte, the plan's memfd and the pid report's pipe beside
// it. False where the monitor is gone (its end is closed) or the socket is full.
bool SendPlan(int control, const internal::ChildPlan& plan, int pipe_fd) {
  int memfd = PlanMemfd(plan);
  if (memfd < 0) return false;
  char byte = 'p';
  struct iovec iov {
    &byte, 1
  };
  alignas(struct cmsghdr) char buf[CMSG_SPACE(2 * sizeof(int))] = {};
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = buf;
  msg.msg_controllen = sizeof(buf);
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  const int fds[2] = {memfd, pipe_fd};
  memcpy(CMSG_DATA(c), fds, sizeof(fds));
  ssize_t n;
  do {
    n = sendmsg(control, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  close(memfd);
  return n == 1;
}

}  // namespace

bool PosixLauncher::HandToIdleMonitor(Prepared& p) {
  RetireIdleMonitors();
  // The most recently idle first: the furthest from its own idle deadline.
  std::sort(monitors_.begin(), monitors_.end(),
            [](const MonitorLink& a, const MonitorLink& b) { return a.idle_since < b.idle_since; });
  while (!monitors_.empty() && monitors_.back().idle_since > 0) {
    MonitorLink& m = monitors_.back();
    if (SendPlan(m.control.get(), p.plan, p.pipe_fds[1])) {
      p.monitor = m.pid;
      m.running = p.run.key();
      m.idle_since = 0;
      return true;
    }
    monitors_.pop_back();  // gone: its socket is closed
  }
  return false;
}

void PosixLauncher::RetireIdleMonitors() {
  const TimeMs now = NowMs();
  // Closing its socket tells it to exit; ReapMonitors reaps it.
  std::erase_if(monitors_, [&](const MonitorLink& m) {
    return m.idle_since != 0 && now - m.idle_since > internal::kMonitorReuseMs;
  });
}

void PosixLauncher::MonitorFinished(const RunKey& key, TimeMs ended_at) {
  // Idle since its exit by its own clock, not since this agent saw it: an agent slow to look
  // must not hand work to a monitor about to give up waiting (kMonitorIdleMs).
  const TimeMs now = NowMs();
  const TimeMs since = ended_at > 0 ? std::min(now, ended_at) : now;
  for (MonitorLink& m : monitors_) {
    if (m.idle_since == 0 && m.running == key) m.idle_since = since;
  }
}

Status PosixLauncher::ForkMonitor(Prepared& p) {
  const int child_fds[2] = {p.null_fd, p.pipe_fds[1]};
  bool reused = false;
  if (!monitor_exe_.empty()) {
    reused = HandToIdleMonitor(p);
    int control = -1;
    if (!reused) p.monitor = SpawnMonitor(monitor_exe_, p.plan, p.null_fd, p.pipe_fds[1], &control);
    if (!reused && p.monitor > 0) {
      monitors_.push_back({p.monitor, OwnedFd(control), p.run.key(), 0});
    }
  } else {
    p.monitor = fork();
    if (p.monitor == 0) internal::DetachMain(p.plan, child_fds);
  }
  int saved_errno = errno;
  // The agent keeps only the read end: the pipe closes when the monitor is done with it.
  for (int* fd : {&p.null_fd, &p.pipe_fds[1]}) {
    close(*fd);
    *fd = -1;
  }
  if (p.monitor < 0) {
    p.CloseFds();
    return FailLaunch(p, Internal(ErrnoText(monitor_exe_.empty() ? "fork" : "spawn " + monitor_exe_,
                                            saved_errno)));
  }
  if (!reused) unreaped_.push_back(p.monitor);
  return Status::Ok();
}

// Reads the monitors' "<monitor_pid> <task_pid>..." replies together, until each closes its
// pipe or the deadline passes; a monitor that has not answered by then is found by Check.
void PosixLauncher::AwaitMonitors(const std::vector<Prepared*>& launched) {
  const TimeMs deadline = NowMs() + kMonitorStartMs;
  for (;;) {
    std::vector<struct pollfd> fds;
    std::vector<Prepared*> owners;
    for (Prepared* p : launched) {
      if (p->pipe_fds[0] < 0) continue;
      fds.push_back({p->pipe_fds[0], POLLIN, 0});
      owners.push_back(p);
    }
    if (fds.empty()) break;
    int left = static_cast<int>(std::max<TimeMs>(0, deadline - NowMs()));
    int rc = poll(fds.data(), fds.size(), left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Prepared& p = *owners[i];
      char buf[256];
      ssize_t n = read(p.pipe_fds[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        p.reply.append(buf, static_cast<size_t>(n));
      } else {
        close(p.pipe_fds[0]);
        p.pipe_fds[0] = -1;
      }
    }
  }
  for (Prepared* p : launched) {
    p->CloseFds();
    // Without a report the monitor failed early (its exit is recorded) or is slow: Check()
    // reads the pids from the record.
    int32_t monitor_pid = 0;
    std::vector<int32_t> pgids;
    if (ParsePidReport(p->reply, &monitor_pid, &pgids)) AdoptPids(monitor_pid, pgids, &p->run);
  }
}

std::vector<Result<LaunchedRun>> PosixLauncher::LaunchAll(const std::vector<RunOrder>& orders) {
  const size_t n = orders.size();
  // The durable records and the cgroups first, several at once: each waits on three fsyncs,
  // which the file system commits together.
  std::vector<std::optional<Result<std::unique_ptr<Prepared>>>> prepared(n);
  {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < n; i = next++) prepared[i].emplace(Prepare(orders[i]));
    };
    const size_t helpers = std::min<size_t>(n, kLaunchParallelism) - (n > 0 ? 1 : 0);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
  }
  // The new directories' names are durable before any of them is forked.
  FsyncPath(runs_dir_);
  // Then the forks, from this thread alone, and the monitors' replies all together.
  std::vector<Result<LaunchedRun>> out(n, Result<LaunchedRun>(Internal("not launched")));
  std::vector<Prepared*> forked;
  for (size_t i = 0; i < n; ++i) {
    Result<std::unique_ptr<Prepared>>& p = *prepared[i];
    if (!p.ok()) {
      out[i] = p.status();
      continue;
    }
    Status st = ForkMonitor(**p);
    if (!st.ok()) {
      out[i] = st;
      continue;
    }
    forked.push_back(p->get());
  }
  AwaitMonitors(forked);
  for (size_t i = 0; i < n; ++i) {
    Result<std::unique_ptr<Prepared>>& p = *prepared[i];
    if (p.ok() && (*p)->monitor > 0) out[i] = std::move((*p)->run);
  }
  return out;
}

Result<LaunchedRun> PosixLauncher::Launch(const RunOrder& order) {
  return std::move(LaunchAll({order})[0]);
}

}  // namespace corral::agent
