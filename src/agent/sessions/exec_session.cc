#include "agent/sessions/exec_session.h"

#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "agent/node/process_groups.h"

namespace corral::agent {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SetNonBlocking(int fd) { (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void WriteAllRaw(int fd, const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

constexpr int64_t kTerminalWaitMs = 10000;  // for the started program to send its terminal

Result<OwnedFd> ListenUnix(const std::string& path) {
  sockaddr_un a{};
  if (path.size() >= sizeof(a.sun_path)) {
    return InvalidArgument("console socket " + path + ": the path is too long for a socket");
  }
  OwnedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Internal(std::string("socket: ") + std::strerror(errno));
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  (void)unlink(path.c_str());
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd.get(), 1) != 0) {
    return Internal("console socket " + path + ": " + std::strerror(errno));
  }
  return fd;
}

// The terminal master the program `pid` sends on `listener` (SCM_RIGHTS), or an invalid fd when
// it exits (or gives up) without sending one: its stderr then says why.
OwnedFd ReceiveTerminal(int listener, pid_t pid) {
  const int64_t deadline = SteadyMs() + kTerminalWaitMs;
  while (SteadyMs() < deadline) {
    struct pollfd p = {listener, POLLIN, 0};
    if (poll(&p, 1, 50) == 1) {
      OwnedFd conn(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn.valid()) continue;
      char byte[64];
      struct iovec iov = {byte, sizeof(byte)};
      alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
      struct msghdr msg {};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      if (recvmsg(conn.get(), &msg, MSG_CMSG_CLOEXEC) < 0) return OwnedFd();
      for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
          int fd = -1;
          std::memcpy(&fd, CMSG_DATA(c), sizeof(fd));
          return OwnedFd(fd);
        }
      }
      return OwnedFd();
    }
    // Gone without sending one? (WNOWAIT: the session's loop reaps it and takes its status.)
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      return OwnedFd();
    }
  }
  return OwnedFd();
}

// What the child needs, prepared before fork: after it only async-signal-safe calls are made
// (the agent is multithreaded).
struct ExecChildPlan {
  const char* path;
  std::vector<char*> argv, envp;
  std::vector<const char*> cgroup_procs;
  const char* cwd;
  bool switch_user;
  uid_t uid;
  gid_t gid;
  const gid_t* groups;
  size_t group_count;
  int slave = -1;                   // pty: the terminal's slave side
  int in = -1, out = -1, err = -1;  // pipes: the child's ends
  const char* exec_error;           // "corral exec: cannot run CMD: errno "
};

[[noreturn]] void ChildMain(const ExecChildPlan& p) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int s = 1; s < NSIG; ++s) (void)sigaction(s, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  (void)sigprocmask(SIG_SETMASK, &none, nullptr);
  (void)setsid();  // its own session: a terminal of its own, signals to its group alone
  if (p.slave >= 0) {
    (void)ioctl(p.slave, TIOCSCTTY, 0);
    dup2(p.slave, 0);
    dup2(p.slave, 1);
    dup2(p.slave, 2);
  } else {
    dup2(p.in, 0);
    dup2(p.out, 1);
    dup2(p.err, 2);
  }
  // Into the job's groups while still privileged: what it forks stays there and dies with it.
  char pid[24];
  size_t len = 0;
  for (long v = getpid(); v > 0; v /= 10) pid[len++] = static_cast<char>('0' + v % 10);
  for (size_t i = 0; i < len / 2; ++i) std::swap(pid[i], pid[len - 1 - i]);
  for (const char* procs : p.cgroup_procs) {
    int fd = open(procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, pid, len) != static_cast<ssize_t>(len)) {
      WriteAllRaw(2, "corral exec: cannot join the job's cgroup\n", 42);
      _exit(126);
    }
    close(fd);
  }
  // Raw system calls, as the monitor does: groups, then gid, then uid.
  if (p.switch_user && (syscall(SYS_setgroups, p.group_count, p.groups) != 0 ||
                        syscall(SYS_setgid, p.gid) != 0 || syscall(SYS_setuid, p.uid) != 0)) {
    WriteAllRaw(2, "corral exec: cannot take the job's identity\n", 44);
    _exit(126);
  }
  if (chdir(p.cwd) != 0) (void)chdir("/");
  (void)syscall(SYS_close_range, 3U, ~0U, 0U);
  execve(p.path, p.argv.data(), p.envp.data());
  int e = errno;
  WriteAllRaw(2, p.exec_error, strlen(p.exec_error));
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + e % 10);
    e /= 10;
  } while (e > 0 && n < 15);
  while (n > 0) WriteAllRaw(2, &digits[--n], 1);
  WriteAllRaw(2, "\n", 1);
  _exit(127);
}

