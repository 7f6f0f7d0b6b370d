// Interactive sessions against faults, each a SIGKILL (docs/interactive.md, "Faults"): the agent
// killed and not started again (the session's monitor ends it after the agent's lease, a batch
// job beside it lives on), the head killed and started again (the client reports the session
// lost and the session's processes end), and the agent killed and started again within its
// lease (the session is recovered like a batch job). A lost client is
// Interactive.ALostClientFreesItsSessionAfterTheInactiveLimit (interactive_test.cc).
//
// Processes are found by a marker in their environment (/proc/PID/environ): every process of a
// session carries its job's environment, the commands exec'd into it included.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kPython[] = "/usr/bin/python3";
constexpr int kLeaseS = 4;  // the agents' --lease: below the head's --down-after (6 s)

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The live processes whose environment holds `marker` (NAME=VALUE).
std::vector<pid_t> Marked(const std::string& marker) {
  std::vector<pid_t> out;
  const std::string want = marker + '\0';
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string env = ReadAll(e.path() / "environ");
    if (env.find('\0' + want) == std::string::npos && env.rfind(want, 0) != 0) continue;
    std::string stat = ReadAll(e.path() / "stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    out.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return out;
}

void KillMarked(const std::string& marker) {
  for (pid_t pid : Marked(marker)) kill(pid, SIGKILL);
}

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

class SessionFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) {
      if (const char* ci = getenv("CI"); ci != nullptr && std::string(ci) == "true") {
        FAIL() << "CI must run this: no /usr/bin/python3";
      }
      GTEST_SKIP() << "no /usr/bin/python3";
    }
    marker_ = "CORRAL_FAULT_TEST=" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name();
    // A long inactive limit: here sessions end by the faults, not by their clients' silence.
    cluster_ = std::make_unique<LocalCluster>(
        "sessfault", 1, 2, std::vector<std::string>{"--inactive-limit", "60s"},
        std::vector<std::string>{"--run-as", "agent", "--lease", std::to_string(kLeaseS)});
  }
  void TearDown() override {
    cluster_.reset();
    KillMarked(Marker("session"));
    KillMarked(Marker("batch"));
  }
  LocalCluster& c() { return *cluster_; }
  std::string Marker(const std::string& what) const { return marker_ + "-" + what; }
  std::map<std::string, std::string> Env() {
    return {{"CORRAL_ADDR", c().addr()},
            {"CORRAL_TOKEN", c().token()},
            {"CORRAL_CONFIG", c().dir() + "/no-config.json"}};
  }
  Json Job(const std::string& id) {
    Json j = Json::parse(c().Corral({"show", id, "-o", "json"}).out, nullptr, false);
    return j.is_object() && j.contains("job") ? j["job"] : j;
  }
  std::string State(const std::string& id) { return Job(id).value("state", ""); }
  // The id of the running job named `name`, once there is one.
  std::string RunningJob(const std::string& name) {
    std::string id;
    WaitUntil(20000, [&] {
      auto jobs =
          Json::parse(c().Corral({"jobs", "--state", "running", "-o", "json"}).out, nullptr, false);
      for (const auto& j : jobs.is_array() ? jobs : Json::array()) {
        if (j["spec"].value("name", "") == name) id = std::to_string(j["id"].get<uint64_t>());
      }
      return !id.empty();
    });
    return id;
  }
  // `corral run --pty` through a real terminal (pty_session.py's "hold"): a shell that has
  // started `nohup sleep 600`, which a hang-up does not end. Returns once it holds.
  std::unique_ptr<Daemon> StartHeldSession(const std::string& log) {
    std::vector<std::string> argv = {"/usr/bin/env", "TERM=xterm"};
    for (const auto& [k, v] : Env()) argv.push_back(k + "=" + v);
    argv.insert(argv.end(),
                {kPython, std::string(CORRAL_SOURCE_DIR) + "/tests/interactive/pty_session.py",
                 "hold", CorralBin(), "run", "--pty", "--gpus", "1", "--name", "held", "--env",
                 Marker("session"), "--"});
    auto client = std::make_unique<Daemon>(argv, log);
    EXPECT_TRUE(WaitUntil(30000, [&] { return ReadAll(log).find("holding") != std::string::npos; }))
        << ReadAll(log);
    return client;
  }
  // The line "client exited N" of a held session's log, once there is one.
  std::string ClientExit(const std::string& log, int timeout_ms) {
    std::string line;
    WaitUntil(timeout_ms, [&] {
      std::string text = ReadAll(log);
      size_t at = text.find("client exited ");
      if (at == std::string::npos) return false;
      line = text.substr(at, text.find(';', at) - at);
      return true;
    });
    return line;
  }

  std::string marker_;
  std::unique_ptr<LocalCluster> cluster_;
};

