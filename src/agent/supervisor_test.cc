#include "agent/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>

#include "agent/node/fake_node_env.h"
#include "agent/test_util.h"

namespace corral::agent {
namespace {

using testing::Alive;
using testing::ReadFileOr;
using testing::ShellOrder;
using testing::TempDir;
using testing::Touch;
using testing::WaitFor;

// `clock`: when grace periods end (null: the machine's wall clock).
std::unique_ptr<Supervisor> MakeSupervisor(const TempDir& state, const Clock* clock = nullptr) {
  return std::make_unique<Supervisor>(std::make_unique<PosixLauncher>(state.path(), "n1"), clock);
}

SyncResponse Desired(std::vector<RunOrder> runs) {
  SyncResponse r;
  r.head_epoch = 1;
  r.runs = std::move(runs);
  return r;
}

// A job that counts its starts and exits 5 once `go` exists.
RunOrder WaitingJob(const TempDir& dir, const std::string& run_id) {
  return ShellOrder(run_id, "echo start >> " + dir.path() + "/starts; while [ ! -f " + dir.path() +
                                "/go ]; do sleep 0.02; done; exit 5");
}

// Polls until a run exits; returns the reports then.
std::vector<RunReport> PollUntilExit(Supervisor& s) {
  EXPECT_TRUE(WaitFor([&] { return s.Poll(); }));
  return s.Report();
}

TEST(SupervisorTest, StartsReportsAndForgetsAfterTheHeadAcknowledges) {
  TempDir state, dir;
  auto sup = MakeSupervisor(state);
  RunOrder o = WaitingJob(dir, "1.0");
  sup->Reconcile(Desired({o}));
  sup->Reconcile(Desired({o}));  // a repeated answer changes nothing
  std::vector<RunReport> r = sup->Report();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].running);
  EXPECT_GT(r[0].started_at, 0);
  Touch(dir.path() + "/go");
  r = PollUntilExit(*sup);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].running);
  EXPECT_EQ(r[0].exit_code, 5);
  sup->Reconcile(Desired({}));
  EXPECT_TRUE(sup->Report().empty());
  sup->Reconcile(Desired({o}));  // even if the head lists it again: never a second start
  EXPECT_TRUE(sup->Report().empty());
  EXPECT_EQ(ReadFileOr(dir.path() + "/starts"), "start\n");
}

TEST(SupervisorTest, AnExitNotYetReportedIsKeptWhenTheHeadDropsTheRun) {
  TempDir state, dir;
  auto sup = MakeSupervisor(state);
  sup->Reconcile(Desired({ShellOrder("1.0", "exit 2")}));
  ASSERT_TRUE(WaitFor([&] { return sup->Poll(); }));
  sup->Reconcile(Desired({}));  // no Report() since the exit: the head has not seen it
  std::vector<RunReport> r = sup->Report();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].exit_code, 2);
  sup->Reconcile(Desired({}));
  EXPECT_TRUE(sup->Report().empty());
}

TEST(SupervisorTest, ReadoptsRunsAfterARestartAndNeverStartsThemTwice) {
  TempDir state, dir;
  RunOrder running = WaitingJob(dir, "1.0");
  RunOrder exits_while_down = ShellOrder(
      "2.0", "while [ ! -f " + dir.path() + "/go2 ]; do sleep 0.02; done; kill -TERM $$");
  RunReport first;
  {
    auto sup = MakeSupervisor(state);
    sup->Reconcile(Desired({running, exits_while_down}));
    ASSERT_EQ(sup->Report().size(), 2u);
    first = sup->Report()[0];
  }  // the agent dies; its jobs do not
  Touch(dir.path() + "/go2");
  ASSERT_TRUE(WaitFor([&] {
    return ReadFileOr(state.path() + "/runs/2.0.0/record").find("\nexit ") != std::string::npos;
  }));

  auto sup = MakeSupervisor(state);
  std::vector<RunReport> r = sup->Report();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], first);  // same run, same start: adopted, not restarted
  EXPECT_TRUE(r[0].running);
  EXPECT_FALSE(r[1].running);
  EXPECT_EQ(r[1].exit_code, -SIGTERM);
  sup->Reconcile(Desired({running, exits_while_down}));
  Touch(dir.path() + "/go");
  r = PollUntilExit(*sup);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(r[0].running);
  EXPECT_EQ(r[0].exit_code, 5);
  EXPECT_EQ(ReadFileOr(dir.path() + "/starts"), "start\n");
  sup->Reconcile(Desired({}));
  EXPECT_TRUE(sup->Report().empty());

  auto again = MakeSupervisor(state);  // released runs stay "started" across restarts
  again->Reconcile(Desired({running, exits_while_down}));
  EXPECT_TRUE(again->Report().empty());
  EXPECT_EQ(ReadFileOr(dir.path() + "/starts"), "start\n");
}

