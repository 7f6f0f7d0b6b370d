// Decoding stored jobs on several threads keeps their order and reports the first bad one.
#include "store/job_docs.h"

#include <gtest/gtest.h>

#include <string>

#include "core/codec.h"

namespace corral::store {
namespace {

std::vector<std::string> Docs(int n) {
  std::vector<std::string> docs;
  for (int i = 1; i <= n; ++i) {
    Job j;
    j.id = static_cast<JobId>(i);
    j.spec.name = "job-" + std::to_string(i);
    j.spec.command = {"echo", std::to_string(i)};
    docs.push_back(ToJson(j).dump());
  }
  return docs;
}

TEST(DecodeJobDocs, ManyDocumentsComeBackInTheirOrderAfterWhatIsThere) {
  std::vector<std::string> docs = Docs(5000);  // enough for every core to take a slice
  std::vector<std::string_view> views(docs.begin(), docs.end());
  std::vector<Job> out(1);
  out[0].id = 99999;
  ASSERT_TRUE(DecodeJobDocs(views, &out).ok());
  ASSERT_EQ(out.size(), 5001u);
  EXPECT_EQ(out[0].id, 99999u);
  for (size_t i = 1; i < out.size(); ++i) {
    ASSERT_EQ(out[i].id, i) << "out of order at " << i;
    ASSERT_EQ(out[i].spec.name, "job-" + std::to_string(i));
  }
  std::vector<std::string_view> none;
  EXPECT_TRUE(DecodeJobDocs(none, &out).ok());
  EXPECT_EQ(out.size(), 5001u);
}

TEST(DecodeJobDocs, TheFirstCorruptDocumentIsTheErrorAndNothingIsAppended) {
  std::vector<std::string> docs = Docs(5000);
  docs[4000] = "{\"id\": \"late\"";        // not JSON
  docs[1200] = "not json at 1200";         // the first, in another slice than the late one
  docs[4500] = "{\"id\": \"not a job\"}";  // JSON, not a job
  std::vector<std::string_view> views(docs.begin(), docs.end());
  std::vector<Job> out;
  Status st = DecodeJobDocs(views, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not json at 1200"), std::string::npos) << st.message();
  EXPECT_TRUE(out.empty());
}

TEST(JobDocsPipeline, BatchesComeBackInTheirOrderAndTheFirstBadOneStopsIt) {
  std::vector<std::string> docs = Docs(3000);
  std::vector<Job> out;
  JobDocsPipeline pipeline(&out);
  for (size_t from = 0; from < docs.size(); from += 1000) {
    std::vector<std::string> batch(docs.begin() + from, docs.begin() + from + 1000);
    ASSERT_TRUE(pipeline.Add(&batch).ok());
    EXPECT_TRUE(batch.empty()) << "the pipeline took the batch";
  }
  ASSERT_TRUE(pipeline.Finish().ok());
  ASSERT_EQ(out.size(), 3000u);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i].id, i + 1) << "out of order at " << i;

  std::vector<Job> bad_out;
  JobDocsPipeline bad(&bad_out);
  std::vector<std::string> first(docs.begin(), docs.begin() + 1000);
  std::vector<std::string> second = {"not json in the second batch"};
  std::vector<std::string> third(docs.begin() + 1000, docs.begin() + 2000);
  ASSERT_TRUE(bad.Add(&first).ok());
  ASSERT_TRUE(bad.Add(&second).ok());  // decoded while the third is read
  Status st = bad.Add(&third);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not json in the second batch"), std::string::npos);
  EXPECT_EQ(third.size(), 1000u) << "refused, not taken";
  EXPECT_FALSE(bad.Finish().ok()) << "the error stays";
  EXPECT_EQ(bad_out.size(), 1000u) << "only the batch before the bad one";
}

}  // namespace
}  // namespace corral::store
