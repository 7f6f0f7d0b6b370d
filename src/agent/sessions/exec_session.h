// One command run inside a running job (`corral exec`, `corral run`): a process started in the
// job's context (exec_context.h) on a pseudo-terminal or on pipes, whose input and output the
// agent relays over HTTP (agentnet/exec_server.h).
//
// Output is kept in memory per stream until the client acknowledges it (it asks from a later
// offset); past kMaxUnread unacknowledged bytes the session stops reading the process's
// output, so a client that reads slowly slows the process down (as a terminal does) rather
// than growing the agent. Input carries its offset in the input stream, so a retried request
// never types a key twice.
//
// Threads: one I/O thread per session (relays bytes, notices the exit, answers held output
// requests); every public call is thread-safe. The destructor hangs up the terminal (SIGHUP to
// the session's processes), SIGKILLs what is left of its process group and joins the thread.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/node/owned_fd.h"
#include "agent/sessions/exec_context.h"
#include "core/status.h"

namespace corral::agent {

constexpr int64_t kMaxUnread = 1 << 20;  // per stream

struct ExecSpec {
  std::vector<std::string> command;
  std::vector<std::string> env;  // KEY=VALUE over the job's (TERM for a terminal)
  bool pty = false;
  int32_t rows = 24;
  int32_t cols = 80;
  // With `pty`: "" makes the terminal here (openpty). Else the path of a Unix socket this
  // session listens on, to which the started program sends the master of a terminal it made
  // (crun's --console-socket: the terminal of a command in a container is the container's own).
  // That program's own stderr then joins the terminal's output.
  std::string console_socket;
  // Where the started program writes the pid of the process it runs for it (crun's
  // --pid-file), or "": that process is signalled instead of the started program (which would
  // forward the signal a second time), and killed with the session.
  std::string pid_file;
};

// What an output request gets: the bytes from its offset, the offset after them, and once the
// stream is over and the process has exited, how it ended.
struct ExecOutput {
  std::string bytes;
  int64_t next_offset = 0;
  bool ended = false;     // nothing more will come on this stream, and the process is gone
  int32_t exit_code = 0;  // with ended: 0..255, or 128 + N for a signal N (as shells say)
  int32_t signal = 0;     // with ended: the signal that killed it, 0: it exited
};

enum class ExecStream { kStdout = 0, kStderr = 1 };

class ExecSession {
 public:
  using Done = std::function<void(ExecOutput)>;

  // Starts spec.command in `ctx` (its env, cwd, cgroups, and its identity when `switch_user`:
  // this process must then be root). kNotFound when the command is not on the job's PATH.
  static Result<std::unique_ptr<ExecSession>> Start(const ProcessContext& ctx, const ExecSpec& spec,
                                                    bool switch_user);
  ~ExecSession();
  ExecSession(const ExecSession&) = delete;
  ExecSession& operator=(const ExecSession&) = delete;

  // Input bytes that start at `offset` of the input stream (those before what was already
  // taken are dropped; a gap is refused). `eof`: no more input (closes the process's stdin;
  // on a terminal it types the EOF character). Returns the input offset after them.
  Result<int64_t> Input(int64_t offset, const std::string& bytes, bool eof);
  Status Resize(int32_t rows, int32_t cols);
  // To the process group (a terminal delivers Ctrl-C itself, as a typed byte).
  void Signal(int sig);
  // Answers `done` with `stream`'s output past `offset` as soon as there is some, when the
  // stream ends, or after `wait_ms` with nothing. Acknowledges (frees) the bytes before offset.
  // A second request on the same stream answers the first one (empty) at once.
  void Output(ExecStream stream, int64_t offset, int64_t wait_ms, Done done);
  bool pty() const { return pty_; }
  pid_t pid() const { return pid_; }
  // Whether the process has exited and nothing more will come on either stream.
  bool Finished();

 private:
  struct Buffer {
    std::string data;
    int64_t base = 0;  // stream offset of data[0]
    bool eof = false;
    Done waiter;
    int64_t waiter_offset = 0;
    int64_t waiter_deadline_ms = 0;  // on the steady clock
  };
  ExecSession(pid_t pid, bool pty, OwnedFd in, OwnedFd out, OwnedFd err, std::string pid_file);
  void Loop();
  // Loop's steps (exec_session.cc): the fds to wait on; then, with mu_ held, the streams read
  // and the input written, the command's exit reaped, and its last output read.
  struct Streams;
  struct PollSet;
  bool FillPollSet(const Streams& s, PollSet* p);
  void PumpStreams(const PollSet& p, Streams* s);
  void ReapExit();
  void DrainAfterExit(Streams* s);
  // The process the started program runs for it (spec.pid_file), 0 when unknown (yet).
  pid_t RunPid() const;
  // `sig` to the command's processes: its process group, or with a pid file, the group of the
  // process named there where it leads one, else every process of the started program's group
  // but that program itself.
  void SignalCommand(int sig);
  void Wake();
  // Answers the held request of `b` if it can be answered now (or `force`); call with mu_
  // held, runs the callback after unlocking through `later`.
  void MaybeAnswer(Buffer& b, bool force, std::vector<std::function<void()>>* later);
  ExecOutput Take(Buffer& b, int64_t offset);

  const pid_t pid_;
  const bool pty_;
  const std::string pid_file_;
  OwnedFd in_;   // the terminal's master on a pty (in_ == out_ there), else stdin's write end
  OwnedFd out_;  // stdout's read end (not owned separately on a pty: see in_)
  OwnedFd err_;  // stderr's read end; on a pty, the started program's own (console_socket)
  OwnedFd wake_r_, wake_w_;

  std::mutex mu_;
  Buffer buf_[2];
  std::string pending_input_;
  int64_t input_offset_ = 0;  // input taken so far
  bool input_eof_ = false;
  bool exited_ = false;
  int32_t exit_code_ = 0, exit_signal_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace corral::agent
