#include "core/codec.h"

#include <gtest/gtest.h>

#include "core/agent_protocol.h"
#include "core/event_page.h"

namespace corral {
namespace {

TEST(Codec, JobRoundTrips) {
  Job j;
  j.id = 42;
  j.owner = "ana";
  j.spec.command = {"sleep", "1"};
  j.spec.per_replica.gpu_milli = 2000;
  j.spec.replicas = 2;
  j.state = JobState::kRunning;
  corral::Run r;
  r.attempt = 1;
  r.placement = {{"n1", {0, 1}}, {"n2", {2, 3}}};
  r.state = RunState::kRunning;
  r.exit_codes = {0, -9};
  j.runs.push_back(r);
  j.events.push_back({5, "submitted", ""});
  auto back = JobFromJson(ToJson(j));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(j));
  EXPECT_EQ(back->runs[0].placement[1].gpus, (std::vector<int32_t>{2, 3}));
}

// Every field that JobFromJson may miss, off its default, in every kind of object a job holds.
Job JobOffEveryDefault() {
  Job j;
  j.id = 7;
  j.owner = "ana";
  j.state = JobState::kFailed;
  j.submitted_at = 1000;
  j.ended_at = 9000;
  JobSpec& s = j.spec;
  s.name = "sweep";
  s.command = {"python3", "train.py"};
  s.env = {{"LR", "0.1"}};
  s.workdir = "/w";
  s.queue = "org/team";
  s.replicas = 2;
  s.max_replicas_per_node = 1;
  s.reservation = "maint";
  s.tasks_per_replica = 2;
  s.per_replica = {500, 2000, 4096};
  s.per_replica.gpu_memory_mb = 8000;
  s.per_replica.gpu_isolation = GpuIsolation::kMps;
  s.gpu_model = "H100";
  s.node_labels = {{"rack", "a"}};
  s.time_limit_ms = 60000;
  s.priority = 3;
  s.preemptible = true;
  s.max_restarts = 2;
  s.checkpoint_signal = 10;
  s.grace_ms = 5000;
  s.array = "0-3%2";
  s.batch = true;
  s.hold = true;
  s.interactive = true;
  s.notebook = true;
  s.container.image = "docker.io/library/ubuntu:22.04";
  s.dependencies = *ParseDependencies("afterok:3");
  corral::Run r;
  r.attempt = 2;
  r.placement = {{"n1", {0}, {500}, 8000, 2}, {"n2", {1}, {500}, 8000, 2}};
  r.state = RunState::kFailed;
  r.scheduled_at = 2000;
  r.started_at = 3000;
  r.ended_at = 9000;
  r.exit_codes = {0, 1};
  r.reason = "replica 1 exited 1";
  r.stop_requested = true;
  r.stop_requested_at = 8000;
  r.cause = StopCause::kOutOfMemory;
  r.last_checkpoint_at = 7000;
  r.master_port = 29500;
  r.failed_replica = 1;
  r.failed_task = 0;
  r.peak_memory_bytes = 1 << 20;
  r.cpu_ms = 42;
  r.signals = 1;
  r.last_signal = 10;
  r.step_signals = 1;
  r.last_step_signal = 2;
  r.departed = {1};
  r.resizes = 1;
  r.joined_at = {0, 4000};
  r.left_at = {0, 8500};
  r.peers_lost = 1;
  r.steps = {{1, {"hostname"}, {{"A", "b"}}, "/s", {0, 1}, {1, 1}, true, {0, 0}, 4000, 5000}};
  j.runs = {r};
  j.events = {{1000, "submitted", "by ana"}, {9000, "failed", "replica 1 exited 1"}};
  j.pending_code = PendingCode::kResources;
  j.pending_reason = "no room";
  j.exit_code = 1;
  j.request_id = "req-1";
  j.array_id = 5;
  j.array_index = 2;
  j.array_max_running = 2;
  j.held = true;
  j.idle_since = 8500;
  j.estimated_start = 9500;
  j.estimated_nodes = {"n1"};
  j.estimate_confidence = EstimateConfidence::kLow;
  return j;
}

// A job at every default but the fields a decoder requires, in each kind of object it holds.
Job JobAtEveryDefault() {
  Job j;
  j.id = 8;
  corral::Run r;
  r.placement = {ReplicaPlacement{}};
  r.steps = {Step{}};
  j.runs = {r};
  j.events = {JobEvent{}};
  return j;
}

// The stores keep a job without the fields at their defaults; it must read back as the same
// job, and a document in the full form (every store written before, and the API's) as well.
TEST(Codec, AStoredJobReadsBackTheSameAsTheFullFormWhateverItsFields) {
  for (const Job& j : {JobOffEveryDefault(), JobAtEveryDefault()}) {
    const Json stored = ToStoredJson(j);
    auto from_stored = JobFromJson(stored);
    ASSERT_TRUE(from_stored.ok()) << from_stored.status().ToString() << "\n" << stored.dump();
    auto from_full = JobFromJson(ToJson(j));
    ASSERT_TRUE(from_full.ok()) << from_full.status().ToString();
    EXPECT_EQ(ToJson(*from_stored), ToJson(j)) << stored.dump();
    EXPECT_EQ(ToJson(*from_full), ToJson(j));
  }
  EXPECT_EQ(ToStoredJson(JobOffEveryDefault()), ToJson(JobOffEveryDefault()))
      << "a field off its default is never left out";
}

TEST(Codec, AStoredJobLeavesOutItsDefaultsButKeepsWhatTheStoresQuery) {
  const Json stored = ToStoredJson(JobAtEveryDefault());
  EXPECT_LT(stored.dump().size(), ToJson(JobAtEveryDefault()).dump().size() / 2) << stored.dump();
  EXPECT_FALSE(stored.contains("array_index"));
  Job no_events = JobAtEveryDefault();
  no_events.events.clear();
  EXPECT_FALSE(ToStoredJson(no_events).contains("events")) << "an empty list is a default too";
  EXPECT_FALSE(stored["spec"].contains("cpu_milli"));
  EXPECT_FALSE(stored["runs"][0].contains("failed_replica"));
  EXPECT_FALSE(stored["runs"][0]["placement"][0].contains("tasks"));
  EXPECT_FALSE(stored["runs"][0]["steps"][0].contains("workdir"));
  EXPECT_FALSE(stored["events"][0].contains("reason"));
  // Read by the stores' SQL when a job is retired (its end time, owner and queue columns).
  EXPECT_EQ(stored["spec"]["queue"], "default");
  EXPECT_EQ(stored["owner"], "");
  EXPECT_EQ(stored["ended_at"], 0);
}

// A run stored before runs kept their cause reads it from its state and its reason's words.
TEST(Codec, AnOldRunsCauseComesFromItsStateAndReason) {
  auto cause = [](RunState state, bool stop_requested, const std::string& reason) {
    corral::Run r;
    r.attempt = 1;
    r.state = state;
    r.stop_requested = stop_requested;
    r.reason = reason;
    Json j = ToJson(r);
    j.erase("cause");
    auto back = RunFromJson(j);
    EXPECT_TRUE(back.ok()) << back.status().ToString();
    return back.ok() ? back->cause : StopCause::kNone;
  };
  EXPECT_EQ(cause(RunState::kRunning, false, ""), StopCause::kNone);
  EXPECT_EQ(cause(RunState::kRunning, true, "cancelled by ana"), StopCause::kCancelled);
  EXPECT_EQ(cause(RunState::kRunning, true, "preempted: queue a reclaims its quota"),
            StopCause::kPreempted);
  EXPECT_EQ(cause(RunState::kScheduled, true, "requeued by ana"), StopCause::kRequeued);
  EXPECT_EQ(cause(RunState::kFailed, true, "time limit 1:00:00 exceeded"), StopCause::kTimeLimit);
  EXPECT_EQ(cause(RunState::kFailed, true, "GPU error: Xid 13"), StopCause::kGpuError);
  EXPECT_EQ(cause(RunState::kFailed, true, "out of memory: replica 0"), StopCause::kOutOfMemory);
  EXPECT_EQ(cause(RunState::kFailed, true, "cannot start replica 0 on node n1: no account"),
            StopCause::kCannotStart);
  EXPECT_EQ(cause(RunState::kFailed, false, "exit code 1"), StopCause::kFailed);
  EXPECT_EQ(cause(RunState::kSucceeded, false, ""), StopCause::kCompleted);
  EXPECT_EQ(cause(RunState::kCancelled, true, "cancelled by ana"), StopCause::kCancelled);
  EXPECT_EQ(cause(RunState::kPreempted, true, "requeued by ana"), StopCause::kRequeued);
  EXPECT_EQ(cause(RunState::kPreempted, true, "preempted: for job 3"), StopCause::kPreempted);
  EXPECT_EQ(cause(RunState::kLost, false, "node n1 lost"), StopCause::kLost);
  EXPECT_EQ(cause(RunState::kLost, true, "its stop (cancelled by ana) was not confirmed"),
            StopCause::kLost);

  corral::Run bad;
  Json j = ToJson(bad);
  j["cause"] = "gremlins";
  auto decoded = RunFromJson(j);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("cause"), std::string::npos)
      << decoded.status().message();
  for (StopCause c :
       {StopCause::kNone, StopCause::kCancelled, StopCause::kPreempted, StopCause::kRequeued,
        StopCause::kTimeLimit, StopCause::kGpuError, StopCause::kOutOfMemory, StopCause::kLost,
        StopCause::kCannotStart, StopCause::kCompleted, StopCause::kFailed}) {
    StopCause back = StopCause::kNone;
    EXPECT_TRUE(ParseStopCause(StopCauseName(c), &back)) << StopCauseName(c);
    EXPECT_EQ(back, c);
  }
}

