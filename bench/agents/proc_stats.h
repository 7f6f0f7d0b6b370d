// What a process (the head) has used so far, from /proc/PID/stat and /proc/PID/status.
#pragma once

#include <cstdint>
#include <optional>

namespace corral::bench {

struct ProcUsage {
  double cpu_s = 0;         // user + system CPU seconds
  int64_t rss_kb = 0;       // VmRSS
  int64_t peak_rss_kb = 0;  // VmHWM: the high-water mark since the process started
};

// nullopt when the process is gone or /proc is unreadable.
std::optional<ProcUsage> ReadProcUsage(int pid);

}  // namespace corral::bench
