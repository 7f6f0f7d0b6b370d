// corral run and corral exec against a fake head: what they send, and how they fail before a
// session starts (the sessions themselves run in tests/interactive_test.cc, on real terminals).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/commands.h"

namespace corral::cli {
namespace {

struct Sent {
  std::string method, path, body;
};

class FakeHead : public ApiTransport {
 public:
  Result<ApiReply> Call(const std::string& method, const std::string& path,
                        const std::string& body) override {
    sent.push_back({method, path, body});
    return answer(sent.back());
  }
  std::vector<Sent> sent;
  std::function<ApiReply(const Sent&)> answer;
};

ApiReply Reply(int status, const Json& body) {
  return ApiReply{status, "application/json", body.dump(), {}};
}

struct InteractiveHarness {
  std::shared_ptr<FakeHead> head = std::make_shared<FakeHead>();
  std::ostringstream out, err;
  CliContext ctx;
  InteractiveHarness() {
    ctx.out = &out;
    ctx.err = &err;
    ctx.env = [](const std::string& k) -> std::optional<std::string> {
      if (k == "USER") return std::string("ana");
      return std::nullopt;
    };
    ctx.addr = "http://head:7070";
    ctx.connect = [this]() -> Result<std::shared_ptr<ApiTransport>> {
      return std::shared_ptr<ApiTransport>(head);
    };
    ctx.now = [] { return TimeMs{1000}; };
    ctx.sleep = [](DurationMs) {};
    ctx.cwd = "/home/ana";
  }
};

TEST(RunCommandTest, SubmitsAnInteractiveSessionThatCanNeverStartAndSaysWhy) {
  InteractiveHarness h;
  h.head->answer = [](const Sent& s) {
    if (s.path == "/v1/jobs") return Reply(201, {{"job", {{"id", 9}}}});
    if (s.path == "/v1/jobs/9/touch") {  // what the head answers: the whole job
      Job job;
      job.id = 9;
      job.pending_code = PendingCode::kNoFit;
      job.pending_reason = "no node has 3 GPUs of model H100";
      return Reply(200, {{"job", ToJson(job)}});
    }
    return Reply(200, {{"job", {{"id", 9}, {"state", "cancelled"}}}});
  };
  int code =
      RunCommand("run", {"--gpus", "3", "--gpu-model", "H100", "--pty", "--", "bash"}, h.ctx);
  EXPECT_EQ(code, 1) << h.err.str();
  ASSERT_GE(h.head->sent.size(), 3u);
  Json body = Json::parse(h.head->sent[0].body);
  EXPECT_EQ(body["spec"]["kind"], "interactive");
  EXPECT_EQ(body["spec"]["gpus"], 3);
  EXPECT_EQ(body["spec"]["command"], Json({"sleep", "infinity"})) << "it only holds the allocation";
  EXPECT_EQ(body["spec"]["name"], "bash");
  EXPECT_NE(h.err.str().find("can never start: no node has 3 GPUs"), std::string::npos)
      << h.err.str();
  EXPECT_EQ(h.head->sent.back().path, "/v1/jobs/9/cancel") << "and it is cancelled";
}

// Slurm takes --pty anywhere among srun's options, not only first.
TEST(RunCommandTest, SrunTakesPtyAfterOtherOptions) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-N", "1", "--pty", "--gres=gpu:1", "bash"},
        std::vector<std::string>{"--gres=gpu:1", "--overlap", "-N", "1", "--pty", "bash"}}) {
    InteractiveHarness h;
    h.head->answer = [](const Sent& s) {
      if (s.path == "/v1/jobs") return Reply(201, {{"job", {{"id", 9}}}});
      Job job;
      job.id = 9;
      job.pending_code = PendingCode::kNoFit;
      job.pending_reason = "no node has a free GPU";
      return Reply(200, {{"job", ToJson(job)}});
    };
    EXPECT_EQ(RunSrun(args, h.ctx), 1) << h.err.str();
    ASSERT_FALSE(h.head->sent.empty());
    Json body = Json::parse(h.head->sent[0].body);
    EXPECT_EQ(body["spec"]["kind"], "interactive") << body.dump();
    EXPECT_EQ(body["spec"]["gpus"], 1) << body.dump();
    EXPECT_EQ(h.err.str().find("unknown option"), std::string::npos) << h.err.str();
  }
}