TEST(Codec, JsonNestingDepthCountsStructureNotStrings) {
  EXPECT_EQ(JsonNestingDepth(""), 0);
  EXPECT_EQ(JsonNestingDepth("42"), 0);
  EXPECT_EQ(JsonNestingDepth(R"({"a": [1, {"b": []}], "c": {}})"), 4);
  EXPECT_EQ(JsonNestingDepth(R"({"cmd": "echo [[[[{{{{"})"), 1) << "brackets in a string";
  EXPECT_EQ(JsonNestingDepth(R"({"q": "a \" [[[ \\", "x": [[]]})"), 3) << "escaped quotes";
  EXPECT_EQ(JsonNestingDepth(std::string(100000, '[')), 100000) << "unclosed counts too";
}

TEST(Codec, MalformedIsAnErrorNotACrash) {
  EXPECT_FALSE(JobFromJson(Json::parse(R"({"id":"x"})")).ok());
  EXPECT_FALSE(NodeFromJson(Json::parse(R"([1,2])")).ok());
  EXPECT_FALSE(SyncRequestFromJson(Json::parse(R"({"node":"a"})")).ok());
}

// Found by fuzz_agent_protocol: a float outside an integer field's range was cast unchecked.
TEST(Codec, FloatsOutsideAnIntegerFieldAreErrorsNotUndefinedCasts) {
  auto huge = SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1,"wait_ms":1e300})"));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("wait_ms"), std::string::npos) << huge.status().message();
  EXPECT_FALSE(
      SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1,"wait_ms":2.5})")).ok());
  auto whole = SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1,"wait_ms":25.0})"));
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->wait_ms, 25);
}

TEST(Codec, RequiredFieldsAndIntegerListsAreCheckedLikeOptionalOnes) {
  // fuzz_agent_protocol (seed 1) found agent_epoch: 1.3e36 cast unchecked.
  auto epoch = SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1.3e36})"));
  ASSERT_FALSE(epoch.ok());
  EXPECT_NE(epoch.status().message().find("agent_epoch"), std::string::npos)
      << epoch.status().message();
  EXPECT_FALSE(SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":-1.0})")).ok());
  auto ports =
      SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1,"busy_ports":[7,1e300]})"));
  ASSERT_FALSE(ports.ok());
  EXPECT_NE(ports.status().message().find("busy_ports"), std::string::npos)
      << ports.status().message();
  auto order = SyncResponseFromJson(Json::parse(
      R"({"head_epoch":1,"desired_version":2,"runs":[{"run_id":"1.0","job_id":1,"attempt":0,)"
      R"("command":["true"],"gpus":[0,2.5]}]})"));
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("gpus"), std::string::npos) << order.status().message();
  auto whole =
      SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":4.0,"busy_ports":[7.0,8]})"));
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->agent_epoch, 4u);
  EXPECT_EQ(whole->busy_ports, (std::vector<int32_t>{7, 8}));
}

