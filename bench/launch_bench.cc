// The agent's launch path alone: a PosixLauncher in a scratch state directory starts N
// one-task `true` runs the way the supervisor does for a sync's orders (LaunchAll), one at a
// time, then --batch at a time, and waits for every exit; then one after another, each once the
// one before has exited (an exec'd monitor then takes the next run). Prints launches per second,
// the call's wall time p50/p99, and the agent's own CPU per launched run (this process's
// user+system time, the forks it makes included until they exec), beside the machine's
// fork+exec+reap of `true` measured in the same run, so the ratio is what to read. Not a test.
//
//   corral_launch_bench [--runs N] [--batch K] [--cgroups] [--state DIR]
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agent/launch/cgroup.h"
#include "agent/launch/launcher.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double CpuSeconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// fork, exec `true`, reap: the floor under any launch path.
double ForkExecPerSecond(int n) {
  double t0 = Now();
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
  }
  return n / (Now() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time the agent's launch path (PosixLauncher) on `true` runs"};
  int runs = 200;
  bool use_cgroups = false;
  std::string state;
  app.add_option("--runs", runs, "runs to launch")->check(CLI::PositiveNumber);
  app.add_flag("--cgroups", use_cgroups, "a cgroup per run, as an agent running as root makes");
  int batch_size = 8;
  app.add_option("--batch", batch_size, "orders per LaunchAll (a sync's new runs), beside 1")
      ->check(CLI::PositiveNumber);
  app.add_option("--state", state, "state directory (default: a new one under /tmp)");
  std::string monitor = "beside";
  app.add_option("--monitor", monitor,
                 "the monitor executable; 'beside': corral-monitor beside this program, as the "
                 "agent finds it; 'fork': monitors are forks of this process")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (monitor == "beside") {
    monitor = corral::agent::MonitorExecutableBeside(
        std::filesystem::read_symlink("/proc/self/exe").string());
  } else if (monitor == "fork") {
    monitor.clear();
  }
  if (state.empty()) {
    char tmpl[] = "/tmp/corral-launch-bench-XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::perror("mkdtemp");
      return 1;
    }
    state = tmpl;
  }
  auto make_launcher = [&] {
    return std::make_unique<corral::agent::PosixLauncher>(
        state, "bench", std::map<std::string, std::string>{}, corral::agent::RunAsPolicy{},
        use_cgroups ? corral::agent::Cgroups::Detect() : corral::agent::Cgroups::None(), monitor);
  };

  double ceiling = ForkExecPerSecond(runs);
  std::printf("runs %d per mode, cgroups %s, monitor %s, state %s\n", runs,
              use_cgroups ? "yes" : "no", monitor.empty() ? "fork" : monitor.c_str(),
              state.c_str());
  std::printf("machine fork+exec+reap of true: %.0f /s\n", ceiling);
  int next_id = 1;
  auto order = [&] {
    corral::RunOrder o;
    o.job_id = static_cast<corral::JobId>(next_id);
    o.run_id = std::to_string(next_id++) + ".0";
    o.command = {"true"};
    o.cpu_milli = use_cgroups ? 1000 : 0;
    o.memory_mb = use_cgroups ? 512 : 0;
    return o;
  };
  // The monitors (and through them the tasks) count once reaped: a launcher that goes away
  // closes its monitors' control sockets, and each exits once its replica is over.
  auto reap_all = [] {
    while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
    }
  };
  reap_all();
  double children_cpu = CpuSeconds(RUSAGE_CHILDREN);  // the ceiling's processes
  // batch 0: one run after another, each launched once the one before has exited (a GPU slot's
  // turnover in a sweep of short jobs: an exec'd monitor takes the next run).
  for (int batch : {1, batch_size, 0}) {
    auto launcher = make_launcher();
    std::vector<corral::agent::LaunchedRun> launched;
    std::vector<double> call_ms;
    double cpu0 = CpuSeconds(RUSAGE_SELF);
    double t0 = Now();
    for (int i = 0; i < runs; i += std::max(batch, 1)) {
      std::vector<corral::RunOrder> orders;
      for (int k = 0; k < std::max(batch, 1) && i + k < runs; ++k) orders.push_back(order());
      double s = Now();
      auto results = launcher->LaunchAll(orders);
      call_ms.push_back((Now() - s) * 1000);
      for (auto& r : results) {
        if (!r.ok()) {
          std::fprintf(stderr, "launch: %s\n", r.status().ToString().c_str());
          return 1;
        }
        launched.push_back(std::move(*r));
      }
      if (batch == 0) {
        while (launcher->Check(launched.back()).running) {
          struct pollfd fd {
            launcher->ExitFd(), POLLIN, 0
          };
          (void)poll(&fd, 1, 5);
          launcher->DrainExitFd();
        }
      }
    }
    double launched_at = Now();
    double cpu_launch = CpuSeconds(RUSAGE_SELF) - cpu0;
    const double children0 = children_cpu;
    size_t left = launched.size();
    std::vector<bool> done(launched.size(), false);
    while (left > 0) {
      for (size_t i = 0; i < launched.size(); ++i) {
        if (!done[i] && !launcher->Check(launched[i]).running) {
          done[i] = true;
          --left;
        }
      }
      if (left > 0) usleep(2000);
    }
    double all_done = Now();
    std::set<int32_t> monitors;
    for (const auto& r : launched) monitors.insert(r.monitor_pid);
    launcher.reset();
    reap_all();
    children_cpu = CpuSeconds(RUSAGE_CHILDREN);
    const double cpu_all = cpu_launch + children_cpu - children0;
    std::printf(
        "%s: %.1f launches/s (%.2f of the ceiling), call p50 %.1f ms p99 %.1f ms, all "
        "exited %.2f s after the first call, %zu monitors, agent CPU %.2f ms per run (%.2f ms "
        "with its monitor and task)\n",
        batch == 0 ? "each after the last one's exit"
                   : (std::to_string(batch) + " at a time").c_str(),
        runs / (launched_at - t0), runs / (launched_at - t0) / ceiling, Percentile(call_ms, 0.5),
        Percentile(call_ms, 0.99), all_done - t0, monitors.size(), cpu_launch * 1000 / runs,
        cpu_all * 1000 / runs);
  }
  std::error_code ec;
  if (getenv("KEEP_STATE") == nullptr) std::filesystem::remove_all(state, ec);
  return 0;
}
