// sacctmgr, sshare, sprio, sinfo -o and scontrol update as commands, against a fake head: what
// they ask it and what they print, and that bad input sends nothing that changes a job.
#include <gtest/gtest.h>

#include "cli/cli_test_harness.h"
#include "core/credential.h"

namespace corral::cli::test {
namespace {

Json QueuesAnswer() {
  QueueView def, gpu;
  def.config.name = "default";
  gpu.config.name = "gpu";
  gpu.config.weight = 2;
  gpu.config.allowed_users = {"ana"};
  return Json{{"queues", {ToJson(def), ToJson(gpu)}}};
}

Json TokensAnswer() {
  Credential c;
  c.id = "t-1";
  c.who = Caller::User("bob");
  Json a = ToJson(c);
  c.id = "t-2";
  c.who = Caller::User("ana");
  Json b = ToJson(c);
  a.erase("hash");
  b.erase("hash");
  return Json{{"tokens", {a, b}}};
}

void AnswerAccounts(Harness& h, const std::vector<Job>& jobs = {}) {
  h.fake->OnPath([jobs](const std::string& path) -> Result<ApiReply> {
    if (path == "/v1/queues") return JsonReply(200, QueuesAnswer());
    if (path == "/v1/tokens") return JsonReply(200, TokensAnswer());
    if (path.rfind("/v1/jobs?", 0) == 0) {
      Json arr = Json::array();
      for (const Job& j : jobs) arr.push_back(ToJson(j));
      return JsonReply(200, Json{{"jobs", arr}, {"next_after", nullptr}});
    }
    return JsonReply(404, Json{{"error", {{"code", "not_found"}, {"message", path}}}});
  });
}

TEST(SlurmAccountsCli, SacctmgrListsAUsersQueuesAsAccounts) {
  Harness h;
  AnswerAccounts(h);
  ASSERT_EQ(h.Run("sacctmgr", {"-n", "-s", "list", "user", "ana", "format=account%20"}), 0)
      << h.err.str();
  EXPECT_EQ(h.out.str(), "             default \n                 gpu \n");
  Harness bob;
  AnswerAccounts(bob);
  ASSERT_EQ(bob.Run("sacctmgr",
                    {"-P", "show", "assoc", "where", "user=bob", "format=account,user,share"}),
            0);
  EXPECT_EQ(bob.out.str(), "Account|User|Share\ndefault|bob|1\n") << "gpu admits ana only";
  Harness bad;
  AnswerAccounts(bad);
  EXPECT_EQ(bad.Run("sacctmgr", {"add", "account", "x"}), 1);
  EXPECT_NE(bad.err.str().find("sacctmgr: error: \"add\" is not supported"), std::string::npos)
      << bad.err.str();
}

TEST(SlurmAccountsCli, SshareAndSprioReadQueuesTokensAndJobs) {
  Job pending = MakeJob(7, JobState::kPending);
  pending.spec.queue = "gpu";
  pending.spec.priority = 3;
  Harness h;
  AnswerAccounts(h, {pending});
  ASSERT_EQ(h.Run("sshare", {"-P", "-n"}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(),
            "root|||0.000000|0|1.000000|\n"
            " default||1|0.333333|0|0.000000|\n"
            "  default|ana|1|0.500000|0|0.000000|1.000000\n"
            " gpu||2|0.666667|0|0.000000|\n"
            "  gpu|ana|1|1.000000|0|0.000000|1.000000\n")
      << "$USER's lines (ana)";
  Harness p;
  AnswerAccounts(p, {pending});
  ASSERT_EQ(p.Run("sprio", {"-h", "-o", "%i %r %u %Y"}), 0) << p.err.str();
  EXPECT_EQ(p.out.str(), "7 gpu ana 3\n");
}

TEST(SlurmAccountsCli, SinfoFormatGoesToTheRenderer) {
  Harness h;
  NodeView n;
  n.node.name = "n1";
  n.node.gpus.resize(2);
  h.fake->OnPath([n](const std::string& path) -> Result<ApiReply> {
    if (path == "/v1/queues") return JsonReply(200, QueuesAnswer());
    return JsonReply(200, Json{{"nodes", {ToJson(n)}}});
  });
  ASSERT_EQ(h.Run("sinfo", {"-h", "-o", "%P"}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(), "default*\ngpu\n");
  EXPECT_EQ(h.Run("sinfo", {"-o", "%P", "-O", "nodes"}), 1);
  EXPECT_NE(h.err.str().find("--format and --Format exclude each other"), std::string::npos);
}

TEST(SlurmAccountsCli, ScontrolUpdateSendsTheFieldsAndReportsRefusals) {
  Job job = MakeJob(9, JobState::kPending);
  job.spec.batch = true;
  job.spec.checkpoint_signal = 10;  // --signal=USR1@60: the limit was taken 60 s early
  job.spec.grace_ms = 60'000;
  Harness h;
  h.fake->handler = [job](const FakeTransport::Sent& s) -> Result<ApiReply> {
    if (s.method == "GET") return JsonReply(200, Json{{"job", ToJson(job)}});
    if (s.body.find("priority") != std::string::npos) {
      return JsonReply(403, Json{{"error",
                                  {{"code", "permission_denied"},
                                   {"message", "field 'priority': only an admin may raise"}}}});
    }
    return JsonReply(200, Json{{"job", ToJson(job)}});
  };
  ASSERT_EQ(h.Run("scontrol", {"update", "JobId=9", "TimeLimit=10", "Partition=gpu"}), 0)
      << h.err.str();
  ASSERT_EQ(h.fake->sent.size(), 2u);
  EXPECT_EQ(h.fake->sent[1].path, "/v1/jobs/9/update");
  EXPECT_EQ(Json::parse(h.fake->sent[1].body),
            (Json{{"time_limit_ms", 540'000}, {"queue", "gpu"}}));
  EXPECT_EQ(h.Run("scontrol", {"update", "JobId=9", "Priority=5"}), 1);
  EXPECT_NE(h.err.str().find("scontrol: error: update JobId=9: permission denied: field "
                             "'priority'"),
            std::string::npos)
      << h.err.str();
  const size_t sent = h.fake->sent.size();
  EXPECT_EQ(h.Run("scontrol", {"update", "JobId=9", "Nice=5"}), 1);
  EXPECT_NE(h.err.str().find("\"Nice\" cannot be updated"), std::string::npos);
  EXPECT_EQ(h.Run("scontrol", {"update", "TimeLimit=5"}), 1);
  EXPECT_NE(h.err.str().find("want JobId=ID"), std::string::npos);
  EXPECT_EQ(h.Run("scontrol", {"update", "JobId=9", "TimeLimit=soon"}), 1);
  EXPECT_EQ(h.fake->sent.size(), sent) << "bad input sends nothing";
}

}  // namespace
}  // namespace corral::cli::test
