// corral-monitor: a replica's monitor, started by the agent with posix_spawn (monitor.h). A
// small static executable, so that starting it copies nothing of the agent. Its plan arrives on
// descriptor 5; /dev/null is 3 and the pipe for its pid report 4. Not meant to be run by hand.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "agent/monitor.h"

int main() {
  using namespace corral::agent::internal;
  std::string bytes;
  char buf[65536];
  for (;;) {
    ssize_t n = read(kMonitorFdPlan, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  close(kMonitorFdPlan);
  static OwnedPlan plan;  // lives as long as the monitor
  if (!DecodePlan(bytes, &plan)) {
    std::fprintf(stderr, "corral-monitor: no valid plan on descriptor %d\n", kMonitorFdPlan);
    return 2;
  }
  ExecedMonitorMain(plan.plan);
}
