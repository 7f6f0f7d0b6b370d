// The copy of a stage-out (core/stage_out.h): a replica's directory on the node copied to
// shared storage once its processes have ended. Runs on a thread of its own (stage_out_runner.h)
// as the job's owner, so that it reads only what the owner may read and writes only where the
// owner may write: the files it makes are the owner's, never root's in another user's place.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "agent/node/run_as.h"
#include "core/stage_out.h"

namespace corral::agent {

// Copies everything under `from` into `to` (made with its missing parents): directories,
// regular files (their permission bits, set-id bits dropped) and symbolic links as links;
// other kinds are skipped. As `who` (nullptr: as the agent's own user). The copy syncs the
// destination's file system before it returns. Never removes or changes anything under
// `from`. On failure, result.error names the path and the reason, and the copy stops there.
// `progress` (may be null) is read by other threads while it copies: the bytes of the regular
// files under `from` (counted before the copy begins) and those copied so far.
struct StageOutProgress {
  std::atomic<int64_t> total{0};
  std::atomic<int64_t> copied{0};
};
StageOutResult CopyStageOut(const std::string& from, const std::string& to, const UnixIdentity* who,
                            StageOutProgress* progress = nullptr);

// Where replica `replica` of a job of `replicas` replicas copies to: DEST itself with one
// replica, DEST/replica-N with several (each node's output apart).
std::string StageOutTarget(const StageOut& s, int32_t replica, int32_t replicas);

}  // namespace corral::agent
