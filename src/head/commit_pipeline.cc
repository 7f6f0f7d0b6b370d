#include "head/commit_pipeline.h"

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
    if (batch.changes) {
      edits.reserve(batch.changes->size() + batch.edits.size());
      EncodeChangeRecords(*batch.changes, &edits);
    }
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
