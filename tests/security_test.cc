// Multi-tenancy on a real local cluster whose agent runs as root: jobs run as their owners'
// Unix users (two users created by the test), their files are theirs alone, and one user can
// neither cancel another's job nor read its output or environment. Needs root (useradd, setuid).
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cluster_fixture.h"
#include "net/http_client.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

constexpr char kUserA[] = "corral-sec-ana";
constexpr char kUserB[] = "corral-sec-bob";

// Creates the Unix user if missing; false (with a message) when that is impossible here.
bool EnsureUnixUser(const std::string& name) {
  if (getpwnam(name.c_str()) != nullptr) return true;
  auto r = RunCommand({"/usr/sbin/useradd", "--create-home", "--shell", "/bin/sh", name});
  return r.exit_code == 0 && getpwnam(name.c_str()) != nullptr;
}

class Security : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: creates Unix users and runs jobs as them";
    if (!EnsureUnixUser(kUserA) || !EnsureUnixUser(kUserB)) {
      GTEST_SKIP() << "cannot create Unix users with useradd";
    }
  }
};

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

CommandResult As(const LocalCluster& c, const std::string& token,
                 const std::vector<std::string>& args) {
  std::vector<std::string> argv = {CorralBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {{"CORRAL_ADDR", c.addr()},
                           {"CORRAL_TOKEN", token},
                           {"CORRAL_CONFIG", c.dir() + "/none.json"}});
}

std::string NewToken(const LocalCluster& c, const std::string& user) {
  auto r = c.Corral({"token", "create", "--user", user});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return FirstLine(r.out);
}

