#include "head/commit_pipeline.h"

#include <future>
#include <span>

#include "head/durability.h"

namespace corral::head {

CommitPipeline::CommitPipeline(store::Store* store,
                               std::function<void(const std::vector<Change>&)> after_commit,
                               std::function<void(Status)> on_durable)
    : store_(store),
      after_commit_(std::move(after_commit)),
      on_durable_(std::move(on_durable)),
      thread_([this] { Loop(); }) {}

CommitPipeline::~CommitPipeline() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CommitPipeline::Submit(CommitBatch batch) {
  {
    std::lock_guard lock(mu_);
    CORRAL_CHECK(!has_batch_, "a commit batch is already in flight");
    batch_ = std::move(batch);
    has_batch_ = true;
  }
  cv_.notify_one();
}

// A burst (a 1,000-job array and its placements) is encoded by two threads, each half of it:
// no agent is told of a placement before the batch is durable, and the encoding is most of
// the batch's time.
void CommitPipeline::Encode(const std::vector<Change>& changes,
                            std::vector<store::StateEdit>* edits) {
  constexpr size_t kTwoThreadsFrom = 256;
  const std::span<const Change> all(changes);
  if (changes.size() < kTwoThreadsFrom) return EncodeChangeRecords(all, edits);
  const size_t half = changes.size() / 2;
  std::vector<store::StateEdit> second;
  auto rest =
      std::async(std::launch::async, [&] { EncodeChangeRecords(all.subspan(half), &second); });
  EncodeChangeRecords(all.first(half), edits);
  rest.get();
  for (store::StateEdit& e : second) edits->push_back(std::move(e));
}

void CommitPipeline::Loop() {
  while (true) {
    CommitBatch batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || has_batch_; });
      if (!has_batch_) return;  // stopping with nothing in flight
      batch = std::move(batch_);
      batch_ = {};
    }
    std::vector<store::StateEdit> edits;
    if (batch.changes) Encode(*batch.changes, &edits);
    for (store::StateEdit& e : batch.edits) edits.push_back(std::move(e));
    Status st = store_->Commit(edits);
    if (st.ok() && batch.changes && after_commit_) after_commit_(*batch.changes);
    batch = {};  // the owner may move from the changes once told
    {
      std::lock_guard lock(mu_);
      has_batch_ = false;
    }
    on_durable_(st);
  }
}

}  // namespace corral::head
