#include "agent/node/node_env.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/node/owned_fd.h"

namespace corral::agent {
namespace {

class MachineNodeClock final : public NodeClock {
 public:
  const Clock& Wall() const override { return wall_; }
  const Clock& Steady() const override { return steady_; }
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, DurationMs ms,
               const std::function<bool()>& done) const override {
    return cv.wait_for(lock, std::chrono::milliseconds(ms), done);  // steady_clock underneath
  }

 private:
  SystemClock wall_;
  SteadyClock steady_;
};

// Reads the program's stdout until it closes it or `deadline` (on `steady`) passes; true if
// it passed.
bool ReadProgramOutput(int fd, const Clock& steady, TimeMs deadline, std::string* out) {
  for (;;) {
    const int64_t left = deadline - steady.Now();
    if (left <= 0) return true;
    pollfd p{fd, POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return false;  // EOF: the program (and whatever held its stdout) is done
    if (out->size() < 65536) out->append(buf, static_cast<size_t>(n));
  }
}

class ForkExecRunner final : public ProgramRunner {
 public:
  Result<ProgramOutcome> Run(const std::vector<std::string>& argv,
                             DurationMs limit_ms) const override {
    if (argv.empty()) return InvalidArgument("argv: empty, a program path is needed");
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
    OwnedFd read_end(fds[0]), write_end(fds[1]);
    const TimeMs deadline = steady_.Now() + limit_ms;
    pid_t pid = fork();
    if (pid < 0) return Internal(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      setpgid(0, 0);
      int null = open("/dev/null", O_RDONLY);
      if (null >= 0) dup2(null, STDIN_FILENO);
      dup2(write_end.get(), STDOUT_FILENO);
      execv(args[0], args.data());
      _exit(127);
    }
    setpgid(pid, pid);  // (also in the child: whichever runs first)
    write_end = OwnedFd();
    ProgramOutcome o;
    o.killed = ReadProgramOutput(read_end.get(), steady_, deadline, &o.stdout_text);
    if (o.killed) kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!o.killed) kill(-pid, SIGKILL);  // children it left behind
    o.exited = !o.killed && WIFEXITED(status);
    if (o.exited) o.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
    return o;
  }

 private:
  SteadyClock steady_;
};

class PosixFileSystem final : public FileSystem {
 public:
  Result<std::string> Read(const std::string& path) const override {
    std::ifstream in(path);
    if (!in) return NotFound(path + ": cannot be read");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  Status Replace(const std::string& path, const std::string& scratch,
                 const std::string& text) override {
    {
      std::ofstream out(scratch, std::ios::trunc);
      out << text;
      if (!out.flush()) return Internal("cannot write " + scratch);
    }
    std::error_code ec;
    std::filesystem::rename(scratch, path, ec);
    if (ec) return Internal("cannot rename " + scratch + ": " + ec.message());
    return Status::Ok();
  }
  Status Remove(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    if (ec) return Internal("cannot remove " + path + ": " + ec.message());
    return Status::Ok();
  }
  Status MakeDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Internal("cannot create " + dir + ": " + ec.message());
    return Status::Ok();
  }
};

}  // namespace

NodeEnv RealNodeEnv() {
  static const MachineNodeClock clock;
  static const ForkExecRunner programs;
  static PosixFileSystem files;
  return NodeEnv{clock, programs, files};
}

}  // namespace corral::agent
