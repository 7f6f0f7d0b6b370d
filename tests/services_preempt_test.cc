// Inference and training on one pool (docs/services.md, "Serving before training"): a real head
// and agent on loopback (4 GPUs), a service whose replicas are real HTTP servers (Python's
// http.server), and a preemptible training job (a shell loop that checkpoints on its signal)
// holding every GPU the service's guaranteed replica leaves. Load through the head's /v/NAME/
// makes the autoscaler want a second replica: it preempts the training job (the checkpoint
// signal, then the job waits again), becomes ready and serves. Without load the service scales
// down, and the training job runs again from its checkpoint and finishes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "service_cluster.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

// The training job: a first run loops until its checkpoint signal (SIGTERM), saves a checkpoint
// and exits; a run that finds the checkpoint resumes from it and finishes.
constexpr const char* kTraining =
    "mkdir -p $CORRAL_CHECKPOINT_DIR; "
    "if [ -f $CORRAL_CHECKPOINT_DIR/ckpt ]; then "
    "  echo resumed from $(cat $CORRAL_CHECKPOINT_DIR/ckpt) in run $CORRAL_RUN; sleep 1; exit 0; "
    "fi; "
    "trap 'echo step-$CORRAL_RUN > $CORRAL_CHECKPOINT_DIR/ckpt; exit 0' TERM; "
    "echo training in run $CORRAL_RUN; "
    "while true; do sleep 0.1; done";

// Its ports are apart from the other service suites'. Preemption may take runs at once.
class ServicePreemption : public ServiceCluster {
 protected:
  ServicePreemption()
      : ServiceCluster("svcpre", PortRangeOfThisTest(16000, 10),
                       {{"server.py", kSlowReplica}, {"load.py", kSlowLoad}},
                       {"--min-runtime-before-preempt", "0"}) {}

  int Desired() { return Show().value("desired", -1); }
  int Ready() {
    int n = 0;
    for (const Json& r : Show().value("replicas", Json::array())) {
      n += r.value("running", false) && r.value("ready", false) && !r.value("draining", false);
    }
    return n;
  }
  Json Job(const std::string& id) {
    return Json::parse(c_.Corral({"show", id, "-o", "json"}).out, nullptr, false);
  }
  std::string JobState(const std::string& id) { return Job(id).value("state", ""); }
  // GET through the head: the HTTP status and the body.
  std::pair<int, std::string> ServiceGet(const std::string& path) {
    CommandResult r =
        RunCommand({"/usr/bin/curl", "-s", "-m", "30", "-o", "-", "-w", "\n%{http_code}", "-H",
                    "Authorization: Bearer " + c_.token(), c_.addr() + path});
    const auto nl = r.out.rfind('\n');
    if (nl == std::string::npos) return {0, r.out};
    return {std::atoi(r.out.substr(nl + 1).c_str()), r.out.substr(0, nl)};
  }
};

TEST_F(ServicePreemption, AScaleUpPreemptsTrainingWhichResumesAfterTheScaleDown) {
  // One guaranteed replica (1 GPU), one more above the minimum when the load wants it.
  auto serve = c_.Corral({"serve",
                          "echo",
                          "--min-replicas",
                          "1",
                          "--max-replicas",
                          "2",
                          "--port",
                          "0",
                          "--health",
                          "/health",
                          "--gpus",
                          "1",
                          "--cpus",
                          "0.25",
                          "--target-in-flight",
                          "1",
                          "--scale-up-delay",
                          "2s",
                          "--scale-down-delay",
                          "3s",
                          "--drain-timeout",
                          "5s",
                          "--",
                          "/usr/bin/python3",
                          c_.dir() + "/svc/server.py"});
  ASSERT_EQ(serve.exit_code, 0) << serve.err;
  ASSERT_TRUE(WaitUntil(20000, [&] { return Ready() == 1; })) << Show().dump();
  const std::string guaranteed =
      std::to_string(Show()["replicas"][0].value("job", static_cast<int64_t>(0)));

  // Training takes the other three GPUs: the cluster is full.
  const std::string training =
      c_.Submit({"--gpus", "3", "--cpus", "0.25", "--preemptible", "--grace-period", "10s", "--",
                 "/bin/sh", "-c", kTraining});
  ASSERT_TRUE(WaitUntil(20000, [&] {
    return JobState(training) == "running" &&
           c_.Corral({"logs", training}).out.find("training in run") != std::string::npos;
  })) << Job(training).dump();

  // Load wants six replicas (target 1); the maximum is 2. The second replica has no free GPU:
  // it preempts the training job, which checkpoints and waits again.
  StartLoad();
  ASSERT_TRUE(WaitUntil(40000, [&] { return Desired() == 2 && Ready() == 2; }))
      << Show().dump() << Job(training).dump();
  EXPECT_EQ(JobState(training), "pending") << Job(training).dump();
  const Json first_run = Job(training)["runs"][0];
  EXPECT_EQ(first_run.value("state", ""), "preempted") << first_run.dump();
  EXPECT_NE(first_run.value("reason", "").find("serving comes before training"), std::string::npos)
      << first_run.dump();
  std::ifstream ckpt(c_.dir() + "/checkpoints/job-" + training + "/ckpt");
  std::string saved;
  std::getline(ckpt, saved);
  EXPECT_EQ(saved, "step-" + training + ".1") << "the training job got no checkpoint signal";
  // The new replica answers requests: the load reaches both replicas' jobs.
  std::string added;
  const Json scaled = Show();
  for (const Json& r : scaled["replicas"]) {
    const std::string id = std::to_string(r.value("job", static_cast<int64_t>(0)));
    if (id != guaranteed) added = id;
  }
  ASSERT_FALSE(added.empty()) << Show().dump();
  ASSERT_TRUE(WaitUntil(10000, [&] {
    const auto [status, body] = ServiceGet("/v/echo/hello");
    return status == 200 && body.find("\"" + added + "\"") != std::string::npos;
  })) << "the replica that preempted the training job does not serve";
  const Json load = StopLoad();
  ASSERT_TRUE(load.is_object());
  std::cout << "load while scaling up over training: " << load.dump() << "\n";
  EXPECT_EQ(load.value("failed", -1), 0) << load.dump();
  // The guaranteed replica was never a victim, nor stopped.
  EXPECT_EQ(JobState(guaranteed), "running");

  // No load: the service scales down to its minimum; the added replica drains and stops, and
  // the training job runs again from its checkpoint and finishes.
  ASSERT_TRUE(WaitUntil(30000, [&] { return Desired() == 1; })) << Show().dump();
  auto waited = c_.Corral({"wait", "--timeout", "40s", training});
  EXPECT_EQ(waited.exit_code, 0) << waited.out << waited.err << Job(training).dump();
  const Json done = Job(training);
  EXPECT_EQ(done.value("state", ""), "succeeded") << done.dump();
  EXPECT_EQ(done["runs"].size(), 2u) << done.dump();
  const std::string logs = c_.Corral({"logs", training}).out;
  EXPECT_NE(logs.find("resumed from step-" + training + ".1 in run " + training + ".2\n"),
            std::string::npos)
      << logs;
  EXPECT_EQ(JobState(added), "cancelled") << Job(added).dump();
  EXPECT_EQ(JobState(guaranteed), "running");
  // Removed, its last replica stops (no replica outlives the test's cluster).
  ASSERT_EQ(c_.Corral({"services", "rm", "echo"}).exit_code, 0);
  EXPECT_TRUE(WaitUntil(30000, [&] { return JobState(guaranteed) == "cancelled"; }))
      << Job(guaranteed).dump();
}

}  // namespace
}  // namespace corral::testing
