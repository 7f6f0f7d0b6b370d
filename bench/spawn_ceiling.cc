// corral_spawn_ceiling: this machine's ceiling for short jobs. Forks, execs and reaps N
// processes (default 1,000 x `true`) with up to P alive at once (default 32: the GPU slots of
// `corral up --agents 4 --gpus-per-agent 8`), each child in its own session and process group
// as the agent starts a job, the parent waiting for each exit as the agent's monitor does.
// No scheduler, no files, no network: what any cluster manager on this machine pays at least.
//
//   corral_spawn_ceiling --jobs 1000 --parallel 32 [--command /bin/true]
//
// Prints "ceiling: N processes in S s: R/s".
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  CLI::App app{"corral_spawn_ceiling: fork, exec and reap N short processes"};
  int jobs = 1000, parallel = 32;
  std::string command = "/bin/true";
  app.add_option("--jobs", jobs, "processes to run")->check(CLI::PositiveNumber);
  app.add_option("--parallel", parallel, "alive at once")->check(CLI::PositiveNumber);
  app.add_option("--command", command, "absolute path of the program to run");
  CLI11_PARSE(app, argc, argv);

  char* const child_argv[] = {command.data(), nullptr};
  char* const child_env[] = {nullptr};
  auto t0 = std::chrono::steady_clock::now();
  int started = 0, reaped = 0, failed = 0;
  while (reaped < jobs) {
    while (started < jobs && started - reaped < parallel) {
      pid_t pid = fork();
      if (pid == 0) {
        (void)setsid();
        execve(child_argv[0], child_argv, child_env);
        _exit(127);
      }
      if (pid < 0) {
        std::perror("fork");
        return 1;
      }
      ++started;
    }
    int status = 0;
    if (waitpid(-1, &status, 0) < 0) {
      std::perror("waitpid");
      return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    ++reaped;
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("ceiling: %d processes (%d at once) in %.3f s: %.1f/s%s\n", jobs, parallel, s,
              jobs / s, failed ? " (some failed)" : "");
  return failed ? 1 : 0;
}