TEST(RunCommandTest, ARefusedSubmissionFailsAtOnce) {
  InteractiveHarness h;
  h.head->answer = [](const Sent&) {
    return Reply(400, {{"error",
                        {{"code", "invalid_argument"},
                         {"message", "job can never fit: it asks 64 GPUs a replica"}}}});
  };
  EXPECT_EQ(RunCommand("run", {"--gpus", "64", "--", "true"}, h.ctx), 1);
  EXPECT_NE(h.err.str().find("never fit"), std::string::npos) << h.err.str();
  EXPECT_EQ(h.head->sent.size(), 1u) << "nothing waits";
}

TEST(RunCommandTest, BadUsageChangesNothing) {
  InteractiveHarness h;
  h.head->answer = [](const Sent&) { return Reply(500, Json::object()); };
  EXPECT_EQ(RunCommand("run", {"--gpus", "1"}, h.ctx), kExitUsage);
  EXPECT_EQ(RunCommand("run", {"--array", "0-3", "--", "true"}, h.ctx), kExitUsage);
  EXPECT_EQ(RunCommand("exec", {}, h.ctx), kExitUsage);
  EXPECT_EQ(RunCommand("exec", {"x1", "--", "true"}, h.ctx), kExitUsage);
  EXPECT_EQ(RunCommand("exec", {"4"}, h.ctx), kExitUsage);
  EXPECT_EQ(RunCommand("exec", {"4", "--replica", "-1", "--", "true"}, h.ctx), kExitUsage);
  EXPECT_TRUE(h.head->sent.empty());
}

TEST(ExecCommandTest, SaysWhyTheHeadRefused) {
  InteractiveHarness h;
  h.head->answer = [](const Sent&) {
    return Reply(403, {{"error",
                        {{"code", "permission_denied"},
                         {"message",
                          "running commands inside job 4 is for its owner (bob), the "
                          "admins of queue default and admins, not ana"}}}});
  };
  EXPECT_EQ(RunCommand("exec", {"4", "--replica", "1", "--", "nvidia-smi", "-L"}, h.ctx), 1);
  ASSERT_EQ(h.head->sent.size(), 1u);
  EXPECT_EQ(h.head->sent[0].path, "/v1/jobs/4/exec");
  Json body = Json::parse(h.head->sent[0].body);
  EXPECT_EQ(body["command"], Json({"nvidia-smi", "-L"}));
  EXPECT_EQ(body["replica"], 1);
  EXPECT_EQ(body["pty"], false);
  EXPECT_NE(h.err.str().find("is for its owner (bob)"), std::string::npos) << h.err.str();
}

// A head the client's threads all call at once (each output stream has a transport of its own).
class SharedHead : public ApiTransport {
 public:
  Result<ApiReply> Call(const std::string& method, const std::string& path,
                        const std::string& body) override {
    {
      std::lock_guard lock(mu_);
      sent_.push_back(method + " " + path.substr(0, path.find('?')));
    }
    return answer(method, path, body);
  }
  std::vector<std::string> Sent() {
    std::lock_guard lock(mu_);
    return sent_;
  }
  std::function<ApiReply(const std::string&, const std::string&, const std::string&)> answer;

 private:
  std::mutex mu_;
  std::vector<std::string> sent_;
};

