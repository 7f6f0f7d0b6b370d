// Stored documents -> values: one parse for every table of both stores, and the jobs on every
// core. At 100,000 stored jobs, parsing their JSON is most of a head's start
// (bench/head_restart.sh), and each document stands alone.
#pragma once

#include <string_view>
#include <vector>

#include "core/codec.h"
#include "core/job.h"
#include "core/status.h"

namespace corral::store {

// One stored document's JSON; kInternal, quoting its start, when it is not JSON.
Result<Json> ParseStoredDoc(std::string_view doc);

// Appends the jobs of `docs`, in their order, to `out`. On a corrupt document: the error of
// the first one, and `out` is unchanged.
Status DecodeJobDocs(const std::vector<std::string_view>& docs, std::vector<Job>* out);

}  // namespace corral::store
