// Datasets through the head's core: users add them (a typed change each), jobs declare them
// and get them resolved to the content they name, a dataset in use cannot be removed, bad
// input changes nothing, and all of it survives a crash after every step (the fixture,
// core_scenario.h, recovers after each Step with the parameter set).
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

Dataset Imagenet(const std::string& version = "") {
  Dataset d;
  d.name = "imagenet";
  d.source = "/shared/imagenet";
  d.digest = "sha256:" + std::string(64, 'a');
  d.version = version.empty() ? d.digest.substr(7, kShortDigest) : version;
  d.files = 3;
  d.bytes = 3000;
  return d;
}

JobSpec Using(JobSpec spec, const std::string& name, const std::string& version = "") {
  DatasetRef r;
  r.name = name;
  r.version = version;
  spec.datasets.push_back(r);
  return spec;
}

TEST_P(Scenario, ADatasetIsAddedListedAndRemovedAcrossCrashes) {
  auto added = core().AddDataset(kAna, Imagenet(), now());
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_EQ(added->dataset.owner, "ana");
  Step();
  ASSERT_EQ(core().ListDatasets().size(), 1u);
  const DatasetView v = core().ListDatasets()[0];
  EXPECT_EQ(v.dataset.version, "aaaaaaaaaaaa");
  EXPECT_EQ(v.dataset.files, 3);
  EXPECT_EQ(v.dataset.bytes, 3000);
  EXPECT_EQ(v.dataset.added_at, now());
  EXPECT_EQ(v.State(), "idle");
  auto again = core().AddDataset(kAna, Imagenet(), now());
  EXPECT_EQ(again.status().code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find("field 'version'"), std::string::npos);
  auto theirs = core().AddDataset(kBob, Imagenet("v2"), now());  // a version of Ana's name
  EXPECT_EQ(theirs.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(theirs.status().message().find("field 'name'"), std::string::npos);
  EXPECT_EQ(core().RemoveDataset(kBob, "imagenet", now()).status().code(),
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(core().RemoveDataset(kAna, "nope", now()).status().code(), ErrorCode::kNotFound);
  Step();
  ASSERT_TRUE(core().RemoveDataset(kAna, "imagenet", now()).ok());
  Step();
  EXPECT_TRUE(core().ListDatasets().empty());
  EXPECT_EQ(core().GetDataset("imagenet").status().code(), ErrorCode::kNotFound);
  h_.ExpectReplayEqualsLive();
}

TEST_P(Scenario, ASubmissionNamesOnlyRegisteredDatasetsAndGetsTheirContent) {
  Register("n1", 2);
  auto unknown = core().Submit(kAna, Using(Spec(1), "imagenet"), "", now());
  ASSERT_EQ(unknown.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("field 'datasets[0]': no dataset 'imagenet'"),
            std::string::npos)
      << unknown.status().message();
  ASSERT_TRUE(core().AddDataset(kAna, Imagenet("v1"), now()).ok());
  Step();
  auto wrong = core().Submit(kAna, Using(Spec(1), "imagenet", "v9"), "", now());
  ASSERT_EQ(wrong.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("has no version 'v9' (it has v1)"), std::string::npos)
      << wrong.status().message();
  Job job = Submit(Using(Spec(1), "imagenet"), kBob);
  const Job got = Get(job.id);
  const DatasetRef& r = got.spec.datasets.at(0);
  EXPECT_EQ(r.version, "v1");
  EXPECT_EQ(r.digest, Imagenet().digest);
  EXPECT_EQ(r.source, "/shared/imagenet");
  EXPECT_EQ(r.bytes, 3000);
  Schedule();
  // The agent's order carries the resolved reference, which it fetches and verifies.
  std::vector<RunOrder> orders = Desired("n1");
  ASSERT_EQ(orders.size(), 1u);
  ASSERT_EQ(orders[0].datasets.size(), 1u);
  EXPECT_EQ(orders[0].datasets[0].digest, Imagenet().digest);
  h_.ExpectReplayEqualsLive();
}

TEST_P(Scenario, SeveralVersionsOfANameAtOnce) {
  Register("n1", 2);
  Dataset v1 = Imagenet("v1");
  ASSERT_TRUE(core().AddDataset(kAna, v1, now()).ok());
  Step();
  Dataset v2 = Imagenet("v2");
  v2.digest = "sha256:" + std::string(64, 'b');
  v2.source = "/shared/imagenet-2.tar.gz";
  v2.files = 4;
  now() += 1000;
  ASSERT_TRUE(core().AddDataset(kAna, v2, now()).ok());
  Step();
  // Both are listed and shown; the bare name is the latest.
  ASSERT_EQ(core().ListDatasets().size(), 2u);
  EXPECT_EQ(core().GetDataset("imagenet")->dataset.version, "v2");
  EXPECT_EQ(core().GetDataset("imagenet@v1")->dataset.digest, v1.digest);
  EXPECT_EQ(core().GetDataset("imagenet@v3").status().code(), ErrorCode::kNotFound);
  // Jobs get the version they name, or the latest.
  Job old = Submit(Using(Spec(1), "imagenet", "v1"));
  Job latest = Submit(Using(Spec(1), "imagenet"));
  EXPECT_EQ(Get(old.id).spec.datasets.at(0).digest, v1.digest);
  EXPECT_EQ(Get(latest.id).spec.datasets.at(0).digest, v2.digest);
  EXPECT_EQ(Get(latest.id).spec.datasets.at(0).source, "/shared/imagenet-2.tar.gz");
  Step();
  // Each version has its own users (pending jobs here): v1 cannot go while its job is not
  // over, nor the name.
  EXPECT_EQ(core().GetDataset("imagenet@v1")->users, std::vector<uint64_t>{old.id});
  EXPECT_EQ(core().GetDataset("imagenet@v2")->users, std::vector<uint64_t>{latest.id});
  EXPECT_EQ(core().RemoveDataset(kAna, "imagenet@v1", now()).status().code(),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(core().RemoveDataset(kAna, "imagenet", now()).status().code(),
            ErrorCode::kFailedPrecondition);
  ASSERT_TRUE(core().Cancel(kAna, old.id, now()).ok());
  Step();
  ASSERT_TRUE(core().RemoveDataset(kAna, "imagenet@v1", now()).ok());
  Step();
  ASSERT_EQ(core().ListDatasets().size(), 1u);
  EXPECT_EQ(core().GetDataset("imagenet")->dataset.version, "v2");
  EXPECT_EQ(core().GetDataset("imagenet@v1").status().code(), ErrorCode::kNotFound);
  auto gone = core().Submit(kAna, Using(Spec(1), "imagenet", "v1"), "", now());
  EXPECT_NE(gone.status().message().find("has no version 'v1' (it has v2)"), std::string::npos)
      << gone.status().message();
  ASSERT_TRUE(core().Cancel(kAna, latest.id, now()).ok());
  Step();
  ASSERT_TRUE(core().AddDataset(kAna, v1, now()).ok());  // back, beside v2
  Step();
  ASSERT_TRUE(core().RemoveDataset(kAna, "imagenet", now()).ok());  // every version
  Step();
  EXPECT_TRUE(core().ListDatasets().empty());
  h_.ExpectReplayEqualsLive();
}

TEST_P(Scenario, ADatasetInUseByAPendingOrRunningJobCannotBeRemoved) {
  Register("n1", 1);
  ASSERT_TRUE(core().AddDataset(kAna, Imagenet(), now()).ok());
  Step();
  Job running = Submit(Using(Spec(1), "imagenet"));
  Schedule();
  ASSERT_EQ(Get(running.id).state, JobState::kScheduled);
  Job pending = Submit(Using(Spec(1), "imagenet"));
  EXPECT_EQ(core().GetDataset("imagenet")->State(), "in use");
  auto refused = core().RemoveDataset(kAna, "imagenet", now());
  ASSERT_EQ(refused.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find(std::to_string(running.id) + ", " +
                                            std::to_string(pending.id)),
            std::string::npos)
      << refused.status().message();
  ASSERT_TRUE(core().Cancel(kAna, pending.id, now()).ok());
  Step();
  ASSERT_TRUE(*Report("n1", {Running(Get(running.id))}));
  EXPECT_EQ(core().RemoveDataset(kAdmin, "imagenet", now()).status().code(),
            ErrorCode::kFailedPrecondition);
  ASSERT_TRUE(*Report("n1", {Exited(Get(running.id), 0, 0)}));
  EXPECT_EQ(core().GetDataset("imagenet")->users, std::vector<uint64_t>{});
  ASSERT_TRUE(core().RemoveDataset(kAdmin, "imagenet", now()).ok());  // an admin may
  Step();
  EXPECT_TRUE(core().ListDatasets().empty());
  h_.ExpectReplayEqualsLive();
}

// A stage-out's result comes with the replica's exit (the agent holds the exit back until the
// copy is over): the job's record keeps it as an event, and one that failed fails the job with
// its reason even though the job's processes exited 0.
TEST_P(Scenario, AStageOutIsRecordedAndOneThatFailedFailsTheJob) {
  Register("n1", 2);
  JobSpec spec = Spec(1);
  spec.stage_out = {"/scratch/out", "/shared/results"};
  Job ok = Submit(spec);
  Job bad = Submit(spec);
  Schedule();
  std::vector<RunOrder> orders = Desired("n1");
  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(orders[0].stage_out, spec.stage_out) << "the order carries it to the node";
  ASSERT_TRUE(*Report("n1", {Running(Get(ok.id)), Running(Get(bad.id))}));
  RunReport copied = Exited(Get(ok.id), 0, 0);
  copied.stage_out = {true, 4096, 2, 15, "/scratch/out", "/shared/results", ""};
  RunReport refused = Exited(Get(bad.id), 0, 0);
  refused.stage_out = {true,
                       0,
                       0,
                       3,
                       "/scratch/out",
                       "/shared/results",
                       "cannot make /shared/results: Permission denied"};
  ASSERT_TRUE(*Report("n1", {copied, refused}));
  const Job a = Get(ok.id), b = Get(bad.id);
  EXPECT_EQ(a.state, JobState::kSucceeded);
  bool recorded = false;
  for (const JobEvent& e : a.events) {
    recorded |= e.what == "staged out" &&
                e.reason ==
                    "staged out /scratch/out to /shared/results on n1: 4096 bytes, 2 "
                    "files in 15 ms";
  }
  EXPECT_TRUE(recorded) << ToJson(a).dump();
  EXPECT_EQ(b.state, JobState::kFailed);
  EXPECT_NE(b.runs.back().reason.find("stage-out of /scratch/out to /shared/results on n1 "
                                      "failed: cannot make /shared/results: Permission denied"),
            std::string::npos)
      << b.runs.back().reason;
  EXPECT_NE(b.runs.back().reason.find("stays in /scratch/out"), std::string::npos);
}

// While a replica's stage-out copies, its node reports it running and staging, with a note: the
// job stays running, says how far the copy is as its reason (never an event), and the note goes
// once the copy is over.
TEST_P(Scenario, AStageOutUnderWaySaysHowFarItIs) {
  Register("n1", 1);
  JobSpec spec = Spec(1);
  spec.stage_out = {"/scratch/out", "/shared/results"};
  Job job = Submit(spec);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  RunReport copying = Running(Get(job.id));
  copying.started_at = now() - kSecond;
  copying.staging = true;
  copying.note = "staging out to /shared/results on n1: 41% (1.2 GiB of 2.9 GiB)";
  SyncRequest req;
  req.node = "n1";
  req.agent_epoch = epochs_["n1"];
  req.runs = {copying};
  ASSERT_TRUE(core().Report(Caller::Node("n1"), req, now()).ok());
  Job seen = Get(job.id);
  EXPECT_EQ(seen.state, JobState::kRunning);
  EXPECT_EQ(seen.pending_reason, copying.note);
  for (const JobEvent& e : seen.events) EXPECT_EQ(e.reason.find("staging out"), std::string::npos);
  Step();
  RunReport done = Exited(Get(job.id), 0, 0);
  done.stage_out = {true, 4096, 2, 15, "/scratch/out", "/shared/results", ""};
  ASSERT_TRUE(*Report("n1", {done}));
  EXPECT_EQ(Get(job.id).state, JobState::kSucceeded);
  EXPECT_EQ(Get(job.id).pending_reason, "");
}

// A run's stage-in measures its source: placed on a node lacking 6 GB of imagenet from /shared,
// it starts 60 s later, so /shared fetches at 100 MB/s (a change, durable). The next job that
// reads imagenet then waits 30 s for n1, which holds it, rather than fetch it on the free n2
// for 60 s; once n1's run ends it starts there. Placement and start are one step (the bytes a
// node lacked at placement are not durable: a run placed before a restart is not measured).
TEST_P(Scenario, AStageInMeasuresItsSourceAndPlacementWeighsTheFetchAgainstTheWait) {
  Register("n1", 1);
  Register("n2", 1);
  Dataset big = Imagenet();
  big.bytes = 6'000'000'000;
  ASSERT_TRUE(core().AddDataset(kAna, big, now()).ok());
  Step();
  // Each sync says what the node's cache holds (a recovered core learns it again).
  auto sync = [&](const std::string& node, std::vector<RunReport> runs, bool holds) {
    SyncRequest req;
    req.node = node;
    req.agent_epoch = epochs_[node];
    req.runs = std::move(runs);
    if (holds) req.datasets = {big.digest};
    ASSERT_TRUE(core().Report(Caller::Node(node), req, now()).ok());
  };
  JobSpec spec = Using(Spec(1), "imagenet");
  spec.time_limit_ms = 90 * kSecond;
  Job first = Submit(spec);
  core().Schedule(now());
  const std::string node = Get(first.id).CurrentRun()->placement.at(0).node;
  const std::string other = node == "n1" ? "n2" : "n1";
  now() += kMinute;
  sync(node, {Running(Get(first.id))}, true);
  Step();
  const auto& sources = core().state().datasets.sources();
  ASSERT_EQ(sources.count("/shared"), 1u);
  EXPECT_EQ(sources.at("/shared").BytesPerSecond(), 100'000'000);
  // As shown (corral datasets sources, GET /v1/datasets, /metrics): when, and from what.
  const std::vector<DatasetSourceRate> shown = core().state().datasets.SourceRates();
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0], (DatasetSourceRate{"/shared", 100'000'000, 6'000'000'000, kMinute, now()}));

  now() += kMinute;  // the first run ends in 30 s; a fetch on the other node takes 60 s
  Job second = Submit(spec);
  sync(node, {Running(Get(first.id))}, true);
  sync(other, {}, false);
  core().Schedule(now());
  Job waiting = Get(second.id);
  EXPECT_EQ(waiting.state, JobState::kPending);
  EXPECT_NE(waiting.pending_reason.find("on " + node + ", which hold its data"), std::string::npos)
      << waiting.pending_reason;
  Step();

  now() += 30 * kSecond;
  sync(node, {Exited(Get(first.id), 0, 0)}, true);
  sync(other, {}, false);
  core().Schedule(now());
  Step();
  ASSERT_EQ(Get(second.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(second.id).CurrentRun()->placement.at(0).node, node);
  h_.ExpectReplayEqualsLive();
}

// A job waiting for a reservation has its data fetched ahead on its reserved node: every answer
// to that node asks for what it lacks (a held job, which has no reservation, is asked for
// nowhere), the job's reason says how far the node's fetch is, and once the node holds the
// data it is asked for no more. The job then starts there. The plan is remade by every pass
// (not durable): each check follows a pass.
TEST_P(Scenario, AReservedJobsDatasetsAreFetchedAheadOnItsReservedNode) {
  Register("n1", 1);
  ASSERT_TRUE(core().AddDataset(kAna, Imagenet(), now()).ok());
  Step();
  JobSpec busy = Spec(1);
  busy.time_limit_ms = 10 * kMinute;
  Job first = Submit(busy);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(first.id))}));
  const uint64_t before = core().DesiredFor("n1").desired_version;
  JobSpec held_spec = Using(Spec(1), "imagenet");
  held_spec.hold = true;
  Job held = Submit(held_spec);
  Job reserved = Submit(Using(Spec(1), "imagenet"), kBob);
  core().Schedule(now());
  ASSERT_EQ(Get(reserved.id).state, JobState::kPending);
  const SyncResponse answer = core().DesiredFor("n1");
  ASSERT_EQ(answer.prefetch.size(), 1u) << "the held job has no reservation";
  EXPECT_EQ(answer.prefetch[0].job_id, reserved.id);
  EXPECT_EQ(answer.prefetch[0].user, "bob") << "the source is read as the job's owner";
  ASSERT_EQ(answer.prefetch[0].datasets.size(), 1u);
  EXPECT_EQ(answer.prefetch[0].datasets[0].digest, Imagenet().digest);
  EXPECT_EQ(answer.prefetch[0].datasets[0].source, "/shared/imagenet");
  // The order woke the node's held sync: a delta from before names the job and carries it.
  const SyncResponse delta = core().AnswerFor("n1", before);
  EXPECT_GT(delta.desired_version, before);
  EXPECT_EQ(delta.prefetch, answer.prefetch);
  EXPECT_NE(Get(reserved.id).pending_reason.find("its data is to be fetched ahead on n1"),
            std::string::npos)
      << Get(reserved.id).pending_reason;
  EXPECT_EQ(Get(held.id).pending_reason.find("fetched ahead"), std::string::npos);

  // The agent reports how far it is: the job's reason says so.
  SyncRequest req;
  req.node = "n1";
  req.agent_epoch = epochs_["n1"];
  req.runs = {Running(Get(first.id))};
  req.prefetching = {{reserved.id, "staging imagenet on n1: 41%"}};
  ASSERT_TRUE(*core().Report(Caller::Node("n1"), req, now()));
  EXPECT_NE(Get(reserved.id).pending_reason.find("; staging imagenet on n1: 41%"),
            std::string::npos)
      << Get(reserved.id).pending_reason;

  // Fetched: the node holds it and is asked for it no more.
  req.prefetching.clear();
  req.datasets = {Imagenet().digest};
  ASSERT_TRUE(*core().Report(Caller::Node("n1"), req, now()));
  core().Schedule(now());
  EXPECT_TRUE(core().DesiredFor("n1").prefetch.empty());
  EXPECT_NE(Get(reserved.id).pending_reason.find("its data is cached on n1"), std::string::npos)
      << Get(reserved.id).pending_reason;
  h_.Commit();

  // The run ahead ends: the reserved job is placed on the node that fetched its data.
  req.runs = {Exited(Get(first.id), 0, 0)};
  ASSERT_TRUE(*core().Report(Caller::Node("n1"), req, now()));
  core().Schedule(now());
  ASSERT_EQ(Get(reserved.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(reserved.id).CurrentRun()->placement.at(0).node, "n1");
  EXPECT_TRUE(core().DesiredFor("n1").prefetch.empty());
  h_.Commit();
  h_.ExpectReplayEqualsLive();
}

// A source with a cluster budget is read only by the runs its line admits: no fetch ahead of
// it is planned beside them.
TEST_P(Scenario, NothingIsFetchedAheadFromABudgetedSource) {
  Register("n1", 1);
  ASSERT_TRUE(core().AddDataset(kAna, Imagenet(), now()).ok());
  ASSERT_TRUE(core().SetSourceLimit(kAdmin, "/shared", 1000, 2, now()).ok());
  Step();
  JobSpec busy = Spec(1);
  busy.time_limit_ms = 10 * kMinute;
  Job first = Submit(busy);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(first.id))}));
  Job reserved = Submit(Using(Spec(1), "imagenet"), kBob);
  core().Schedule(now());
  ASSERT_EQ(Get(reserved.id).state, JobState::kPending);
  EXPECT_TRUE(core().DesiredFor("n1").prefetch.empty());
  EXPECT_EQ(Get(reserved.id).pending_reason.find("fetched ahead"), std::string::npos)
      << Get(reserved.id).pending_reason;

  // Without the budget it is.
  ASSERT_TRUE(core().SetSourceLimit(kAdmin, "/shared", 0, 0, now()).ok());
  core().Schedule(now());
  ASSERT_EQ(core().DesiredFor("n1").prefetch.size(), 1u);
  h_.Commit();
  h_.ExpectReplayEqualsLive();
}

