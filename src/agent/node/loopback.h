// A TCP connection to a server the agent started on this machine's loopback (a notebook's
// Jupyter): connected without blocking the caller past its deadline.
#pragma once

#include <cstdint>

#include "agent/node/owned_fd.h"
#include "core/status.h"

namespace corral::agent {

// A non-blocking socket connected to 127.0.0.1:`port` within `timeout_ms`, or why not
// (Unavailable: refused, timed out).
Result<OwnedFd> ConnectLoopback(int32_t port, int timeout_ms);

}  // namespace corral::agent
