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

// Decodes docs[begin, end) into jobs[begin, end), each job moved once, into its place.
void DecodeSlice(const std::vector<std::string_view>& docs, size_t begin, size_t end, Job* jobs,
                 std::optional<Status>* error) {
  for (size_t i = begin; i < end; ++i) {
    auto j = ParseStoredDoc(docs[i]);
    if (!j.ok()) {
      *error = j.status();
      return;
    }
    auto job = JobFromJson(*j);
    if (!job.ok()) {
      *error = job.status();
      return;
    }
    jobs[i] = std::move(*job);
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
  const size_t first = out->size();
  out->resize(first + docs.size());
  Job* jobs = out->data() + first;
  std::vector<std::optional<Status>> errors(threads);  // the first corrupt document of each slice
  std::vector<std::thread> workers;
  const size_t per = (docs.size() + threads - 1) / threads;
  auto bound = [&](size_t t) { return std::min(docs.size(), t * per); };
  std::vector<size_t> here = {0};  // slices this thread decodes
  for (size_t t = 1; t < threads; ++t) {
    try {
      workers.emplace_back(DecodeSlice, std::cref(docs), bound(t), bound(t + 1), jobs, &errors[t]);
    } catch (const std::system_error&) {
      here.push_back(t);  // no thread to be had (a process limit): slower, not wrong
    }
  }
  for (size_t t : here) DecodeSlice(docs, bound(t), bound(t + 1), jobs, &errors[t]);
  for (std::thread& w : workers) w.join();
  for (const std::optional<Status>& e : errors) {
    if (e) {
      out->resize(first);
      return *e;
    }
  }
  return Status::Ok();
}

Status JobDocsPipeline::Add(std::vector<std::string>* docs) {
  CORRAL_RETURN_IF_ERROR(Finish());
  decoding_.swap(*docs);
  docs->clear();
  auto decode = [this] {
    std::vector<std::string_view> views(decoding_.begin(), decoding_.end());
    status_ = DecodeJobDocs(views, out_);
  };
  try {
    worker_ = std::thread(decode);
  } catch (const std::system_error&) {
    decode();  // no thread to be had: read and decode in turn
  }
  return Status::Ok();
}

Status JobDocsPipeline::Finish() {
  if (worker_.joinable()) worker_.join();
  return status_;
}

}  // namespace corral::store
