// Fakes shared by every module's tests: a clock the test moves, a store held in memory, and
// a store that fails, stalls or loses acknowledgements on demand (LevelDB's ErrorEnv).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "core/secrets.h"
#include "core/time.h"
#include "store/store.h"

namespace corral::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimeMs start = 1'000'000) : now_(start) {}
  TimeMs Now() const override {
    std::lock_guard<std::mutex> l(mu_);
    return now_;
  }
  void Advance(DurationMs d) {
    std::lock_guard<std::mutex> l(mu_);
    now_ += d;
  }

 private:
  mutable std::mutex mu_;
  TimeMs now_;  // GUARDED_BY(mu_)
};

// Secrets "secret-1", "secret-2", ...: predictable, distinct.
class CountingRandom final : public RandomSource {
 public:
  std::string Secret() override { return "secret-" + std::to_string(++n_); }

 private:
  int n_ = 0;
};

// What a store holds, shared between the MemoryStore instances that "reopen" it, so a test
// can drop a head and open another on the same durable data.
struct MemoryDisk {
  std::mutex mu;
  store::StoredState state;  // rows + every change ever appended (truncation applied)
};

class MemoryStore final : public store::Store {
 public:
  explicit MemoryStore(std::shared_ptr<MemoryDisk> disk) : disk_(std::move(disk)) {}
  Result<store::StoredState> Load() override;
  Status Commit(const std::vector<store::StateEdit>& edits) override;
  Result<std::vector<store::ChangeRecord>> ReadChanges(uint64_t after, int32_t limit) override;
  Result<std::vector<Job>> ReadRetiredJobs(const store::RetiredJobsQuery& q) const override;

 private:
  std::shared_ptr<MemoryDisk> disk_;
};

// Wraps a store. Modes apply to the next commits until changed.
class FaultStore final : public store::Store {
 public:
  enum class Mode {
    kNormal,
    kFail,     // the commit fails; nothing is written
    kStall,    // the commit blocks until Release()
    kLostAck,  // the commit is written but reports failure (the ack is lost)
  };
  explicit FaultStore(std::unique_ptr<store::Store> inner) : inner_(std::move(inner)) {}
  void SetMode(Mode m);
  void Release();        // lets stalled commits go on (and the mode returns to normal)
  int commits() const;   // commits attempted
  bool stalled() const;  // a commit is blocked now
  Result<store::StoredState> Load() override { return inner_->Load(); }
  Status Commit(const std::vector<store::StateEdit>& edits) override;
  Result<std::vector<store::ChangeRecord>> ReadChanges(uint64_t after, int32_t limit) override {
    return inner_->ReadChanges(after, limit);
  }
  Result<std::vector<Job>> ReadRetiredJobs(const store::RetiredJobsQuery& q) const override {
    return inner_->ReadRetiredJobs(q);
  }

 private:
  std::unique_ptr<store::Store> inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Mode mode_ = Mode::kNormal;  // GUARDED_BY(mu_)
  int commits_ = 0;            // GUARDED_BY(mu_)
  bool stalled_ = false;       // GUARDED_BY(mu_)
};

}  // namespace corral::testing
