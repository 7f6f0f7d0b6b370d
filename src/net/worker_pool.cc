#include "net/worker_pool.h"

#include "core/status.h"

namespace corral::net {

WorkerPool::WorkerPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  CORRAL_CHECK(threads >= 1, "a WorkerPool needs a thread");
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool WorkerPool::Post(std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
  return true;
}

void WorkerPool::Run() {
  for (;;) {
    std::function<void()> work;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace corral::net
