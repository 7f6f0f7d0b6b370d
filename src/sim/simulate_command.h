// `corral simulate`: replay a job trace through the production scheduler (DESIGN §12).
// Flag wiring, trace selection (window, sample, limit, load scale) and output files; the
// work is in trace.h, simulator.h and report.h.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace corral::sim {

// `args` excludes the program name and the word "simulate". Returns the process exit code.
int SimulateMain(const std::vector<std::string>& args);
int SimulateMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace corral::sim