RunOrder TwoTaskOrder() {
  RunOrder o;
  o.run_id = "7.1";
  o.job_id = 7;
  o.attempt = 1;
  o.replica = 1;
  o.command = {"python3", "train.py"};
  o.gpus = {2, 3};
  RunLayout& l = o.layout;
  l.job_id = 7;
  l.attempt = 1;
  l.job_name = "sweep";
  l.owner = "ana";
  l.user_env = {{"LR", "0.1"}};
  l.placement = {{.node = "n1", .gpus = {0, 1}, .tasks = 2},
                 {.node = "n2", .gpus = {2, 3}, .tasks = 2}};
  l.replica_hosts = {"10.0.0.1", "10.0.0.2"};
  l.master_port = 29500;
  l.task_per_gpu = true;
  l.checkpoint_dir = "/ckpt/job-7";
  l.array_id = 5;
  l.array_index = 2;
  o.step_token = "secret";
  return o;
}

// The head sends a run's layout, not its tasks' environments; the agent derives them when it
// starts the run, with the same TaskEnv the head used to call, one per task.
TEST(Codec, AnOrdersEnvironmentsTravelAsItsLayout) {
  RunOrder sent = TwoTaskOrder();
  Json wire = ToJson(SyncResponse{1, 2, {sent}, false});
  const Json& run = wire["runs"][0];
  EXPECT_FALSE(run.contains("env")) << run.dump();
  EXPECT_FALSE(run.contains("task_envs")) << run.dump();
  ASSERT_TRUE(run.contains("layout"));
  auto got = SyncResponseFromJson(wire);
  ASSERT_TRUE(got.ok()) << got.status().message();
  RunOrder& o = got->runs.at(0);
  EXPECT_EQ(o.layout, sent.layout);
  EXPECT_TRUE(o.env.empty()) << "derived when the run starts, not for every answer";
  ASSERT_TRUE(ExpandOrderEnv(&o).ok());
  auto task1 = TaskEnv(sent.layout, 1, 1);
  task1["CORRAL_STEP_TOKEN"] = "secret";
  ASSERT_EQ(o.task_envs.size(), 2u);
  EXPECT_EQ(o.task_envs[1], task1);
  EXPECT_EQ(o.task_envs[0], o.env);
  EXPECT_EQ(o.env.at("RANK"), "2");
  EXPECT_EQ(o.env.at("CUDA_VISIBLE_DEVICES"), "2");
  EXPECT_EQ(o.env.at("MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(o.env.at("SLURM_ARRAY_TASK_ID"), "2");
  EXPECT_EQ(o.env.at("LR"), "0.1");
  EXPECT_EQ(o.env.at("CORRAL_STEP_TOKEN"), "secret");
  // Much smaller on the wire than the environments it stands for.
  RunOrder explicit_env = o;
  explicit_env.layout = {};
  EXPECT_LT(run.dump().size() * 2, ToJson(explicit_env).dump().size());
}

TEST(Codec, AnOrderSaysWhetherItIsAnInteractiveSession) {
  RunOrder session = TwoTaskOrder();
  session.interactive = true;
  RunOrder batch = TwoTaskOrder();
  Json wire = ToJson(SyncResponse{1, 2, {session, batch}, false});
  EXPECT_FALSE(wire["runs"][1].contains("interactive")) << "a batch job's order carries nothing";
  auto got = SyncResponseFromJson(wire);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(got->runs.at(0).interactive);
  EXPECT_FALSE(got->runs.at(1).interactive);
}

TEST(Codec, AnOrderSaysWhetherItIsAnElasticReplica) {
  RunOrder replica = TwoTaskOrder();
  replica.elastic = true;
  RunOrder batch = TwoTaskOrder();
  Json wire = ToJson(SyncResponse{1, 2, {replica, batch}, false});
  EXPECT_FALSE(wire["runs"][1].contains("elastic")) << "a rigid job's order carries nothing";
  auto got = SyncResponseFromJson(wire);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(got->runs.at(0).elastic);
  EXPECT_FALSE(got->runs.at(1).elastic);
}

TEST(Codec, AnElasticOrderCarriesItsLostPeers) {
  RunOrder survivor = TwoTaskOrder();
  survivor.peers_lost = 2;
  RunOrder rigid = TwoTaskOrder();
  Json wire = ToJson(SyncResponse{1, 2, {survivor, rigid}, false});
  EXPECT_FALSE(wire["runs"][1].contains("peers_lost")) << "an order of no loss carries nothing";
  auto got = SyncResponseFromJson(wire);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->runs.at(0).peers_lost, 2);
  EXPECT_EQ(got->runs.at(1).peers_lost, 0);
}

// Decoding `wire` fails with an error that names `field`.
void ExpectErrorNaming(const Json& wire, const std::string& field) {
  auto r = SyncResponseFromJson(wire);
  ASSERT_FALSE(r.ok()) << wire.dump();
  EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
}

TEST(Codec, ALayoutThatDoesNotHoldTheOrderIsAnError) {
  Json wire = ToJson(SyncResponse{1, 2, {TwoTaskOrder()}, false});
  Json no_replica = wire;
  no_replica["runs"][0]["replica"] = 2;
  ExpectErrorNaming(no_replica, "layout.placement");
  Json no_tasks = wire;
  no_tasks["runs"][0]["layout"]["placement"][0]["tasks"] = 0;
  ExpectErrorNaming(no_tasks, "layout.placement.tasks");
  Json huge = wire;
  huge["runs"][0]["layout"]["placement"][1]["tasks"] = 1024;
  for (int i = 0; i < 1100; ++i)
    huge["runs"][0]["layout"]["placement"].push_back(wire["runs"][0]["layout"]["placement"][1]);
  EXPECT_FALSE(SyncResponseFromJson(huge).ok()) << "a million environments' work is refused";
}

// A delta answer names the jobs it changed; an older agent's request (no "deltas") asks for
// full answers, and a full answer carries no delta fields.
TEST(Codec, ADeltaAnswerTravelsWithItsBaseAndChangedJobs) {
  SyncResponse sent{1, 9, {TwoTaskOrder()}, false};
  EXPECT_FALSE(ToJson(sent).contains("delta"));
  sent.delta = true;
  sent.base_version = 7;
  sent.changed_jobs = {3, 7, 8};
  auto got = SyncResponseFromJson(ToJson(sent));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(got->delta);
  EXPECT_EQ(got->base_version, 7u);
  EXPECT_EQ(got->changed_jobs, (std::vector<JobId>{3, 7, 8}));
  ASSERT_EQ(got->runs.size(), 1u);

  SyncRequest req;
  req.node = "n1";
  req.agent_epoch = 1;
  auto old_agent = SyncRequestFromJson(ToJson(req));
  ASSERT_TRUE(old_agent.ok());
  EXPECT_FALSE(old_agent->deltas);
  req.deltas = true;
  EXPECT_TRUE(SyncRequestFromJson(ToJson(req))->deltas);

  Json wire = ToJson(sent);
  Json unsorted = wire;
  unsorted["changed_jobs"] = {8, 3, 7};
  ExpectErrorNaming(unsorted, "changed_jobs");
  Json unnamed = wire;
  unnamed["changed_jobs"] = {3, 8};
  ExpectErrorNaming(unnamed, "runs");
  Json ahead = wire;
  ahead["base_version"] = 10;
  ExpectErrorNaming(ahead, "base_version");
  Json no_base = wire;
  no_base.erase("base_version");
  ExpectErrorNaming(no_base, "base_version");
}

// Fetches ahead travel in every answer, a delta's too, and their progress in the sync; a
// dataset without a digest (unresolved) is refused, naming the field; both are optional.
TEST(Codec, FetchesAheadAndTheirProgressRoundTrip) {
  DatasetRef d;
  d.name = "imagenet";
  d.version = "v1";
  d.digest = "sha256:" + std::string(64, 'a');
  d.source = "/shared/imagenet";
  d.files = 3;
  d.bytes = 3000;
  SyncResponse r;
  r.head_epoch = 1;
  r.desired_version = 5;
  r.delta = true;
  r.base_version = 4;
  r.prefetch = {PrefetchOrder{12, "ana", {d}}};
  auto back = SyncResponseFromJson(Json::parse(ToJson(r).dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->prefetch, r.prefetch);
  Json unresolved = ToJson(r);
  unresolved["prefetch"][0]["datasets"][0].erase("digest");
  auto bad = SyncResponseFromJson(unresolved);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("field 'prefetch'"), std::string::npos)
      << bad.status().message();
  r.prefetch.clear();
  EXPECT_FALSE(ToJson(r).contains("prefetch"));

  SyncRequest q;
  q.node = "n1";
  q.agent_epoch = 2;
  q.prefetching = {{12, "staging imagenet on n1: 41%"}};
  auto req = SyncRequestFromJson(Json::parse(ToJson(q).dump()));
  ASSERT_TRUE(req.ok()) << req.status().message();
  EXPECT_EQ(req->prefetching, q.prefetching);
  q.prefetching.clear();
  EXPECT_FALSE(ToJson(q).contains("prefetching"));
}

TEST(RunId, ParsesOnlyWellFormed) {
  RunId id;
  ASSERT_TRUE(ParseRunId("17.3", &id));
  EXPECT_EQ(id.job, 17u);
  EXPECT_EQ(id.attempt, 3);
  EXPECT_FALSE(ParseRunId("17", &id));
  EXPECT_FALSE(ParseRunId("17.x", &id));
  EXPECT_EQ(ToString(RunId{5, 2}), "5.2");
}

TEST(Codec, SyncRequestGpuSamplesRoundTripAndAreOptional) {
  SyncRequest r;
  r.node = "n1";
  r.agent_epoch = 3;
  r.gpu_samples = {{0, 97, int64_t{70} << 30}, {1, 0, 0}};
  auto back = SyncRequestFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->gpu_samples, r.gpu_samples);
  // An older agent sends none; an older head never looks: both still understand each other.
  auto old = SyncRequestFromJson(Json::parse(R"({"node":"n1","agent_epoch":3})"));
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->gpu_samples.empty());
  r.gpu_samples.clear();
  EXPECT_FALSE(ToJson(r).contains("gpu_samples"));
}