TEST(SupervisorTest, StopSignalsTheGroupThenKillsItAfterGraceIncludingGrandchildren) {
  TempDir state, dir;
  testing::FakeNodeClock clock;
  auto sup = MakeSupervisor(state, &clock.Wall());
  const std::string d = dir.path();
  // Records SIGTERM and ignores it; a background grandchild ignores SIGTERM too.
  RunOrder o = ShellOrder("1.0", "trap 'echo term >> " + d +
                                     "/got' TERM; "
                                     "sh -c 'trap \"\" TERM; echo $$ > " +
                                     d + "/child.tmp; mv " + d + "/child.tmp " + d +
                                     "/child; exec sleep 60' & "
                                     "while true; do sleep 0.02; done");
  o.stop_signal = SIGTERM;
  o.grace_ms = kMinute;
  sup->Reconcile(Desired({o}));
  ASSERT_TRUE(WaitFor([&] { return !ReadFileOr(d + "/child").empty(); }));
  int child = std::stoi(ReadFileOr(d + "/child"));
  ASSERT_TRUE(Alive(child));

  o.stop = true;
  sup->Reconcile(Desired({o}));
  ASSERT_TRUE(WaitFor([&] { return !ReadFileOr(d + "/got").empty(); }));  // the signal first
  EXPECT_FALSE(sup->Poll());
  EXPECT_TRUE(sup->Report()[0].running);  // it ignores SIGTERM: alive during the grace
  EXPECT_TRUE(Alive(child));
  clock.Advance(kMinute - 1);  // the grace is on the supervisor's clock, to the millisecond
  EXPECT_FALSE(sup->Poll());
  EXPECT_TRUE(sup->Report()[0].running) << "killed before its grace was over";
  clock.Advance(1);
  std::vector<RunReport> r = PollUntilExit(*sup);
  EXPECT_EQ(r[0].exit_code, -SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return !Alive(child); }, std::chrono::seconds(2)));
}

// The preemption handshake: the job reported its checkpoint during the grace, so the head's
// order comes again with no grace left, and the run is killed then, not a minute later.
TEST(SupervisorTest, AGraceCutShortWhileStoppingKillsTheRunAtOnce) {
  TempDir state, dir;
  auto sup = MakeSupervisor(state);
  const std::string d = dir.path();
  RunOrder o = ShellOrder("1.0", "trap 'echo term >> " + d + "/got' TERM; echo set > " + d +
                                     "/ready; while true; do sleep 0.02; done");
  o.grace_ms = 60000;
  sup->Reconcile(Desired({o}));
  // The stop only once the trap is set: a SIGTERM before it would end the shell at once.
  ASSERT_TRUE(WaitFor([&] { return !ReadFileOr(d + "/ready").empty(); }));
  o.stop = true;
  sup->Reconcile(Desired({o}));
  ASSERT_TRUE(WaitFor([&] { return !ReadFileOr(d + "/got").empty(); }));
  EXPECT_FALSE(sup->Poll());
  EXPECT_TRUE(sup->Report()[0].running);  // it ignores SIGTERM: alive in its minute of grace
  o.grace_ms = 0;
  sup->Reconcile(Desired({o}));
  std::vector<RunReport> r = PollUntilExit(*sup);  // WaitFor's bound is far below the minute
  EXPECT_EQ(r[0].exit_code, -SIGKILL);
}