// The agent is SIGKILLed mid-session and never comes back: the session's monitor ends every
// process of the session (its allocation's, the shell's and what the shell left behind) once the
// agent's lease has run out; the batch job beside it is not touched. The head declares the node
// down: the session's job ends, failed with a reason naming the node (a batch job goes back to
// the queue), its GPUs are free, and its client, which learns it from the head, exits 255
// saying it lost the session.
TEST_F(SessionFaults, AnAgentGoneForGoodEndsItsSessionsAfterItsLease) {
  std::string batch = c().Submit({"--gpus", "1", "--env", Marker("batch"), "--", "sleep", "600"});
  const std::string log = c().dir() + "/held.log";
  auto client = StartHeldSession(log);
  const std::string id = RunningJob("held");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(WaitUntil(10000, [&] { return State(batch) == "running"; }));
  const size_t session_procs = Marked(Marker("session")).size();
  EXPECT_GE(session_procs, 3u) << "the allocation, the shell and its nohup'd sleep";
  const std::vector<pid_t> batch_procs = Marked(Marker("batch"));
  ASSERT_FALSE(batch_procs.empty());
  // And a command run inside the batch job (`corral exec`: no terminal, the job not touched);
  // its sleep without the batch job's marker.
  const std::string exec_log = c().dir() + "/exec.log";
  std::vector<std::string> exec_argv = {"/usr/bin/env"};
  for (const auto& [k, v] : Env()) exec_argv.push_back(k + "=" + v);
  exec_argv.insert(exec_argv.end(),
                   {"sh", "-c",
                    "\"$0\" exec " + batch +
                        " -- sh -c 'echo inside; exec env -u CORRAL_FAULT_TEST sleep 600' "
                        "</dev/null; echo \"client exited $?;\"",
                    CorralBin()});
  Daemon exec_client(exec_argv, exec_log);
  ASSERT_TRUE(WaitUntil(20000, [&] {
    return ReadAll(exec_log).find("inside") != std::string::npos;
  })) << ReadAll(exec_log);

  c().KillAgent(1, SIGKILL);
  const auto t0 = Clock::now();
  EXPECT_TRUE(WaitUntil((kLeaseS + 6) * 1000, [&] { return Marked(Marker("session")).empty(); }))
      << "session processes left: " << Marked(Marker("session")).size();
  const double gone_after = Since(t0);
  GTEST_LOG_(INFO) << "session processes gone " << gone_after << " s after the agent's SIGKILL";
  EXPECT_GE(gone_after, kLeaseS - 1.0) << "ended before the lease ran out";
  EXPECT_EQ(Marked(Marker("batch")), batch_procs) << "a batch job outlives its agent";

  // The node is declared down (--down-after 6 s): its runs end and their GPUs are free.
  EXPECT_TRUE(WaitUntil(20000, [&] {
    std::string s = State(id);
    return !s.empty() && s != "running";
  })) << Job(id).dump();
  const auto down = Clock::now();
  GTEST_LOG_(INFO) << "session job " << State(id) << " " << Since(t0) << " s after the SIGKILL";
  Json session = Job(id);
  EXPECT_EQ(session.value("state", ""), "failed")
      << "a session is not requeued: " << session.dump();
  const std::string reason = session["runs"].back().value("reason", "");
  EXPECT_NE(reason.find("node "), std::string::npos) << reason;
  EXPECT_NE(reason.find(" lost"), std::string::npos) << reason;
  EXPECT_EQ(State(batch), "pending") << "a batch job on the lost node is requeued";

  // Its client learns it at its next touch of the session (every 10 s at most, sooner when a
  // relayed request fails): 255, and why.
  EXPECT_EQ(ClientExit(log, 15000), "client exited 255") << ReadAll(log);
  GTEST_LOG_(INFO) << "client exited " << Since(down) << " s after the job ended";
  EXPECT_LT(Since(down), 12.0) << "bounded by the client's touch interval";
  EXPECT_NE(ReadAll(log).find("lost the session: job " + id + " is failed: node "),
            std::string::npos)
      << ReadAll(log);
  EXPECT_TRUE(Marked(Marker("session")).empty());
  // The exec client reads how the batch job stands as often as a session's client touches its
  // job: it learns that the job went back to the queue, whatever the head's relay to the dead
  // node still waits for.
  EXPECT_EQ(ClientExit(exec_log, 15000), "client exited 255") << ReadAll(exec_log);
  GTEST_LOG_(INFO) << "exec client out " << Since(down) << " s after the node was declared down";
  EXPECT_LT(Since(down), 12.0) << "bounded by the client's reading interval";
  EXPECT_NE(ReadAll(exec_log).find("lost the session: job " + batch + " is pending: node "),
            std::string::npos)
      << ReadAll(exec_log);
  c().StartAgent(1);  // it stops the batch job, which the head gave up with the node
}

