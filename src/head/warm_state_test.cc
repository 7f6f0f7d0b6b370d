// A standby head's warm copy across a database failover that lost a change it had applied:
// the new leader's history reuses that revision, and the copy must follow the store's history,
// not fork from it (two in-memory stores stand for the server before and after the failover).
#include "head/warm_state.h"

#include <gtest/gtest.h>

#include "head/change.h"
#include "head/standby.h"
#include "testing/fakes.h"

namespace corral::head {
namespace {

store::ChangeRecord Submitted(uint64_t revision, JobId id) {
  Change c;
  c.revision = revision;
  c.at = static_cast<TimeMs>(revision) * 1000;
  Job j;
  j.id = id;
  j.owner = "ana";
  j.spec.command = {"true"};
  j.submitted_at = c.at;
  c.what = JobSubmitted{j};
  return {revision, ToJson(c).dump()};
}

// A store whose change log holds `changes`, as the server's history.
std::unique_ptr<testing::MemoryStore> History(const std::vector<store::ChangeRecord>& changes) {
  auto store = std::make_unique<testing::MemoryStore>(std::make_shared<testing::MemoryDisk>());
  for (const auto& c : changes) EXPECT_TRUE(store->Commit({store::AppendChange{c}}).ok());
  return store;
}

TEST(WarmState, AStandbyThatAppliedAChangeTheFailoverLostFollowsTheNewHistory) {
  // Before: jobs 1 and 2, job 2's change never replicated. After the failover the new leader
  // wrote job 3 under revision 2, then job 4.
  auto before = History({Submitted(1, 1), Submitted(2, 2)});
  auto after = History({Submitted(1, 1), Submitted(2, 3), Submitted(3, 4)});
  auto warm = WarmState::Load(*before);
  ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  ASSERT_EQ(warm->revision(), 2u);

  ASSERT_TRUE(warm->CatchUp(*after).ok());
  EXPECT_EQ(warm->revision(), 3u);
  EXPECT_EQ(warm->reloads(), 1);
  EXPECT_EQ(warm->state().jobs.count(2), 0u) << "kept the change the failover lost";
  EXPECT_EQ(warm->state().jobs.count(3), 1u) << "skipped the new leader's change at revision 2";
  EXPECT_EQ(warm->state().jobs.count(4), 1u);

  // Following the same history further needs no reload.
  auto later = History({Submitted(1, 1), Submitted(2, 3), Submitted(3, 4), Submitted(4, 5)});
  ASSERT_TRUE(warm->CatchUp(*later).ok());
  EXPECT_EQ(warm->revision(), 4u);
  EXPECT_EQ(warm->reloads(), 1);
}

// A store shared with another head that leads until `refusals` tries have been refused; the
// log grows by one change at each refused try, as the leader commits.
class SharedStore final : public store::Store {
 public:
  SharedStore(std::unique_ptr<testing::MemoryStore> inner, int refusals)
      : inner_(std::move(inner)), refusals_(refusals) {}
  Result<store::StoredState> Load() override { return inner_->Load(); }
  Status Commit(const std::vector<store::StateEdit>& e) override { return inner_->Commit(e); }
  Result<std::vector<store::ChangeRecord>> ReadChanges(uint64_t after, int32_t limit) override {
    return inner_->ReadChanges(after, limit);
  }
  Result<std::vector<Job>> ReadRetiredJobs(const store::RetiredJobsQuery& q) const override {
    return inner_->ReadRetiredJobs(q);
  }
  bool Shared() const override { return true; }
  Result<std::optional<uint64_t>> TryLead() override {
    if (tries_++ >= refusals_) return std::optional<uint64_t>(2);
    uint64_t next = tries_ + 1;  // the leader's next change
    EXPECT_TRUE(inner_->Commit({store::AppendChange{Submitted(next, next)}}).ok());
    if (tries_ == 1) return Unavailable("the leader's lock is held");
    return std::optional<uint64_t>();
  }
  Result<std::string> ReadMeta(const std::string& key) override {
    return key == store::kLeaderUrlKey ? std::string("http://leader:7070") : std::string();
  }
  int tries_ = 0;

 private:
  std::unique_ptr<testing::MemoryStore> inner_;
  int refusals_;
};

TEST(Standby, FollowsTheLeaderUntilItTakesTheLockThenHoldsAllItsChanges) {
  SharedStore store(History({Submitted(1, 1)}), /*refusals=*/3);
  std::vector<std::string> leaders, troubles;
  int said = 0, waits = 0;
  StandbyHooks hooks;
  hooks.leader = [&](const std::string& url) { leaders.push_back(url); };
  hooks.standing_by = [&](uint64_t revision, const std::string&) {
    ++said;
    EXPECT_EQ(revision, 2u) << "caught up before saying so";
  };
  hooks.trouble = [&](const Status& st) { troubles.push_back(st.message()); };
  hooks.wait_or_stop = [&] { return ++waits > 10; };
  auto warm = StandByUntilLeader(store, hooks);
  ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  ASSERT_TRUE(warm->has_value()) << "stopped before leading";
  EXPECT_EQ((*warm)->revision, 4u) << "the leader's last change, committed before the lock";
  EXPECT_EQ((*warm)->jobs.count(4), 1u);
  EXPECT_EQ(said, 1);
  EXPECT_EQ(waits, 3);
  EXPECT_EQ(leaders, std::vector<std::string>(3, "http://leader:7070"));
  EXPECT_EQ(troubles, std::vector<std::string>{"the leader's lock is held"});
}

TEST(Standby, AStopWhileStandingByEndsWithoutLeading) {
  SharedStore store(History({Submitted(1, 1)}), /*refusals=*/1000);
  StandbyHooks hooks;
  int waits = 0;
  hooks.wait_or_stop = [&] { return ++waits == 2; };
  auto warm = StandByUntilLeader(store, hooks);
  ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  EXPECT_FALSE(warm->has_value());
  EXPECT_EQ(store.tries_, 2);
}

}  // namespace
}  // namespace corral::head
