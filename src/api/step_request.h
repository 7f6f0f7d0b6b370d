// The body of POST /v1/jobs/{id}/steps (srun's request for a job step), checked field by field.
#pragma once

#include <string>

#include "core/status.h"
#include "head/head_core.h"

namespace corral::api {

// {"command": [...], "env": {...}, "workdir": "...", "replicas": [...], "ntasks": N,
//  "tasks_per_replica": N, "gpus_per_task": bool}; only "command" is required.
Result<head::StepRequest> StepRequestFromJson(const std::string& body);

}  // namespace corral::api
