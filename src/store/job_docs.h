// Stored documents -> values: one parse for every table of both stores, and the jobs on every
// core. At 100,000 stored jobs, parsing their JSON is most of a head's start
// (bench/head_restart.sh), and each document stands alone.
#pragma once

#include <string>
#include <string_view>
#include <thread>
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

// Decodes batches of job documents into `out`, in their order: each batch on every core while
// its caller reads the next. Owned and used by one thread (a store's Load).
class JobDocsPipeline {
 public:
  explicit JobDocsPipeline(std::vector<Job>* out) : out_(out) {}
  ~JobDocsPipeline() { (void)Finish(); }
  JobDocsPipeline(const JobDocsPipeline&) = delete;
  JobDocsPipeline& operator=(const JobDocsPipeline&) = delete;

  // Waits for the batch before, then takes *docs (leaving it empty) to decode. The error of
  // the batch before, if it had one (then *docs stays).
  Status Add(std::vector<std::string>* docs);
  // Waits for the last batch; the first error of any.
  Status Finish();

 private:
  std::vector<Job>* out_;
  std::vector<std::string> decoding_;
  std::thread worker_;
  Status status_ = Status::Ok();  // written by worker_, read after it is joined
};

}  // namespace corral::store
