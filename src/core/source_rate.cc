#include "core/source_rate.h"

namespace corral {

Json ToJson(const DatasetSourceRate& r) {
  return Json{{"source", r.source},
              {"bytes_per_second", r.bytes_per_second},
              {"bytes", r.bytes},
              {"ms", r.ms},
              {"measured_at", r.measured_at}};
}

Result<DatasetSourceRate> DatasetSourceRateFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("source rate: not a JSON object");
  DatasetSourceRate r;
  for (const char* field : {"source", "bytes_per_second", "bytes", "ms"}) {
    if (!j.contains(field)) return InvalidArgument(std::string("field '") + field + "': missing");
  }
  try {
    r.source = j.at("source").get<std::string>();
    r.bytes_per_second = j.at("bytes_per_second").get<int64_t>();
    r.bytes = j.at("bytes").get<int64_t>();
    r.ms = j.at("ms").get<DurationMs>();
    r.measured_at = j.value("measured_at", TimeMs{0});
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("source rate: ") + e.what());
  }
  return r;
}

}  // namespace corral
