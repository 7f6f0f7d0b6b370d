#include "head/commit_pipeline.h"

namespace corral::head {

CommitPipeline::CommitPipeline(store::Store* store, std::function<void(Status)> on_durable)
    : store_(store), on_durable_(std::move(on_durable)), thread_([this] { Loop(); }) {}

CommitPipeline::~CommitPipeline() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CommitPipeline::Submit(std::vector<store::StateEdit> batch) {
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
    std::vector<store::StateEdit> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || has_batch_; });
      if (!has_batch_) return;  // stopping with nothing in flight
      batch = std::move(batch_);
    }
    Status st = store_->Commit(batch);
    {
      std::lock_guard lock(mu_);
      has_batch_ = false;
    }
    on_durable_(st);
  }
}

}  // namespace corral::head
