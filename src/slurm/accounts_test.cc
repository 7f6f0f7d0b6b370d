// Golden tests of sinfo's formats and of sacctmgr, sshare and sprio for a fixed cluster,
// compared with the committed files in testdata/ (regenerate with CORRAL_UPDATE_GOLDEN=1 and
// review the diff). The header and column shapes are compared with a real Slurm's at run time
// by tests/slurm/slurm_diff_test.sh.
#include "slurm/accounts.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "slurm/sinfo.h"

namespace corral::slurm {
namespace {

constexpr TimeMs kAccountsT0 = 1'800'000'000'000;  // 2027-01-15T08:00:00Z

void ExpectGoldenFile(const std::string& name, const std::string& actual) {
  const std::string path = std::string(CORRAL_SLURM_TESTDATA) + "/" + name;
  if (std::getenv("CORRAL_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << actual;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(actual, want.str()) << "golden file " << path;
}

NodeView Node(const std::string& name, int gpus, int used, int cpus = 32) {
  NodeView v;
  v.node.name = name;
  v.node.cpu_milli = cpus * 1000;
  v.node.memory_mb = 256000;
  for (int i = 0; i < gpus; ++i) v.node.gpus.push_back(Gpu{i, "", "a100", 81920, 0, true});
  v.gpus_used = used;
  return v;
}

std::vector<NodeView> Nodes() {
  std::vector<NodeView> n = {Node("gpu01", 8, 8), Node("gpu02", 8, 3), Node("gpu03", 8, 0, 64),
                             Node("gpu04", 8, 0)};
  n[3].node.drain = Drain::kDrained;
  return n;
}

std::string Sinfo(const SinfoOptions& o) {
  setenv("TZ", "UTC", 1);
  tzset();
  auto out = RenderSinfo(Nodes(), {"default", "long-queue-name"}, o, kAccountsT0);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : "";
}

// Every layout and format the tools call, one after another in one golden file.
TEST(SinfoFormats, LayoutsAndFormatsAsSlurmPrintsThem) {
  std::string all;
  auto add = [&all](const std::string& title, const SinfoOptions& o) {
    all += "== " + title + "\n" + Sinfo(o);
  };
  add("sinfo", {});
  add("sinfo -h -o %P", {.format = "%P", .header = false});
  add("sinfo -o '%10P %.5a %.10l %.5D %6t %N'", {.format = "%10P %.5a %.10l %.5D %6t %N"});
  add("sinfo -N -o '%N %P %T %G %c %m'", {.format = "%N %P %T %G %c %m", .per_node = true});
  add("sinfo -o 'parts=%R:%D nodes'", {.format = "parts=%R:%D nodes"});
  add("sinfo -o '%3P|%c|%m'", {.format = "%3P|%c|%m"});
  add("sinfo -O partition,nodes:.5,statelong,gres:15,nodelist",
      {.long_format = "partition,nodes:.5,statelong,gres:15,nodelist"});
  add("sinfo -N", {.per_node = true});
  add("sinfo -l", {.long_output = true});
  add("sinfo -s", {.summarize = true});
  add("sinfo -p default -t idle,drain -o '%P %t %N'",
      {.format = "%P %t %N", .only_partitions = {"default"}, .only_states = {"idle", "drain"}});
  ExpectGoldenFile("sinfo_formats.txt", all);
}

TEST(SinfoFormats, UnknownFieldsAreErrorsNamingThem) {
  auto bad = RenderSinfo(Nodes(), {"default"}, {.format = "%P %W"}, kAccountsT0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("option --format: unknown field %W; known: %a", 0), 0u)
      << bad.status().message();
  auto bad_long =
      RenderSinfo(Nodes(), {"default"}, {.long_format = "partition,bogus:5"}, kAccountsT0);
  ASSERT_FALSE(bad_long.ok());
  EXPECT_NE(bad_long.status().message().find("unknown field \"bogus\""), std::string::npos);
}

AccountsView Accounts() {
  AccountsView v;
  QueueConfig def{"default", 0, -1, 1.0};
  QueueConfig gpu{"gpu", 8, 16, 2.0};
  gpu.allowed_users = {"alice"};
  QueueConfig team{"gpu/team", 4, -1, 1.0};
  QueueConfig ml{"ml", 0, -1, 1.0};
  ml.allowed_groups = {"ml"};
  v.queues = {def, gpu, team, ml};
  v.users = {{"alice", Role::kUser, {}}, {"bob", Role::kUser, {"ml"}}, {"root", Role::kAdmin, {}}};
  return v;
}

Run GpuRun(int gpus, TimeMs start, TimeMs end) {
  Run r;
  r.attempt = 1;
  r.placement.push_back({"gpu01", {}});
  for (int i = 0; i < gpus; ++i) r.placement.back().gpus.push_back(i);
  r.state = end > 0 ? RunState::kSucceeded : RunState::kRunning;
  r.scheduled_at = r.started_at = start;
  r.ended_at = end;
  return r;
}

Job UsageJob(JobId id, const std::string& owner, const std::string& queue, int gpus, TimeMs start,
             TimeMs end) {
  Job j;
  j.id = id;
  j.owner = owner;
  j.spec.queue = queue;
  j.spec.per_replica.gpu_milli = gpus * kGpuMilli;
  j.state = end > 0 ? JobState::kSucceeded : JobState::kRunning;
  j.submitted_at = start;
  j.runs.push_back(GpuRun(gpus, start, end));
  return j;
}

ShareUsage Usage() {
  return ComputeShareUsage({UsageJob(1, "alice", "gpu", 4, kAccountsT0, kAccountsT0 + 3'600'000),
                            UsageJob(2, "bob", "ml", 2, kAccountsT0, kAccountsT0 + 1'800'000),
                            UsageJob(3, "alice", "default", 1, kAccountsT0 + 3'000'000, 0)},
                           kAccountsT0 - 1000, kAccountsT0 + 3'600'000);
}

TEST(Accounts, QueuesAdmitUsersByTheirAccessLists) {
  AccountsView v = Accounts();
  EXPECT_TRUE(QueueAdmits(v, v.users[0], "gpu/team")) << "alice is on gpu's list";
  EXPECT_FALSE(QueueAdmits(v, v.users[1], "gpu/team")) << "bob is not";
  EXPECT_TRUE(QueueAdmits(v, v.users[1], "ml")) << "bob is in group ml";
  EXPECT_FALSE(QueueAdmits(v, v.users[0], "ml"));
  EXPECT_TRUE(QueueAdmits(v, v.users[2], "ml")) << "admins may use every queue";
}

TEST(Accounts, SacctmgrShowsQueuesAsAccounts) {
  AccountsView v = Accounts();
  std::string all;
  auto add = [&](const std::string& title, const std::string& entity,
                 const std::vector<std::string>& args, bool with_assoc, PrintOptions p) {
    auto out = RenderSacctmgrShow(v, entity, args, with_assoc, p);
    ASSERT_TRUE(out.ok()) << title << ": " << out.status().message();
    all += "== " + title + "\n" + *out;
  };
  // What workflow tools run to list a user's accounts before they submit with -A.
  add("sacctmgr -n -s list user alice format=account%20", "user", {"alice", "format=account%20"},
      true, {.header = false});
  add("sacctmgr show user", "user", {}, false, {});
  add("sacctmgr -P show user -s where user=bob", "user", {"where", "user=bob"}, true,
      {.parsable2 = true});
  add("sacctmgr show account", "account", {}, false, {});
  add("sacctmgr -p show assoc format=account,user,share,grptres", "assoc",
      {"format=account,user,share,grptres"}, false, {.parsable = true});
  add("sacctmgr show assoc account=gpu", "assoc", {"account=gpu"}, false, {});
  ExpectGoldenFile("sacctmgr.txt", all);
  auto bad = RenderSacctmgrShow(v, "user", {"format=account,bogus"}, false, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown field \"bogus\""), std::string::npos);
  auto entity = RenderSacctmgrShow(v, "qos", {}, false, {});
  ASSERT_FALSE(entity.ok());
  EXPECT_NE(entity.status().message().find("unsupported entity \"qos\""), std::string::npos);
}

TEST(Accounts, SshareAndSprioFromUsage) {
  AccountsView v = Accounts();
  ShareUsage u = Usage();
  EXPECT_DOUBLE_EQ(u.by_queue.at("gpu"), 4 * 3600.0);
  EXPECT_DOUBLE_EQ(u.by_queue_user.at({"ml", "bob"}), 2 * 1800.0);
  EXPECT_DOUBLE_EQ(FairShareFactor(v, u, "ml", "root"), 1.0) << "no usage: 1";
  EXPECT_LT(FairShareFactor(v, u, "gpu", "alice"), FairShareFactor(v, u, "ml", "bob"))
      << "who used more of their share has less fair share";
  std::string all;
  auto sshare = [&](const std::string& title, const SshareOptions& o, PrintOptions p) {
    auto out = RenderSshare(v, u, o, p);
    ASSERT_TRUE(out.ok()) << out.status().message();
    all += "== " + title + "\n" + *out;
  };
  sshare("sshare (as alice)", {.users = {"alice"}}, {});
  sshare("sshare -a -l", {.long_output = true, .all_users = true}, {});
  sshare("sshare -a -P -A ml", {.all_users = true, .accounts = {"ml"}}, {.parsable2 = true});
  Job a = UsageJob(40, "alice", "gpu", 1, kAccountsT0, 0);
  a.state = JobState::kPending;
  a.runs.clear();
  a.spec.priority = 5;
  Job b = UsageJob(41, "bob", "ml", 1, kAccountsT0 + 1'800'000, 0);
  b.state = JobState::kPending;
  b.runs.clear();
  Job held = b;
  held.id = 42;
  held.held = true;  // left out
  Job waits = b;
  waits.id = 43;
  waits.pending_code = PendingCode::kDependency;  // left out too
  auto sprio = [&](const std::string& title, const SprioOptions& o) {
    auto out = RenderSprio(v, u, {a, b, held, waits}, o, kAccountsT0 + 3'600'000);
    ASSERT_TRUE(out.ok()) << out.status().message();
    all += "== " + title + "\n" + *out;
  };
  sprio("sprio", {});
  sprio("sprio -u alice,bob", {.show_user = true});
  sprio("sprio -l", {.long_output = true});
  sprio("sprio -n -h", {.normalized = true, .header = false});
  sprio("sprio -o '%i %u %Y %A %F'", {.format = "%i %u %Y %A %F"});
  ExpectGoldenFile("sshare_sprio.txt", all);
  auto bad = RenderSprio(v, u, {a}, {.format = "%i %W"}, kAccountsT0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown field %W"), std::string::npos);
}

}  // namespace
}  // namespace corral::slurm