// scancel --signal: each new signal the head counts reaches the run once, and it keeps running;
// a repeated order with the same count sends nothing again.
TEST(SupervisorTest, EachRequestedSignalIsSentOnceAndTheRunKeepsRunning) {
  TempDir state, dir;
  auto sup = MakeSupervisor(state);
  const std::string d = dir.path();
  RunOrder o = ShellOrder("1.0", "trap 'echo usr1 >> " + d + "/got' USR1; echo up > " + d +
                                     "/up; while [ ! -f " + d + "/go ]; do sleep 0.02; done");
  o.signals = 3;  // asked for before this run existed: not its
  o.signal = SIGUSR2;
  sup->Reconcile(Desired({o}));
  ASSERT_TRUE(WaitFor([&] { return !ReadFileOr(d + "/up").empty(); }));
  o.signals = 4;
  o.signal = SIGUSR1;
  sup->Reconcile(Desired({o}));
  ASSERT_TRUE(WaitFor([&] { return ReadFileOr(d + "/got") == "usr1\n"; }));
  sup->Reconcile(Desired({o}));  // the same count again
  sup->Reconcile(Desired({o}));
  o.signals = 5;
  sup->Reconcile(Desired({o}));
  ASSERT_TRUE(WaitFor([&] { return ReadFileOr(d + "/got") == "usr1\nusr1\n"; }));
  EXPECT_FALSE(sup->Poll());
  EXPECT_TRUE(sup->Report()[0].running) << "a signal is not a stop";
  Touch(d + "/go");
  std::vector<RunReport> r = PollUntilExit(*sup);
  EXPECT_EQ(r[0].exit_code, 0);
  EXPECT_EQ(ReadFileOr(d + "/got"), "usr1\nusr1\n") << "two signals asked for, two sent";
}

// A peer of an elastic run lost with its node: the replica's torchrun workers (the processes
// whose environment sets TORCHELASTIC_RUN_ID) are killed, once per loss; the replica's main
// process (torchrun, here the shell that waits for its worker) is not, and the run goes on.
TEST(SupervisorTest, ALostPeerKillsTheTorchrunWorkersAndSparesTheReplica) {
  TempDir state, dir;
  auto sup = MakeSupervisor(state);
  const std::string d = dir.path();
  const std::string worker = "TORCHELASTIC_RUN_ID=job sh -c 'echo $$ >> " + d +
                             "/workers; exec sleep 60' & wait $!; echo \"worker $?\" >> " + d +
                             "/exits; ";
  RunOrder o =
      ShellOrder("1.0", worker + worker + "while [ ! -f " + d + "/go ]; do sleep 0.02; done");
  o.peers_lost = 2;  // lost before this run existed: not its
  sup->Reconcile(Desired({o}));
  ASSERT_TRUE(WaitFor([&] { return !ReadFileOr(d + "/workers").empty(); }));
  sup->Reconcile(Desired({o}));
  EXPECT_EQ(ReadFileOr(d + "/exits"), "");
  o.peers_lost = 3;
  sup->Reconcile(Desired({o}));
  ASSERT_TRUE(WaitFor([&] { return ReadFileOr(d + "/exits") == "worker 137\n"; }));
  auto started = [&] {
    const std::string pids = ReadFileOr(d + "/workers");
    return std::count(pids.begin(), pids.end(), '\n');
  };
  ASSERT_TRUE(WaitFor([&] { return started() == 2; }));  // the second worker
  sup->Reconcile(Desired({o}));  // the same count again: the second worker lives
  EXPECT_FALSE(sup->Poll());
  EXPECT_TRUE(sup->Report()[0].running) << "the replica itself goes on";
  EXPECT_EQ(ReadFileOr(d + "/exits"), "worker 137\n");
  o.peers_lost = 4;
  sup->Reconcile(Desired({o}));
  ASSERT_TRUE(WaitFor([&] { return ReadFileOr(d + "/exits") == "worker 137\nworker 137\n"; }));
  Touch(d + "/go");
  std::vector<RunReport> r = PollUntilExit(*sup);
  EXPECT_EQ(r[0].exit_code, 0);
}

TEST(SupervisorTest, ARunTheHeadNoLongerListsIsTerminated) {
  TempDir state, dir;
  auto sup = MakeSupervisor(state);
  sup->Reconcile(Desired({ShellOrder("1.0", "sleep 60")}));
  sup->Reconcile(Desired({}));
  std::vector<RunReport> r = PollUntilExit(*sup);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].exit_code, -SIGTERM);
  EXPECT_EQ(sup->RunningCount(), 0);
}