TEST(DatasetParse, NamesTheBadField) {
  auto parse = [](const std::string& text) { return ParseDataset(Json::parse(text)); };
  const std::string digest = "\"sha256:" + std::string(64, 'b') + "\"";
  auto ok = parse(R"({"name":"cifar","source":"/data/cifar","files":2,"bytes":10,"digest":)" +
                  digest + "}");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->version, std::string(kShortDigest, 'b'));
  auto field_of = [&](const std::string& text) {
    auto r = parse(text);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_NE(field_of(R"({"name":"a b","source":"/d","files":1,"bytes":1,"digest":)" + digest + "}")
                .find("field 'name'"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"a","files":1,"bytes":1,"digest":)" + digest + "}")
                .find("field 'source': missing"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"a","source":"rel","files":1,"bytes":1,"digest":)" + digest + "}")
                .find("field 'source'"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"a","source":"/d","files":1,"bytes":1,"digest":"md5:x"})")
                .find("field 'digest'"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"a","source":"/d","files":-1,"bytes":1,"digest":)" + digest + "}")
                .find("field 'files'"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"a","source":"/d","files":1,"bytes":1,"digest":)" + digest +
                     R"(,"colour":1})")
                .find("field 'colour'"),
            std::string::npos);
}

TEST(DatasetParse, ReferencesFromTheCommandLineAndSpecs) {
  auto r = ParseDatasetRef("dataset", "imagenet@v2:/data/in");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->name, "imagenet");
  EXPECT_EQ(r->version, "v2");
  EXPECT_EQ(r->mount, "/data/in");
  EXPECT_TRUE(ParseDatasetRef("dataset", "cifar")->version.empty());
  EXPECT_FALSE(ParseDatasetRef("dataset", "cifar:relative").ok());
  EXPECT_FALSE(ParseDatasetRef("dataset", "cifar:/a/../etc").ok());
  EXPECT_FALSE(ParseDatasetRef("dataset", "bad name").ok());
  auto twice = ParseDatasetRefs("datasets", Json::parse(R"(["a", {"name": "a"}])"));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("field 'datasets[1]'"), std::string::npos);
  EXPECT_EQ(DatasetEnvName("image-net.v1"), "CORRAL_DATASET_IMAGE_NET_V1");
}

// A removal's version travels in a field of its own; without one it removes every version
// (as records written before versions read).
TEST(DatasetRemovedRecord, NamesItsVersionInAFieldOfItsOwn) {
  for (const DatasetRemoved& removed :
       {DatasetRemoved{"imagenet", "v1"}, DatasetRemoved{"imagenet", ""}}) {
    Change c;
    c.revision = 7;
    c.by = Caller::System();
    c.what = removed;
    Json j = ToJson(c);
    EXPECT_EQ(j.contains("version"), !removed.version.empty()) << j.dump();
    auto back = ChangeFromJson(j);
    ASSERT_TRUE(back.ok()) << back.status().message();
    const auto* got = std::get_if<DatasetRemoved>(&back->what);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->name, "imagenet");
    EXPECT_EQ(got->version, removed.version);
  }
}

}  // namespace
}  // namespace corral::head::core_test
