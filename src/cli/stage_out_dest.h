// The submitting user's own check of a stage-out's destination (core/stage_out.h), made where
// the CLI runs (the same shared storage the nodes mount), as a dataset's source is read there:
// the head does no I/O for users. The agent's copy as the owner is what enforces it.
#pragma once

#include "core/job.h"
#include "core/status.h"

namespace corral::cli {

// OK when the spec declares no stage-out, or its DEST is a directory this process may write
// into, or may be made under the nearest directory that exists (which it may write into).
// Otherwise InvalidArgument naming `field 'stage_out'`, the path and why.
Status CheckStageOutDest(const JobSpec& spec);

}  // namespace corral::cli
