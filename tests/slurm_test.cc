// Slurm compatibility end to end: shims installed into a temp dir, run as `sbatch`, `squeue`,
// `sacct`, ... against a real local cluster (a head and two agents on loopback).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> EnvLines(const std::string& text) {
  std::map<std::string, std::string> env;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos && line.rfind("SLURM", 0) == 0)
      env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

class SlurmShims : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LocalCluster("slurm", 2, 4);
    shims_ = cluster_->dir() + "/shims";
    work_ = cluster_->dir() + "/work";
    fs::create_directories(work_);
    auto r = cluster_->Corral({"slurm", "install-shims", shims_});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  // Runs a shell command line in the work dir with the shims first on PATH.
  // `token`: another user's (default: the admin's).
  CommandResult Sh(const std::string& line, const std::string& token = "") const {
    return RunCommand({"/bin/sh", "-c", "cd " + work_ + " && " + line},
                      {{"CORRAL_ADDR", cluster_->addr()},
                       {"CORRAL_TOKEN", token.empty() ? cluster_->token() : token},
                       {"CORRAL_CONFIG", cluster_->dir() + "/no-such-config.json"},
                       {"PATH", shims_ + ":/usr/local/bin:/usr/bin:/bin"}});
  }

  std::string SbatchId(const std::string& args) const {
    auto r = Sh("sbatch " + args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.out, m, std::regex("^Submitted batch job ([0-9]+)\n$")))
        << r.out;
    return m.size() > 1 ? m[1].str() : "";
  }

  void Wait(const std::string& id) const {
    auto w = cluster_->Corral({"wait", "--timeout", "60s", id});
    (void)w;  // a failed job is a result here, not an error
  }

  static LocalCluster* cluster_;
  static std::string shims_;
  static std::string work_;
};
LocalCluster* SlurmShims::cluster_ = nullptr;
std::string SlurmShims::shims_;
std::string SlurmShims::work_;

TEST_F(SlurmShims, InstallsEveryCommandAsALinkToCorral) {
  for (const char* name : {"sbatch", "srun", "squeue", "scancel", "sacct", "scontrol", "sinfo",
                           "sacctmgr", "sshare", "sprio"}) {
    fs::path p = fs::path(shims_) / name;
    ASSERT_TRUE(fs::is_symlink(p)) << p;
    EXPECT_EQ(fs::canonical(p), fs::canonical(CorralBin()));
  }
  auto h = Sh("scontrol show hostnames 'node[01-02],gpu7'");
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.out, "node01\nnode02\ngpu7\n");
}

TEST_F(SlurmShims, BatchScriptOnTwoNodesSeesTheAllocationAndWritesItsOutputPattern) {
  std::ofstream(work_ + "/env.sh") << "#!/bin/bash\n"
                                      "#SBATCH --job-name=envcheck\n"
                                      "#SBATCH -N 2\n"
                                      "#SBATCH --gpus-per-node=4\n"
                                      "#SBATCH --ntasks-per-node=2\n"
                                      "#SBATCH --cpus-per-task=1\n"
                                      "#SBATCH --output=out-%x-%j.txt\n"
                                      "#SBATCH --time=5\n"
                                      "#SBATCH --wckey=END\n"
                                      "echo \"hello from batch $1\"\n"
                                      "env | grep ^SLURM | sort\n";
  auto r = Sh("sbatch env.sh arg1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("sbatch: warning: ignoring unknown option(s): --wckey=END"),
            std::string::npos)
      << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("Submitted batch job ([0-9]+)"))) << r.out;
  const std::string id = m[1].str();
  Wait(id);
  auto acct = Sh("sacct -j " + id + " -o JobID,State,ExitCode --parsable2 -n");
  EXPECT_EQ(acct.out, id + "|COMPLETED|0:0\n" + id + ".batch|COMPLETED|0:0\n") << acct.err;

  const std::string out = ReadAll(work_ + "/out-envcheck-" + id + ".txt");
  EXPECT_NE(out.find("hello from batch arg1\n"), std::string::npos) << out;
  auto env = EnvLines(out);
  EXPECT_EQ(env["SLURM_JOB_ID"], id);
  EXPECT_EQ(env["SLURM_JOB_NAME"], "envcheck");
  EXPECT_EQ(env["SLURM_NNODES"], "2");
  EXPECT_EQ(env["SLURM_JOB_NUM_NODES"], "2");
  EXPECT_EQ(env["SLURM_NTASKS"], "4");
  EXPECT_EQ(env["SLURM_NTASKS_PER_NODE"], "2(x2)");
  EXPECT_EQ(env["SLURM_CPUS_PER_TASK"], "1");
  EXPECT_EQ(env["SLURM_JOB_NODELIST"], "node[1-2]");
  EXPECT_EQ(env["SLURM_NODELIST"], "node[1-2]");
  EXPECT_EQ(env["SLURM_SUBMIT_DIR"], work_);
  EXPECT_EQ(env["SLURM_PROCID"], "0");
  EXPECT_EQ(env.count("SLURM_ARRAY_TASK_ID"), 0u);
  // The script ran once, on the allocation's first node.
  size_t runs = 0;
  for (size_t p = out.find("hello from batch"); p != std::string::npos;
       p = out.find("hello from batch", p + 1)) {
    ++runs;
  }
  EXPECT_EQ(runs, 1u);
}