// The job's environment with the session's variables over it.
std::vector<std::string> SessionEnv(std::vector<std::string> env,
                                    const std::vector<std::string>& over) {
  for (const std::string& kv : over) {
    std::string key = kv.substr(0, kv.find('='));
    std::erase_if(env, [&](const std::string& e) { return e.rfind(key + "=", 0) == 0; });
    env.push_back(kv);
  }
  return env;
}

// The session's ends of its stdio, made before the fork: a terminal the program (crun) makes
// and sends back on a console socket, a pseudo-terminal of the agent's, or three pipes.
struct SessionFds {
  OwnedFd master, slave, in_r, in_w, out_r, out_w, err_r, err_w, listener, null;

  // The program makes the terminal and sends it here; its own stdio: nothing in, its messages
  // (why it could not start the command) to the terminal's output.
  Status ForConsole(const ExecSpec& spec, ExecChildPlan& p) {
    auto l = ListenUnix(spec.console_socket);
    if (!l.ok()) return l.status();
    listener = std::move(*l);
    null = OwnedFd(open("/dev/null", O_RDWR | O_CLOEXEC));
    int fds[2];
    if (!null.valid() || pipe2(fds, O_CLOEXEC) != 0) {
      return Internal(std::string("pipe: ") + std::strerror(errno));
    }
    err_r = OwnedFd(fds[0]);
    err_w = OwnedFd(fds[1]);
    p.in = null.get();
    p.out = null.get();
    p.err = err_w.get();
    return Status::Ok();
  }

  Status ForPty(const ExecSpec& spec, ExecChildPlan& p) {
    int m = -1, s = -1;
    struct winsize ws {};
    ws.ws_row = static_cast<unsigned short>(std::clamp(spec.rows, 1, 10000));
    ws.ws_col = static_cast<unsigned short>(std::clamp(spec.cols, 1, 10000));
    if (openpty(&m, &s, nullptr, nullptr, &ws) != 0) {
      return Internal(std::string("openpty: ") + std::strerror(errno));
    }
    master = OwnedFd(m);
    slave = OwnedFd(s);
    (void)fcntl(m, F_SETFD, FD_CLOEXEC);
    (void)fcntl(s, F_SETFD, FD_CLOEXEC);  // the child's copies on 0, 1, 2 are not
    p.slave = s;
    return Status::Ok();
  }

  Status ForPipes(ExecChildPlan& p) {
    int fds[2];
    for (auto [r, w] : {std::pair{&in_r, &in_w}, {&out_r, &out_w}, {&err_r, &err_w}}) {
      if (pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
      *r = OwnedFd(fds[0]);
      *w = OwnedFd(fds[1]);
    }
    p.in = in_r.get();
    p.out = out_w.get();
    p.err = err_w.get();
    return Status::Ok();
  }
};

}  // namespace

