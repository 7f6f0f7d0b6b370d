#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "agent/launch/launcher.h"
#include "agent/launch/monitor.h"
#include "agent/test_util.h"

namespace corral::agent {
namespace {

using internal::ChildPlan;
using internal::DecodePlan;
using internal::EncodePlan;
using internal::OwnedPlan;
using internal::TaskPlan;

std::vector<std::string> Strings(char* const* items) {
  std::vector<std::string> out;
  for (size_t i = 0; items[i] != nullptr; ++i) out.emplace_back(items[i]);
  return out;
}

TEST(MonitorPlan, EveryFieldCrossesTheExec) {
  char a0[] = "/bin/sh", a1[] = "-c", a2[] = "echo 'a b'; exit 3", a3[] = "";
  char* argv[] = {a0, a1, a2, a3, nullptr};
  char e0[] = "A=1", e1[] = "MULTI=line\nnext", e2[] = "B=";
  char* env0[] = {e0, e1, nullptr};
  char* env1[] = {e2, nullptr};
  const TaskPlan tasks[] = {{env0, "/l/stdout", "/l/stderr"}, {env1, "/l/stdout.1", "/l/stderr.1"}};
  const gid_t groups[] = {1001, 27};
  const char* const procs[] = {"/sys/fs/cgroup/memory/r/cgroup.procs", "/sys/fs/cgroup/pids/r/x"};
  ChildPlan in{};
  in.path = "/bin/sh";
  in.argv = argv;
  in.tasks = tasks;
  in.task_count = 2;
  in.stop_signal = 10;
  in.grace_s = 31;
  in.workdir = "/work dir";
  in.switch_user = true;
  in.uid = 1001;
  in.gid = 1002;
  in.groups = groups;
  in.group_count = 2;
  in.cgroup_procs = procs;
  in.cgroup_count = 2;
  in.record_path = "/s/runs/1.0.0/record";
  in.notify_path = "/s/exit-notify";
  in.exec_error = "corral: cannot execute /bin/sh: errno ";
  in.chdir_error = "corral: cannot change to workdir /work dir: errno ";
  in.max_fd = 4096;
  in.lease_path = "/s/agent-lease";
  in.lease_ms = 40000;

  OwnedPlan out;
  ASSERT_TRUE(DecodePlan(EncodePlan(in), &out));
  const ChildPlan& p = out.plan;
  EXPECT_STREQ(p.path, "/bin/sh");
  EXPECT_EQ(Strings(p.argv), (std::vector<std::string>{"/bin/sh", "-c", "echo 'a b'; exit 3", ""}));
  ASSERT_EQ(p.task_count, 2);
  EXPECT_EQ(Strings(p.tasks[0].envp), (std::vector<std::string>{"A=1", "MULTI=line\nnext"}));
  EXPECT_EQ(Strings(p.tasks[1].envp), (std::vector<std::string>{"B="}));
  EXPECT_STREQ(p.tasks[1].out_path, "/l/stdout.1");
  EXPECT_STREQ(p.tasks[1].err_path, "/l/stderr.1");
  EXPECT_EQ(p.stop_signal, 10);
  EXPECT_EQ(p.grace_s, 31);
  EXPECT_STREQ(p.workdir, "/work dir");
  EXPECT_TRUE(p.switch_user);
  EXPECT_EQ(p.uid, 1001u);
  EXPECT_EQ(p.gid, 1002u);
  ASSERT_EQ(p.group_count, 2u);
  EXPECT_EQ(p.groups[1], 27u);
  ASSERT_EQ(p.cgroup_count, 2);
  EXPECT_STREQ(p.cgroup_procs[1], "/sys/fs/cgroup/pids/r/x");
  EXPECT_STREQ(p.record_path, "/s/runs/1.0.0/record");
  EXPECT_STREQ(p.notify_path, "/s/exit-notify");
  EXPECT_STREQ(p.exec_error, in.exec_error);
  EXPECT_STREQ(p.chdir_error, in.chdir_error);
  EXPECT_EQ(p.max_fd, 4096);
  EXPECT_STREQ(p.lease_path, "/s/agent-lease");
  EXPECT_EQ(p.lease_ms, 40000);
  // Its own scratch space, as the agent's plans have.
  ASSERT_NE(p.task_pids, nullptr);
  EXPECT_GE(p.report_cap, 24u * 4);
}

TEST(MonitorPlan, ABrokenPlanIsRefused) {
  char a0[] = "true";
  char* argv[] = {a0, nullptr};
  char* env[] = {nullptr};
  const TaskPlan tasks[] = {{env, "o", "e"}};
  ChildPlan in{};
  in.path = "true";
  in.argv = argv;
  in.tasks = tasks;
  in.task_count = 1;
  in.workdir = in.record_path = in.notify_path = in.exec_error = in.chdir_error = "";
  in.cgroup_procs = nullptr;
  const std::string good = EncodePlan(in);
  OwnedPlan ok;
  EXPECT_TRUE(DecodePlan(good, &ok));
  EXPECT_EQ(ok.plan.lease_path, nullptr) << "a batch job's plan has no lease";
  EXPECT_EQ(ok.plan.lease_ms, 0);
  for (const std::string& bad : {std::string(), good.substr(0, good.size() - 1), good + "1:x",
                                 "99999:" + good, "x" + good}) {
    OwnedPlan out;
    EXPECT_FALSE(DecodePlan(bad, &out)) << bad;
  }
}

TEST(MonitorPlan, TheExecutableIsFoundBesideTheProgram) {
  testing::TempDir dir;
  const std::string program = dir.path() + "/corral";
  EXPECT_EQ(MonitorExecutableBeside(program), "");
  const std::string exe = dir.path() + "/corral-monitor";
  std::ofstream(exe) << "#!/bin/sh\n";
  EXPECT_EQ(MonitorExecutableBeside(program), "") << "not executable";
  chmod(exe.c_str(), 0755);
  EXPECT_EQ(MonitorExecutableBeside(program), exe);
  EXPECT_EQ(MonitorExecutableBeside("corral"), "") << "no directory to look in";
}

}  // namespace
}  // namespace corral::agent
