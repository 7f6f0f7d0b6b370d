// The user-facing job spec: the JSON that `corral submit` builds from flags or YAML and that
// POST /v1/jobs accepts. Strict: an unknown field, a wrong type or a value out of range is an
// error that names the field, the value and what would be accepted.
#pragma once

#include <string>

#include "core/codec.h"
#include "core/job.h"
#include "core/node.h"
#include "core/status.h"

namespace corral {

// Accepted fields: name, command (array of strings, required), env (object), workdir, queue,
// replicas, gpus, cpus, memory, gpu_model, node_labels, time_limit, priority, preemptible,
// max_restarts, checkpoint_signal, grace_period; a container's image, mounts ("SRC:DST[:ro]"),
// container_workdir, container_writable, container_mount_home (container_spec.h).
Result<JobSpec> ParseJobSpec(const Json& j);

// Limits on what one job may carry (ParseJobSpec refuses more, naming the field).
constexpr size_t kMaxCommandArgs = 4096;
constexpr size_t kMaxCommandBytes = 128 << 10;
constexpr size_t kMaxEnvVars = 1024;
constexpr size_t kMaxEnvBytes = 256 << 10;

// "90", "90s", "15m", "2h", "1d", "1:30:00" (Slurm's H:MM:SS), "2-00:00:00" (D-HH:MM:SS).
Result<DurationMs> ParseDuration(const std::string& field, const std::string& text);
// "512" (MB), "512M", "16G", "1T".
Result<int64_t> ParseMemoryMb(const std::string& field, const std::string& text);
// A spec's "gpus" (number or text): whole GPUs, or a share of one GPU below 1 at milli-GPU
// granularity; returns milli-GPUs. Errors name the field "gpus".
Result<int32_t> ParseGpuCount(const Json& v);
// "SIGTERM", "TERM", "15".
Result<int32_t> ParseSignal(const std::string& field, const std::string& text);

std::string FormatDuration(DurationMs ms);

// A queue's settings as an operator may set them: a name of path segments
// ("org/team"), quota >= 0, limit -1 (none) or >= quota, weight > 0.
Status ValidateQueue(const QueueConfig& q);

}  // namespace corral
