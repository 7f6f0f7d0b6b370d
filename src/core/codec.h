// JSON encoding of the core types, shared by the store, the API and the agent protocol.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/agent_protocol.h"
#include "core/job.h"
#include "core/node.h"
#include "core/status.h"
#include "core/views.h"

namespace corral {

using Json = nlohmann::json;

// The deepest nesting of arrays and objects in JSON text, strings skipped, found without
// parsing. nlohmann parses any depth, but dumping or walking a value recurses once per level:
// a request body of a few hundred thousand '[' would overflow the head's stack in the error
// message that quotes it. No request needs more than a few levels.
int JsonNestingDepth(std::string_view text);
constexpr int kMaxJsonNesting = 64;

Json ToJson(const JobSpec& s);
Json ToJson(const ReplicaPlacement& p);
Json ToJson(const Run& r);
Json ToJson(const Step& s);
Json ToJson(const Job& j);
// A job as the stores keep it (codec_stored.cc): ToJson less the fields at the value JobFromJson
// assumes when they are missing. JobFromJson reads both forms; so does any earlier corral.
Json ToStoredJson(const Job& j);
Json ToJson(const Gpu& g);
Json ToJson(const Node& n);
Json ToJson(const GpuDrain& d);
Json ToJson(const GpuSample& s);
Json ToJson(const QueueConfig& q);
Json ToJson(const RegisterRequest& r);
Json ToJson(const RegisterResponse& r);
Json ToJson(const RunReport& r);
Json ToJson(const SyncRequest& r);
Json ToJson(const RunOrder& r);
Json ToJson(const SyncResponse& r);
// What the API answers for a node and a queue (codec_views.cc): the record's fields, and what
// is derived beside them. Each GPU carries its last sample, drain and shares.
Json ToJson(const NodeView& v);
Json ToJson(const QueueView& v);
// Usage series (codec_usage.cc): a point is a compact array of its fields in declaration order.
Json ToJson(const UsagePoint& p);
Json ToJson(const ReplicaUsage& r);
Json UsagePointsToJson(const std::vector<UsagePoint>& points);
// Throw on malformed input: for the other decoders, which turn that into a Status.
std::vector<UsagePoint> DecodeUsagePoints(const Json& j);
ReplicaUsage DecodeReplicaUsage(const Json& j);
Result<std::vector<UsagePoint>> UsagePointsFromJson(const Json& j);

// Decoders of trusted data (the store, the other daemon): a malformed document is an error,
// not a crash. User-facing specs go through ParseJobSpec (spec.h), which explains itself.
Result<JobSpec> JobSpecFromJson(const Json& j);
Result<ReplicaPlacement> PlacementFromJson(const Json& j);
Result<Run> RunFromJson(const Json& j);
Result<Step> StepFromJson(const Json& j);
Result<Job> JobFromJson(const Json& j);
Result<Gpu> GpuFromJson(const Json& j);
Result<Node> NodeFromJson(const Json& j);
Result<GpuDrain> GpuDrainFromJson(const Json& j);
Result<GpuSample> GpuSampleFromJson(const Json& j);
Result<QueueConfig> QueueFromJson(const Json& j);
Result<RegisterRequest> RegisterRequestFromJson(const Json& j);
Result<RegisterResponse> RegisterResponseFromJson(const Json& j);
Result<SyncRequest> SyncRequestFromJson(const Json& j);
Result<SyncResponse> SyncResponseFromJson(const Json& j);
Result<NodeView> NodeViewFromJson(const Json& j);
Result<QueueView> QueueViewFromJson(const Json& j);

}  // namespace corral
