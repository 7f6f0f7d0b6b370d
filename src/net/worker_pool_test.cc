// WorkerPool: work runs on the pool's threads, not the poster's; past its bound Post refuses
// at once; work still queued at the end is dropped, not run.
#include "net/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

namespace corral::net {
namespace {

TEST(WorkerPool, RunsWorkOffThePostersThreadAndRefusesPastItsBound) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> ran{0};
  std::promise<std::thread::id> where;
  {
    WorkerPool pool(1, 2);
    // The one thread is held by the first piece of work; two more wait; a fourth is refused.
    ASSERT_TRUE(pool.Post([&] {
      where.set_value(std::this_thread::get_id());
      released.wait();
      ++ran;
    }));
    EXPECT_NE(where.get_future().get(), std::this_thread::get_id());
    ASSERT_TRUE(pool.Post([&] { ++ran; }));
    ASSERT_TRUE(pool.Post([&] { ++ran; }));
    EXPECT_FALSE(pool.Post([&] { ++ran; })) << "a third waiting past a bound of two";
    release.set_value();
    // Once the queue drains, it takes work again.
    for (int i = 0; i < 1000 && ran.load() < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(ran.load(), 3);
    EXPECT_TRUE(pool.Post([&] { ++ran; }));
  }
  EXPECT_LE(ran.load(), 4);
}

}  // namespace
}  // namespace corral::net