Json Show(const LocalCluster& c, const std::string& token, const std::string& id) {
  auto r = As(c, token, {"show", id, "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Json::parse(r.out, nullptr, false);
}

std::string RunReason(const Json& job) {
  if (!job.contains("runs") || job["runs"].empty()) return "";
  return job["runs"].back().value("reason", "");
}

// The logs/ directory of replica 0 of the job's first run (attempt 1), on node1.
std::string LogsDir(const LocalCluster& c, const std::string& id) {
  return c.dir() + "/agents/node1/runs/" + id + ".1.0/logs";
}

TEST_F(Security, JobsRunAsTheirOwnersWhoseFilesAndOutputAreTheirsAlone) {
  LocalCluster c("security-owner", 1, 2, {}, {});  // the agent's default as root: run as owner
  const std::string ana = NewToken(c, kUserA), bob = NewToken(c, kUserB);
  auto sub = As(c, ana,
                {"submit", "--parsable", "--env", "SECRET=ana-only", "--", "/bin/sh", "-c",
                 "id -un; echo \"$HOME $USER $LOGNAME\"; test -d \"$CORRAL_CHECKPOINT_DIR\" "
                 "&& stat -c %U:%a \"$CORRAL_CHECKPOINT_DIR\"; echo \"groups $(id -G)\""});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = FirstLine(sub.out);
  auto waited = As(c, ana, {"wait", id, "--timeout", "60s"});
  ASSERT_EQ(waited.exit_code, 0) << waited.out << waited.err << Show(c, ana, id).dump();

  struct passwd* pw = getpwnam(kUserA);
  ASSERT_NE(pw, nullptr);
  auto logs = As(c, ana, {"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  std::string expected =
      std::string(kUserA) + "\n" + pw->pw_dir + " " + kUserA + " " + kUserA + "\n";
  EXPECT_EQ(logs.out.substr(0, expected.size()), expected);
  EXPECT_NE(logs.out.find(std::string(kUserA) + ":700"), std::string::npos)
      << "the checkpoint directory is the owner's, 0700: " << logs.out;
  EXPECT_NE(logs.out.find("\ngroups " + std::to_string(pw->pw_gid) + "\n"), std::string::npos)
      << "the task has the owner's groups alone, none of the agent's: " << logs.out;

  struct stat st {};
  ASSERT_EQ(stat(LogsDir(c, id).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, pw->pw_uid);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((LogsDir(c, id) + "/stdout").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, pw->pw_uid);
  // The other user cannot reach it on the node either.
  auto peek =
      RunCommand({"/usr/sbin/runuser", "-u", kUserB, "--", "/bin/cat", LogsDir(c, id) + "/stdout"});
  EXPECT_NE(peek.exit_code, 0) << peek.out;

  // Through the API: bob sees that the job exists, but not its environment or its output.
  EXPECT_EQ(Show(c, ana, id)["spec"]["env"]["SECRET"], "ana-only");
  Json seen_by_bob = Show(c, bob, id);
  EXPECT_EQ(seen_by_bob["owner"], kUserA);
  EXPECT_FALSE(seen_by_bob["spec"].contains("env") && seen_by_bob["spec"]["env"].contains("SECRET"))
      << seen_by_bob.dump();
  auto bob_logs = As(c, bob, {"logs", id});
  EXPECT_EQ(bob_logs.exit_code, 1);
  EXPECT_NE(bob_logs.err.find("permission denied"), std::string::npos) << bob_logs.err;
  EXPECT_EQ(bob_logs.out, "");
  // Both refusals and the admin's token grants are in the audit log, one JSON object a line.
  {
    std::ifstream audit(c.head_dir() + "/audit.log");
    int refusals = 0, grants = 0;
    for (std::string line; std::getline(audit, line);) {
      Json rec = Json::parse(line, nullptr, false);
      ASSERT_TRUE(rec.is_object()) << line;
      if (rec.value("status", 0) == 403 &&
          rec.value("request", "") == "GET /v1/jobs/" + id + "/logs") {
        ++refusals;
        EXPECT_EQ(rec.value("from", "").rfind("127.0.0.1:", 0), 0u) << line;
        EXPECT_NE(rec.value("reason", "").find("owner (" + std::string(kUserA) + ")"),
                  std::string::npos)
            << line;
      }
      if (rec.value("what", "") == "token_issued" && rec.value("role", "") == "admin") ++grants;
    }
    EXPECT_GE(refusals, 1);
    EXPECT_GE(grants, 2) << "both tokens the admin created are audited";
  }
  struct stat audit_st {};
  ASSERT_EQ(stat((c.head_dir() + "/audit.log").c_str(), &audit_st), 0);
  EXPECT_EQ(audit_st.st_mode & 0777, 0600u);
  auto admin_logs = c.Corral({"logs", id});
  EXPECT_EQ(admin_logs.exit_code, 0) << admin_logs.err;
  EXPECT_EQ(FirstLine(admin_logs.out), kUserA);

  // Bob's own job runs as bob, and ana cannot cancel it.
  auto bob_sub = As(c, bob, {"submit", "--parsable", "--", "/bin/sh", "-c", "id -un; sleep 30"});
  ASSERT_EQ(bob_sub.exit_code, 0) << bob_sub.err;
  const std::string bob_id = FirstLine(bob_sub.out);
  ASSERT_TRUE(WaitUntil(30000, [&] {
    return As(c, bob, {"logs", bob_id}).out == kUserB + std::string("\n");
  }));
  auto cancel = As(c, ana, {"cancel", bob_id});
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_NE(cancel.err.find("permission denied"), std::string::npos) << cancel.err;
  EXPECT_EQ(Show(c, bob, bob_id)["state"], "running");
  EXPECT_EQ(As(c, bob, {"cancel", bob_id}).exit_code, 0);
}

// The head's default checkpoint root, with the head and an agent on one machine as the README
// shows: a job of a user other than the head's reaches its checkpoint directory (the default
// is not inside the head's private state directory).
TEST_F(Security, TheDefaultCheckpointRootIsReachableByJobsUsers) {
  LocalCluster c("security-ckpt", 1, 1, {"--checkpoint-root", ""}, {});
  const std::string ana = NewToken(c, kUserA);
  auto sub =
      As(c, ana,
         {"submit", "--parsable", "--", "/bin/sh", "-c",
          "echo saved > \"$CORRAL_CHECKPOINT_DIR/step\" && cat \"$CORRAL_CHECKPOINT_DIR/step\""});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = FirstLine(sub.out);
  auto waited = As(c, ana, {"wait", id, "--timeout", "60s"});
  EXPECT_EQ(waited.exit_code, 0) << waited.out << waited.err << Show(c, ana, id).dump();
  auto logs = As(c, ana, {"logs", id});
  EXPECT_EQ(logs.out, "saved\n") << logs.err;
  struct stat st {};
  ASSERT_EQ(stat((c.head_dir() + "-checkpoints").c_str(), &st), 0) << "the default root";
  EXPECT_NE(st.st_mode & S_IXOTH, 0u) << "other users may pass through it";
}

TEST_F(Security, JobsOfRootOrOfUnknownUsersAreRefusedWithTheReason) {
  LocalCluster c("security-refuse", 1, 2, {}, {});
  const std::string root = NewToken(c, "root"), ghost = NewToken(c, "corral-no-such-user-here");
  auto run = [&](const std::string& token) {
    auto sub = As(c, token, {"submit", "--parsable", "--", "/bin/sh", "-c", "id -un"});
    EXPECT_EQ(sub.exit_code, 0) << sub.err;
    const std::string id = FirstLine(sub.out);
    EXPECT_TRUE(WaitUntil(30000, [&] { return Show(c, token, id)["state"] == "failed"; }))
        << Show(c, token, id).dump();
    return Show(c, token, id);
  };
  Json as_root = run(root);
  EXPECT_NE(RunReason(as_root).find("does not run jobs as root"), std::string::npos)
      << as_root.dump();
  Json unknown = run(ghost);
  EXPECT_NE(
      RunReason(unknown).find("user \"corral-no-such-user-here\" does not exist on node node1"),
      std::string::npos)
      << unknown.dump();
}

TEST_F(Security, AClusterThatAllowsRootJobsRunsThem) {
  LocalCluster c("security-root", 1, 2, {}, {"--allow-root-jobs"});
  const std::string root = NewToken(c, "root");
  auto sub = As(c, root, {"submit", "--parsable", "--", "/bin/sh", "-c", "id -un"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = FirstLine(sub.out);
  auto waited = As(c, root, {"wait", id, "--timeout", "60s"});
  EXPECT_EQ(waited.exit_code, 0) << Show(c, root, id).dump();
  EXPECT_EQ(As(c, root, {"logs", id}).out, "root\n");
}

// Each replica gets its own cgroup: a job past its memory limit is killed and says so; a
// process that left the job's process group is still found and killed on cancel.
TEST_F(Security, CgroupsCapMemoryAndLeaveNothingBehindACancel) {
  if (!std::filesystem::exists("/sys/fs/cgroup/memory/memory.limit_in_bytes") &&
      !std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers")) {
    GTEST_SKIP() << "no cgroup memory controller mounted";
  }
  LocalCluster c("security-cgroup", 1, 2, {}, {});
  const std::string ana = NewToken(c, kUserA);
  auto hog = As(c, ana,
                {"submit", "--parsable", "--memory", "64M", "--", "/usr/bin/python3", "-c",
                 "x = bytearray(512 * 1024 * 1024); print(len(x))"});
  ASSERT_EQ(hog.exit_code, 0) << hog.err;
  const std::string hog_id = FirstLine(hog.out);
  ASSERT_TRUE(WaitUntil(60000, [&] { return Show(c, ana, hog_id)["state"] == "failed"; }))
      << Show(c, ana, hog_id).dump();
  Json hog_job = Show(c, ana, hog_id);
  EXPECT_EQ(RunReason(hog_job).rfind("out of memory", 0), 0u) << hog_job.dump();
  EXPECT_GT(hog_job["runs"].back().value("peak_memory_bytes", int64_t{0}), 32 << 20)
      << "the run's record carries its peak memory";
  EXPECT_LE(hog_job["runs"].back().value("peak_memory_bytes", int64_t{0}), 64 << 20);

  // The background process starts a session of its own: no process-group kill reaches it.
  auto sub = As(c, ana,
                {"submit", "--parsable", "--grace-period", "1s", "--", "/bin/sh", "-c",
                 "setsid /bin/sh -c 'echo $$; exec sleep 300' & sleep 300"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = FirstLine(sub.out);
  pid_t escaped = 0;
  ASSERT_TRUE(WaitUntil(30000, [&] {
    std::istringstream in(As(c, ana, {"logs", id}).out);
    return static_cast<bool>(in >> escaped) && escaped > 0;
  }));
  ASSERT_EQ(kill(escaped, 0), 0);
  // The run's cgroup, found as the kernel sees it: the escaped process's own.
  std::string group;
  {
    std::ifstream in("/proc/" + std::to_string(escaped) + "/cgroup");
    for (std::string line; std::getline(in, line);) {
      auto at = line.find("/corral/");
      if (at != std::string::npos) group = line.substr(at);
    }
  }
  ASSERT_NE(group.find("/" + id + ".1.0"), std::string::npos)
      << "the escaped process is in its run's cgroup: " << group;
  ASSERT_EQ(As(c, ana, {"cancel", id}).exit_code, 0);
  ASSERT_TRUE(WaitUntil(30000, [&] { return Show(c, ana, id)["state"] == "cancelled"; }));
  EXPECT_TRUE(WaitUntil(10000,
                        [&] {
                          std::ifstream stat("/proc/" + std::to_string(escaped) + "/stat");
                          std::string line;
                          std::getline(stat, line);
                          return !stat || line.find(") Z") != std::string::npos;
                        }))
      << "process " << escaped << " outlived its job's cancel";
  for (const char* root : {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"}) {
    EXPECT_FALSE(std::filesystem::exists(root + group)) << "the run's cgroup is removed";
  }
}

// Limits: over them, a clear error with its HTTP status, and nothing stored.
TEST(Limits, OversizedSpecsPendingCapsAndFloodsAreRefusedAndChangeNothing) {
  LocalCluster c("limits", 1, 2);
  std::vector<std::string> env_flags;
  for (int i = 0; i < 1100; ++i) {
    env_flags.push_back("--env");
    env_flags.push_back("V" + std::to_string(i) + "=x");
  }
  std::vector<std::string> submit = {"submit"};
  submit.insert(submit.end(), env_flags.begin(), env_flags.end());
  submit.insert(submit.end(), {"--", "true"});
  auto big = c.Corral(submit);
  EXPECT_EQ(big.exit_code, 2) << "the CLI checks the spec before sending it";
  EXPECT_NE(big.err.find("field 'env': 1100 variables"), std::string::npos) << big.err;
  // The head refuses it too, whoever sends it.
  Json env = Json::object();
  for (int i = 0; i < 1100; ++i) env["V" + std::to_string(i)] = "x";
  std::string spec = Json{{"spec", {{"command", {"true"}}, {"env", env}}}}.dump();
  auto direct = RunCommand(
      {"/usr/bin/curl", "-s", "-w", "\n%{http_code}", "-H", "Authorization: Bearer " + c.token(),
       "-H", "Content-Type: application/json", "--data-binary", spec, c.addr() + "/v1/jobs"});
  EXPECT_NE(direct.out.find("field 'env': 1100 variables"), std::string::npos) << direct.out;
  EXPECT_EQ(direct.out.substr(direct.out.rfind('\n') + 1), "400") << direct.out;
  {
    std::ofstream body(c.dir() + "/huge.json");
    body << Json{{"spec", {{"command", {"echo", std::string(200 << 10, 'x')}}}}}.dump();
  }
  auto huge = RunCommand({"/usr/bin/curl", "-s", "-w", "\n%{http_code}", "-H",
                          "Authorization: Bearer " + c.token(), "--data-binary",
                          "@" + c.dir() + "/huge.json", c.addr() + "/v1/jobs"});
  EXPECT_NE(huge.out.find("field 'command'"), std::string::npos) << huge.out.substr(0, 300);
  EXPECT_EQ(huge.out.substr(huge.out.rfind('\n') + 1), "400");
  {
    // 100,000 levels of nesting in a field's value: quoting it in the error message would
    // recurse once per level and overflow the head's stack; it is refused unread.
    std::ofstream body(c.dir() + "/deep.json");
    body << R"({"spec": {"command": ["true"], "name": )" << std::string(100000, '[')
         << std::string(100000, ']') << "}}";
  }
  auto deep = RunCommand({"/usr/bin/curl", "-s", "-w", "\n%{http_code}", "-H",
                          "Authorization: Bearer " + c.token(), "--data-binary",
                          "@" + c.dir() + "/deep.json", c.addr() + "/v1/jobs"});
  EXPECT_NE(deep.out.find("nested deeper than 64 levels"), std::string::npos)
      << deep.out.substr(0, 300);
  EXPECT_EQ(deep.out.substr(deep.out.rfind('\n') + 1), "400");
  EXPECT_EQ(c.Corral({"jobs", "-o", "json"}).exit_code, 0) << "the head is still serving";
  auto jobs = c.Corral({"jobs", "-o", "json"});
  EXPECT_EQ(Json::parse(jobs.out, nullptr, false).size(), 0u) << jobs.out;

  ASSERT_EQ(c.Corral({"queues", "set", "default", "--max-pending-per-user", "2"}).exit_code, 0);
  c.Submit({"--gpus", "2", "--", "sleep", "60"});  // runs
  ASSERT_TRUE(WaitUntil(30000, [&] {
    return c.Corral({"jobs", "--state", "running", "-o", "json"}).out.find("\"id\"") !=
           std::string::npos;
  }));
  c.Submit({"--gpus", "2", "--", "true"});  // pending
  c.Submit({"--gpus", "2", "--", "true"});  // pending
  auto third = c.Corral({"submit", "--gpus", "2", "--", "true"});
  EXPECT_EQ(third.exit_code, 1);
  EXPECT_NE(third.err.find("has 2 jobs pending in queue 'default'"), std::string::npos)
      << third.err;
  auto bad_flag = c.Corral({"queues", "set", "default", "--max-pending-per-user", "lots"});
  EXPECT_EQ(bad_flag.exit_code, 2);
  EXPECT_NE(bad_flag.err.find("--max-pending-per-user"), std::string::npos) << bad_flag.err;
}

TEST(Limits, AFloodFromOneTokenGets429WithAJsonError) {
  LocalCluster c("ratelimit", 1, 2, {"--rate-limit", "5"});
  std::vector<std::string> argv = {
      "/usr/bin/curl", "-s", "-H", "Authorization: Bearer " + c.token(), "-w", "\n%{http_code}\n"};
  for (int i = 0; i < 40; ++i) argv.push_back(c.addr() + "/v1/nodes");
  auto r = RunCommand(argv);
  int ok = 0, limited = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    ok += line == "200";
    limited += line == "429";
  }
  EXPECT_GE(limited, 20) << r.out;
  EXPECT_GE(ok, 5);
  EXPECT_NE(r.out.find("\"resource_exhausted\""), std::string::npos) << r.out;
  auto health = RunCommand(
      {"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", c.addr() + "/healthz"});
  EXPECT_EQ(health.out, "200") << "health checks are never limited";
}

// A script that sends a fresh random token with every request gets its address's small
// allowance (10 a second, bursts of 100), not a fresh one per token: past it 429, before any
// work and unaudited. The audit log grows by a few kilobytes, not megabytes, and other users
// are answered at once, from the same address too.
TEST(Limits, RandomTokensFromOneAddressLeaveTheAuditLogSmallAndOthersAnswered) {
  LocalCluster c("randomtokens", 1, 2);
  const std::string audit = c.head_dir() + "/audit.log";
  auto audit_bytes = [&] {
    struct stat st {};
    return stat(audit.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : int64_t{0};
  };
  const int64_t before = audit_bytes();
  net::HttpClient client(c.addr(), "");
  std::mt19937_64 rng(34);
  int refused = 0, limited = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5000; ++i) {
    char token[33];
    std::snprintf(token, sizeof token, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng()));
    auto r = client.Request("GET", "/v1/jobs/" + std::to_string(i % 100 + 1) + "/logs", "",
                            std::chrono::seconds(5),
                            {{"Authorization", std::string("Bearer ") + token}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    refused += r->status == 401;
    limited += r->status == 429;
  }
  const double flood_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t grown = audit_bytes() - before;
  std::cout << "5000 random-token requests in " << flood_s << " s: " << refused << " 401, "
            << limited << " 429; audit.log grew " << grown << " bytes\n";
  EXPECT_GE(limited, 4500);
  EXPECT_LT(grown, 64 * 1024) << refused << " refusals audited";
  for (const std::string& token : {c.token(), NewToken(c, "ana")}) {
    net::HttpClient other(c.addr(), token);
    const auto asked = std::chrono::steady_clock::now();
    auto jobs = other.Get("/v1/jobs", std::chrono::seconds(5));
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    EXPECT_EQ(jobs->status, 200) << jobs->body;
    EXPECT_LT(took, 1.0);
  }
}

// An admin reserves a queue for a user and a group: another user's submission there, or to a
// queue under it, gets 403 naming the queue, through the CLI and the API alike; the user and a
// member of the group (by their token) submit.
TEST(Limits, AQueueReservedForSomeRefusesOthersWith403NamingIt) {
  LocalCluster c("queueacl", 1, 2);
  auto set = c.Corral({"queues", "set", "lab", "--allow-user", "ana", "--allow-group", "vision"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  ASSERT_EQ(c.Corral({"queues", "set", "lab/big", "--weight", "2"}).exit_code, 0);
  Json queues = Json::parse(c.Corral({"queues", "-o", "json"}).out, nullptr, false);
  std::string listed = queues.dump();
  EXPECT_NE(listed.find(R"("allowed_users":["ana"])"), std::string::npos) << listed;
  EXPECT_NE(listed.find(R"("allowed_groups":["vision"])"), std::string::npos) << listed;
  const std::string ana = NewToken(c, "ana"), bob = NewToken(c, "bob");
  auto carol_token = c.Corral({"token", "create", "--user", "carol", "--group", "vision"});
  ASSERT_EQ(carol_token.exit_code, 0) << carol_token.err;
  const std::string carol = FirstLine(carol_token.out);
  for (const char* queue : {"lab", "lab/big"}) {
    EXPECT_EQ(As(c, ana, {"submit", "--queue", queue, "--", "true"}).exit_code, 0) << queue;
    EXPECT_EQ(As(c, carol, {"submit", "--queue", queue, "--", "true"}).exit_code, 0) << queue;
    auto refused = As(c, bob, {"submit", "--queue", queue, "--", "true"});
    EXPECT_EQ(refused.exit_code, 1) << queue;
    EXPECT_NE(refused.err.find("may not submit to queue '" + std::string(queue) + "'"),
              std::string::npos)
        << refused.err;
    auto status = RunCommand(
        {"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
         "Authorization: Bearer " + bob, "-H", "Content-Type: application/json", "--data-binary",
         Json{{"spec", {{"command", {"true"}}, {"queue", queue}}}}.dump(), c.addr() + "/v1/jobs"});
    EXPECT_EQ(status.out, "403") << queue;
  }
  EXPECT_EQ(As(c, bob, {"submit", "--", "true"}).exit_code, 0) << "other queues admit him";
  // One empty value clears the list: everyone again.
  ASSERT_EQ(c.Corral({"queues", "set", "lab", "--allow-user", "", "--allow-group", ""}).exit_code,
            0);
  EXPECT_EQ(As(c, bob, {"submit", "--queue", "lab", "--", "true"}).exit_code, 0);
}

// The authorization matrix, from one table: every endpoint for every kind of caller. A cell
// is the HTTP status class the call must get ("2" any 2xx; otherwise the exact code).
TEST(AuthMatrix, EveryEndpointForEveryKindOfCaller) {
  LocalCluster c("matrix", 1, 2);
  auto token_for = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"token", "create"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = c.Corral(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return FirstLine(r.out);
  };
  ASSERT_EQ(c.Corral({"queues", "set", "team", "--quota", "0"}).exit_code, 0);
  std::map<std::string, std::string> who = {
      {"none", ""},
      {"bad", std::string(64, '0')},
      {"revoked", token_for({"--user", "carl"})},
      {"user", token_for({"--user", "ana"})},
      {"other", token_for({"--user", "bob"})},
      {"qadmin", token_for({"--user", "lead", "--role", "queue-admin", "--queue", "team"})},
      {"admin", c.token()},
  };
  {
    auto list = RunCommand({"/usr/bin/curl", "-s", "-H", "Authorization: Bearer " + c.token(),
                            c.addr() + "/v1/tokens"});
    Json tokens = Json::parse(list.out, nullptr, false);
    ASSERT_TRUE(tokens.is_object()) << list.out;
    for (const Json& t : tokens.value("tokens", Json::array())) {
      if (t["who"].value("name", "") == "carl") {
        ASSERT_EQ(c.Corral({"token", "revoke", t.value("id", "")}).exit_code, 0);
      }
    }
  }
  auto curl = [&](const std::string& method, const std::string& path, const std::string& token,
                  const std::string& body) {
    std::vector<std::string> argv = {"/usr/bin/curl", "-s", "-o",   "/dev/null",  "-w",
                                     "%{http_code}",  "-X", method, "--max-time", "10"};
    if (!token.empty()) argv.insert(argv.end(), {"-H", "Authorization: Bearer " + token});
    if (!body.empty())
      argv.insert(argv.end(), {"-H", "Content-Type: application/json", "--data-binary", body});
    argv.push_back(c.addr() + path);
    return RunCommand(argv).out;
  };
  {  // a node credential, as an agent gets one at registration
    std::ifstream join_file(c.head_dir() + "/join.token");
    std::string join;
    std::getline(join_file, join);
    auto r = RunCommand({"/usr/bin/curl", "-s", "-H", "Authorization: Bearer " + join, "-d",
                         R"({"name":"matrix-node","cpu_milli":1000,"memory_mb":1024,"protocol":2})",
                         c.addr() + "/v1/agent/register"});
    who["node"] = Json::parse(r.out, nullptr, false).value("node_token", "");
    ASSERT_FALSE(who["node"].empty()) << r.out;
    // A node with no runs for the admin to remove.
    auto spare =
        RunCommand({"/usr/bin/curl", "-s", "-H", "Authorization: Bearer " + join, "-d",
                    R"({"name":"matrix-spare","cpu_milli":1000,"memory_mb":1024,"protocol":2})",
                    c.addr() + "/v1/agent/register"});
    ASSERT_NE(spare.out.find("node_token"), std::string::npos) << spare.out;
    // Drained, so that none of the matrix's jobs is placed there before the admin removes it.
    auto drained = RunCommand({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X",
                               "POST", "-H", "Authorization: Bearer " + who["admin"], "-d", "{}",
                               c.addr() + "/v1/nodes/matrix-spare/drain"});
    ASSERT_EQ(drained.out, "200") << drained.err;
  }
  // A fresh job of the user's in queue "team", so that each cell finds it as it was.
  auto fresh_job = [&] {
    auto r =
        RunCommand({CorralBin(), "submit", "--parsable", "--queue", "team", "--", "sleep", "300"},
                   {{"CORRAL_ADDR", c.addr()},
                    {"CORRAL_TOKEN", who["user"]},
                    {"CORRAL_CONFIG", c.dir() + "/none.json"}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return FirstLine(r.out);
  };
  const std::vector<std::string> kCallers = {"none",  "bad",    "revoked", "user",
                                             "other", "qadmin", "admin",   "node"};
  struct Row {
    std::string method, path, body;
    std::vector<std::string> want;  // in kCallers order
  };
  const std::string spec = R"({"spec":{"command":["true"],"queue":"team"}})";
  const std::vector<Row> table = {
      // method  path                       body            none   bad    revoked user   other
      // qadmin admin  node
      {"POST", "/v1/jobs", spec, {"401", "401", "401", "2", "2", "2", "2", "403"}},
      {"GET", "/v1/jobs", "", {"401", "401", "401", "2", "2", "2", "2", "403"}},
      {"GET", "/v1/jobs/{job}", "", {"401", "401", "401", "2", "2", "2", "2", "403"}},
      {"GET", "/v1/jobs/{job}/logs", "", {"401", "401", "401", "2", "403", "2", "2", "403"}},
      {"POST",
       "/v1/jobs/{job}/checkpoint",
       "{}",
       {"401", "401", "401", "2", "403", "2", "2", "403"}},
      {"POST", "/v1/jobs/{job}/cancel", "{}", {"401", "401", "401", "2", "403", "2", "2", "403"}},
      {"GET", "/v1/nodes", "", {"401", "401", "401", "2", "2", "2", "2", "403"}},
      {"POST",
       "/v1/nodes/node1/drain",
       "{}",
       {"401", "401", "401", "403", "403", "403", "2", "403"}},
      {"POST",
       "/v1/nodes/node1/undrain",
       "{}",
       {"401", "401", "401", "403", "403", "403", "2", "403"}},
      {"DELETE",
       "/v1/nodes/matrix-spare",
       "",
       {"401", "401", "401", "403", "403", "403", "2", "403"}},
      {"GET", "/v1/queues", "", {"401", "401", "401", "2", "2", "2", "2", "403"}},
      {"PUT",
       "/v1/queues/team",
       R"({"quota_gpus":0})",
       {"401", "401", "401", "403", "403", "2", "2", "403"}},
      {"PUT",
       "/v1/queues/other",
       R"({"quota_gpus":0})",
       {"401", "401", "401", "403", "403", "403", "2", "403"}},
      {"GET", "/v1/tokens", "", {"401", "401", "401", "2", "2", "2", "2", "403"}},
      {"GET", "/v1/whoami", "", {"401", "401", "401", "2", "2", "2", "2", "403"}},
      {"POST",
       "/v1/tokens",
       R"({"user":"eve","role":"user"})",
       {"401", "401", "401", "403", "403", "403", "2", "403"}},
      {"GET", "/v1/events?since=0&wait=0", "", {"401", "401", "401", "2", "2", "2", "2", "403"}},
      {"GET", "/v1/usage", "", {"401", "401", "401", "2", "2", "2", "2", "403"}},
      {"POST",
       "/v1/agent/register",
       R"({"name":"x","protocol":2})",
       {"401", "401", "401", "403", "403", "403", "2", "403"}},
      {"POST",
       "/v1/agent/sync",
       R"({"node":"matrix-node","agent_epoch":1,"wait_ms":0})",
       {"401", "401", "401", "403", "403", "403", "403", "2"}},
  };
  std::string mismatches;
  for (const Row& row : table) {
    ASSERT_EQ(row.want.size(), kCallers.size()) << row.method << " " << row.path;
    for (size_t i = 0; i < kCallers.size(); ++i) {
      std::string path = row.path;
      if (auto at = path.find("{job}"); at != std::string::npos) path.replace(at, 5, fresh_job());
      std::string got = curl(row.method, path, who[kCallers[i]], row.body);
      bool ok = row.want[i] == "2" ? got.size() == 3 && got[0] == '2' : got == row.want[i];
      if (!ok) {
        mismatches += row.method + " " + path + " as " + kCallers[i] + ": got " + got + ", want " +
                      row.want[i] + (row.want[i] == "2" ? "xx" : "") + "\n";
      }
    }
  }
  EXPECT_EQ(mismatches, "");
}

}  // namespace
}  // namespace corral::testing
