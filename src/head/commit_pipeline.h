// Group commit: the head's state machine hands batches of edits to one commit thread, which
// writes each batch in one store transaction and then reports it durable. While one batch is
// being written, the next one grows, so many requests share one fsync.
//
// Threads: Submit() and the callbacks belong to the caller (the state machine); the commit
// thread only touches the store and the queue below.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "store/store.h"

namespace corral::head {

class CommitPipeline {
 public:
  // `on_durable(status)` is called on the commit thread after each batch; the owner posts
  // back to its own thread from there.
  CommitPipeline(store::Store* store, std::function<void(Status)> on_durable);
  ~CommitPipeline();
  CommitPipeline(const CommitPipeline&) = delete;
  CommitPipeline& operator=(const CommitPipeline&) = delete;

  // REQUIRES: no batch in flight (the caller waits for on_durable before the next Submit).
  void Submit(std::vector<store::StateEdit> batch);

 private:
  void Loop();

  store::Store* store_;
  std::function<void(Status)> on_durable_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<store::StateEdit> batch_;  // GUARDED_BY(mu_)
  bool has_batch_ = false;               // GUARDED_BY(mu_)
  bool stop_ = false;                    // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace corral::head
