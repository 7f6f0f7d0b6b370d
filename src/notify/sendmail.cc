#include "notify/sendmail.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

extern char** environ;

namespace corral::notify {
namespace {

// The message's file: closed when the run is over, whatever happened.
class MailInputFd {
 public:
  explicit MailInputFd(int fd) : fd_(fd) {}
  ~MailInputFd() {
    if (fd_ >= 0) close(fd_);
  }
  MailInputFd(const MailInputFd&) = delete;
  MailInputFd& operator=(const MailInputFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Status WriteMailInput(int fd, const std::string& message) {
  size_t done = 0;
  while (done < message.size()) {
    ssize_t n = write(fd, message.data() + done, message.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Internal(std::string("sendmail: writing the message: ") + strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (lseek(fd, 0, SEEK_SET) != 0) {
    return Internal(std::string("sendmail: rewinding the message: ") + strerror(errno));
  }
  return Status::Ok();
}

// Waits for `pid` until `timeout`, then kills it. The exit status, or -1 when it was killed.
int WaitSendmail(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

Status RunSendmail(const std::string& program, const std::string& to, const std::string& message,
                   std::chrono::milliseconds timeout) {
  MailInputFd input(memfd_create("corral-mail", MFD_CLOEXEC));
  if (input.get() < 0) return Internal(std::string("sendmail: memfd: ") + strerror(errno));
  if (Status st = WriteMailInput(input.get(), message); !st.ok()) return st;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input.get(), STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {program, "-oi", "--", to};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int err = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    return Unavailable("sendmail: cannot run " + program + ": " + strerror(err));
  }
  int status = WaitSendmail(pid, timeout);
  if (status == -1) {
    return Unavailable("sendmail: " + program + " did not finish within " +
                       std::to_string(timeout.count()) + " ms");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Unavailable("sendmail: " + program + " exited with " +
                       (WIFEXITED(status) ? "code " + std::to_string(WEXITSTATUS(status))
                                          : "signal " + std::to_string(WTERMSIG(status))));
  }
  return Status::Ok();
}

}  // namespace corral::notify