TEST_F(SlurmShims, ArrayElementsWriteTheirOwnFiles) {
  const std::string id = SbatchId(
      "--array=0-2 -o 'arr-%A_%a.out' --wrap 'echo element $SLURM_ARRAY_TASK_ID of "
      "$SLURM_ARRAY_JOB_ID'");
  ASSERT_FALSE(id.empty());
  Wait(id);
  for (int i = 0; i < 3; ++i) {
    std::string f = work_ + "/arr-" + id + "_" + std::to_string(i) + ".out";
    EXPECT_EQ(ReadAll(f), "element " + std::to_string(i) + " of " + id + "\n") << f;
  }
  auto acct = Sh("sacct -j " + id + " -o JobID,State -X -P -n");
  EXPECT_EQ(acct.out, id + "_0|COMPLETED\n" + id + "_1|COMPLETED\n" + id + "_2|COMPLETED\n");
}

TEST_F(SlurmShims, FailureExitCodeAndCancellationInSacct) {
  const std::string failed = SbatchId("-o fail.out --wrap 'echo oops >&2; exit 3'");
  Wait(failed);
  auto acct = Sh("sacct -j " + failed + " -o JobID,State,ExitCode --parsable2 -X");
  EXPECT_EQ(acct.out, "JobID|State|ExitCode\n" + failed + "|FAILED|3:0\n") << acct.err;
  EXPECT_EQ(ReadAll(work_ + "/fail.out"), "oops\n");

  auto p = Sh("sbatch --parsable -J sleeper -o /dev/null --wrap 'sleep 60'");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string id = p.out.substr(0, p.out.find('\n'));
  ASSERT_TRUE(WaitUntil(20000, [&] {
    return Sh("squeue -h -j " + id + " -o '%i %t %j'").out == id + " R sleeper\n";
  }));
  auto q = Sh("squeue");
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out.substr(0, q.out.find('\n')),
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES "
            "NODELIST(REASON)");
  EXPECT_NE(q.out.find(" sleeper "), std::string::npos) << q.out;
  auto c = Sh("scancel " + id);
  EXPECT_EQ(c.exit_code, 0) << c.err;
  ASSERT_TRUE(WaitUntil(
      20000, [&] { return Sh("sacct -j " + id + " -o State -n -X -P").out == "CANCELLED\n"; }));
  EXPECT_EQ(Sh("squeue -h -t all -j " + id + " -o %t").out, "CA\n");
  EXPECT_EQ(("\n" + Sh("squeue -h -o %i").out).find("\n" + id + "\n"), std::string::npos);
  auto missing = Sh("scancel 999999");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("scancel: error: Kill job error on job id 999999"), std::string::npos)
      << missing.err;
}

