// An interactive replica's monitor watching its agent's lease (monitor.h, agent_lease.h). Runs
// in the monitor: async-signal-safe calls only, no allocation.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <ctime>

#include "agent/launch/agent_lease.h"
#include "agent/launch/monitor.h"

namespace corral::agent::internal {
namespace {

int64_t MonotonicMs() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int64_t LeaseFileMtimeNs(const char* path) {
  struct stat st {};
  if (stat(path, &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// True once the lease file has not changed for longer than the lease.
bool LeaseOver(const ChildPlan& p, LeaseWatch* w) {
  const int64_t now = MonotonicMs();
  const int64_t mtime = LeaseFileMtimeNs(p.lease_path);
  if (mtime != w->mtime_ns) {  // renewed (or rewritten by a new agent): a new term
    w->mtime_ns = mtime;
    if (mtime >= 0) w->renewed_at_ms = now;
  }
  return now - w->renewed_at_ms > p.lease_ms;
}

// Kills the pids listed in a cgroup.procs file; false when it lists none.
bool KillListed(const char* procs_path) {
  int fd = open(procs_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const pid_t self = getpid();
  bool any = false;
  int64_t pid = 0;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        pid = pid * 10 + (buf[i] - '0');
      } else {
        if (pid > 0 && pid != self) {
          (void)kill(static_cast<pid_t>(pid), SIGKILL);
          any = true;
        }
        pid = 0;
      }
    }
  }
  if (pid > 0 && pid != self) {
    (void)kill(static_cast<pid_t>(pid), SIGKILL);
    any = true;
  }
  close(fd);
  return any;
}

}  // namespace

void StartLeaseWatch(const ChildPlan& p, LeaseWatch* w) {
  w->mtime_ns = p.lease_path != nullptr ? LeaseFileMtimeNs(p.lease_path) : -1;
  w->renewed_at_ms = MonotonicMs();  // a new replica gets a whole term
}

bool AwaitChildWithinLease(const ChildPlan& p, LeaseWatch* w) {
  // SIGCHLD blocked, so that one sent between the look and the wait stays pending and ends
  // the wait (its default action would discard it).
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  (void)sigprocmask(SIG_BLOCK, &chld, &old);
  // As often as the agent renews it (four times a term, at least once a second).
  const int64_t check_ms = AgentLeaseRenewMs(p.lease_ms);
  bool child = true;
  for (;;) {
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOWAIT | WNOHANG) != 0) {
      if (errno == EINTR) continue;
      break;  // no child at all: the caller's waitid says so
    }
    if (info.si_pid != 0) break;
    if (LeaseOver(p, w)) {
      child = false;
      break;
    }
    const struct timespec wait { check_ms / 1000, (check_ms % 1000) * 1'000'000 };
    (void)sigtimedwait(&chld, nullptr, &wait);  // a child, the interval, or SIGALRM's handler
  }
  (void)sigprocmask(SIG_SETMASK, &old, nullptr);
  return child;
}

void KillCgroupProcesses(const ChildPlan& p) {
  // Each hierarchy holds the same processes (every task and exec'd command joins all of the
  // run's groups); the first one that lists anything is read until it is empty. Processes may
  // fork while they are being killed, hence the rounds.
  for (int i = 0; i < p.cgroup_count; ++i) {
    bool listed = false;
    for (int round = 0; round < 200 && KillListed(p.cgroup_procs[i]); ++round) {
      listed = true;
      const struct timespec pause { 0, 5'000'000 };
      (void)nanosleep(&pause, nullptr);
    }
    if (listed) return;
  }
}

}  // namespace corral::agent::internal
