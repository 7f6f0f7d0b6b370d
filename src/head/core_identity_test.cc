// The head's core: who may do what (owners, tokens, queue access), limits, and changes logged
// by older heads.
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

// --- identity ---

TEST(CoreIdentity, OwnersComeFromTheCallerNotTheRequest) {
  CoreHarness h(Config());
  auto& core = h.core();
  auto own = core.Submit(kAna, JobSpec{.command = {"x"}}, "", h.now);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->owner, "ana");
  auto forged = core.Submit(kAna, JobSpec{.command = {"x"}}, "mallory", h.now);
  EXPECT_EQ(forged.status().code(), ErrorCode::kPermissionDenied);
  auto on_behalf = core.Submit(kAdmin, JobSpec{.command = {"x"}}, "mallory", h.now);
  ASSERT_TRUE(on_behalf.ok());
  EXPECT_EQ(on_behalf->owner, "mallory");
  EXPECT_EQ(core.Submit(Caller::Node("n1"), JobSpec{.command = {"x"}}, "", h.now).status().code(),
            ErrorCode::kPermissionDenied);
}

// A change logged by a head from before liveness and drain were apart reads as the one fact it
// set: an undrain clears the drain, an agent heard from again makes the node alive, and neither
// touches the other.
TEST(CoreChanges, AnOldNodeStateChangeReadsAsLivenessOrDrain) {
  auto decode = [](const char* state, const char* reason) {
    Json j{{"rev", 7},
           {"at", 1},
           {"type", "node_state_set"},
           {"by", ToJson(Caller::System())},
           {"node", "n1"},
           {"state", state},
           {"reason", reason}};
    auto c = ChangeFromJson(j);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c->what;
  };
  auto drained = decode("drained", "drained by root");
  ASSERT_TRUE(std::holds_alternative<NodeDrainSet>(drained));
  EXPECT_EQ(std::get<NodeDrainSet>(drained).drain, Drain::kDrained);
  auto undrained = decode("ready", "undrained by root");
  ASSERT_TRUE(std::holds_alternative<NodeDrainSet>(undrained));
  EXPECT_EQ(std::get<NodeDrainSet>(undrained).drain, Drain::kNone);
  auto heard = decode("ready", "agent heard from again");
  ASSERT_TRUE(std::holds_alternative<NodeLivenessSet>(heard));
  EXPECT_EQ(std::get<NodeLivenessSet>(heard).liveness, Liveness::kAlive);
  auto down = decode("down", "no sync for 1m");
  ASSERT_TRUE(std::holds_alternative<NodeLivenessSet>(down));
  EXPECT_EQ(std::get<NodeLivenessSet>(down).liveness, Liveness::kDown);
}

