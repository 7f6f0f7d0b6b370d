// A dataset source's measured stage-in rate as the head shows it (docs/datasets.md, "Placement
// near the data"): `corral datasets`, GET /v1/datasets, the head's /metrics.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "core/time.h"

namespace corral {

using Json = nlohmann::json;

struct DatasetSourceRate {
  std::string source;  // a URL's scheme, host and port, or a path's directory
  int64_t bytes_per_second = 0;
  int64_t bytes = 0;       // what the stage-in it was measured on fetched
  DurationMs ms = 0;       // and how long it took, from placement to start
  TimeMs measured_at = 0;  // 0: not known (measured before the head kept the time)
  bool operator==(const DatasetSourceRate&) const = default;
};

Json ToJson(const DatasetSourceRate& r);
// Errors name the field.
Result<DatasetSourceRate> DatasetSourceRateFromJson(const Json& j);

}  // namespace corral
