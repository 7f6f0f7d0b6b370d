// A few threads for work that may block (a local caller's user lookup, which NSS may send to a
// directory), so that it does not hold up an HTTP server's I/O threads and the other
// connections they serve. Work queues up to a bound; past it, Post refuses and the caller
// answers at once. Thread-safe; the destructor joins the threads and drops work still queued
// (a dropped Responder answers 500).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace corral::net {

class WorkerPool {
 public:
  // REQUIRES: threads >= 1.
  WorkerPool(int threads, size_t max_queued);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `work` for a thread; false (and `work` dropped) when max_queued are waiting.
  bool Post(std::function<void()> work);

 private:
  void Run();

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;  // GUARDED_BY(mu_)
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

}  // namespace corral::net
