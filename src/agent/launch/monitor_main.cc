// corral-monitor: a replica's monitor, started by the agent with posix_spawn (monitor.h). A
// small static executable, so that starting it copies nothing of the agent. Its plan arrives on
// descriptor 5; /dev/null is 3, the pipe for its pid report 4, and the agent's control socket 6,
// on which the plans of further replicas come. Not meant to be run by hand.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "agent/launch/monitor.h"

namespace {

using namespace corral::agent::internal;

std::unique_ptr<OwnedPlan> g_current;  // the replica being supervised; lives until the next

const ChildPlan* NextReplica() {
  std::string bytes;
  if (!ReceiveNextPlan(&bytes)) return nullptr;
  auto plan = std::make_unique<OwnedPlan>();
  if (!DecodePlan(bytes, plan.get())) {
    close(kMonitorFdPipe);  // no report: the agent finds the run without pids, then lost
    return nullptr;
  }
  g_current = std::move(plan);
  return &g_current->plan;
}

}  // namespace

// A container's init (container.h): PID 1 of the replica's container, which its tasks join with
// crun exec. It reaps the orphans they leave and ends on SIGTERM, SIGINT or SIGKILL.
int PauseMain() {
  struct sigaction stop {};
  stop.sa_handler = [](int) { _exit(0); };
  sigemptyset(&stop.sa_mask);
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  for (;;) {
    if (wait(nullptr) < 0 && errno == ECHILD) pause();
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "pause") return PauseMain();
  std::string bytes;
  const bool read = ReadPlanBytes(kMonitorFdPlan, &bytes);
  close(kMonitorFdPlan);
  g_current = std::make_unique<OwnedPlan>();
  if (!read || !DecodePlan(bytes, g_current.get())) {
    std::fprintf(stderr, "corral-monitor: no valid plan on descriptor %d\n", kMonitorFdPlan);
    return 2;
  }
  ExecedMonitorMain(g_current->plan, NextReplica);
}