// An admin reserves a queue for some users and groups (a token's groups): others are refused
// with 403 naming the queue, in its sub-queues too, which may narrow the list but not widen it.
TEST(CoreIdentity, QueueAccessListsAdmitTheirUsersAndGroupsAndBindSubQueues) {
  CoreHarness h(Config());
  auto& core = h.core();
  QueueConfig lab{.name = "lab", .allowed_users = {"ana"}, .allowed_groups = {"vision"}};
  ASSERT_TRUE(core.SetQueue(kAdmin, lab, h.now).ok());
  ASSERT_TRUE(core.SetQueue(kAdmin, QueueConfig{.name = "lab/big"}, h.now).ok());
  QueueConfig narrow{.name = "lab/ana-only", .allowed_users = {"ana"}};
  ASSERT_TRUE(core.SetQueue(kAdmin, narrow, h.now).ok());
  h.Commit();
  auto submit = [&](const Caller& by, const std::string& queue) {  // the core of after a Crash
    return h.core().Submit(by, JobSpec{.command = {"x"}, .queue = queue}, "", h.now).status();
  };
  Caller carol = Caller::User("carol");
  carol.groups = {"vision"};
  for (const char* queue : {"lab", "lab/big"}) {
    EXPECT_TRUE(submit(kAna, queue).ok()) << queue;
    EXPECT_TRUE(submit(carol, queue).ok()) << queue << ": a member of an allowed group";
    EXPECT_TRUE(submit(kAdmin, queue).ok()) << queue;
    Status bob = submit(kBob, queue);
    EXPECT_EQ(bob.code(), ErrorCode::kPermissionDenied) << queue;
    EXPECT_NE(bob.message().find("may not submit to queue '" + std::string(queue) + "'"),
              std::string::npos)
        << bob.message();
    EXPECT_NE(bob.message().find("queue 'lab' admits users [ana] and groups [vision]"),
              std::string::npos)
        << bob.message();
  }
  EXPECT_TRUE(submit(kAna, "lab/ana-only").ok());
  EXPECT_EQ(submit(carol, "lab/ana-only").code(), ErrorCode::kPermissionDenied);
  EXPECT_TRUE(submit(kBob, "default").ok()) << "a queue without a list admits everyone";
  // The lists survive a restart.
  h.Commit();
  h.Crash();
  EXPECT_EQ(submit(kBob, "lab/big").code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(h.core().state().queues.at("lab").allowed_groups, std::vector<std::string>{"vision"});
}

// What one user may queue: an array's elements and the jobs pending at once (over all queues)
// are capped, naming the field and the setting; an admin is not held to them.
TEST(CoreJobs, ArraySizeAndPendingJobsPerUserAreCapped) {
  CoreConfig config = Config();
  config.max_array_size = 100;
  config.max_pending_per_user = 150;
  CoreHarness h(config);
  auto submit = [&](const Caller& by, const std::string& array) {
    return h.core().Submit(by, JobSpec{.command = {"x"}, .array = array}, "", h.now).status();
  };
  Status big = submit(kAna, "0-100");
  EXPECT_EQ(big.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(big.message().find("field 'array': 101 elements"), std::string::npos) << big.message();
  EXPECT_NE(big.message().find("--max-array-size"), std::string::npos) << big.message();
  ASSERT_TRUE(submit(kAna, "0-99").ok());
  ASSERT_TRUE(h.core().SetQueue(kAdmin, QueueConfig{.name = "other"}, h.now).ok());
  ASSERT_TRUE(h.core().Submit(kAna, JobSpec{.command = {"x"}, .queue = "other"}, "", h.now).ok());
  Status full = submit(kAna, "0-49");  // 101 pending, in two queues
  EXPECT_EQ(full.code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(full.message().find("user 'ana' has 101 jobs pending"), std::string::npos)
      << full.message();
  EXPECT_TRUE(submit(kAna, "0-48").ok()) << "up to the limit";
  EXPECT_TRUE(submit(kBob, "0-99").ok()) << "each user has their own";
  EXPECT_TRUE(submit(kAdmin, "0-999").ok()) << "admins are not held to them";
  EXPECT_TRUE(h.core().Submit(kAdmin, JobSpec{.command = {"x"}}, "ana", h.now).ok());
}

// A huge array is cancelled a slice per call when the shell asks so: each call cancels at
// most that many live elements and says whether any are left.
TEST(CoreJobs, AnArraysCancelCanGoASliceAtATime) {
  CoreHarness h(Config());
  auto array = h.core().Submit(kAna, JobSpec{.command = {"x"}, .array = "0-4"}, "", h.now);
  ASSERT_TRUE(array.ok());
  bool more = false;
  int calls = 0;
  do {
    ASSERT_TRUE(h.core().Cancel(kAna, array->id, h.now, false, 2, &more).ok());
    ++calls;
  } while (more);
  EXPECT_EQ(calls, 3);
  for (JobId id = array->id; id < array->id + 5; ++id) {
    EXPECT_EQ(h.core().GetJob(kAna, id)->state, JobState::kCancelled) << id;
  }
  h.Commit();
  h.ExpectReplayEqualsLive();
}

TEST(CoreIdentity, ARetriedRequestIdGetsTheSameJobEvenAfterACrash) {
  CoreHarness h(Config());
  auto first = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now, "req-1");
  ASSERT_TRUE(first.ok());
  h.Commit();
  uint64_t rev = h.core().revision();
  auto retry = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now, "req-1");
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry->id, first->id);
  h.Commit();
  EXPECT_EQ(h.core().revision(), rev) << "a retry changes nothing";
  // Another owner's id, and another id, are other requests.
  auto bobs = h.core().Submit(kBob, JobSpec{.command = {"x"}}, "", h.now, "req-1");
  ASSERT_TRUE(bobs.ok());
  EXPECT_NE(bobs->id, first->id);
  h.Commit();
  h.Crash();  // the new leader knows the ids from the store
  auto after = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now, "req-1");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->id, first->id);
  auto bad = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now, "a b");
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("request_id"), std::string::npos);
}

