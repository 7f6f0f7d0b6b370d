// Group commit: the head's state machine hands batches of edits to one commit thread, which
// writes each batch in one store transaction and then reports it durable. While one batch is
// being written, the next one grows, so many requests share one fsync.
//
// The changes of a batch are encoded for the change log on the commit thread, not by the state
// machine: a 1,000-job array is 1,000 changes to encode, and the state machine has a pass to run
// and agents to answer meanwhile.
//
// Threads: Submit() and on_durable belong to the caller (the state machine); the commit thread
// only touches the store, the queue below and the changes it was given (read only), and runs
// after_commit.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "head/change.h"
#include "store/store.h"

namespace corral::head {

struct CommitBatch {
  // Appended to the change log, in order. The caller may read them meanwhile, and may move
  // from them once on_durable has been called.
  std::shared_ptr<std::vector<Change>> changes;
  std::vector<store::StateEdit> edits;  // snapshot rows, retirements, meta
};

class CommitPipeline {
 public:
  // `on_durable(status)` is called on the commit thread after each batch; the owner posts
  // back to its own thread from there. `after_commit(changes)`, on the commit thread too, runs
  // before it for each batch written (not for one the store refused).
  CommitPipeline(store::Store* store, std::function<void(const std::vector<Change>&)> after_commit,
                 std::function<void(Status)> on_durable);
  ~CommitPipeline();
  CommitPipeline(const CommitPipeline&) = delete;
  CommitPipeline& operator=(const CommitPipeline&) = delete;

  // REQUIRES: no batch in flight (the caller waits for on_durable before the next Submit).
  void Submit(CommitBatch batch);

 private:
  void Loop();

  store::Store* store_;
  std::function<void(const std::vector<Change>&)> after_commit_;
  std::function<void(Status)> on_durable_;
  std::mutex mu_;
  std::condition_variable cv_;
  CommitBatch batch_;       // GUARDED_BY(mu_)
  bool has_batch_ = false;  // GUARDED_BY(mu_)
  bool stop_ = false;       // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace corral::head
