// A few threads for work that must block (fetching logs from an agent) so that it never runs
// on an I/O thread or the head's state-machine thread. Owned by ApiService.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace corral::api {

class BlockingPool {
 public:
  explicit BlockingPool(int threads);
  ~BlockingPool();  // finishes queued work, joins
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  void Run(std::function<void()> fn);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;                        // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

}  // namespace corral::api