// The head is SIGKILLed mid-session and started again: it has forgotten the session, so the
// client reports it lost (255) and gives the allocation back; every process of the session ends
// on the node and its GPU is free.
TEST_F(SessionFaults, AHeadKilledMidSessionLeavesNoProcessAndNoHeldGpu) {
  const std::string log = c().dir() + "/held.log";
  auto client = StartHeldSession(log);
  const std::string id = RunningJob("held");
  ASSERT_FALSE(id.empty());
  ASSERT_GE(Marked(Marker("session")).size(), 3u);

  c().KillHead(SIGKILL);
  const auto t0 = Clock::now();
  c().StartHead();
  EXPECT_EQ(ClientExit(log, 30000), "client exited 255") << ReadAll(log);
  EXPECT_NE(ReadAll(log).find("lost the session"), std::string::npos) << ReadAll(log);
  EXPECT_TRUE(WaitUntil(20000, [&] { return Marked(Marker("session")).empty(); }))
      << "session processes left: " << Marked(Marker("session")).size();
  EXPECT_TRUE(WaitUntil(20000, [&] { return State(id) == "cancelled"; })) << Job(id).dump();
  GTEST_LOG_(INFO) << "session ended " << Since(t0) << " s after the head's SIGKILL";
  // Its GPU is free: a job that needs both of the node's starts.
  std::string both = c().Submit({"--gpus", "2", "--", "true"});
  EXPECT_TRUE(WaitUntil(20000, [&] { return State(both) == "succeeded"; })) << Job(both).dump();
}

// The agent is SIGKILLed and started again within its lease: the session (its client gone, so
// nothing ends it) and a batch job both go on, the same processes, past the lease.
TEST_F(SessionFaults, AnAgentBackWithinItsLeaseKeepsItsSessions) {
  std::string batch = c().Submit({"--gpus", "1", "--env", Marker("batch"), "--", "sleep", "600"});
  std::vector<std::string> argv = {"/usr/bin/env"};
  for (const auto& [k, v] : Env()) argv.push_back(k + "=" + v);
  argv.insert(argv.end(), {CorralBin(), "run", "--gpus", "1", "--name", "kept", "--env",
                           Marker("session"), "--", "sleep", "600"});
  Daemon client(argv, c().dir() + "/kept-client.log");
  const std::string id = RunningJob("kept");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(WaitUntil(10000, [&] {
    return State(batch) == "running" && Marked(Marker("session")).size() >= 2 &&
           !Marked(Marker("batch")).empty();
  }));
  client.Kill(SIGKILL);  // the session now lives on its own until the head's inactive limit
  const std::vector<pid_t> session_procs = Marked(Marker("session"));
  const std::vector<pid_t> batch_procs = Marked(Marker("batch"));

  c().KillAgent(1, SIGKILL);
  c().StartAgent(1);
  std::this_thread::sleep_for(std::chrono::milliseconds((kLeaseS + 2) * 1000));
  EXPECT_EQ(Marked(Marker("session")), session_procs) << "the recovered session was ended";
  EXPECT_EQ(Marked(Marker("batch")), batch_procs);
  EXPECT_EQ(State(id), "running") << Job(id).dump();
  EXPECT_EQ(State(batch), "running") << Job(batch).dump();
  c().Corral({"cancel", id});
  c().Corral({"cancel", batch});
  EXPECT_TRUE(WaitUntil(
      20000, [&] { return Marked(Marker("session")).empty() && Marked(Marker("batch")).empty(); }));
}

}  // namespace
}  // namespace corral::testing
