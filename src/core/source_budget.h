// A dataset source's cluster-wide budget (docs/datasets.md, "Sharing a source's bandwidth"): an
// admin's limit on what every node's stage-ins together may read from one source, and how the
// line of stage-ins it paces stands. Set by `corral datasets source-limit`, listed by
// `corral datasets limits` (PUT and GET /v1/dataset-limits).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace corral {

struct SourceBudget {
  std::string source;    // DatasetSourceKey: "/shared", "https://store.example:443"
  int64_t rate = 0;      // bytes per second, every node's fetches together; 0: none
  int32_t fetches = 0;   // nodes fetching at once (the rate's share is rate / fetches)
  int32_t fetching = 0;  // nodes fetching from it now (admitted stage-ins)
  int32_t waiting = 0;   // placed runs waiting at the head for their turn
  bool operator==(const SourceBudget&) const = default;
};

nlohmann::json ToJson(const SourceBudget& b);
Result<SourceBudget> SourceBudgetFromJson(const nlohmann::json& j);

// The source a budget names, as DatasetSourceKey makes it: an absolute directory
// ("/shared", no trailing '/', no '.' or '..'), or an http(s) URL's scheme and host with an
// optional port and nothing after ("https://store.example" -> "https://store.example:443").
// Errors name field 'source'.
Result<std::string> ParseSourceKey(const std::string& text);

// Bytes per second as people write them: digits with K, M or G (powers of 1024): 0, 500K,
// 100M, 1G. Errors start with `what` ("flag '--rate'").
Result<int64_t> ParseByteRate(const std::string& what, const std::string& text);

}  // namespace corral