TEST(Codec, ANotebooksIdleTimeRoundTripsAndIsOptional) {
  SyncRequest r;
  r.node = "n1";
  r.agent_epoch = 3;
  RunReport busy{"7.1", 0, true};
  busy.notebook_idle_ms = 0;
  RunReport quiet{"8.1", 0, true};
  quiet.notebook_idle_ms = 90000;
  RunReport batch{"9.1", 0, true};
  r.runs = {busy, quiet, batch};
  auto back = SyncRequestFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->runs, r.runs);
  EXPECT_FALSE(ToJson(batch).contains("notebook_idle_ms")) << "not known: not sent";
  EXPECT_EQ(back->runs[2].notebook_idle_ms, -1);
}

TEST(Codec, IdleSinceIsShownOnlyWhenSet) {
  Job j;
  j.id = 1;
  EXPECT_FALSE(ToJson(j).contains("idle_since"));
  j.idle_since = 12345;
  auto back = JobFromJson(ToJson(j));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->idle_since, 12345);
}

// A node's liveness and drain travel apart; a record written when they were one state still
// reads, each state as the fact it meant.
TEST(Codec, ANodesLivenessAndDrainRoundTripAndOldRecordsRead) {
  Node n;
  n.name = "n1";
  n.liveness = Liveness::kDown;
  n.drain = Drain::kDrained;
  Json j = ToJson(n);
  EXPECT_EQ(j["state"], "down");
  auto back = NodeFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->liveness, Liveness::kDown);
  EXPECT_EQ(back->drain, Drain::kDrained);
  auto old = NodeFromJson(Json{{"name", "n2"}, {"state", "draining"}});
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->drain, Drain::kDraining);
  EXPECT_EQ(old->liveness, Liveness::kAlive);
  auto silent = NodeFromJson(Json{{"name", "n3"}, {"state", "unreachable"}});
  ASSERT_TRUE(silent.ok());
  EXPECT_EQ(silent->liveness, Liveness::kUnreachable);
  EXPECT_EQ(silent->drain, Drain::kNone);
  auto bad = NodeFromJson(Json{{"name", "n4"}, {"state", "ready"}, {"drain", "maybe"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("drain"), std::string::npos) << bad.status().ToString();
}

TEST(Codec, ANodeViewReadsBackWhatTheApiWrote) {
  NodeView v;
  v.node.name = "n1";
  v.node.drain = Drain::kDraining;
  v.node.gpus = {Gpu{.index = 0, .uuid = "GPU-0", .model = "H100", .memory_mb = 81920},
                 Gpu{.index = 1, .uuid = "GPU-1", .model = "H100", .memory_mb = 81920},
                 Gpu{.index = 2, .uuid = "GPU-2", .model = "H100", .healthy = false}};
  v.node.gpu_drains[2] = GpuDrain{.source = DrainSource::kHealth, .reason = "xid 79", .since = 5};
  v.gpus_used = 2;
  v.shares = {
      GpuShareHolder{.gpu = 1, .job = 7, .owner = "ana", .milli = 250, .memory_mb = 1024},
      GpuShareHolder{
          .gpu = 1, .job = 9, .owner = "bo", .milli = 500, .isolation = GpuIsolation::kMps}};
  v.runs = {"7.1", "9.1"};
  GpuSample checked{.index = 0, .utilization_percent = 93, .memory_used_bytes = 1 << 30};
  checked.check = 4;
  checked.health = GpuHealth::kWarn;
  checked.health_reason = "ecc sbe";
  v.gpu_samples = {checked, GpuSample{.index = 1, .utilization_percent = 10}};
  v.image_cache = ImageCacheReport{.bytes = 3 << 20, .images = 2, .limit_bytes = 1 << 30};

  const Json wire = ToJson(v);
  EXPECT_EQ(wire["gpus"][1]["shared_milli"], 750);
  EXPECT_EQ(wire["gpus"][2]["drain"]["source"], "health");
  Result<NodeView> back = NodeViewFromJson(wire);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToJson(back->node), ToJson(v.node));
  EXPECT_EQ(back->node.gpu_drains, v.node.gpu_drains);
  EXPECT_EQ(back->gpus_used, 2);
  ASSERT_EQ(back->shares.size(), 2u);
  EXPECT_EQ(back->shares[1].owner, "bo");
  EXPECT_EQ(back->shares[1].isolation, GpuIsolation::kMps);
  ASSERT_EQ(back->gpu_samples.size(), 2u);
  EXPECT_EQ(back->gpu_samples[0].health, GpuHealth::kWarn);
  EXPECT_EQ(back->gpu_samples[0].health_reason, "ecc sbe");
  EXPECT_EQ(back->gpu_samples[1].check, 0u);  // never health-checked: none shown, none read
  EXPECT_EQ(back->image_cache, v.image_cache);
  EXPECT_EQ(back->runs, v.runs);
  EXPECT_EQ(ToJson(*back), wire);

  Json bad = wire;
  bad["gpus"][1]["shares"][0]["isolation"] = "vgpu";
  Result<NodeView> refused = NodeViewFromJson(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("isolation"), std::string::npos);
}

