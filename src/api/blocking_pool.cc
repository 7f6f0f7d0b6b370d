#include "api/blocking_pool.h"

namespace corral::api {

BlockingPool::BlockingPool(int threads) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      while (true) {
        std::function<void()> fn;
        {
          std::unique_lock lock(mu_);
          cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
          if (queue_.empty()) return;
          fn = std::move(queue_.front());
          queue_.pop_front();
        }
        fn();
      }
    });
  }
}

BlockingPool::~BlockingPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void BlockingPool::Run(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

}  // namespace corral::api
