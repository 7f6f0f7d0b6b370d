#include "cli/exec_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>

#include "cli/commands.h"

namespace corral::cli {
namespace {

constexpr int kExitLost = 255;  // as ssh: the session, not the command, failed
constexpr int64_t kOutputWaitMs = 10000;

// The write end of the running session's signal pipe: a signal handler can reach nothing else.
// Set only while RunInJob runs (one session per process).
std::atomic<int> g_signal_fd{-1};

extern "C" void OnSignal(int sig) {
  int fd = g_signal_fd.load();
  if (fd >= 0) {
    unsigned char b = static_cast<unsigned char>(sig);
    (void)!write(fd, &b, 1);
  }
}

// The local terminal in raw mode for as long as it lives; restored however the session ends.
class RawMode {
 public:
  explicit RawMode(int fd) : fd_(fd) {
    if (!isatty(fd_) || tcgetattr(fd_, &saved_) != 0) return;
    struct termios raw = saved_;
    cfmakeraw(&raw);
    active_ = tcsetattr(fd_, TCSANOW, &raw) == 0;  // keeps what was typed ahead
  }
  ~RawMode() {
    if (active_) (void)tcsetattr(fd_, TCSADRAIN, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;
  bool active() const { return active_; }

 private:
  int fd_;
  struct termios saved_ {};
  bool active_ = false;
};

// Signal handlers for the session, the previous ones back on destruction.
class SignalRelay {
 public:
  explicit SignalRelay(const std::vector<int>& signals) {
    if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
    g_signal_fd = fds_[1];
    for (int s : signals) {
      struct sigaction sa {};
      sa.sa_handler = OnSignal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      struct sigaction old {};
      if (sigaction(s, &sa, &old) == 0) saved_.emplace_back(s, old);
    }
  }
  ~SignalRelay() {
    for (auto& [s, old] : saved_) (void)sigaction(s, &old, nullptr);
    g_signal_fd = -1;
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;
  int read_fd() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
  std::vector<std::pair<int, struct sigaction>> saved_;
};

// key=value&...: every value here is a number, a stream name or a hex id (nothing to escape).
std::string Query(const std::map<std::string, std::string>& q) {
  std::string out;
  for (const auto& [k, v] : q) out += (out.empty() ? "" : "&") + k + "=" + v;
  return out;
}

bool WindowSize(int32_t* rows, int32_t* cols) {
  struct winsize ws {};
  for (int fd : {0, 1, 2}) {
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
      *rows = ws.ws_row;
      *cols = ws.ws_col;
      return true;
    }
  }
  return false;
}

void WriteAll(int fd, const std::string& s) {
  size_t at = 0;
  while (at < s.size()) {
    ssize_t n = write(fd, s.data() + at, s.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}

// What the output threads found: how the command ended, or why the session was lost. Shared
// with them: a session whose job has ended is given up without waiting for them (a request to
// a dead node's agent may take the head's relay timeout to fail), and the process exits.
struct Outcome {
  Outcome() {
    if (pipe2(done, O_CLOEXEC) != 0) done[0] = done[1] = -1;
  }
  ~Outcome() {
    for (int fd : done) {
      if (fd >= 0) close(fd);
    }
  }
  Outcome(const Outcome&) = delete;
  Outcome& operator=(const Outcome&) = delete;
  // Written by the output threads: 'x' when one ends, 'f' when a request of theirs failed
  // (the caller's thread then asks the head how the session's job stands, at once).
  int done[2] = {-1, -1};
  std::atomic<bool> abandoned{false};     // the session was given up: write nothing more
  std::function<void(DurationMs)> sleep;  // between an output thread's retries
  std::mutex mu;
  int exit_code = -1;
  std::string lost;
};

// The head answered, but its relay reached no agent on the session's node (502 unavailable:
// the agent is dead, restarting or cut off).
bool AgentUnreachable(const ApiReply& r) {
  if (r.status != 502) return false;
  Json j = Json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") && j["error"].is_object() &&
         j["error"].value("code", "") == "unavailable";
}

// Follows one output stream to its end, writing it to `fd`.
void FollowOutput(std::shared_ptr<ApiTransport> api, const std::string& session,
                  const std::string& stream, int fd, std::shared_ptr<Outcome> outcome) {
  const int done_fd = outcome->done[1];
  int64_t offset = 0;
  int failures = 0;  // in a row, of those that end the session after 10
  int retries = 0;   // in a row, of any failure: the pause before the next grows with them
  for (;;) {
    if (outcome->abandoned) return;
    auto r = api->Call("GET",
                       "/v1/exec/" + session + "/output?" +
                           Query({{"stream", stream},
                                  {"offset", std::to_string(offset)},
                                  {"wait_ms", std::to_string(kOutputWaitMs)}}),
                       "");
    if (outcome->abandoned) return;
    if (!r.ok() || r->status == 429 || r->status >= 500) {
      // A passing fault (a head restarting behind a load balancer, a dropped connection):
      // offsets make asking again safe. Or the node is gone: the caller's thread asks.
      (void)!write(done_fd, "f", 1);
      // An unreachable agent does not count: whether its session is lost is for the job to say
      // (its node declared down; an agent back without the session answers 404), which the
      // caller's thread reads at each failure. Until then the session may come back.
      if ((r.ok() && AgentUnreachable(*r)) || ++failures <= 10) {
        outcome->sleep(200 * std::min(++retries, 10));
        continue;
      }
      std::lock_guard lock(outcome->mu);
      outcome->lost = r.ok() ? ErrorMessageFromBody(*r) : r.status().message();
      break;
    }
    failures = 0;
    retries = 0;
    if (r->status != 200) {
      std::lock_guard lock(outcome->mu);
      outcome->lost = ErrorMessageFromBody(*r);
      break;
    }
    WriteAll(fd, r->body);
    std::string next = r->Header("x-corral-next-offset");
    if (!next.empty()) offset = std::atoll(next.c_str());
    std::string code = r->Header("x-corral-exit-code");
    if (!code.empty()) {
      std::lock_guard lock(outcome->mu);
      outcome->exit_code = std::atoi(code.c_str());
      break;
    }
  }
  (void)!write(done_fd, "x", 1);
}

// Why the run a session was opened in is over, from the head's answer about its job (GET
// /v1/jobs/ID, or a session's touch, which answers with the whole job): a revoked token or a
// job no longer known; a job that no longer runs (its node lost, cancelled, culled); one that
// runs again as another run after its node was lost. "" while it runs, or where the answer
// says nothing of it.
std::string RunOver(const ApiReply& r, const Json& answer, JobId id, const std::string& run) {
  if (r.status == 401 || r.status == 403 || r.status == 404) return ErrorMessageFromBody(r);
  if (r.status != 200) return "";
  auto job = JobFromJson(answer.is_object() ? answer.value("job", Json::object()) : Json::object());
  if (!job.ok()) return "";
  const std::string name = "job " + std::to_string(id);
  if (job->state != JobState::kRunning) {
    return name + " is " + JobStateName(job->state) +
           (EndReason(*job).empty() ? "" : ": " + EndReason(*job));
  }
  if (!run.empty() && !job->runs.empty()) {
    const std::string now = ToString(RunId{id, job->runs.back().attempt});
    if (now != run) return name + "'s run " + run + " was lost; it runs again as " + now;
  }
  return "";
}

// A session the head opened: the transports (the caller's thread's first, then one per output
// stream), its id and the run it is in.
struct OpenedSession {
  std::vector<std::shared_ptr<ApiTransport>> apis;
  std::string session, run;
};

// Asks the head for a session in `job`; null after printing why where it could not.
std::optional<OpenedSession> OpenSession(CliContext& ctx, JobId job, const ExecOptions& opts,
                                         int32_t rows, int32_t cols) {
  const std::string& name = opts.command_name;
  Json body{{"command", opts.command}, {"replica", opts.replica}, {"pty", opts.pty}};
  Json env = Json::object();
  for (const auto& [k, v] : opts.env) env[k] = v;
  if (opts.pty) {
    body["rows"] = rows;
    body["cols"] = cols;
    if (!env.contains("TERM")) env["TERM"] = ctx.env("TERM").value_or("xterm");
  }
  body["env"] = env;
  OpenedSession opened;
  // One transport per thread: the caller's (input, resizes, touches) and each output stream's.
  for (int i = 0; i < (opts.pty ? 2 : 3); ++i) {
    auto t = ctx.connect();
    if (!t.ok()) {
      PrintError(ctx, name, t.status().message());
      return std::nullopt;
    }
    opened.apis.push_back(*t);
  }
  auto r = opened.apis[0]->Call("POST", "/v1/jobs/" + std::to_string(job) + "/exec", body.dump());
  if (!r.ok()) {
    PrintError(ctx, name, "cannot reach the head at " + ctx.addr + ": " + r.status().message());
    return std::nullopt;
  }
  if (r->status != 201) {
    PrintError(ctx, name, "job " + std::to_string(job) + ": " + ErrorMessageFromBody(*r));
    return std::nullopt;
  }
  Json answer = Json::parse(r->body, nullptr, false);
  if (!answer.is_object() || !answer.contains("session") || !answer["session"].is_string()) {
    PrintError(ctx, name, "the head's answer names no session: " + r->body);
    return std::nullopt;
  }
  opened.session = answer["session"].get<std::string>();
  opened.run = answer.value("run", "");
  return opened;
}

// The caller's side of an open session, on the caller's thread: relays signals and input,
// touches (or reads) the job, and learns from the output threads when they end.
class SessionLoop {
 public:
  SessionLoop(CliContext& ctx, JobId job, const ExecOptions& opts, const OpenedSession& s,
              int done_read, SignalRelay& signals, std::string nl, int32_t rows, int32_t cols)
      : ctx_(ctx),
        job_(job),
        opts_(opts),
        s_(s),
        api_(*s.apis[0]),
        done_read_(done_read),
        signals_(signals),
        nl_(std::move(nl)),
        rows_(rows),
        cols_(cols),
        touch_every_(opts.touch_every_ms) {}

  // Until `readers` output threads have ended, a stop signal came, or the job is over.
  void Run(size_t readers) {
    size_t finished = 0;
    while (finished < readers) {
      const int timeout = static_cast<int>(std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(next_touch_ -
                                                                   std::chrono::steady_clock::now())
                 .count()));
      struct pollfd fds[3] = {{done_read_, POLLIN, 0},
                              {signals_.read_fd(), POLLIN, 0},
                              {stdin_open_ && hangup_ == 0 ? 0 : -1, POLLIN, 0}};
      int n = poll(fds, 3, timeout);
      if (n < 0 && errno != EINTR) break;
      if (fds[0].revents & POLLIN) {
        char b = 0;
        if (read(done_read_, &b, 1) == 1 && b == 'x') ++finished;
        // A failed relay: the node may be gone. How the job stands says whether it is.
        if (b == 'f') next_touch_ = std::chrono::steady_clock::now();
        continue;
      }
      if ((fds[1].revents & POLLIN) && !RelaySignals()) break;
      if (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) RelayInput();
      if (std::chrono::steady_clock::now() < next_touch_) continue;
      if (!Touch()) break;
    }
  }

  int hangup() const { return hangup_; }
  // Why the session's job is no longer running (the session is lost); "" while it is.
  const std::string& job_over() const { return job_over_; }

 private:
  Result<ApiReply> Post(const std::string& what, const std::map<std::string, std::string>& q,
                        const std::string& data) {
    auto r = api_.Call("POST", "/v1/exec/" + s_.session + "/" + what + "?" + Query(q), data);
    if (!r.ok()) return Result<ApiReply>(r.status());
    return r;
  }

  // Resizes and signals go to the session; SIGTERM or SIGHUP end it here. False on those.
  bool RelaySignals() {
    unsigned char sig = 0;
    while (read(signals_.read_fd(), &sig, 1) == 1) {
      if (sig == SIGWINCH && opts_.pty && WindowSize(&rows_, &cols_)) {
        (void)Post("resize", {{"rows", std::to_string(rows_)}, {"cols", std::to_string(cols_)}},
                   "");
      } else if (sig == SIGTERM || sig == SIGHUP) {
        hangup_ = sig;
      } else if (sig != SIGWINCH) {
        (void)Post("signal", {{"signal", std::to_string(sig)}}, "");
      }
    }
    return hangup_ == 0;
  }

  void RelayInput() {
    char buf[16384];
    ssize_t got = read(0, buf, sizeof(buf));
    if (got > 0) {
      typed_ = true;
      auto r = Post("input", {{"offset", std::to_string(input_offset_)}},
                    std::string(buf, static_cast<size_t>(got)));
      if (r.ok() && r->status == 200) {
        input_offset_ += got;
      } else if (r.ok() && r->status == 409) {
        stdin_open_ = false;  // the command has exited: its output will say so
      }
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      stdin_open_ = false;
      (void)Post("input", {{"offset", std::to_string(input_offset_)}, {"eof", "1"}}, "");
    }
  }

  // A session's job is touched (kept alive, saying whether the user typed); a command inside a
  // batch job only reads how the job stands, as often, so that a lost node ends its client even
  // while the head's relay to that node still waits (up to its timeout). False once the job is
  // over.
  bool Touch() {
    next_touch_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(touch_every_);
    const std::string job = "/v1/jobs/" + std::to_string(job_);
    auto r = opts_.touch_job ? api_.Call("POST", job + "/touch?typed=" + (typed_ ? "1" : "0"), "")
                             : api_.Call("GET", job, "");
    typed_ = false;
    if (!r.ok()) return true;
    Json t = r->status == 200 ? Json::parse(r->body, nullptr, false) : Json();
    // Said at once, not after the output's retries.
    job_over_ = RunOver(*r, t, job_, s_.run);
    if (!job_over_.empty()) return false;
    if (opts_.touch_job && r->status == 200) FollowTouchAnswer(t);
    return true;
  }

  // Touches well within the head's inactive limit, whatever it is, and warns once when the
  // session is flagged idle.
  void FollowTouchAnswer(const Json& t) {
    int64_t limit = t.is_object() ? t.value("inactive_limit_ms", int64_t{0}) : 0;
    if (limit > 0) {
      touch_every_ = std::clamp<int64_t>(limit / 4, 250, opts_.touch_every_ms);
      next_touch_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(touch_every_);
    }
    bool idle = t.is_object() && t.contains("idle_stop_at") && t["idle_stop_at"].is_number();
    if (idle && !warned_) {
      int64_t left_s = (t["idle_stop_at"].get<int64_t>() - ctx_.now()) / 1000;
      WriteAll(2, nl_ + "corral " + opts_.command_name +
                      ": this session is idle (no input, GPUs unused); "
                      "it ends in " +
                      std::to_string(std::max<int64_t>(0, left_s)) + "s unless used" + nl_);
    }
    warned_ = idle;
  }

  CliContext& ctx_;
  const JobId job_;
  const ExecOptions& opts_;
  const OpenedSession& s_;
  ApiTransport& api_;
  const int done_read_;
  SignalRelay& signals_;
  const std::string nl_;
  int32_t rows_, cols_;
  int64_t input_offset_ = 0;
  bool stdin_open_ = true, typed_ = false, warned_ = false;
  int hangup_ = 0;
  std::chrono::steady_clock::time_point next_touch_ = std::chrono::steady_clock::now();
  int64_t touch_every_;
  std::string job_over_;
};

}  // namespace

int RunInJob(CliContext& ctx, JobId job, const ExecOptions& opts) {
  const std::string& name = opts.command_name;
  const bool local_tty = isatty(0);
  int32_t rows = 24, cols = 80;
  if (opts.pty) WindowSize(&rows, &cols);
  std::optional<OpenedSession> opened = OpenSession(ctx, job, opts, rows, cols);
  if (!opened) return kExitError;
  ctx.out->flush();
  ctx.err->flush();

  auto outcome = std::make_shared<Outcome>();
  if (outcome->done[0] < 0) return kExitError;
  outcome->sleep = ctx.sleep;
  std::vector<int> relayed = {SIGWINCH, SIGTERM, SIGHUP};
  if (!opts.pty) relayed.insert(relayed.end(), {SIGINT, SIGQUIT, SIGTSTP});
  SignalRelay signals(relayed);
  // Raw mode only for a terminal session: otherwise the local line discipline stays, and
  // Ctrl-C arrives here as SIGINT, relayed as a signal.
  std::unique_ptr<RawMode> raw;
  if (opts.pty && local_tty) raw = std::make_unique<RawMode>(0);
  const std::string nl = raw && raw->active() ? "\r\n" : "\n";

  std::vector<std::thread> readers;
  readers.emplace_back(FollowOutput, opened->apis[1], opened->session, "stdout", 1, outcome);
  if (!opts.pty) {
    readers.emplace_back(FollowOutput, opened->apis[2], opened->session, "stderr", 2, outcome);
  }
  SessionLoop loop(ctx, job, opts, *opened, outcome->done[0], signals, nl, rows, cols);
  loop.Run(readers.size());
  if (!loop.job_over().empty()) {
    // The job has ended, its command with it: nothing is left to end on the node, and the
    // output threads may be waiting on a node that no longer answers. They are left to the
    // process's exit; they write nothing more.
    outcome->abandoned = true;
    for (std::thread& t : readers) t.detach();
    raw.reset();
    WriteAll(2, "corral " + name + ": lost the session: " + loop.job_over() + "\n");
    return kExitLost;
  }
  // Ends the session on the node (a no-op for one whose command has exited) and stops the
  // output threads, which then see it gone.
  (void)opened->apis[0]->Call("DELETE", "/v1/exec/" + opened->session, "");
  for (std::thread& t : readers) t.join();
  raw.reset();
  if (loop.hangup() != 0) return 128 + loop.hangup();
  std::lock_guard lock(outcome->mu);
  if (outcome->exit_code >= 0) return outcome->exit_code;
  WriteAll(2, "corral " + name + ": lost the session: " +
                  (outcome->lost.empty() ? std::string("no exit status") : outcome->lost) + "\n");
  return kExitLost;
}

}  // namespace corral::cli
