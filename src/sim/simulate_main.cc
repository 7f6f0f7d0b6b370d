// Stand-alone `corral_simulate`: the same as `corral simulate`.
#include <string>
#include <vector>

#include "sim/simulate_command.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return corral::sim::SimulateMain(args);
}
