// For the simulator's tests: a trace from CSV text, which must parse; the test data's files.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/trace.h"

namespace corral::sim::testing {

#ifdef CORRAL_SIM_TESTDATA
// A file of src/sim/testdata.
inline std::string Data(const std::string& name) {
  return std::string(CORRAL_SIM_TESTDATA) + "/" + name;
}
#endif

inline std::vector<TraceJob> Jobs(const std::string& csv) {
  Result<Trace> t = ParseTrace(csv, "test", {});
  CORRAL_CHECK(t.ok(), t.status().message());
  return t->jobs;
}

}  // namespace corral::sim::testing