TEST(CoreJobs, ListingCanLeaveOutJobsThatEndedBeforeAGivenTime) {
  CoreHarness h(Config());
  auto old = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now);
  ASSERT_TRUE(old.ok());
  ASSERT_TRUE(h.core().Cancel(kAna, old->id, h.now).ok());
  h.now += kHour;
  auto live = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now);
  ASSERT_TRUE(live.ok());
  JobFilter recent;
  recent.ended_since = h.now - kMinute;
  auto listed = h.core().ListJobs(kAna, recent);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, live->id);
  EXPECT_EQ(h.core().ListJobs(kAna, {}).size(), 2u);  // without the filter: every job
}

TEST(CoreIdentity, OnlyTheOwnerAndAdminsSeeAJobsEnvironmentAndOutput) {
  CoreHarness h(Config());
  auto& core = h.core();
  JobSpec spec{.command = {"x"}};
  spec.env = {{"WANDB_API_KEY", "secret"}};
  auto job = core.Submit(kAna, spec, "", h.now);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(core.GetJob(kAna, job->id)->spec.env.at("WANDB_API_KEY"), "secret");
  EXPECT_EQ(core.GetJob(kAdmin, job->id)->spec.env.at("WANDB_API_KEY"), "secret");
  auto seen = core.GetJob(kBob, job->id);
  ASSERT_TRUE(seen.ok()) << "every user sees every job, like squeue";
  EXPECT_TRUE(seen->spec.env.empty());
  EXPECT_EQ(seen->owner, "ana");
  for (const auto& j : core.ListJobs(kBob, {})) EXPECT_TRUE(j.spec.env.empty()) << j.id;
  EXPECT_TRUE(core.GetJobForLogs(kAna, job->id).ok());
  EXPECT_TRUE(core.GetJobForLogs(kAdmin, job->id).ok());
  auto denied = core.GetJobForLogs(kBob, job->id);
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(denied.status().message().find("owner (ana)"), std::string::npos);
}

TEST(CoreIdentity, TokensAuthenticateUntilRevokedOrExpired) {
  CoreHarness h(Config());
  auto& core = h.core();
  EXPECT_EQ(core.IssueToken(kAna, {"eve", Role::kAdmin, {}, 0}, "s0", h.now).status().code(),
            ErrorCode::kPermissionDenied);
  auto t = core.IssueToken(kAdmin, {"eve", Role::kUser, {}, kHour}, "s1", h.now);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->hash.size(), 64u);
  EXPECT_NE(t->hash, "s1") << "only the hash is kept";
  auto who = core.Authenticate("s1", h.now);
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(who->name, "eve");
  EXPECT_EQ(core.Authenticate("s2", h.now).status().code(), ErrorCode::kUnauthenticated);
  EXPECT_EQ(core.Authenticate("s1", h.now + kHour).status().code(), ErrorCode::kUnauthenticated);
  h.Commit();
  h.Crash();  // credentials are durable
  ASSERT_TRUE(h.core().Authenticate("s1", h.now).ok());
  ASSERT_TRUE(h.core().RevokeToken(kAdmin, t->id, h.now).ok());
  EXPECT_EQ(h.core().Authenticate("s1", h.now).status().code(), ErrorCode::kUnauthenticated);
}

