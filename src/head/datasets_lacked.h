// The datasets of a job a node's cache does not hold (by content digest): what placing the job
// there would fetch. One rule for the stage-in's measurement, a budget's line and the fetches
// ahead.
#pragma once

#include <string>
#include <vector>

#include "core/job.h"
#include "head/scheduler_model.h"

namespace corral::head {

inline std::vector<const DatasetRef*> DatasetsLacked(const Job& job, const std::string& node,
                                                     const DatasetHolders& holders) {
  auto held = holders.find(node);
  std::vector<const DatasetRef*> out;
  for (const DatasetRef& d : job.spec.datasets) {
    if (held == holders.end() || !held->second.count(d.digest)) out.push_back(&d);
  }
  return out;
}

}  // namespace corral::head