// The node of a running session is lost: its output requests fail (a dead agent), the head has
// ended the job. The client asks after the job at once, says why and exits 255, without waiting
// on the node; the allocation is given back.
TEST(RunCommandTest, ASessionWhoseJobEndedIsLostWithoutWaitingForItsNode) {
  InteractiveHarness h;
  auto head = std::make_shared<SharedHead>();
  auto failed = std::make_shared<std::atomic<bool>>(false);  // an output request has failed
  head->answer = [failed](const std::string& method, const std::string& path, const std::string&) {
    if (path == "/v1/jobs") return Reply(201, {{"job", {{"id", 9}}}});
    if (path == "/v1/jobs/9/exec") {
      return Reply(201, {{"session", "s1"}, {"node", "n1"}, {"job", 9}});
    }
    if (path.rfind("/v1/exec/s1/output", 0) == 0) {  // relayed to a dead agent
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      *failed = true;
      return Reply(502, {{"error", {{"code", "unavailable"}, {"message", "node n1: refused"}}}});
    }
    if (path.rfind("/v1/jobs/9/touch", 0) == 0) {
      Job job;
      job.id = 9;
      job.state = JobState::kRunning;
      if (*failed) {  // the head has declared n1 down meanwhile
        job.state = JobState::kFailed;
        corral::Run run;
        run.state = RunState::kLost;
        run.reason = "node n1 lost; an interactive session is not requeued";
        job.runs.push_back(run);
      }
      return Reply(200, {{"job", ToJson(job)}, {"inactive_limit_ms", 300000}});
    }
    (void)method;
    return Reply(200, Json::object());
  };
  h.ctx.connect = [head]() -> Result<std::shared_ptr<ApiTransport>> {
    return std::shared_ptr<ApiTransport>(head);
  };
  ::testing::internal::CaptureStderr();
  const auto t0 = std::chrono::steady_clock::now();
  int code = RunCommand("run", {"--", "python", "train.py"}, h.ctx);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 255) << err << h.err.str();
  EXPECT_NE(err.find("corral run: lost the session: job 9 is failed: node n1 lost; an interactive "
                     "session is not requeued"),
            std::string::npos)
      << err;
  // Its touches come every 10 s here: it asked at once, on the failed output request.
  EXPECT_LT(took, 5.0) << "it did not wait for its next touch nor the output's retries";
  std::vector<std::string> sent = head->Sent();
  ASSERT_FALSE(sent.empty());
  EXPECT_NE(std::find(sent.begin(), sent.end(), "POST /v1/jobs/9/cancel"), sent.end())
      << "its allocation is given back";
  EXPECT_EQ(std::find(sent.begin(), sent.end(), "DELETE /v1/exec/s1"), sent.end())
      << "nothing is asked of the lost node";
}

