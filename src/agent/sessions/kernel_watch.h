// Whether a notebook's kernel runs a cell, from the kernel's own IOPub status messages: the agent
// connects to the kernel's WebSocket on Jupyter's loopback port as a second client (as Jupyter's
// page does) and reads, without blocking, what the kernel publishes.
//
// Why not Jupyter's /api/kernels execution_state alone: the classic notebook server (Debian's
// jupyter-notebook 6.4) takes the last IOPub status of *any* request as the kernel's state, and
// a kernel publishes "idle" after each control request too. The server itself sends one (a
// kernel_info_request on the control channel, its "nudge") each time a WebSocket opens; one that
// the kernel answers after a cell started leaves the state "idle" for the rest of the cell, so a
// long cell looked idle and its notebook was culled while the cell ran (jupyter_server tracks the
// state by parent request only since 2024). Here a cell runs from its execute_request's "busy"
// until that same request's "idle", whatever other requests say meanwhile.
//
// A cell that started before the connection did shows no "busy" on it: so, once connected, the
// watch sends a kernel_info_request of its own on the shell channel, which the kernel answers in
// order, after whatever it is running; until its answer comes the kernel counts as busy.
#pragma once

#include <utility>

#include <cstdint>
#include <set>
#include <string>

#include "agent/node/owned_fd.h"
#include "core/status.h"

namespace corral::agent {

// Reads Jupyter's kernel WebSocket stream (server frames: unmasked, possibly fragmented) and
// follows the execute requests that run. Pure: fed bytes, no I/O. Value type.
class KernelStatusTracker {
 public:
  // Consumes `bytes` as they came off the socket. Returns the bytes to send back (a pong for
  // each ping, masked as a client must), "" mostly; an error when the stream is no WebSocket
  // stream (then the connection is of no more use).
  Result<std::string> Feed(const std::string& bytes);
  // Applies one message (a text frame's JSON) to the state.
  void OnMessage(const std::string& json);
  // A shell request of ours (msg_id `id`) was sent: the kernel is busy until it is answered.
  void AwaitAnswer(const std::string& id) { probe_ = id; }
  // An execute request has said "busy" and not yet "idle", or our shell request waits.
  bool running_cell() const { return !executing_.empty() || !probe_.empty(); }
  bool closed() const { return closed_; }  // the server sent a close frame

 private:
  std::string buffer_;
  uint64_t skip_ = 0;                // bytes of a frame too large to keep, still to come
  std::string fragments_;            // a message in several frames, so far
  bool fragmented_text_ = false;     // the message being assembled is text (else binary: skipped)
  std::set<std::string> executing_;  // msg_ids of the execute requests running
  std::string probe_;                // msg_id of our shell request not yet answered
  bool closed_ = false;
};

// One client frame: FIN set, masked with `mask` (RFC 6455 5.3: a client masks every frame).
std::string ClientFrame(uint8_t opcode, const std::string& payload, uint32_t mask);

// The WebSocket of kernel `kernel` of job `job`'s notebook on 127.0.0.1:`port`, read without
// blocking. Owns its socket (movable, not copied). Used from the launcher's thread only.
class KernelWatch {
 public:
  // Connects and sends the upgrade request; waits at most `timeout_ms` for the connection.
  static Result<KernelWatch> Open(int32_t port, const std::string& base_url,
                                  const std::string& kernel, const std::string& token,
                                  int timeout_ms);

  // Reads what has arrived. An error when the connection is gone or was refused: drop it.
  Status Pump();
  bool running_cell() const { return tracker_.running_cell(); }

 private:
  explicit KernelWatch(OwnedFd fd) : fd_(std::move(fd)) {}
  OwnedFd fd_;
  bool upgraded_ = false;  // the server's 101 has been read
  std::string head_;       // the server's answer to the upgrade, until its end
  KernelStatusTracker tracker_;
};

}  // namespace corral::agent
