// The sources' cluster-wide budgets through the head's core: an admin sets one (a typed change,
// validated), placed runs whose nodes lack data of a budgeted source wait at the head in the
// scheduler's order and say so, at most `fetches` nodes fetch at once each at rate / fetches,
// a start makes room for the next, and all of it survives a crash after every step (the
// fixture, core_scenario.h, recovers after each Step with the parameter set).
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

Dataset SharedImagenet() {
  Dataset d;
  d.name = "imagenet";
  d.source = "/shared/imagenet";
  d.digest = "sha256:" + std::string(64, 'b');
  d.version = "v1";
  d.files = 3;
  d.bytes = 3000;
  return d;
}

JobSpec Reading(JobSpec spec, const std::string& name) {
  DatasetRef r;
  r.name = name;
  spec.datasets.push_back(r);
  return spec;
}

TEST_P(Scenario, ASourceBudgetIsSetByAdminsValidatedAndRemoved) {
  EXPECT_EQ(core().SetSourceLimit(kAna, "/shared", 1000, 2, now()).status().code(),
            ErrorCode::kPermissionDenied);
  for (const char* bad : {"shared", "/shared/", "/shared/../x", "ftp://host", "https://", ""}) {
    auto r = core().SetSourceLimit(kAdmin, bad, 1000, 2, now());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("field 'source'"), std::string::npos)
        << r.status().message();
  }
  auto rate = core().SetSourceLimit(kAdmin, "/shared", -1, 2, now());
  EXPECT_NE(rate.status().message().find("field 'rate'"), std::string::npos);
  auto fetches = core().SetSourceLimit(kAdmin, "/shared", 1000, -1, now());
  EXPECT_NE(fetches.status().message().find("field 'fetches'"), std::string::npos);
  EXPECT_EQ(core().SetSourceLimit(kAdmin, "/shared", 0, 0, now()).status().code(),
            ErrorCode::kNotFound);
  EXPECT_TRUE(core().ListSourceBudgets().empty()) << "bad input changes nothing";
  Step();

  auto set = core().SetSourceLimit(kAdmin, "/shared", 200 << 20, 4, now());
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  auto url = core().SetSourceLimit(kAdmin, "https://Store.example/", 100 << 20, 0, now());
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->source, "https://store.example:443");
  EXPECT_EQ(url->fetches, DatasetCatalog::kDefaultFetches) << "a rate alone has default slots";
  Step();
  std::vector<SourceBudget> all = core().ListSourceBudgets();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].source, "/shared");
  EXPECT_EQ(all[0].rate, 200 << 20);
  EXPECT_EQ(all[0].fetches, 4);
  ASSERT_TRUE(core().SetSourceLimit(kAdmin, "/shared", 0, 0, now()).ok());
  Step();
  ASSERT_EQ(core().ListSourceBudgets().size(), 1u);
  EXPECT_EQ(core().ListSourceBudgets()[0].source, "https://store.example:443");
  h_.ExpectReplayEqualsLive();
}

// Three runs placed at once on three nodes lacking imagenet, from /shared budgeted at 300 B/s
// for 2 fetches: the first two get their orders with a cap of 150 B/s each; the third's order
// stays at the head and its job says it waits, next in line. When one of the two starts, the
// third gets its order.
TEST_P(Scenario, StageInsOfABudgetedSourceWaitTheirTurnAtTheHead) {
  for (const char* n : {"n1", "n2", "n3"}) Register(n, 1);
  ASSERT_TRUE(core().AddDataset(kAna, SharedImagenet(), now()).ok());
  ASSERT_TRUE(core().SetSourceLimit(kAdmin, "/shared", 300, 2, now()).ok());
  Step();
  std::vector<Job> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(Submit(Reading(Spec(1), "imagenet")));
  core().Schedule(now());
  auto node_of = [&](const Job& j) { return Get(j.id).CurrentRun()->placement.at(0).node; };
  for (const Job& j : jobs) ASSERT_EQ(Get(j.id).state, JobState::kScheduled);
  const Job third = Get(jobs[2].id);
  EXPECT_EQ(third.pending_reason, "staging imagenet on " + node_of(third) +
                                      ": queued for /shared (cluster budget), 1 (next)");
  Step();
  for (int i = 0; i < 2; ++i) {
    std::vector<RunOrder> orders = Desired(node_of(jobs[i]));
    ASSERT_EQ(orders.size(), 1u) << i;
    EXPECT_EQ(orders[0].source_rates, (std::map<std::string, int64_t>{{"/shared", 150}}));
  }
  EXPECT_TRUE(Desired(node_of(jobs[2])).empty()) << "its order waits at the head";
  std::vector<SourceBudget> budgets = core().ListSourceBudgets();
  ASSERT_EQ(budgets.size(), 1u);
  EXPECT_EQ(budgets[0].fetching, 2);
  EXPECT_EQ(budgets[0].waiting, 1);

  ASSERT_TRUE(*Report(node_of(jobs[0]), {Running(Get(jobs[0].id))}));
  EXPECT_EQ(Get(jobs[0].id).state, JobState::kRunning);
  std::vector<RunOrder> now_third = Desired(node_of(jobs[2]));
  ASSERT_EQ(now_third.size(), 1u) << "a start made room";
  EXPECT_EQ(now_third[0].source_rates.at("/shared"), 150);
  EXPECT_EQ(core().ListSourceBudgets()[0].waiting, 0);
  h_.ExpectReplayEqualsLive();
}

