// corral: one binary, many subcommands (DESIGN §2). Flag wiring only.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "agent/containers/container.h"
#include "cli/cli.h"
#include "cmd/commands.h"
#include "core/version.h"
#include "sim/simulate_command.h"
#include "sim/whatif_command.h"

namespace {

void Usage() {
  std::cerr << "usage: corral COMMAND [FLAGS]\n\n"
               "daemons:\n"
               "  up         a local cluster: head + agents with simulated GPUs\n"
               "  head       the control plane\n"
               "  agent      a node agent\n"
               "  simulate   replay a job trace through the scheduler\n"
               "  whatif     replay the cluster's own history, as recorded and changed (admins)\n\n"
               "client:\n"
            << corral::cli::CliUsage() << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Installed as sbatch, squeue, ... (`corral slurm install-shims`): answer as that command.
  std::string self = argc > 0 ? argv[0] : "";
  if (auto slash = self.rfind('/'); slash != std::string::npos) self = self.substr(slash + 1);
  if (corral::cli::IsSlurmCommand(self)) {
    return corral::cli::CliMain(self, std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                std::cerr);
  }
  if (argc < 2) {
    Usage();
    return 2;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "head") return corral::cmd::HeadMain(args);
  if (command == "agent") return corral::cmd::AgentMain(args);
  if (command == "up") return corral::cmd::UpMain(args);
  if (command == "simulate") return corral::sim::SimulateMain(args);
  if (command == "whatif") {
    return corral::cli::CliMainWith(corral::sim::RunWhatIf, args, std::cout, std::cerr);
  }
  if (command == "container-task") {
    // A container replica's task, started by the agent's monitor (agent/container.h).
    const char* task = std::getenv("CORRAL_CONTAINER_TASK");
    if (args.size() != 1 || task == nullptr) {
      std::cerr << "corral container-task: started by the agent only\n";
      return 2;
    }
    return corral::agent::ContainerTaskMain(args[0], std::atoi(task));
  }
  if (command == "--version" || command == "version") {
    std::cout << "corral " << corral::Version() << "\n";
    return 0;
  }
  if (command == "-h" || command == "--help" || command == "help") {
    Usage();
    return 0;
  }
  if (corral::cli::IsCliCommand(command)) {
    return corral::cli::CliMain(command, args, std::cout, std::cerr);
  }
  std::cerr << "corral: unknown command '" << command << "'\n";
  Usage();
  return 2;
}
