#include "agent/launch/monitor.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>

#include "agent/launch/launcher.h"

namespace corral::agent::internal {
namespace {

// Fixed descriptor numbers in the forked children.
constexpr int kFdNull = kMonitorFdNull, kFdPipe = kMonitorFdPipe, kFirstFreeFd = kMonitorFdPlan;

size_t Len(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

}  // namespace

bool WriteAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

namespace {

// Appends the decimal form of v to buf at *pos.
void AppendInt(char* buf, size_t* pos, int64_t v) {
  char digits[24];
  int n = 0;
  bool neg = v < 0;
  uint64_t u = neg ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
  do {
    digits[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (neg) buf[(*pos)++] = '-';
  while (n > 0) buf[(*pos)++] = digits[--n];
}

// Appends one line to the run's record in one write. `durable`: fsync it. The exit status must
// survive a machine crash (else a job that ended is reported lost and run again); the pids need
// not: a machine crash kills the processes they name, and an agent crash leaves the page cache.
void AppendRecordRaw(const char* path, const char* data, size_t len, bool durable) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  WriteAll(fd, data, len);
  if (durable) (void)fsync(fd);
  close(fd);
}

void WriteExitRaw(const ChildPlan& p, int64_t code, int64_t failed_task) {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  char buf[96] = "exit ";
  size_t pos = 5;
  AppendInt(buf, &pos, code);
  buf[pos++] = ' ';
  AppendInt(buf, &pos, static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000);
  buf[pos++] = ' ';
  AppendInt(buf, &pos, failed_task);
  buf[pos++] = '\n';
  AppendRecordRaw(p.record_path, buf, pos, true);
  // Wake the agent (if one reads the FIFO; with none, open fails with ENXIO and that is fine:
  // an agent that starts later reads every record anyway).
  int fd = open(p.notify_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) {
    (void)write(fd, "x", 1);
    close(fd);
  }
}

void CloseFrom(int first, int max_fd) {
  if (close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  for (int fd = first; fd < max_fd; ++fd) close(fd);
}

void ResetSignals() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int s = 1; s < NSIG; ++s) (void)sigaction(s, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  (void)sigprocmask(SIG_SETMASK, &none, nullptr);
}

// "<prefix><the error in words> (errno N)\n". strerrordesc_np reads a constant table (no locale,
// no allocation), so it is safe after fork, where strerror is not.
void WriteErrnoLine(int fd, const char* prefix, int err) {
  char buf[32];
  size_t pos = 0;
  const char* words = strerrordesc_np(err);
  buf[pos++] = ' ';
  buf[pos++] = '(';
  for (const char* c = "errno "; *c != '\0'; ++c) buf[pos++] = *c;
  AppendInt(buf, &pos, err);
  buf[pos++] = ')';
  buf[pos++] = '\n';
  WriteAll(fd, prefix, Len(prefix));
  if (words != nullptr) WriteAll(fd, words, Len(words));
  WriteAll(fd, buf, pos);
}

[[noreturn]] void TaskMain(const ChildPlan& p, const TaskPlan& t) {
  (void)setpgid(0, 0);
  ResetSignals();
  // Into the replica's cgroup while still privileged; everything the task forks stays there.
  for (int i = 0; i < p.cgroup_count; ++i) {
    char pid[24];
    size_t len = 0;
    AppendInt(pid, &len, getpid());
    int fd = open(p.cgroup_procs[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0) _exit(kExitCannotExec);
    bool joined = write(fd, pid, len) == static_cast<ssize_t>(len);
    close(fd);
    if (!joined) _exit(kExitCannotExec);
  }
  // Groups first, then gid, then uid: after setuid there is no privilege left to set the others.
  // Raw system calls: libc's wrappers would try to change every thread of the process, and
  // this task may share the monitor's memory (StartTask).
  if (p.switch_user &&
      (syscall(SYS_setgroups, p.group_count, p.groups) != 0 || syscall(SYS_setgid, p.gid) != 0 ||
       syscall(SYS_setuid, p.uid) != 0 || (p.uid != 0 && syscall(SYS_setuid, 0) == 0))) {
    _exit(kExitCannotExec);
  }
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
  int out = open(t.out_path, flags, 0644);
  int err = open(t.err_path, flags, 0644);
  if (out < 0 || err < 0) _exit(kExitCannotExec);
  dup2(kFdNull, 0);
  dup2(out, 1);
  dup2(err, 2);
  CloseFrom(3, p.max_fd);
  if (chdir(p.workdir) != 0) {
    WriteErrnoLine(2, p.chdir_error, errno);
    _exit(kExitCannotExec);
  }
  execve(p.path, p.argv, t.envp);
  WriteErrnoLine(2, p.exec_error, errno);
  _exit(kExitCannotExec);
}

void SignalLiveTasks(const ChildPlan& p, int sig) {
  for (int t = 0; t < p.task_count; ++t) {
    if (p.task_pids[t] > 0) (void)kill(-p.task_pids[t], sig);
  }
}

// The monitor's plan, for its SIGALRM handler: when the grace given to the other tasks after
// one failed is over, they are killed from the handler (kill is async-signal-safe), so no
// wake-up of the wait loop can be missed. A task's pid is cleared before it is reaped, so the
// handler never signals a pid that may have been reused.
const ChildPlan* g_plan = nullptr;
void OnGraceOver(int) {
  if (g_plan != nullptr) SignalLiveTasks(*g_plan, SIGKILL);
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kShareMemoryWithTasks = false;  // ASan cannot follow a child on a stack of its own
#else
constexpr bool kShareMemoryWithTasks = true;
#endif

// A task starts in the monitor's memory, on a stack of its own, and the monitor sleeps until it
// has exec'd or failed (clone with CLONE_VM | CLONE_VFORK, as posix_spawn does). A fork would
// copy the monitor's mappings for a task that replaces them at once by exec; where the monitor
// is itself a fork of the agent (no corral-monitor beside it), that is some 200 mappings, and
// their copy and teardown were a fifth of a `true` job's cost.
// TaskMain never returns and writes no memory of the monitor's but this stack (and errno).
alignas(64) char g_task_stack[128 * 1024];
struct TaskStart {
  const ChildPlan* plan;
  const TaskPlan* task;
};
int TaskEntry(void* arg) {
  const auto* start = static_cast<const TaskStart*>(arg);
  TaskMain(*start->plan, *start->task);
}

pid_t StartTask(const ChildPlan& p, const TaskPlan& t) {
  if (!kShareMemoryWithTasks) {
    pid_t pid = fork();
    if (pid == 0) TaskMain(p, t);
    return pid;
  }
  // Blocked until the task has reset its handlers: none of the monitor's may run on its stack.
  sigset_t all, old;
  sigfillset(&all);
  (void)sigprocmask(SIG_SETMASK, &all, &old);
  TaskStart start{&p, &t};
  pid_t pid = clone(TaskEntry, g_task_stack + sizeof(g_task_stack),
                    CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  int err = errno;
  (void)sigprocmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return pid;
}

// Once per monitor process, before its first replica.
void BecomeMonitor() {
  ResetSignals();  // SIGCHLD must not be ignored, or waitid would find no child
  for (int s : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGUSR1, SIGUSR2}) signal(s, SIG_IGN);
  struct sigaction alarm_action {};
  alarm_action.sa_handler = OnGraceOver;
  alarm_action.sa_flags = SA_RESTART;
  sigemptyset(&alarm_action.sa_mask);
  (void)sigaction(SIGALRM, &alarm_action, nullptr);
  dup2(kFdNull, 0);
  dup2(kFdNull, 1);
  dup2(kFdNull, 2);
  (void)chdir("/");
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
}

// Starts the replica's tasks, each in its own process group, and reports their pids (to the
// record, and to the agent through kFdPipe, which is closed after). False if one could not
// start: the others are killed and the exit recorded.
bool StartReplicaTasks(const ChildPlan& p) {
  // "pids " for the record; the agent's pipe gets the rest of the line.
  constexpr size_t kPrefix = 5;
  for (size_t i = 0; i < kPrefix; ++i) p.report[i] = "pids "[i];
  size_t pos = kPrefix;
  AppendInt(p.report, &pos, getpid());
  for (int t = 0; t < p.task_count; ++t) {
    pid_t pid = StartTask(p, p.tasks[t]);
    if (pid < 0) {  // the replica cannot run whole: take down the tasks already started
      SignalLiveTasks(p, SIGKILL);
      WriteExitRaw(p, kExitCannotExec, t);
      close(kFdPipe);
      return false;
    }
    (void)setpgid(pid, pid);  // also done by the task: whichever runs first
    p.task_pids[t] = pid;
    p.report[pos++] = ' ';
    AppendInt(p.report, &pos, pid);
  }
  p.report[pos++] = '\n';
  AppendRecordRaw(p.record_path, p.report, pos, false);
  WriteAll(kFdPipe, p.report + kPrefix, pos - kPrefix);
  close(kFdPipe);
  return true;
}

// How the replica's tasks ended: the first failing task's code (0: none failed), or lost (no
// child to wait for, which cannot happen while a task lives).
struct ReplicaEnd {
  int64_t code = 0;
  int64_t failed_task = -1;
  bool lost = false;
};

// Reaps until every task has ended. Orphaned descendants of the tasks are re-parented here (we
// are a subreaper) and reaped as they die: under a container init that does not reap, they
// would stay zombies forever. WNOWAIT on a task itself: it stays a zombie, so its pid (= its
// pgid) cannot be reused while we kill what is left of its group. The first task that fails
// stops the others (stop signal, then SIGKILL after the grace, by SIGALRM).
ReplicaEnd ReapReplicaTasks(const ChildPlan& p, LeaseWatch* lease) {
  ReplicaEnd end;
  int remaining = p.task_count;
  bool lease_over = false;
  while (remaining > 0) {
    if (p.lease_ms > 0 && !lease_over && !AwaitChildWithinLease(p, lease)) {
      // The agent has been gone for a whole lease: nobody can reach this session any more, nor
      // tell the head that it runs. End it, everything in its cgroups (the commands exec'd into
      // it, which the dead agent started) and its tasks' groups; their exits are reaped below.
      lease_over = true;
      KillCgroupProcesses(p);
      SignalLiveTasks(p, SIGKILL);
      continue;
    }
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      end.lost = true;
      return end;
    }
    int t = 0;
    while (t < p.task_count && p.task_pids[t] != info.si_pid) ++t;
    if (t < p.task_count) {
      (void)kill(-info.si_pid, SIGKILL);  // what is left of the task's group
      p.task_pids[t] = -info.si_pid;      // ended; its group is still to be emptied
      --remaining;
    }
    (void)waitpid(info.si_pid, nullptr, 0);
    if (t == p.task_count) continue;  // an orphan, reaped
    int64_t c = info.si_code == CLD_EXITED ? info.si_status : -static_cast<int64_t>(info.si_status);
    if (c != 0 && end.failed_task < 0) {
      end.code = c;
      end.failed_task = t;
      if (remaining > 0) {
        SignalLiveTasks(p, p.stop_signal);
        alarm(static_cast<unsigned>(p.grace_s > 0 ? p.grace_s : 1));
      }
    }
  }
  return end;
}

// What was left of each task's group was killed, and comes here (the subreaper) to be reaped:
// waits for that (a second at most, for a process stuck in the kernel), so that a replica
// reported over has no process left.
void AwaitTaskGroupsGone(const ChildPlan& p) {
  for (int tries = 0; tries < 1000; ++tries) {
    bool empty = true;
    for (int t = 0; t < p.task_count; ++t) empty = empty && kill(p.task_pids[t], 0) != 0;
    if (empty) break;
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const timespec pause{0, 1'000'000};
    (void)nanosleep(&pause, nullptr);
  }
}

// One replica, from its tasks' start to its recorded exit.
void SuperviseReplica(const ChildPlan& p) {
  g_plan = &p;
  LeaseWatch lease;
  if (p.lease_ms > 0) StartLeaseWatch(p, &lease);
  if (!StartReplicaTasks(p)) {
    g_plan = nullptr;
    return;
  }
  const ReplicaEnd end = ReapReplicaTasks(p, &lease);
  alarm(0);
  g_plan = nullptr;
  if (end.lost) {
    WriteExitRaw(p, kExitLost, end.failed_task);
    return;
  }
  AwaitTaskGroupsGone(p);
  WriteExitRaw(p, end.code, end.failed_task);
}

[[noreturn]] void ReapOrphansAndExit() {
  while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  _exit(0);
}

[[noreturn]] void MonitorMain(const ChildPlan& p) {
  BecomeMonitor();
  SuperviseReplica(p);
  ReapOrphansAndExit();
}

}  // namespace

[[noreturn]] void DetachMain(const ChildPlan& p, const int fds[2]) {
  (void)setsid();
  int high[2];
  for (int i = 0; i < 2; ++i) high[i] = fcntl(fds[i], F_DUPFD, 64);
  for (int i = 0; i < 2; ++i) {
    if (high[i] < 0 || dup2(high[i], kFdNull + i) < 0) _exit(1);
  }
  CloseFrom(kFirstFreeFd, p.max_fd);
  MonitorMain(p);
}

[[noreturn]] void ExecedMonitorMain(const ChildPlan& first, NextPlan next) {
  (void)setsid();  // posix_spawn made it a session leader already; harmless then
  CloseFrom(kMonitorFdControl + 1, first.max_fd);
  BecomeMonitor();
  for (const ChildPlan* p = &first; p != nullptr; p = next()) SuperviseReplica(*p);
  ReapOrphansAndExit();
}

bool ReadPlanBytes(int fd, std::string* bytes) {
  bytes->clear();
  char buf[65536];
  for (off_t off = 0;;) {
    ssize_t got = pread(fd, buf, sizeof(buf), off);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return false;
    if (got == 0) return true;
    bytes->append(buf, static_cast<size_t>(got));
    off += got;
  }
}

bool ReceiveNextPlan(std::string* bytes) {
  int64_t waited_ms = 0;
  for (;;) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {  // orphans of the replicas before, as they die
    }
    if (waited_ms >= kMonitorIdleMs) return false;
    struct pollfd fd {
      kMonitorFdControl, POLLIN, 0
    };
    int rc = poll(&fd, 1, 200);
    if (rc < 0 && errno != EINTR) return false;
    if (rc <= 0) {
      waited_ms += 200;
      continue;
    }
    break;
  }
  // One byte, with the plan's memfd and the pid report's pipe beside it (SCM_RIGHTS).
  char byte = 0;
  struct iovec iov {
    &byte, 1
  };
  alignas(struct cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(kMonitorFdControl, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;  // the agent closed its end: it is gone, or does not want us
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(2 * sizeof(int)) || (msg.msg_flags & MSG_CTRUNC) != 0) {
    return false;
  }
  int fds[2];
  memcpy(fds, CMSG_DATA(c), sizeof(fds));
  // They land on the lowest free numbers, kFdPipe among them: read the plan, then move the pipe.
  bool ok = ReadPlanBytes(fds[0], bytes);
  close(fds[0]);
  if (fds[1] != kFdPipe) {
    ok = dup2(fds[1], kFdPipe) == kFdPipe && ok;
    close(fds[1]);
  }
  return ok;
}

}  // namespace corral::agent::internal
