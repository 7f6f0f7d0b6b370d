// The change-log reader (change_tail.h) over a store holding a chosen log: contiguous tails
// are read, a gap or a record holding another revision's change is an error.
#include "head/change_tail.h"

#include <gtest/gtest.h>

#include "testing/fakes.h"

namespace corral::head {
namespace {

store::ChangeRecord RecordOf(uint64_t revision, uint64_t doc_revision) {
  Change c;
  c.revision = doc_revision;
  c.at = 1000;
  c.by = Caller::System();
  c.what = HeadStarted{revision, ""};
  return {revision, ToJson(c).dump()};
}

class ChangeTail : public ::testing::Test {
 protected:
  void Log(const std::vector<std::pair<uint64_t, uint64_t>>& revisions) {
    std::vector<store::StateEdit> edits;
    for (auto [record, doc] : revisions)
      edits.push_back(store::AppendChange{RecordOf(record, doc)});
    ASSERT_TRUE(store_.Commit(edits).ok());
  }
  corral::testing::MemoryStore store_{std::make_shared<corral::testing::MemoryDisk>()};
};

TEST_F(ChangeTail, ReadsTheChangesAfterARevisionInOrder) {
  Log({{1, 1}, {2, 2}, {3, 3}});
  auto tail = ReadChangeTail(store_, 1, 10, TailStart::kNext);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  ASSERT_EQ(tail->size(), 2u);
  EXPECT_EQ((*tail)[0].revision, 2u);
  EXPECT_EQ((*tail)[1].revision, 3u);
  EXPECT_EQ(std::get<HeadStarted>((*tail)[1].what).epoch, 3u);
}

TEST_F(ChangeTail, AGapInsideTheTailIsAnError) {
  Log({{1, 1}, {2, 2}, {4, 4}});
  auto tail = ReadChangeTail(store_, 0, 10, TailStart::kAnyLater);
  ASSERT_FALSE(tail.ok());
  EXPECT_EQ(tail.status().message(), "change log has a gap: revision 4 where 3 was next");
}

TEST_F(ChangeTail, ATruncatedStartIsAnErrorOnlyForAReaderThatContinuesAState) {
  Log({{5, 5}, {6, 6}});
  auto next = ReadChangeTail(store_, 2, 10, TailStart::kNext);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().message(), "change log has a gap: revision 5 where 3 was next");
  auto recent = ReadChangeTail(store_, 2, 10, TailStart::kAnyLater);
  ASSERT_TRUE(recent.ok()) << recent.status().ToString();
  EXPECT_EQ(recent->size(), 2u);
}

TEST_F(ChangeTail, ARecordHoldingAnotherRevisionsChangeIsAnError) {
  Log({{1, 1}, {2, 7}});
  auto tail = ReadChangeTail(store_, 0, 10, TailStart::kNext);
  ASSERT_FALSE(tail.ok());
  EXPECT_EQ(tail.status().message(), "change log revision 2 holds the change of revision 7");
  EXPECT_FALSE(DecodeChangeRecord({3, "not json"}).ok());
}

}  // namespace
}  // namespace corral::head