Result<std::unique_ptr<ExecSession>> ExecSession::Start(const ProcessContext& ctx,
                                                        const ExecSpec& spec, bool switch_user) {
  if (spec.command.empty()) return InvalidArgument("command: empty; give a command to run");
  std::vector<std::string> env = SessionEnv(ctx.env, spec.env);
  auto path = FindExecutable(spec.command[0], env);
  if (!path.ok()) return path.status();
  if (!switch_user && ctx.uid != geteuid() && geteuid() != 0) {
    return Status(ErrorCode::kPermissionDenied,
                  "the job runs as uid " + std::to_string(ctx.uid) + " and this agent as uid " +
                      std::to_string(geteuid()) + ": it cannot run a command as the job's user");
  }
  std::vector<std::string> argv = spec.command;
  std::string exec_error = "corral exec: cannot run " + *path + ": errno ";
  ExecChildPlan p;
  p.path = path->c_str();
  for (std::string& a : argv) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
  for (std::string& e : env) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  for (const std::string& c : ctx.cgroup_procs) p.cgroup_procs.push_back(c.c_str());
  p.cwd = ctx.cwd.c_str();
  p.switch_user = switch_user;
  p.uid = ctx.uid;
  p.gid = ctx.gid;
  p.groups = ctx.groups.data();
  p.group_count = ctx.groups.size();
  p.exec_error = exec_error.c_str();
  SessionFds f;
  const bool console = spec.pty && !spec.console_socket.empty();
  Status made = console ? f.ForConsole(spec, p) : spec.pty ? f.ForPty(spec, p) : f.ForPipes(p);
  if (!made.ok()) return made;
  pid_t pid = fork();
  if (pid < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) ChildMain(p);
  std::unique_ptr<ExecSession> s;
  if (console) {
    f.err_w = OwnedFd();  // the child's copy alone: its end is the program's end
    f.master = ReceiveTerminal(f.listener.get(), pid);
    (void)unlink(spec.console_socket.c_str());
    if (f.master.valid()) {
      struct winsize ws {};
      ws.ws_row = static_cast<unsigned short>(std::clamp(spec.rows, 1, 10000));
      ws.ws_col = static_cast<unsigned short>(std::clamp(spec.cols, 1, 10000));
      (void)ioctl(f.master.get(), TIOCSWINSZ, &ws);
      SetNonBlocking(f.master.get());
    }
    SetNonBlocking(f.err_r.get());
    s.reset(new ExecSession(pid, true, std::move(f.master), OwnedFd(), std::move(f.err_r),
                            spec.pid_file));
  } else if (spec.pty) {
    SetNonBlocking(f.master.get());
    s.reset(new ExecSession(pid, true, std::move(f.master), OwnedFd(), OwnedFd(), spec.pid_file));
  } else {
    for (const OwnedFd* fd : {&f.in_w, &f.out_r, &f.err_r}) SetNonBlocking(fd->get());
    s.reset(new ExecSession(pid, false, std::move(f.in_w), std::move(f.out_r), std::move(f.err_r),
                            spec.pid_file));
  }
  return s;
}

ExecSession::ExecSession(pid_t pid, bool pty, OwnedFd in, OwnedFd out, OwnedFd err,
                         std::string pid_file)
    : pid_(pid),
      pty_(pty),
      pid_file_(std::move(pid_file)),
      in_(std::move(in)),
      out_(std::move(out)),
      err_(std::move(err)) {
  int fds[2] = {-1, -1};
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    wake_r_ = OwnedFd(fds[0]);
    wake_w_ = OwnedFd(fds[1]);
  }
  if (pty_) buf_[1].eof = true;  // a terminal has one stream
  thread_ = std::thread([this] { Loop(); });
}

ExecSession::~ExecSession() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  Wake();
  thread_.join();
  bool exited;
  {
    std::lock_guard lock(mu_);
    exited = exited_;
  }
  if (!exited) {
    // A hangup first, as a closed terminal gives; then nothing of the session survives.
    (void)kill(-pid_, SIGHUP);
    (void)kill(-pid_, SIGCONT);
    for (int i = 0; i < 20 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(5000);
    // The process the started program runs for it: with a terminal of its own it leads a
    // session and a group outside the started program's, and may ignore the hangup.
    if (pid_t run = RunPid(); run > 0) {
      (void)kill(-run, SIGKILL);
      (void)kill(run, SIGKILL);
    }
    (void)kill(-pid_, SIGKILL);
    (void)waitpid(pid_, nullptr, 0);
  }
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lock(mu_);
    for (Buffer& b : buf_) MaybeAnswer(b, true, &later);
  }
  for (auto& f : later) f();
}

void ExecSession::Wake() {
  if (wake_w_.valid()) (void)!write(wake_w_.get(), "x", 1);
}

Result<int64_t> ExecSession::Input(int64_t offset, const std::string& bytes, bool eof) {
  std::lock_guard lock(mu_);
  if (exited_) return FailedPrecondition("the command has exited");
  if (offset > input_offset_) {
    return InvalidArgument("offset " + std::to_string(offset) + ": input so far ends at " +
                           std::to_string(input_offset_));
  }
  int64_t skip = input_offset_ - offset;
  if (skip < static_cast<int64_t>(bytes.size())) {
    if (pending_input_.size() > static_cast<size_t>(kMaxUnread)) {
      return Status(ErrorCode::kResourceExhausted, "the command is not reading its input");
    }
    pending_input_.append(bytes, static_cast<size_t>(skip));
    input_offset_ += static_cast<int64_t>(bytes.size()) - skip;
  }
  if (eof && !input_eof_) {
    input_eof_ = true;
    if (pty_) pending_input_ += '\x04';  // the terminal's EOF character (VEOF, ^D)
  }
  int64_t at = input_offset_;
  Wake();
  return at;
}

