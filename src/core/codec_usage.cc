// JSON of usage series (usage_series.h). A point is a compact array, since a job keeps up to
// kMaxUsagePoints of them a replica: [seq, at, samples, gpu_util, gpu_util_max, gpu_mem,
// gpu_mem_max, cpu_milli, cpu_milli_max, mem, mem_max] (docs/api.md).
#include <stdexcept>

#include "core/codec.h"
#include "core/codec_internal.h"

namespace corral {

using codec_internal::Checked;
using codec_internal::Decode;
using codec_internal::Req;

namespace {

constexpr size_t kUsagePointFields = 11;

UsagePoint DecodeUsagePointArray(const Json& a) {
  if (!a.is_array() || a.size() != kUsagePointFields) {
    throw std::invalid_argument("usage point: expected an array of " +
                                std::to_string(kUsagePointFields) + " numbers");
  }
  UsagePoint p;
  p.seq = Checked<int64_t>(a[0], "seq");
  p.at = Checked<int64_t>(a[1], "at");
  p.samples = Checked<int32_t>(a[2], "samples");
  p.gpu_util = Checked<int32_t>(a[3], "gpu_util");
  p.gpu_util_max = Checked<int32_t>(a[4], "gpu_util_max");
  p.gpu_mem = Checked<int64_t>(a[5], "gpu_mem");
  p.gpu_mem_max = Checked<int64_t>(a[6], "gpu_mem_max");
  p.cpu_milli = Checked<int32_t>(a[7], "cpu_milli");
  p.cpu_milli_max = Checked<int32_t>(a[8], "cpu_milli_max");
  p.mem = Checked<int64_t>(a[9], "mem");
  p.mem_max = Checked<int64_t>(a[10], "mem_max");
  if (p.seq < 1 || p.samples < 1) {
    throw std::invalid_argument("usage point: seq and samples must be at least 1");
  }
  return p;
}

}  // namespace

Json ToJson(const UsagePoint& p) {
  return Json::array({p.seq, p.at, p.samples, p.gpu_util, p.gpu_util_max, p.gpu_mem, p.gpu_mem_max,
                      p.cpu_milli, p.cpu_milli_max, p.mem, p.mem_max});
}

Json UsagePointsToJson(const std::vector<UsagePoint>& points) {
  Json out = Json::array();
  for (const UsagePoint& p : points) out.push_back(ToJson(p));
  return out;
}

std::vector<UsagePoint> DecodeUsagePoints(const Json& j) {
  if (!j.is_array()) throw std::invalid_argument("usage: expected a list of points");
  std::vector<UsagePoint> out;
  out.reserve(j.size());
  for (const Json& a : j) out.push_back(DecodeUsagePointArray(a));
  return out;
}

Json ToJson(const ReplicaUsage& r) {
  return Json{
      {"replica", r.replica}, {"last_seq", r.last_seq}, {"points", UsagePointsToJson(r.points)}};
}

ReplicaUsage DecodeReplicaUsage(const Json& j) {
  ReplicaUsage r;
  r.replica = Req<int32_t>(j, "replica");
  r.last_seq = Req<int64_t>(j, "last_seq");
  r.points = DecodeUsagePoints(j.at("points"));
  return r;
}

Result<std::vector<UsagePoint>> UsagePointsFromJson(const Json& j) {
  try {
    return DecodeUsagePoints(j);
  } catch (const std::exception& e) {
    return InvalidArgument(e.what());
  }
}

}  // namespace corral
