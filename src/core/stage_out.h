// Stage-out (docs/datasets.md): a directory on the node's local disk that the agent copies back
// to shared storage after the replica's processes end and before the head frees its GPUs, as
// the job's owner. Declared by `corral submit --stage-out DIR:DEST`, a spec's `stage_out`, or
// `#SBATCH --stage-out=DIR:DEST`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace corral {

struct StageOut {
  std::string dir;   // on the node (absolute): what the job produced
  std::string dest;  // on shared storage (absolute): where it goes
  bool empty() const { return dir.empty(); }
  bool operator==(const StageOut&) const = default;
};

// "DIR:DEST" (split at the first ':'); both absolute, without '.' or '..' components, neither
// inside the other. Errors name `field`.
Result<StageOut> ParseStageOut(const std::string& field, const std::string& text);
// A spec's value: "DIR:DEST" or {"dir": DIR, "dest": DEST}.
Result<StageOut> ParseStageOutJson(const std::string& field, const nlohmann::json& v);
nlohmann::json ToJson(const StageOut& s);
StageOut StageOutFromJson(const nlohmann::json& j);  // the stored form (trusted)

// What one replica's stage-out did, as its agent reports it with the replica's exit.
struct StageOutResult {
  bool done = false;  // a stage-out ran (and ended): the rest says how
  int64_t bytes = 0;
  int64_t files = 0;
  int64_t ms = 0;
  std::string from;   // the node's directory
  std::string to;     // where it went
  std::string error;  // "": every file copied; else the path and why it failed
  bool operator==(const StageOutResult&) const = default;
};
nlohmann::json ToJson(const StageOutResult& r);
StageOutResult StageOutResultFromJson(const nlohmann::json& j);
// For the job's events: "staged out DIR to DEST on NODE: N bytes, F files in M ms", or
// "stage-out of DIR to DEST on NODE failed: ERROR (what the job wrote stays in DIR)".
std::string DescribeStageOut(const StageOutResult& r, const std::string& node);

}  // namespace corral