TEST(CoreIdentity, ANodeReportsOnlyOnItself) {
  CoreHarness h(Config());
  RegisterRequest req;
  req.name = "n1";
  ASSERT_TRUE(h.core().Register(kJoin, req, "node-secret", h.now).ok());
  EXPECT_EQ(h.core().Register(kAna, req, "x", h.now).status().code(), ErrorCode::kPermissionDenied);
  auto who = h.core().Authenticate("node-secret", h.now);
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(who->kind, Caller::Kind::kNode);
  SyncRequest other;
  other.node = "n2";
  EXPECT_EQ(h.core().Report(*who, other, h.now).status().code(), ErrorCode::kPermissionDenied);
  // Re-registering replaces the node's credential.
  ASSERT_TRUE(h.core().Register(kJoin, req, "node-secret-2", h.now).ok());
  EXPECT_FALSE(h.core().Authenticate("node-secret", h.now).ok());
}

TEST(CoreQueues, ValidationIsTheCoresAndNamesTheField) {
  CoreHarness h(Config());
  auto bad = h.core().SetQueue(kAdmin, {"a", 4, 2, 1.0}, h.now);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("limit_gpus"), std::string::npos);
  EXPECT_FALSE(h.core().SetQueue(kAdmin, {"a//b", 0, -1, 1.0}, h.now).ok());
  Caller lead = Caller::User("lead", Role::kQueueAdmin);
  lead.queues = {"org"};
  EXPECT_TRUE(h.core().SetQueue(lead, {"org/team", 1, -1, 1.0}, h.now).ok());
  EXPECT_EQ(h.core().SetQueue(lead, {"other", 1, -1, 1.0}, h.now).status().code(),
            ErrorCode::kPermissionDenied);
}

TEST(CoreQueues, ASubQueuesQuotaStaysWithinItsParents) {
  CoreHarness h(Config());
  ASSERT_TRUE(h.core().SetQueue(kAdmin, {"org", 6, -1, 1.0}, h.now).ok());
  ASSERT_TRUE(h.core().SetQueue(kAdmin, {"org/a", 4, -1, 1.0}, h.now).ok());
  auto over = h.core().SetQueue(kAdmin, {"org/a/x", 8, -1, 1.0}, h.now);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("field 'quota_gpus': 8 exceeds the quota of parent "
                                         "queue 'org/a' (4 GPUs)"),
            std::string::npos)
      << over.status().message();
  // Lowering a parent below a sub-queue's quota is refused too, naming the sub-queue.
  auto under = h.core().SetQueue(kAdmin, {"org", 3, -1, 1.0}, h.now);
  ASSERT_FALSE(under.ok());
  EXPECT_NE(under.status().message().find("sub-queue 'org/a' with a quota of 4"), std::string::npos)
      << under.status().message();
  // Nothing changed: org still has 6, so org/b may have 6.
  EXPECT_TRUE(h.core().SetQueue(kAdmin, {"org/b", 6, -1, 1.0}, h.now).ok());
  // A parent without a quota bounds nothing; org/a/x is then checked against org.
  EXPECT_TRUE(h.core().SetQueue(kAdmin, {"org/a", 0, -1, 1.0}, h.now).ok());
  EXPECT_TRUE(h.core().SetQueue(kAdmin, {"org/a/x", 5, -1, 1.0}, h.now).ok());
  EXPECT_FALSE(h.core().SetQueue(kAdmin, {"org/a/y", 7, -1, 1.0}, h.now).ok());
}

}  // namespace
}  // namespace corral::head::core_test