// `corral exec` into a batch job whose node is lost: the job is requeued (and may run again
// elsewhere at once). The client asks after the job on its first failed output request and
// ends, rather than after the output's retries (11 s).
TEST(ExecCommandTest, ASessionInABatchJobWhoseNodeIsLostEndsAtOnce) {
  for (const bool runs_again : {false, true}) {
    InteractiveHarness h;
    auto head = std::make_shared<SharedHead>();
    auto failed = std::make_shared<std::atomic<bool>>(false);
    head->answer = [failed, runs_again](const std::string&, const std::string& path,
                                        const std::string&) {
      if (path == "/v1/jobs/9/exec") {
        return Reply(201, {{"session", "s1"}, {"node", "n1"}, {"job", 9}, {"run", "9.1"}});
      }
      if (path.rfind("/v1/exec/s1/output", 0) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        *failed = true;
        return Reply(502, {{"error", {{"code", "unavailable"}, {"message", "node n1: refused"}}}});
      }
      if (path == "/v1/jobs/9") {
        Job job;
        job.id = 9;
        job.state = JobState::kRunning;
        corral::Run first;
        first.attempt = 1;
        first.state = RunState::kRunning;
        job.runs.push_back(first);
        if (*failed) {  // the head has declared n1 lost meanwhile
          job.runs.back().state = RunState::kLost;
          job.runs.back().reason = "node n1 lost";
          job.state = JobState::kPending;
          if (runs_again) {
            corral::Run second;
            second.attempt = 2;
            second.state = RunState::kRunning;
            job.runs.push_back(second);
            job.state = JobState::kRunning;
          }
        }
        return Reply(200, {{"job", ToJson(job)}});
      }
      return Reply(200, Json::object());
    };
    h.ctx.connect = [head]() -> Result<std::shared_ptr<ApiTransport>> {
      return std::shared_ptr<ApiTransport>(head);
    };
    ::testing::internal::CaptureStderr();
    const auto t0 = std::chrono::steady_clock::now();
    int code = RunCommand("exec", {"9", "--", "nvidia-smi"}, h.ctx);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 255) << err << h.err.str();
    const std::string want = runs_again ? "corral exec: lost the session: job 9's run 9.1 was "
                                          "lost; it runs again as 9.2"
                                        : "corral exec: lost the session: job 9 is pending: "
                                          "node n1 lost";
    EXPECT_NE(err.find(want), std::string::npos) << err;
    EXPECT_LT(took, 5.0) << "it did not wait for the output's retries";
    std::vector<std::string> sent = head->Sent();
    EXPECT_EQ(std::find(sent.begin(), sent.end(), "POST /v1/jobs/9/touch"), sent.end())
        << "a batch job is not touched";
  }
}

// `corral exec` into a batch job whose node's agent cannot be reached for a while (the head
// answers its output requests 502: refused, an agent restarting): more failures than the
// output's retries allow for a head that fails (10), but the job still runs there, so the
// session goes on and ends with its command's code once the agent answers again.
TEST(ExecCommandTest, AnAgentUnreachableForAWhileEndsNoSessionWhoseJobRuns) {
  InteractiveHarness h;
  auto head = std::make_shared<SharedHead>();
  auto mu = std::make_shared<std::mutex>();
  auto refused = std::make_shared<std::map<std::string, int>>();  // per stream
  head->answer = [mu, refused](const std::string&, const std::string& path, const std::string&) {
    if (path == "/v1/jobs/9/exec") {
      return Reply(201, {{"session", "s1"}, {"node", "n1"}, {"job", 9}, {"run", "9.1"}});
    }
    if (path.rfind("/v1/exec/s1/output", 0) == 0) {
      std::lock_guard lock(*mu);
      int& n = (*refused)[path.substr(path.find("stream="), 13)];
      if (n < 15) {
        ++n;
        return Reply(502, {{"error",
                            {{"code", "unavailable"},
                             {"message",
                              "node n1: GET http://n1:7071/v1/exec/a1/output: "
                              "connect: Connection refused"}}}});
      }
      return ApiReply{
          200, "text/plain", "", {{"x-corral-next-offset", "0"}, {"x-corral-exit-code", "3"}}};
    }
    if (path == "/v1/jobs/9") {
      Job job;
      job.id = 9;
      job.state = JobState::kRunning;
      corral::Run run;
      run.attempt = 1;
      run.state = RunState::kRunning;
      job.runs.push_back(run);
      return Reply(200, {{"job", ToJson(job)}});
    }
    return Reply(200, Json::object());
  };
  h.ctx.connect = [head]() -> Result<std::shared_ptr<ApiTransport>> {
    return std::shared_ptr<ApiTransport>(head);
  };
  std::atomic<int> pauses{0};
  h.ctx.sleep = [&pauses](DurationMs) { ++pauses; };
  ::testing::internal::CaptureStderr();
  int code = RunCommand("exec", {"9", "--", "nvidia-smi"}, h.ctx);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 3) << err << h.err.str();
  EXPECT_EQ(err.find("lost the session"), std::string::npos) << err;
  EXPECT_EQ(pauses.load(), 30) << "each refused request waits before the next";
}

}  // namespace
}  // namespace corral::cli