TEST_F(SlurmShims, BadOptionsSubmitNothing) {
  auto before = cluster_->Corral({"jobs", "--all", "-o", "json"});
  size_t count = Json::parse(before.out).size();
  auto r = Sh("sbatch --time=abc --wrap true");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "sbatch: error: option --time: got \"abc\", want MINUTES, MM:SS, HH:MM:SS, D-HH, "
            "D-HH:MM, D-HH:MM:SS or UNLIMITED, e.g. 90 or 1-12:00:00\n");
  auto strict = Sh("sbatch --strict --wckey=x --wrap true");
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.err.find("unknown option(s): --wckey=x"), std::string::npos);
  auto after = cluster_->Corral({"jobs", "--all", "-o", "json"});
  EXPECT_EQ(Json::parse(after.out).size(), count);
}

TEST_F(SlurmShims, SrunOutsideAnAllocationRunsTheTasksAndReturnsTheCode) {
  auto r = Sh("srun -n 2 sh -c 'echo task $SLURM_PROCID; exit 0'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("task 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("task 1"), std::string::npos) << r.out;
  auto f = Sh("srun sh -c 'exit 5'");
  EXPECT_EQ(f.exit_code, 5) << f.err;
}

TEST_F(SlurmShims, SrunInsideAOneNodeAllocationRunsAStepHere) {
  std::ofstream(work_ + "/step.sh") << "#!/bin/bash\n"
                                       "#SBATCH --ntasks-per-node=2\n"
                                       "#SBATCH -o step-%j.out\n"
                                       "srun -l sh -c 'echo rank $SLURM_PROCID of $SLURM_NTASKS "
                                       "step $SLURM_STEP_ID'\n"
                                       "srun -n 1 --output=task-%j-%t.out sh -c 'echo solo'\n"
                                       "srun -n 2 sh -c 'exit $((SLURM_PROCID * 4))'\n";
  const std::string id = SbatchId("step.sh");
  Wait(id);
  const std::string out = ReadAll(work_ + "/step-" + id + ".out");
  EXPECT_NE(out.find("0: rank 0 of 2 step 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("1: rank 1 of 2 step 0\n"), std::string::npos) << out;
  EXPECT_EQ(ReadAll(work_ + "/task-" + id + "-0.out"), "solo\n");
  // The last step's worst task exited 4: so did the script, and the job.
  auto acct = Sh("sacct -j " + id + " -o State,ExitCode -X -P -n");
  EXPECT_EQ(acct.out, "FAILED|4:0\n") << out;
}

// srun on both nodes of a batch job: a job step through the head, whose tasks run on each
// node's agent inside the allocation, with Slurm's step variables, output labelled by rank or
// written per task, and the worst task's code as srun's.
TEST_F(SlurmShims, SrunInsideATwoNodeAllocationStartsAStepOnBothNodes) {
  std::ofstream(work_ + "/multi.sh")
      << "#!/bin/bash\n"
         "#SBATCH -N 2\n"
         "#SBATCH --gpus-per-node=4\n"
         "#SBATCH --ntasks-per-node=2\n"
         "#SBATCH -o multi-%j.out\n"
         "srun -l sh -c 'echo rank=$SLURM_PROCID node=$SLURM_NODEID local=$SLURM_LOCALID "
         "ntasks=$SLURM_NTASKS step=$SLURM_STEP_ID on=$CORRAL_NODE gpus=$CUDA_VISIBLE_DEVICES'\n"
         "srun -N 2 -n 3 sh -c 'exit $((SLURM_PROCID == 2 ? 3 : 0))'\n"
         "echo \"second step exited $?\"\n"
         "srun -N2 --ntasks-per-node=1 --output=multi-%j-%t.txt sh -c 'echo from $SLURM_NODEID "
         "step $SLURM_STEP_ID'\n";
  const std::string id = SbatchId("multi.sh");
  Wait(id);
  const std::string out = ReadAll(work_ + "/multi-" + id + ".out");
  std::map<std::string, std::string> on_node;  // SLURM_NODEID -> the agent that ran it
  for (int rank = 0; rank < 4; ++rank) {
    std::smatch m;
    std::regex line(std::to_string(rank) + ": rank=" + std::to_string(rank) +
                    " node=([01]) local=" + std::to_string(rank % 2) +
                    " ntasks=4 step=0 on=(node[12]) gpus=0,1,2,3\n");
    ASSERT_TRUE(std::regex_search(out, m, line)) << "rank " << rank << " in:\n" << out;
    EXPECT_EQ(m[1].str(), rank < 2 ? "0" : "1");
    on_node[m[1].str()] = m[2].str();
  }
  EXPECT_EQ(on_node.size(), 2u);
  EXPECT_NE(on_node["0"], on_node["1"]) << "the step's two nodes are the allocation's two\n" << out;
  EXPECT_NE(out.find("second step exited 3\n"), std::string::npos) << out;
  EXPECT_EQ(ReadAll(work_ + "/multi-" + id + "-0.txt"), "from 0 step 2\n");
  EXPECT_EQ(ReadAll(work_ + "/multi-" + id + "-1.txt"), "from 1 step 2\n");
  auto acct = Sh("sacct -j " + id + " -o State,ExitCode -X -P -n");
  EXPECT_EQ(acct.out, "COMPLETED|0:0\n") << out;
}

// -N 2 is two machines even when both "nodes" would fit one: srun -l over them numbers the
// nodes 0 and 1 on two different agents, and the allocation's node list names both.
TEST_F(SlurmShims, TwoNodesThatFitOneMachineAreStillTwoMachines) {
  std::ofstream(work_ + "/spread.sh")
      << "#!/bin/bash\n"
         "#SBATCH -N 2\n"
         "#SBATCH --gpus-per-node=1\n"
         "#SBATCH -o spread-%j.out\n"
         "echo list=$SLURM_JOB_NODELIST\n"
         "srun -l sh -c 'echo node=$SLURM_NODEID on=$SLURMD_NODENAME'\n";
  const std::string id = SbatchId("spread.sh");
  Wait(id);
  const std::string out = ReadAll(work_ + "/spread-" + id + ".out");
  EXPECT_NE(out.find("list=node[1-2]\n"), std::string::npos) << out;
  std::map<std::string, std::string> on_node;  // SLURM_NODEID -> the agent that ran it
  std::regex line("([01]): node=([01]) on=(node[12])\n");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) {
    EXPECT_EQ((*it)[1].str(), (*it)[2].str()) << out;  // one task per node: rank = node id
    on_node[(*it)[2].str()] = (*it)[3].str();
  }
  ASSERT_EQ(on_node.size(), 2u) << out;
  EXPECT_NE(on_node["0"], on_node["1"]) << out;

  // The native form: corral submit --spread.
  auto sub = cluster_->Corral(
      {"submit", "--parsable", "--spread", "--replicas", "2", "--gpus", "1", "--", "true"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string native = sub.out.substr(0, sub.out.find_first_of("\n;"));
  Wait(native);
  auto show = cluster_->Corral({"show", native, "-o", "json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  Json job = Json::parse(show.out);
  EXPECT_EQ(job["spec"]["max_replicas_per_node"], 1) << show.out;
  const Json& placement = job["runs"].back()["placement"];
  ASSERT_EQ(placement.size(), 2u) << show.out;
  EXPECT_NE(placement[0]["node"], placement[1]["node"]) << show.out;
}

// scontrol hold keeps a job pending (squeue says JobHeldUser) until scontrol release; a job
// that runs `scontrol requeue $SLURM_JOB_ID` (as submitit does) goes back to the queue under
// the same id and runs again.
// A signal srun gets reaches its step's tasks on both nodes (through the head and their agents).
TEST_F(SlurmShims, SrunForwardsItsSignalsToTheStepsTasks) {
  std::ofstream(work_ + "/fwd.sh")
      << "#!/bin/bash\n"
         "#SBATCH -N 2\n"
         "#SBATCH --gpus-per-node=4\n"
         "#SBATCH -o fwd-%j.out\n"
         "srun -N2 -n2 sh -c 'trap \"echo got usr1 on $SLURM_PROCID; exit 0\" USR1; "
         "touch fwd-$SLURM_JOB_ID.$SLURM_PROCID; while :; do sleep 0.05; done' &\n"
         "pid=$!\n"
         "while [ ! -f fwd-$SLURM_JOB_ID.0 ] || [ ! -f fwd-$SLURM_JOB_ID.1 ]; do sleep 0.05; done\n"
         "kill -USR1 $pid\n"
         "wait $pid\n"
         "echo \"srun exited $?\"\n";
  const std::string id = SbatchId("fwd.sh");
  Wait(id);
  const std::string out = ReadAll(work_ + "/fwd-" + id + ".out");
  EXPECT_NE(out.find("got usr1 on 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("got usr1 on 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("srun exited 0\n"), std::string::npos) << out;
}

TEST_F(SlurmShims, ScontrolHoldReleaseAndRequeueFromInsideTheJob) {
  std::ofstream(work_ + "/held.sh") << "#!/bin/bash\n#SBATCH -o held-%j.out\necho ran\n";
  const std::string held = SbatchId("--hold held.sh");
  auto q = Sh("squeue -h -j " + held + " -o '%t %r'");
  EXPECT_EQ(q.out, "PD JobHeldUser\n") << q.err;
  auto rel = Sh("scontrol release " + held);
  EXPECT_EQ(rel.exit_code, 0) << rel.err;
  Wait(held);
  EXPECT_EQ(ReadAll(work_ + "/held-" + held + ".out"), "ran\n");
  auto bad = Sh("scontrol hold " + held);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("only pending jobs can be held"), std::string::npos) << bad.err;

  std::ofstream(work_ + "/requeue.sh")
      << "#!/bin/bash\n"
         "#SBATCH -o requeue-%j.out\n"
         "#SBATCH --open-mode=append\n"
         "if [ ! -f requeued-$SLURM_JOB_ID ]; then\n"
         "  touch requeued-$SLURM_JOB_ID\n"
         "  echo first run\n"
         "  env -u CORRAL_TOKEN -u CORRAL_ADDR scontrol requeue $SLURM_JOB_ID || echo requeue "
         "failed\n"
         "  sleep 30\n"
         "fi\n"
         "echo second run\n";
  const std::string id = SbatchId("requeue.sh");
  Wait(id);
  auto show = cluster_->Corral({"show", id, "-o", "json"});
  Json job = Json::parse(show.out);
  EXPECT_EQ(job["state"], "succeeded") << show.out;
  EXPECT_EQ(job["runs"].size(), 2u) << show.out;
  const std::string out = ReadAll(work_ + "/requeue-" + id + ".out");
  EXPECT_NE(out.find("first run\n"), std::string::npos) << out;
  EXPECT_NE(out.find("second run\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("requeue failed"), std::string::npos) << out;
}

// scancel -b --signal: the running batch script gets the signal and keeps running.
TEST_F(SlurmShims, ScancelSignalReachesTheRunningJobWhichKeepsRunning) {
  std::ofstream(work_ + "/trap.sh") << "#!/bin/bash\n"
                                       "#SBATCH -o trap-%j.out\n"
                                       "trap 'echo got usr1 >> trap-$SLURM_JOB_ID.got' USR1\n"
                                       "touch trap-$SLURM_JOB_ID.up\n"
                                       "while [ ! -f trap-$SLURM_JOB_ID.go ]; do sleep 0.05; done\n"
                                       "echo done\n";
  const std::string id = SbatchId("trap.sh");
  ASSERT_TRUE(WaitUntil(30000, [&] { return fs::exists(work_ + "/trap-" + id + ".up"); }));
  auto sig = Sh("scancel -b --signal=USR1 " + id);
  EXPECT_EQ(sig.exit_code, 0) << sig.err;
  ASSERT_TRUE(WaitUntil(10000, [&] {
    return ReadAll(work_ + "/trap-" + id + ".got") == "got usr1\n";
  })) << ReadAll(work_ + "/trap-" + id + ".got");
  auto q = Sh("squeue -h -j " + id + " -o %t");
  EXPECT_EQ(q.out, "R\n") << "a signal does not stop the job";
  std::ofstream(work_ + "/trap-" + id + ".go") << "";
  Wait(id);
  // The script's children got it too (its `sleep` died of it, as under Slurm's -b); the
  // script trapped it and went on to the end.
  const std::string out = ReadAll(work_ + "/trap-" + id + ".out");
  EXPECT_EQ(out.substr(out.size() >= 5 ? out.size() - 5 : 0), "done\n") << out;
  auto late = Sh("scancel -b --signal=USR1 " + id);
  EXPECT_EQ(late.exit_code, 1) << "an ended job cannot be signalled";
}

TEST_F(SlurmShims, SinfoListsTheNodes) {
  auto s = Sh("sinfo");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out.substr(0, s.out.find('\n')), "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST");
  EXPECT_NE(s.out.find("node"), std::string::npos) << s.out;
  auto l = Sh("sinfo -N -l");
  EXPECT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find("node1 "), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("node2 "), std::string::npos) << l.out;
}

// A pending job behind a running one with a time limit gets an estimated start at that
// limit's end, on the nodes it frees: in the API's job JSON, `corral jobs --start`,
// `corral show` and `squeue --start`.
TEST_F(SlurmShims, PendingJobGetsAnEstimatedStartBehindALimitedRun) {
  auto first =
      Sh("sbatch --parsable -N 2 --gres=gpu:4 -t 10 -J holder -o /dev/null "
         "--wrap 'sleep 300'");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string holder = first.out.substr(0, first.out.find('\n'));
  auto second =
      Sh("sbatch --parsable -N 2 --gres=gpu:4 -t 5 -J waiter -o /dev/null "
         "--wrap 'sleep 1'");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const std::string waiter = second.out.substr(0, second.out.find('\n'));
  ASSERT_TRUE(
      WaitUntil(20000, [&] { return Sh("squeue -h -j " + holder + " -o %t").out == "R\n"; }));
  // The head refreshes estimates every few seconds.
  Json job;
  ASSERT_TRUE(WaitUntil(20000, [&] {
    auto r = cluster_->Corral({"show", "-o", "json", waiter});
    if (r.exit_code != 0) return false;
    job = Json::parse(r.out, nullptr, false);
    if (job.contains("job")) job = job["job"];
    return job.is_object() && job.value("estimated_start", int64_t{0}) > 0;
  })) << job.dump();
  auto h = cluster_->Corral({"show", "-o", "json", holder});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  Json held = Json::parse(h.out);
  if (held.contains("job")) held = held["job"];
  // At the holder's ten-minute limit's end at the latest; earlier where the owner's history
  // predicts it shorter (the scheduler's own predicted remaining time).
  int64_t start = job["estimated_start"].get<int64_t>();
  int64_t holder_submitted = held["submitted_at"].get<int64_t>();
  EXPECT_GT(start, holder_submitted);
  EXPECT_LE(start, holder_submitted + 10 * 60'000 + 30'000);
  EXPECT_EQ(job["estimated_nodes"].size(), 2u) << job.dump();
  // What the time rests on: the holder's limit (high), or its owner's history (medium from
  // four ended jobs or more, low from fewer).
  const std::string confidence = job.value("estimate_confidence", "");
  EXPECT_TRUE(confidence == "high" || confidence == "medium" || confidence == "low") << job.dump();

  auto q = Sh("squeue --start -h -o '%i %t %S %Y %~'");
  EXPECT_EQ(q.exit_code, 0) << q.err;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(
      q.out, m,
      std::regex(waiter + " PD [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8} [^ ]+ (high|medium|low)\n")))
      << q.out;
  // squeue --start's own columns: Slurm's, and the confidence before the reason.
  auto plain = Sh("squeue --start");
  EXPECT_NE(plain.out.find("CONFIDENCE NODELIST(REASON)"), std::string::npos) << plain.out;
  // A line of its own: the id may also end a timestamp's seconds ("...:21 ").
  EXPECT_FALSE(std::regex_search(q.out, std::regex("(^|\n)" + holder + " ")))
      << "--start lists pending jobs only: " << q.out;
  auto table = cluster_->Corral({"jobs", "--start"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("START"), std::string::npos) << table.out;
  EXPECT_TRUE(std::regex_search(table.out, std::regex(" (now|in [0-9hms]+) "))) << table.out;
  auto show = cluster_->Corral({"show", waiter});
  EXPECT_NE(show.out.find("estimated start:"), std::string::npos) << show.out;
  // (The estimate may have been refreshed since: the holder outliving its prediction.)
  EXPECT_TRUE(std::regex_search(show.out, std::regex("(high|medium|low) confidence \\(")))
      << show.out;
  EXPECT_EQ(Sh("scancel " + holder + " " + waiter).exit_code, 0);
}

// sinfo's -o/-O formats, and accounts: a user's queues are their accounts (sacctmgr), and
// `sbatch -A` puts the job in that queue; an account that is no queue submits nothing.
TEST_F(SlurmShims, SinfoFormatsAndAccountsThatSelectTheQueue) {
  auto parts = Sh("sinfo -h -o %P");
  ASSERT_EQ(parts.exit_code, 0) << parts.err;
  EXPECT_EQ(parts.out.substr(0, parts.out.find('\n')), "default*") << parts.out;
  auto nodes = Sh("sinfo -N -h -o '%N %.3D %G' -p default");
  EXPECT_EQ(nodes.out, "node1   1 gpu:SimGPU:4\nnode2   1 gpu:SimGPU:4\n")
      << nodes.out << nodes.err;  // the GPU model is Slurm's GRES type
  auto wide = Sh("sinfo -h -O partition:12,nodes:.6 -p default");
  EXPECT_EQ(wide.out, "default*         2\n") << wide.out << wide.err;
  auto bad = Sh("sinfo -o '%P %W'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown field %W"), std::string::npos) << bad.err;

  ASSERT_EQ(cluster_->Corral({"queues", "set", "acctq", "--weight", "2"}).exit_code, 0);
  auto token = cluster_->Corral({"token", "create", "--user", "alice"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  const std::string alice = token.out.substr(0, token.out.find('\n'));
  auto accounts = Sh("sacctmgr -n -s list user alice format=account%20", alice);
  ASSERT_EQ(accounts.exit_code, 0) << accounts.err;
  EXPECT_NE(accounts.out.find("               acctq \n"), std::string::npos) << accounts.out;
  EXPECT_NE(accounts.out.find("             default \n"), std::string::npos) << accounts.out;

  auto sub = Sh("sbatch --parsable -A acctq -H -o /dev/null --wrap true", alice);
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = sub.out.substr(0, sub.out.find('\n'));
  EXPECT_EQ(Sh("squeue -h -j " + id + " -o %P").out, "acctq\n");
  auto unknown = Sh("sbatch --parsable -A nosuch -o /dev/null --wrap true", alice);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("Invalid account"), std::string::npos) << unknown.err;
  auto both = Sh("sbatch -A acctq -p default -o /dev/null --wrap true", alice);
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("option --account"), std::string::npos) << both.err;
  EXPECT_EQ(Sh("squeue -h -u alice -o %i").out, id + "\n") << "the refused ones submitted nothing";

  auto share = Sh("sshare -a -P", alice);
  ASSERT_EQ(share.exit_code, 0) << share.err;
  EXPECT_EQ(share.out.substr(0, share.out.find('\n')),
            "Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare");
  EXPECT_NE(share.out.find(" acctq|alice|1|"), std::string::npos) << share.out;
  // sprio: the pending jobs the scheduler ranks (not held ones, as Slurm's): one that waits
  // for GPUs a job of alice holds on both nodes.
  auto runner =
      Sh("sbatch --parsable -A acctq -N 2 --gres=gpu:4 -o /dev/null --wrap 'sleep 300'", alice);
  ASSERT_EQ(runner.exit_code, 0) << runner.err;
  const std::string run_id = runner.out.substr(0, runner.out.find('\n'));
  for (int i = 0; i < 300 && Sh("squeue -h -j " + run_id + " -o %t").out != "R\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto dep = Sh("sbatch --parsable -A acctq --gres=gpu:1 -o /dev/null --wrap true", alice);
  ASSERT_EQ(dep.exit_code, 0) << dep.err;
  const std::string dep_id = dep.out.substr(0, dep.out.find('\n'));
  auto prio = Sh("sprio -h -o '%i %r %u' -u alice", alice);
  EXPECT_EQ(prio.out, dep_id + " acctq alice\n") << prio.err;
  EXPECT_EQ(Sh("scancel " + id + " " + run_id + " " + dep_id).exit_code, 0);
}

// scontrol update: a pending job's limit, queue and priority within its user's rights; only an
// admin raises a priority or a limit; a running job cannot be updated. Refusals change nothing.
TEST_F(SlurmShims, ScontrolUpdateChangesPendingJobsWithinTheUsersRights) {
  ASSERT_EQ(cluster_->Corral({"queues", "set", "updq", "--weight", "1"}).exit_code, 0);
  auto token = cluster_->Corral({"token", "create", "--user", "uma"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  const std::string uma = token.out.substr(0, token.out.find('\n'));
  auto sub = Sh("sbatch --parsable -H -t 60 -o /dev/null --wrap true", uma);
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = sub.out.substr(0, sub.out.find('\n'));
  auto show = [&] { return Sh("squeue -h -j " + id + " -o '%l %P %Q'").out; };
  EXPECT_EQ(show(), "1:00:00 default 0\n");
  auto ok = Sh("scontrol update JobId=" + id + " TimeLimit=30 Partition=updq", uma);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(show(), "30:00 updq 0\n");
  auto raise = Sh("scontrol update JobId=" + id + " Priority=9", uma);
  EXPECT_EQ(raise.exit_code, 1);
  EXPECT_NE(raise.err.find("field 'priority': only an admin may raise"), std::string::npos)
      << raise.err;
  auto longer = Sh("scontrol update JobId=" + id + " TimeLimit=2:00:00", uma);
  EXPECT_EQ(longer.exit_code, 1);
  EXPECT_NE(longer.err.find("field 'time_limit_ms'"), std::string::npos) << longer.err;
  auto field = Sh("scontrol update JobId=" + id + " NumNodes=2", uma);
  EXPECT_EQ(field.exit_code, 1);
  EXPECT_NE(field.err.find("\"NumNodes\" cannot be updated"), std::string::npos) << field.err;
  EXPECT_EQ(show(), "30:00 updq 0\n") << "refusals change nothing";
  ASSERT_EQ(Sh("scontrol update JobId=" + id + " Priority=9").exit_code, 0) << "an admin may";
  EXPECT_EQ(show(), "30:00 updq 9\n");

  auto run = Sh("sbatch --parsable -o /dev/null --wrap 'sleep 300'", uma);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string running = run.out.substr(0, run.out.find('\n'));
  for (int i = 0; i < 300 && Sh("squeue -h -j " + running + " -o %t").out != "R\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto late = Sh("scontrol update JobId=" + running + " TimeLimit=5", uma);
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_NE(late.err.find("only a pending job"), std::string::npos) << late.err;
  EXPECT_EQ(Sh("scancel " + id + " " + running).exit_code, 0);
}

}  // namespace
}  // namespace corral::testing
