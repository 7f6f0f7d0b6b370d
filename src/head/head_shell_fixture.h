// The head's shell with real threads around the core, in memory, for its tests: a fixture
// that opens a head on a fault-injecting memory store, a fake clock and counted randomness.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "head/head.h"
#include "testing/fakes.h"

namespace corral::head::shell_testing {

using corral::testing::CountingRandom;
using corral::testing::FakeClock;
using corral::testing::FaultStore;
using corral::testing::MemoryDisk;
using corral::testing::MemoryStore;

inline constexpr char kAdmin[] = "admin-secret";

template <typename T>
struct Answer {
  Result<T> result = Internal("no answer");
  uint64_t revision = 0;
};

// Submits `true` (an array of it when `array` is given) and waits for the answer.
inline Answer<Job> SubmitTrue(Head& head, const std::string& bearer,
                              const std::string& array = "") {
  JobSpec spec;
  spec.command = {"true"};
  spec.array = array;
  std::promise<Answer<Job>> p;
  head.Run(bearer, SubmitJob{spec, "", ""}, [&](Result<Job> r) {
    p.set_value({std::move(r), head.ReplyRevision()});
  });
  return p.get_future().get();
}

class HeadShell : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    auto store = std::make_unique<FaultStore>(std::make_unique<MemoryStore>(disk_));
    fault_ = store.get();
    HeadConfig config = config_;
    config.on_store_failure = [this](const Status&) { store_failures_++; };
    auto h = Head::Create(config, std::move(store), &clock_, &random_, {kAdmin, "join-secret"});
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    head_ = std::move(*h);
    head_->Start();
  }
  template <typename T>
  std::future<Answer<T>> Async(std::function<void(Head::Callback<T>)> fn) {
    auto p = std::make_shared<std::promise<Answer<T>>>();
    fn([this, p](Result<T> r) { p->set_value({std::move(r), head_->ReplyRevision()}); });
    return p->get_future();
  }
  Answer<Job> Submit(const std::string& bearer = kAdmin) { return SubmitTrue(*head_, bearer); }
  Answer<std::vector<Job>> List() {
    return Async<std::vector<Job>>([&](auto cb) { head_->Run(kAdmin, ListJobs{}, cb); }).get();
  }

  std::shared_ptr<MemoryDisk> disk_ = std::make_shared<MemoryDisk>();
  HeadConfig config_;
  FakeClock clock_;
  CountingRandom random_;
  FaultStore* fault_ = nullptr;
  std::atomic<int> store_failures_{0};
  std::unique_ptr<Head> head_;
};

}  // namespace corral::head::shell_testing
