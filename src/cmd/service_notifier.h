// Tells the service manager how the daemon is doing: systemd's notify protocol (Type=notify,
// WatchdogSec=), written by hand rather than linking libsystemd for one sendto(). Each message
// is one datagram of NEWLINE-separated KEY=VALUE lines ("READY=1", "WATCHDOG=1", "STOPPING=1",
// "STATUS=...") to the AF_UNIX socket $NOTIFY_SOCKET names, a path or, with a leading '@', an
// abstract name. Without NOTIFY_SOCKET (not started by systemd) every call does nothing, so the
// daemons call it unconditionally.
//
// Owned by a daemon's main(); any thread may call it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace corral::cmd {

class ServiceNotifier {
 public:
  // `socket` empty: disabled. `watchdog` 0: no watchdog.
  ServiceNotifier(std::string socket, std::chrono::microseconds watchdog);

  // From NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID (the watchdog is this process's only if
  // WATCHDOG_PID is unset or names it), which it then removes from the environment: the jobs
  // and helpers the daemon starts must not speak for it. Call before starting any thread.
  static ServiceNotifier FromEnvironment();

  bool enabled() const { return !socket_.empty(); }
  // How often the service manager wants WATCHDOG=1; 0: it does not.
  std::chrono::microseconds watchdog() const { return watchdog_; }

  // Sends one message as it is.
  [[nodiscard]] Status Notify(std::string_view message) const;
  [[nodiscard]] Status Ready(std::string_view status) const;
  [[nodiscard]] Status Stopping() const { return Notify("STOPPING=1"); }
  // WATCHDOG=1, at most once a quarter of the watchdog interval, so that a loop may call it on
  // every turn; nothing without a watchdog.
  void Alive();

 private:
  const std::string socket_;
  const std::chrono::microseconds watchdog_;
  std::atomic<int64_t> last_alive_us_{INT64_MIN / 2};  // steady clock
};

}  // namespace corral::cmd
