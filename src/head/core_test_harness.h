// Plays the head shell's part around a HeadCore for tests, without threads: commands run on
// the core, Commit() writes the pending changes to an in-memory store as the group commit
// would, Crash() drops what was not committed and recovers a new core from the store.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "head/durability.h"
#include "head/head_core.h"
#include "testing/fakes.h"

namespace corral::head::testing {

class CoreHarness {
 public:
  explicit CoreHarness(CoreConfig config, DurabilityConfig durability = {})
      : config_(std::move(config)),
        durability_(durability),
        disk_(std::make_shared<corral::testing::MemoryDisk>()),
        store_(disk_),
        core_(std::make_unique<HeadCore>(config_)),
        log_(durability_) {
    core_->Start(now, "harness-step-key");
    acked_ = StateToJson(core_->state());
    Commit();
  }

  HeadCore& core() { return *core_; }
  // Moves the core's changes into the pending batch (what the shell's Drain does).
  void Drain() {
    CoreOutput out = core_->TakeOutput();
    log_.Append(out.changes, core_->state(), &batch_);
    for (const Change& c : out.changes) all_changes_.push_back(c);
  }
  // The group commit: everything pending becomes durable and acknowledged.
  void Commit() {
    Drain();
    bool snapshot = core_->TakeSnapshotWanted();  // as the shell's Tick does
    if (batch_.empty() && !snapshot) return;
    log_.MaybeSnapshot(*core_, snapshot, &batch_);
    if (batch_.empty()) return;
    Status st = store_.Commit(batch_);
    ASSERT_TRUE(st.ok()) << st.ToString();
    batch_.clear();
    acked_ = StateToJson(core_->state());
  }
  // SIGKILL of the head: what was not committed is gone; a new core recovers from the store
  // and must hold exactly the acknowledged state. Then it starts a new leadership.
  void Crash() {
    Drain();
    batch_.clear();
    auto loaded = store_.Load();
    ASSERT_TRUE(loaded.ok());
    auto decoded = DecodeStoredState(std::move(*loaded));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    uint64_t snapshot = decoded->snapshot.revision;
    core_ = std::make_unique<HeadCore>(config_);
    Status st = core_->Recover(std::move(decoded->snapshot), decoded->tail, now);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(StateToJson(core_->state()), acked_) << "recovered state != acknowledged state";
    log_ = EditLog(durability_, snapshot);
    // The changes after the acknowledged revision never happened.
    std::erase_if(all_changes_, [&](const Change& c) { return c.revision > core_->revision(); });
    core_->Start(now);
    Commit();
  }
  // Derived state has one meaning: what the live core derived change by change equals what a
  // core recovered from the same state rebuilds.
  void ExpectDerivedStateRebuilds() {
    Drain();
    HeadCore rebuilt(config_);
    Status st = rebuilt.Recover(core_->state(), {}, now);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(core_->DerivedSummary().dump(1), rebuilt.DerivedSummary().dump(1))
        << "at revision " << core_->revision();
  }
  // Every change made and committed so far, from the first (what a crash lost is not here).
  const std::vector<Change>& changes() {
    Drain();
    return all_changes_;
  }
  // Replays every change ever made from an empty state: it must give the live state.
  void ExpectReplayEqualsLive() {
    Drain();
    ClusterState replayed;
    for (const Change& c : all_changes_) ApplyChange(replayed, c);
    EXPECT_EQ(StateToJson(replayed), StateToJson(core_->state()));
  }
  // Replays what the store holds from an empty state (needs an untruncated log).
  void ExpectStoredLogReplaysToAcked() {
    auto all = store_.ReadChanges(0, 1 << 30);
    ASSERT_TRUE(all.ok());
    ClusterState replayed;
    for (const store::ChangeRecord& rec : *all) {
      auto c = ChangeFromJson(Json::parse(rec.doc));
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      ApplyChange(replayed, *c);
    }
    EXPECT_EQ(StateToJson(replayed), acked_);
  }

  TimeMs now = 1'000'000;

 private:
  CoreConfig config_;
  DurabilityConfig durability_;
  std::shared_ptr<corral::testing::MemoryDisk> disk_;
  corral::testing::MemoryStore store_;
  std::unique_ptr<HeadCore> core_;
  EditLog log_;
  std::vector<store::StateEdit> batch_;
  std::vector<Change> all_changes_;
  Json acked_;
};

}  // namespace corral::head::testing