Status ExecSession::Resize(int32_t rows, int32_t cols) {
  if (!pty_)
    return FailedPrecondition("the command has no terminal to resize (exec it with --pty)");
  if (rows < 1 || cols < 1 || rows > 10000 || cols > 10000) {
    return InvalidArgument("rows, cols: want 1..10000 each");
  }
  struct winsize ws {};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  std::lock_guard lock(mu_);
  if (!in_.valid()) return FailedPrecondition("the terminal is closed");
  // The kernel sends SIGWINCH to the terminal's foreground process group itself.
  if (ioctl(in_.get(), TIOCSWINSZ, &ws) != 0) return Internal(std::strerror(errno));
  return Status::Ok();
}

void ExecSession::Signal(int sig) {
  std::lock_guard lock(mu_);
  if (!exited_) SignalCommand(sig);
}

pid_t ExecSession::RunPid() const {
  if (pid_file_.empty()) return 0;
  std::ifstream in(pid_file_);
  long pid = 0;
  return in >> pid && pid > 1 ? static_cast<pid_t>(pid) : 0;
}

void ExecSession::SignalCommand(int sig) {
  const pid_t run = RunPid();
  if (run > 0 && getpgid(run) == run) {
    (void)kill(-run, sig);
    return;
  }
  if (run > 0) {
    // In the started program's group, beside it (crun exec without a terminal): each of the
    // group but that program, which forwards what it gets to `run` (a second copy).
    for (pid_t p : ProcessGroupMembers(pid_)) {
      if (p != pid_) (void)kill(p, sig);
    }
    return;
  }
  // Before its setsid the command has no group of its own yet: then to the command alone.
  if (kill(-pid_, sig) != 0) (void)kill(pid_, sig);
}

ExecOutput ExecSession::Take(Buffer& b, int64_t offset) {
  ExecOutput o;
  if (offset > b.base) {
    size_t drop = static_cast<size_t>(std::min<int64_t>(offset - b.base, b.data.size()));
    b.data.erase(0, drop);
    b.base += static_cast<int64_t>(drop);
  }
  int64_t from = std::max(offset, b.base);
  size_t at = static_cast<size_t>(from - b.base);
  o.bytes = b.data.substr(std::min(at, b.data.size()), 256 << 10);
  o.next_offset = from + static_cast<int64_t>(o.bytes.size());
  o.ended = b.eof && exited_ && o.next_offset >= b.base + static_cast<int64_t>(b.data.size());
  o.exit_code = exit_code_;
  o.signal = exit_signal_;
  return o;
}

void ExecSession::MaybeAnswer(Buffer& b, bool force, std::vector<std::function<void()>>* later) {
  if (!b.waiter) return;
  bool has = b.base + static_cast<int64_t>(b.data.size()) > b.waiter_offset;
  bool over = b.eof && exited_;
  if (!has && !over && !force && SteadyMs() < b.waiter_deadline_ms) return;
  ExecOutput o = Take(b, b.waiter_offset);
  later->push_back(
      [done = std::move(b.waiter), o = std::move(o)]() mutable { done(std::move(o)); });
  b.waiter = nullptr;
}

void ExecSession::Output(ExecStream stream, int64_t offset, int64_t wait_ms, Done done) {
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lock(mu_);
    Buffer& b = buf_[static_cast<int>(stream)];
    MaybeAnswer(b, true, &later);  // a newer request replaces a held one
    b.waiter = std::move(done);
    b.waiter_offset = offset;
    b.waiter_deadline_ms = SteadyMs() + std::max<int64_t>(0, wait_ms);
    Take(b, offset);  // frees what the client has acknowledged, unblocking the reader
    MaybeAnswer(b, stopping_, &later);
  }
  Wake();
  for (auto& f : later) f();
}

bool ExecSession::Finished() {
  std::lock_guard lock(mu_);
  return exited_ && buf_[0].eof && buf_[1].eof;
}

// The command's output streams as Loop reads them. A terminal is one stream: what the started
// program itself says there joins it.
struct ExecSession::Streams {
  int out_fd = -1;
  Buffer* err_buf = nullptr;
  bool out_open = false, err_open = false;
  char chunk[16384];
};

struct ExecSession::PollSet {
  struct pollfd fds[4];
  int n = 0, i_out = -1, i_err = -1, i_in = -1;
  int64_t next_deadline = INT64_MAX;  // of the held requests, on the steady clock
};

