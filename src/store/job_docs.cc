#include "store/job_docs.h"

#include <algorithm>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

namespace corral::store {
namespace {

// Below this many documents a thread costs more than it saves.
constexpr size_t kDocsPerThread = 512;

struct Slice {
  std::vector<Job> jobs;
  std::optional<Status> error;  // the first corrupt document of the slice
};

void DecodeSlice(const std::vector<std::string_view>& docs, size_t begin, size_t end, Slice* out) {
  out->jobs.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) {
    auto j = ParseStoredDoc(docs[i]);
    if (!j.ok()) {
      out->error = j.status();
      return;
    }
    auto job = JobFromJson(*j);
    if (!job.ok()) {
      out->error = job.status();
      return;
    }
    out->jobs.push_back(std::move(*job));
  }
}

}  // namespace

Result<Json> ParseStoredDoc(std::string_view doc) {
  Json j = Json::parse(doc, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Internal("corrupt document in store: " + std::string(doc.substr(0, 80)));
  }
  return j;
}

Status DecodeJobDocs(const std::vector<std::string_view>& docs, std::vector<Job>* out) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::clamp<size_t>(docs.size() / kDocsPerThread, 1, cores);
  std::vector<Slice> slices(threads);
  std::vector<std::thread> workers;
  const size_t per = (docs.size() + threads - 1) / threads;
  auto bound = [&](size_t t) { return std::min(docs.size(), t * per); };
  std::vector<size_t> here = {0};  // slices this thread decodes
  for (size_t t = 1; t < threads; ++t) {
    try {
      workers.emplace_back(DecodeSlice, std::cref(docs), bound(t), bound(t + 1), &slices[t]);
    } catch (const std::system_error&) {
      here.push_back(t);  // no thread to be had (a process limit): slower, not wrong
    }
  }
  for (size_t t : here) DecodeSlice(docs, bound(t), bound(t + 1), &slices[t]);
  for (std::thread& w : workers) w.join();
  for (const Slice& s : slices) {
    if (s.error) return *s.error;
  }
  for (Slice& s : slices) {
    std::move(s.jobs.begin(), s.jobs.end(), std::back_inserter(*out));
  }
  return Status::Ok();
}

}  // namespace corral::store
