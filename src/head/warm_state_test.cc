// A standby head's warm copy across a database failover that lost a change it had applied:
// the new leader's history reuses that revision, and the copy must follow the store's history,
// not fork from it (two in-memory stores stand for the server before and after the failover).
#include "head/warm_state.h"

#include <gtest/gtest.h>

#include "head/change.h"
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

}  // namespace
}  // namespace corral::head