// The head waits for each stopped run's exit before it frees the run's GPUs: a stop for a run
// this agent never started starts nothing and is answered at once as ended by the stop.
TEST(SupervisorTest, AStopOrderForARunNeverStartedStartsNothingAndIsAnsweredAsStopped) {
  TempDir state, dir;
  auto sup = MakeSupervisor(state);
  RunOrder o = WaitingJob(dir, "1.0");
  o.stop = true;
  sup->Reconcile(Desired({o}));
  EXPECT_TRUE(sup->Poll()) << "the agent should sync at once to say so";
  std::vector<RunReport> r = sup->Report();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].running);
  EXPECT_EQ(r[0].exit_code, -SIGTERM);
  EXPECT_EQ(r[0].error, "stopped before it started");
  EXPECT_EQ(sup->RunningCount(), 0);
  sup->Reconcile(Desired({}));  // acknowledged: forgotten
  EXPECT_TRUE(sup->Report().empty());
  sup->Reconcile(Desired({o}));  // listed again: already answered, never started
  EXPECT_TRUE(sup->Report().empty());
  EXPECT_EQ(ReadFileOr(dir.path() + "/starts"), "");
}

TEST(SupervisorTest, StopAllFencesEveryRun) {
  TempDir state, dir;
  auto sup = MakeSupervisor(state);
  sup->Reconcile(Desired({ShellOrder("1.0", "sleep 60"), ShellOrder("2.0", "sleep 60")}));
  EXPECT_EQ(sup->StopAll(), 2);
  ASSERT_TRUE(WaitFor([&] {
    sup->Poll();
    return sup->RunningCount() == 0;
  }));
  for (const RunReport& r : sup->Report()) {
    EXPECT_EQ(r.exit_code, -SIGTERM);
    EXPECT_TRUE(r.fenced) << "the head must learn the agent stopped it, not the job";
  }
}

TEST(SupervisorTest, ALaunchFailureIsReportedAsAnExit) {
  TempDir state;
  auto sup = MakeSupervisor(state);
  RunOrder o = ShellOrder("1.0", "");
  o.command.clear();
  sup->Reconcile(Desired({o}));
  std::vector<RunReport> r = sup->Report();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].running);
  EXPECT_EQ(r[0].exit_code, kExitCannotExec);
}

// The tasks' environments are derived from the order's layout when the run starts: a run's
// own variables reach it, and an order whose layout cannot give them starts nothing and says
// why.
TEST(SupervisorTest, ARunsEnvironmentIsDerivedFromItsLayoutWhenItStarts) {
  TempDir state, out;
  auto sup = MakeSupervisor(state);
  RunOrder o = ShellOrder("4.1", "echo $CORRAL_JOB_ID $RANK $WORLD_SIZE > " + out.path() + "/env");
  o.job_id = 4;
  o.attempt = 1;
  o.layout.job_id = 4;
  o.layout.attempt = 1;
  o.layout.owner = "ana";
  o.layout.placement = {{"n1", {0}}, {"n1", {1}}};
  o.layout.replica_hosts = {"127.0.0.1", "127.0.0.1"};
  o.layout.master_port = 29500;
  o.replica = 1;
  RunOrder bad = o;
  bad.run_id = "5.1";
  bad.job_id = bad.layout.job_id = 5;
  bad.replica = 2;  // the layout has no replica 2
  sup->Reconcile(Desired({o, bad}));
  std::vector<RunReport> r = PollUntilExit(*sup);
  ASSERT_TRUE(WaitFor([&] { return ReadFileOr(out.path() + "/env", "") == "4 1 2\n"; }))
      << ReadFileOr(out.path() + "/env", "(none)");
  r = sup->Report();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].run_id, "5.1");
  EXPECT_FALSE(r[1].running);
  EXPECT_EQ(r[1].exit_code, kExitCannotExec);
  EXPECT_NE(r[1].error.find("layout.placement"), std::string::npos) << r[1].error;
}

}  // namespace
}  // namespace corral::agent