TEST(Codec, AQueueViewReadsBackWhatTheApiWrote) {
  QueueView v;
  v.config = QueueConfig{.name = "org/team", .quota_gpus = 8, .limit_gpus = 16, .weight = 2.5};
  v.config.allowed_users = {"ana"};
  v.config.idle_timeout_ms = 60000;
  v.used_gpus = 3;
  v.pending = 4;
  v.running = 1;
  Result<QueueView> back = QueueViewFromJson(ToJson(v));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->config, v.config);
  EXPECT_EQ(back->used_gpus, 3);
  EXPECT_EQ(back->pending, 4);
  EXPECT_EQ(back->running, 1);
  EXPECT_FALSE(QueueViewFromJson(Json{{"quota_gpus", 1}}).ok());  // no name
}

TEST(Codec, AnEventPageReadsBackWhatTheApiWroteAndItsEnvelope) {
  EventPage page;
  page.revision = 9;
  page.reset = false;
  page.events.push_back(Json{{"rev", 8},
                             {"at", 1'700'000'000'000},
                             {"type", "run_placed"},
                             {"kind", "job"},
                             {"key", 12},
                             {"attempt", 1}});
  page.events.push_back(
      Json{{"rev", 9}, {"at", 5}, {"type", "node_drain_set"}, {"kind", "node"}, {"key", "n1"}});
  Result<EventPage> back = EventPageFromJson(ToJson(page));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->revision, 9u);
  EXPECT_FALSE(back->reset);
  ASSERT_EQ(back->events.size(), 2u);
  EXPECT_EQ(back->events[0], page.events[0]);
  EXPECT_EQ(EventRevision(back->events[0]), 8u);
  EXPECT_EQ(EventTime(back->events[0]), 1'700'000'000'000);
  EXPECT_EQ(EventType(back->events[0]), "run_placed");
  EXPECT_EQ(EventKind(back->events[1]), "node");
  EXPECT_EQ(EventKey(back->events[0]), "12");
  EXPECT_EQ(EventKey(back->events[1]), "n1");
  EXPECT_TRUE(
      EventPageFromJson(Json{{"events", Json::array()}, {"revision", 4}, {"reset", true}})->reset);
  auto no_rev = EventPageFromJson(Json{{"events", {Json{{"type", "x"}}}}, {"revision", 4}});
  ASSERT_FALSE(no_rev.ok());
  EXPECT_NE(no_rev.status().message().find("events[0]"), std::string::npos);
  auto bad_reset =
      EventPageFromJson(Json{{"events", Json::array()}, {"revision", 4}, {"reset", 1}});
  ASSERT_FALSE(bad_reset.ok());
  EXPECT_NE(bad_reset.status().message().find("reset"), std::string::npos);
}

}  // namespace
}  // namespace corral