// False once the session stops. Streams whose buffers are full are not read (back-pressure).
bool ExecSession::FillPollSet(const Streams& s, PollSet* p) {
  std::lock_guard lock(mu_);
  if (stopping_) return false;
  p->fds[p->n++] = {wake_r_.get(), POLLIN, 0};
  if (s.out_open && static_cast<int64_t>(buf_[0].data.size()) < kMaxUnread) {
    p->i_out = p->n;
    p->fds[p->n++] = {s.out_fd, POLLIN, 0};
  }
  if (s.err_open && static_cast<int64_t>(s.err_buf->data.size()) < kMaxUnread) {
    p->i_err = p->n;
    p->fds[p->n++] = {err_.get(), POLLIN, 0};
  }
  if (!pending_input_.empty() && in_.valid()) {
    if (p->i_out >= 0 && pty_) {
      p->fds[p->i_out].events |= POLLOUT;
      p->i_in = p->i_out;
    } else {
      p->i_in = p->n;
      p->fds[p->n++] = {in_.get(), POLLOUT, 0};
    }
  }
  for (const Buffer& b : buf_) {
    if (b.waiter) p->next_deadline = std::min(p->next_deadline, b.waiter_deadline_ms);
  }
  return true;
}

void ExecSession::PumpStreams(const PollSet& p, Streams* s) {
  auto pump = [&](int idx, int fd, Buffer& b, bool* open) {
    if (idx < 0 || !(p.fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
    ssize_t r = read(fd, s->chunk, sizeof(s->chunk));
    if (r > 0) {
      b.data.append(s->chunk, static_cast<size_t>(r));
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
      *open = false;  // EOF, or EIO: a terminal whose every slave is closed
    }
  };
  pump(p.i_out, s->out_fd, buf_[0], &s->out_open);
  pump(p.i_err, err_.get(), *s->err_buf, &s->err_open);
  if (p.i_in >= 0 && (p.fds[p.i_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
    ssize_t w = write(in_.get(), pending_input_.data(), pending_input_.size());
    if (w > 0) {
      pending_input_.erase(0, static_cast<size_t>(w));
    } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
      pending_input_.clear();  // the command closed its input
    }
  }
  if (!pty_ && input_eof_ && pending_input_.empty() && in_.valid()) in_ = OwnedFd();
}

void ExecSession::ReapExit() {
  if (exited_) return;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return;
  exited_ = true;
  if (WIFSIGNALED(status)) {
    exit_signal_ = WTERMSIG(status);
    exit_code_ = 128 + exit_signal_;
  } else {
    exit_code_ = WEXITSTATUS(status);
  }
}

// What is still buffered in the terminal or the pipes is the command's last output.
void ExecSession::DrainAfterExit(Streams* s) {
  for (auto [fd, b, open] : {std::tuple{s->out_fd, &buf_[0], &s->out_open},
                             std::tuple{err_.get(), s->err_buf, &s->err_open}}) {
    while (*open && static_cast<int64_t>(b->data.size()) < kMaxUnread) {
      ssize_t r = read(fd, s->chunk, sizeof(s->chunk));
      if (r > 0) {
        b->data.append(s->chunk, static_cast<size_t>(r));
      } else {
        // A pipe may still be held by the command's background children: their output
        // is not waited for once the command itself has gone.
        *open = false;
      }
    }
  }
  if (pty_) (void)kill(-pid_, SIGHUP);  // the terminal goes: what is left of it hangs up
}

void ExecSession::Loop() {
  Streams s;
  s.out_fd = pty_ ? in_.get() : out_.get();
  s.err_buf = pty_ ? &buf_[0] : &buf_[1];
  s.out_open = s.out_fd >= 0;
  s.err_open = err_.valid();
  for (;;) {
    PollSet p;
    if (!FillPollSet(s, &p)) return;
    // The exit is noticed on a short tick: a terminal's master stays open while a background
    // process holds its slave, so the end of output does not mean the end of the command.
    int timeout = static_cast<int>(std::clamp<int64_t>(p.next_deadline - SteadyMs(), 0, 50));
    (void)poll(p.fds, static_cast<nfds_t>(p.n), timeout);
    if (p.fds[0].revents) {
      char drain[64];
      while (read(wake_r_.get(), drain, sizeof(drain)) > 0) {
      }
    }
    std::vector<std::function<void()>> later;
    std::unique_lock lock(mu_);
    PumpStreams(p, &s);
    ReapExit();
    if (exited_) DrainAfterExit(&s);
    buf_[0].eof = !s.out_open && !(pty_ && s.err_open);
    if (!pty_) buf_[1].eof = !s.err_open;
    for (Buffer& b : buf_) MaybeAnswer(b, false, &later);
    lock.unlock();
    for (auto& f : later) f();
  }
}

}  // namespace corral::agent
