#include "agent/monitor.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <ctime>

#include "agent/launcher.h"

namespace corral::agent::internal {
namespace {

// Fixed descriptor numbers in the forked children.
constexpr int kFdOut = 3, kFdErr = 4, kFdNull = 5, kFdPipe = 6, kFirstFreeFd = 7;

size_t Len(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

}  // namespace

void WriteAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    len -= static_cast<size_t>(n);
  }
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

void WriteFileAtomicRaw(const char* tmp, const char* path, const char* data, size_t len) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  WriteAll(fd, data, len);
  (void)fsync(fd);
  close(fd);
  (void)rename(tmp, path);
}

void WriteExitRaw(const ChildPlan& p, int64_t code) {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  char buf[64];
  size_t pos = 0;
  AppendInt(buf, &pos, code);
  buf[pos++] = ' ';
  AppendInt(buf, &pos, static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000);
  buf[pos++] = '\n';
  WriteFileAtomicRaw(p.exit_tmp, p.exit_path, buf, pos);
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

void WriteErrnoLine(int fd, const char* prefix, int err) {
  char buf[32];
  size_t pos = 0;
  AppendInt(buf, &pos, err);
  buf[pos++] = '\n';
  WriteAll(fd, prefix, Len(prefix));
  WriteAll(fd, buf, pos);
}

[[noreturn]] void JobMain(const ChildPlan& p) {
  (void)setpgid(0, 0);
  ResetSignals();
  dup2(kFdNull, 0);
  dup2(kFdOut, 1);
  dup2(kFdErr, 2);
  CloseFrom(3, p.max_fd);
  if (chdir(p.workdir) != 0) {
    WriteErrnoLine(2, p.chdir_error, errno);
    _exit(kExitCannotExec);
  }
  execve(p.path, p.argv, p.envp);
  WriteErrnoLine(2, p.exec_error, errno);
  _exit(kExitCannotExec);
}

[[noreturn]] void MonitorMain(const ChildPlan& p) {
  ResetSignals();  // SIGCHLD must not be ignored, or waitid would find no child
  for (int s : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGUSR1, SIGUSR2}) signal(s, SIG_IGN);
  dup2(kFdNull, 0);
  dup2(kFdNull, 1);
  dup2(kFdNull, 2);
  (void)chdir("/");
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t job = fork();
  if (job < 0) {
    WriteExitRaw(p, kExitCannotExec);
    _exit(0);
  }
  if (job == 0) JobMain(p);
  (void)setpgid(job, job);  // also done by the job: whichever runs first
  char buf[64];
  size_t pos = 0;
  AppendInt(buf, &pos, getpid());
  buf[pos++] = ' ';
  AppendInt(buf, &pos, job);
  buf[pos++] = '\n';
  WriteFileAtomicRaw(p.pids_tmp, p.pids_path, buf, pos);
  WriteAll(kFdPipe, buf, pos);
  close(kFdPipe);
  close(kFdOut);
  close(kFdErr);
  // Orphaned descendants of the job are re-parented here (we are a subreaper) and reaped as
  // they die: under a container init that does not reap, they would stay zombies forever.
  // WNOWAIT on the job itself: it stays a zombie, so its pid (= the pgid) cannot be reused
  // while we kill what is left of its group and record the status.
  siginfo_t info{};
  for (;;) {
    info = {};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      WriteExitRaw(p, kExitLost);
      _exit(0);
    }
    if (info.si_pid == job) break;
    (void)waitpid(info.si_pid, nullptr, 0);
  }
  (void)kill(-job, SIGKILL);
  int64_t code =
      info.si_code == CLD_EXITED ? info.si_status : -static_cast<int64_t>(info.si_status);
  WriteExitRaw(p, code);
  // Reap the job, the group members just killed, and any orphan still alive.
  while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  _exit(0);
}

// The first child: leaves the agent's session and forks the monitor, so that the monitor is
// re-parented away from the agent when this process exits.
}  // namespace

[[noreturn]] void DetachMain(const ChildPlan& p, const int fds[4]) {
  (void)setsid();
  int high[4];
  for (int i = 0; i < 4; ++i) high[i] = fcntl(fds[i], F_DUPFD, 64);
  for (int i = 0; i < 4; ++i) {
    if (high[i] < 0 || dup2(high[i], kFdOut + i) < 0) _exit(1);
  }
  CloseFrom(kFirstFreeFd, p.max_fd);
  pid_t monitor = fork();
  if (monitor == 0) MonitorMain(p);
  if (monitor < 0) WriteExitRaw(p, kExitCannotExec);
  _exit(0);
}

}  // namespace corral::agent::internal
