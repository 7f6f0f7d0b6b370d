// For the simulator's tests: a trace from CSV text, which must parse.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/trace.h"

namespace corral::sim::testing {

inline std::vector<TraceJob> Jobs(const std::string& csv) {
  Result<Trace> t = ParseTrace(csv, "test", {});
  CORRAL_CHECK(t.ok(), t.status().message());
  return t->jobs;
}

}  // namespace corral::sim::testing