// A waiting run goes once its budget is removed (without a cap), a cancelled one leaves the
// line, and a run on a node that holds the data never joins it.
TEST_P(Scenario, ARemovedBudgetOrACancelReleasesTheLine) {
  for (const char* n : {"n1", "n2", "n3"}) Register(n, 1);
  ASSERT_TRUE(core().AddDataset(kAna, SharedImagenet(), now()).ok());
  ASSERT_TRUE(core().SetSourceLimit(kAdmin, "/shared", 0, 1, now()).ok());
  Step();
  std::vector<Job> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(Submit(Reading(Spec(1), "imagenet")));
  Schedule();
  auto node_of = [&](const Job& j) { return Get(j.id).CurrentRun()->placement.at(0).node; };
  EXPECT_EQ(core().ListSourceBudgets()[0].waiting, 2);
  EXPECT_TRUE(Desired(node_of(jobs[1])).empty());
  ASSERT_TRUE(core().Cancel(kAna, jobs[1].id, now()).ok());
  Step();
  EXPECT_EQ(core().ListSourceBudgets()[0].waiting, 1) << "the cancelled run left the line";
  ASSERT_EQ(Desired(node_of(jobs[1])).size(), 1u) << "its stop reaches the node";
  EXPECT_TRUE(Desired(node_of(jobs[1]))[0].stop);
  EXPECT_TRUE(Desired(node_of(jobs[2])).empty());
  ASSERT_TRUE(core().SetSourceLimit(kAdmin, "/shared", 0, 0, now()).ok());
  Step();
  std::vector<RunOrder> freed = Desired(node_of(jobs[2]));
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_TRUE(freed[0].source_rates.empty()) << "no budget, no cap";
  EXPECT_TRUE(core().state().datasets.Admissible().empty());

  // n4 already holds imagenet: a run placed there fetches nothing and does not wait. (What a
  // node holds is not durable: its agent says it again at its next sync, here before the pass.)
  Register("n4", 1);
  ASSERT_TRUE(core().SetSourceLimit(kAdmin, "/shared", 0, 1, now()).ok());
  Job held = Submit(Reading(Spec(1), "imagenet"));
  SyncRequest req;
  req.node = "n4";
  req.agent_epoch = epochs_["n4"];
  req.datasets = {SharedImagenet().digest};
  ASSERT_TRUE(core().Report(Caller::Node("n4"), req, now()).ok());
  core().Schedule(now());
  ASSERT_EQ(node_of(held), "n4") << "placed where its data is";
  EXPECT_EQ(Desired("n4").size(), 1u);
  for (const DatasetCatalog::StageIn& in : core().state().datasets.stage_ins()) {
    EXPECT_NE(in.job, held.id) << "it fetches nothing: it is in no line";
  }
  Step();
  h_.ExpectReplayEqualsLive();
}

TEST(SourceKey, ADirectoryOrAUrlsSchemeHostAndPort) {
  EXPECT_EQ(*ParseSourceKey("/shared"), "/shared");
  EXPECT_EQ(*ParseSourceKey("/"), "/");
  EXPECT_EQ(*ParseSourceKey("http://store.example"), "http://store.example:80");
  EXPECT_EQ(*ParseSourceKey("https://store.example:9443/"), "https://store.example:9443");
  EXPECT_FALSE(ParseSourceKey("https://store.example/data.tar").ok());
  EXPECT_FALSE(ParseSourceKey("/a//b").ok());
  EXPECT_EQ(*ParseByteRate("x", "200M"), 200 << 20);
  EXPECT_EQ(*ParseByteRate("x", "0"), 0);
  EXPECT_FALSE(ParseByteRate("x", "2T").ok());
}

}  // namespace
}  // namespace corral::head::core_test
