// End to end on a real local cluster: a head and two agents (4 simulated GPUs each) as
// separate processes on loopback, driven through the real CLI.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

Json ShowJob(const LocalCluster& c, const std::string& id) {
  auto r = c.Corral({"show", id, "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Json::parse(r.out, nullptr, false);
}

bool ProcessGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

pid_t ReadPid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

struct Usage {
  std::string job;
  std::string node;
  std::vector<int> gpus;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Each job logs "START node gpus t0" and "END t1"; from the jobs' own records, no GPU may be
// held by two jobs at overlapping times.
TEST(Cluster, TwentyFourJobsNeverShareAGpu) {
  LocalCluster c("share", 2, 4);
  const std::string script =
      "echo START $CORRAL_NODE $CUDA_VISIBLE_DEVICES $(date +%s%N); sleep 0.4; "
      "echo END $(date +%s%N)";
  std::vector<std::pair<std::string, int>> jobs;  // id, replicas
  const int sizes[] = {1, 2, 4};
  for (int i = 0; i < 24; ++i) {
    int gpus = sizes[i % 3];
    int replicas = (i % 8 == 7) ? 2 : 1;
    jobs.push_back(
        {c.Submit({"--gpus", std::to_string(gpus), "--replicas", std::to_string(replicas), "--name",
                   "j" + std::to_string(i), "--", "/bin/sh", "-c", script}),
         replicas});
  }
  std::vector<std::string> wait_args = {"wait", "--timeout", "120s"};
  for (auto& [id, r] : jobs) wait_args.push_back(id);
  auto w = c.Corral(wait_args);
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err;

  std::vector<Usage> usages;
  for (auto& [id, replicas] : jobs) {
    Json job = ShowJob(c, id);
    ASSERT_EQ(job["state"], "succeeded") << job.dump();
    const Json& placement = job["runs"].back()["placement"];
    ASSERT_EQ(placement.size(), static_cast<size_t>(replicas));
    for (int rep = 0; rep < replicas; ++rep) {
      auto logs = c.Corral({"logs", id, "--replica", std::to_string(rep)});
      ASSERT_EQ(logs.exit_code, 0) << logs.err;
      std::istringstream in(logs.out);
      std::string word, gpus_csv;
      Usage u;
      u.job = id;
      in >> word >> u.node >> gpus_csv >> u.start_ns >> word >> u.end_ns;
      ASSERT_EQ(word, "END") << "job " << id << " log: " << logs.out;
      std::stringstream gs(gpus_csv);
      for (std::string g; std::getline(gs, g, ',');) u.gpus.push_back(std::stoi(g));
      // The job saw exactly what the head recorded.
      EXPECT_EQ(u.node, placement[rep]["node"].get<std::string>());
      EXPECT_EQ(u.gpus, placement[rep]["gpus"].get<std::vector<int>>());
      EXPECT_EQ(u.gpus.size(), job["spec"]["gpu_milli"].get<size_t>() / 1000);
      usages.push_back(u);
    }
  }
  int overlaps = 0;
  for (size_t a = 0; a < usages.size(); ++a) {
    for (size_t b = a + 1; b < usages.size(); ++b) {
      const Usage &x = usages[a], &y = usages[b];
      if (x.node != y.node || x.job == y.job) continue;
      bool shared = false;
      for (int g : x.gpus) shared |= std::find(y.gpus.begin(), y.gpus.end(), g) != y.gpus.end();
      if (shared && x.start_ns < y.end_ns && y.start_ns < x.end_ns) {
        ++overlaps;
        ADD_FAILURE() << "jobs " << x.job << " and " << y.job << " overlap on " << x.node;
      }
    }
  }
  EXPECT_EQ(overlaps, 0);
}

TEST(Cluster, FailingJobReportsExitCodeAndLogs) {
  LocalCluster c("fail", 1, 2);
  std::string id =
      c.Submit({"--gpus", "1", "--", "/bin/sh", "-c", "echo to-out; echo to-err >&2; exit 7"});
  auto w = c.Corral({"wait", id, "--timeout", "60s"});
  EXPECT_EQ(w.exit_code, 1) << w.out << w.err;
  Json job = ShowJob(c, id);
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["exit_code"], 7);
  auto out = c.Corral({"logs", id});
  EXPECT_EQ(out.out, "to-out\n");
  auto err = c.Corral({"logs", id, "--stderr"});
  EXPECT_EQ(err.out, "to-err\n");
}

TEST(Cluster, CancelKillsTheWholeProcessGroup) {
  LocalCluster c("cancel", 1, 2);
  std::string dir = c.dir();
  std::string id = c.Submit(
      {"--gpus", "1", "--grace-period", "2s", "--", "/bin/sh", "-c",
       "sleep 300 & echo $! > " + dir + "/child.pid; echo $$ > " + dir + "/main.pid; wait"});
  ASSERT_TRUE(WaitUntil(
      30000, [&] { return ReadPid(dir + "/child.pid") > 0 && ReadPid(dir + "/main.pid") > 0; }));
  pid_t child = ReadPid(dir + "/child.pid"), main = ReadPid(dir + "/main.pid");
  EXPECT_FALSE(ProcessGone(child));
  auto r = c.Corral({"cancel", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitUntil(20000, [&] { return ShowJob(c, id)["state"] == "cancelled"; }));
  EXPECT_TRUE(WaitUntil(5000, [&] { return ProcessGone(main) && ProcessGone(child); }))
      << "main " << main << " or background child " << child << " survived cancel";
  // Cancelling it again is what was asked already: success, said so (as scancel and the Python
  // client), not an error.
  auto again = c.Corral({"cancel", id});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("already cancelled"), std::string::npos) << again.out;
}

TEST(Cluster, AgentRestartKeepsARunningJob) {
  LocalCluster c("restart", 1, 2);
  std::string dir = c.dir();
  std::string id = c.Submit({"--gpus", "1", "--", "/bin/sh", "-c",
                             "echo $$ > " + dir + "/job.pid; sleep 4; echo done; exit 5"});
  ASSERT_TRUE(WaitUntil(30000, [&] { return ShowJob(c, id)["state"] == "running"; }));
  ASSERT_TRUE(WaitUntil(5000, [&] { return ReadPid(dir + "/job.pid") > 0; }));
  pid_t pid = ReadPid(dir + "/job.pid");
  c.KillAgent(1, SIGKILL);
  EXPECT_FALSE(ProcessGone(pid)) << "the job died with its agent";
  c.StartAgent(1);
  auto w = c.Corral({"wait", id, "--timeout", "60s"});
  Json job = ShowJob(c, id);
  EXPECT_EQ(job["state"], "failed") << job.dump();
  EXPECT_EQ(job["exit_code"], 5) << "the re-adopted job's own exit code must be reported";
  EXPECT_EQ(job["runs"].size(), 1u) << "the job must not be started twice";
  EXPECT_EQ(c.Corral({"logs", id}).out, "done\n");
}

TEST(Cluster, BadSpecsAreRejectedAndNothingIsStored) {
  LocalCluster c("bad", 2, 4);
  struct Case {
    std::vector<std::string> args;
    std::string mention;
  };
  std::string spec_file = c.dir() + "/bad.yaml";
  std::ofstream(spec_file) << "command: [\"true\"]\ngpus: 1\ncolour: red\n";
  std::vector<Case> cases = {
      {{"--gpus", "5", "--", "true"}, "never fit"},
      {{"--gpus", "4", "--replicas", "3", "--", "true"}, "never fit"},
      {{"--gpus", "-1", "--", "true"}, "gpus"},
      {{"--memory", "12Q", "--", "true"}, "memory"},
      {{"--time-limit", "soon", "--", "true"}, "time_limit"},
      {{"-f", spec_file}, "colour"},
  };
  for (const Case& k : cases) {
    std::vector<std::string> argv = {"submit"};
    argv.insert(argv.end(), k.args.begin(), k.args.end());
    auto r = c.Corral(argv);
    EXPECT_NE(r.exit_code, 0) << k.args[0] << " " << k.args[1];
    EXPECT_NE((r.err + r.out).find(k.mention), std::string::npos)
        << "error should mention '" << k.mention << "': " << r.err << r.out;
  }
  auto jobs = c.Corral({"jobs", "-o", "json"});
  ASSERT_EQ(jobs.exit_code, 0);
  EXPECT_EQ(Json::parse(jobs.out).size(), 0u) << jobs.out;
}

TEST(Cluster, EveryCallNeedsTheTokenAndTokensArePrivate) {
  LocalCluster c("auth", 1, 1);
  // The head's state is its own (the database holds jobs' environments): the directory 0700,
  // every file in it 0600, whatever the umask.
  struct stat dir_st {};
  ASSERT_EQ(stat(c.head_dir().c_str(), &dir_st), 0);
  EXPECT_EQ(dir_st.st_mode & 0777, 0700u);
  for (const char* name :
       {"admin.token", "join.token", "audit.log", "corral.db", "corral.db-wal", "corral.db-shm"}) {
    struct stat st {};
    ASSERT_EQ(stat((c.head_dir() + "/" + name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
  }
  auto r = RunCommand({CorralBin(), "submit", "--", "true"},
                      {{"CORRAL_ADDR", c.addr()},
                       {"CORRAL_TOKEN", "wrong"},
                       {"CORRAL_CONFIG", c.dir() + "/none.json"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("token"), std::string::npos) << r.err;
  auto jobs = c.Corral({"jobs", "-o", "json"});
  EXPECT_EQ(Json::parse(jobs.out).size(), 0u) << "a refused submit stored a job";
}

// Identities end to end: an admin creates user tokens; each job belongs to its token's user;
// another user may see it but not cancel it; a revoked token is refused; every answer says
// which revision it reflects.
TEST(Cluster, UserTokensOwnTheirJobsAndRevokedTokensAreRefused) {
  LocalCluster c("tokens", 1, 2);
  auto as = [&](const std::string& token, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {CorralBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"CORRAL_ADDR", c.addr()},
                             {"CORRAL_TOKEN", token},
                             {"CORRAL_CONFIG", c.dir() + "/none.json"}});
  };
  auto ana = c.Corral({"token", "create", "--user", "ana"});
  ASSERT_EQ(ana.exit_code, 0) << ana.err;
  std::string ana_token = ana.out.substr(0, ana.out.find('\n'));
  ASSERT_EQ(ana_token.size(), 64u) << ana.out;
  auto bob = c.Corral({"token", "create", "--user", "bob"});
  std::string bob_token = bob.out.substr(0, bob.out.find('\n'));
  // A user may not create tokens.
  auto refused = as(ana_token, {"token", "create", "--user", "eve", "--role", "admin"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("permission denied"), std::string::npos) << refused.err;

  auto sub = as(ana_token, {"submit", "--parsable", "--", "sleep", "30"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  auto show = as(bob_token, {"show", id, "-o", "json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(Json::parse(show.out)["owner"], "ana");
  auto cancel = as(bob_token, {"cancel", id});
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_NE(cancel.err.find("permission denied"), std::string::npos) << cancel.err;
  EXPECT_EQ(as(ana_token, {"cancel", id}).exit_code, 0);

  // Who may jump the queue: a QoS class holds ana's priorities; only an admin sets one.
  EXPECT_EQ(as(ana_token, {"qos", "set", "mine", "--max-priority", "100"}).exit_code, 1);
  auto qos = c.Corral({"qos", "set", "normal", "--max-priority", "3", "--no-preempt", "--user",
                       "ana"});
  ASSERT_EQ(qos.exit_code, 0) << qos.err;
  EXPECT_EQ(qos.out, "QoS normal: priority -1000000..3, may not preempt by priority\n");
  auto above = as(ana_token, {"submit", "--priority", "4", "--", "true"});
  EXPECT_EQ(above.exit_code, 1);
  EXPECT_NE(above.err.find("above the limit 3 of QoS 'normal'"), std::string::npos) << above.err;
  EXPECT_EQ(as(ana_token, {"submit", "--priority", "3", "--", "true"}).exit_code, 0);
  auto classes = as(bob_token, {"qos"});
  ASSERT_EQ(classes.exit_code, 0) << classes.err;
  EXPECT_NE(classes.out.find("normal  -1000000..3  no       ana    -"), std::string::npos)
      << classes.out;

  auto list = c.Corral({"token", "list"});
  ASSERT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("bob"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find(ana_token), std::string::npos) << "secrets are never listed";
  std::string bob_id;
  std::istringstream rows(list.out);
  for (std::string line; std::getline(rows, line);) {
    if (line.find(" bob ") != std::string::npos) bob_id = line.substr(0, line.find(' '));
  }
  ASSERT_EQ(bob_id.rfind("t-", 0), 0u) << list.out;
  ASSERT_EQ(c.Corral({"token", "revoke", bob_id}).exit_code, 0);
  auto gone = as(bob_token, {"jobs"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.err.find("revoked"), std::string::npos) << gone.err;

  auto headers = RunCommand({"/usr/bin/curl", "-s", "-D", "-", "-o", "/dev/null", "-H",
                             "Authorization: Bearer " + c.token(), c.addr() + "/v1/jobs"});
  EXPECT_NE(headers.out.find("X-Corral-Revision: "), std::string::npos) << headers.out;
}

// `corral admin backup` copies the live store; the copy, put where a head keeps its store,
// restores the cluster's jobs in a new head (docs/reliability.md, "Backup and restore").
TEST(Cluster, AnOnlineBackupRestoresTheJobsInANewHead) {
  LocalCluster c("backup", 1, 2);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(c.Submit({"--", "true"}));
  std::map<std::string, std::string> states;
  ASSERT_TRUE(WaitAllSucceeded([&](const auto& a) { return c.Corral(a); }, ids, 30000, &states));

  auto ana = c.Corral({"token", "create", "--user", "ana"});
  ASSERT_EQ(ana.exit_code, 0) << ana.err;
  auto as_ana = RunCommand({CorralBin(), "admin", "backup", c.dir() + "/by-ana.db"},
                           {{"CORRAL_ADDR", c.addr()},
                            {"CORRAL_TOKEN", ana.out.substr(0, ana.out.find('\n'))},
                            {"CORRAL_CONFIG", c.dir() + "/none.json"}});
  EXPECT_EQ(as_ana.exit_code, 1);
  EXPECT_NE(as_ana.err.find("permission denied"), std::string::npos) << as_ana.err;
  EXPECT_FALSE(std::filesystem::exists(c.dir() + "/by-ana.db"));

  const std::string restored = c.dir() + "/restored";
  std::filesystem::create_directories(restored);
  const std::string copy = restored + "/corral.db";
  auto backup = c.Corral({"admin", "backup", copy});
  ASSERT_EQ(backup.exit_code, 0) << backup.err;
  EXPECT_NE(backup.out.find("backed up revision "), std::string::npos) << backup.out;
  auto again = c.Corral({"admin", "backup", copy});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("never overwrites"), std::string::npos) << again.err;

  // Restore: the copy as a new head's store, beside the old head's secrets.
  for (const char* f : {"admin.token", "join.token"}) {
    std::filesystem::copy_file(c.head_dir() + "/" + f, restored + "/" + f);
  }
  const std::string log = restored + "/head.log";
  Daemon head({CorralBin(), "head", "--state-dir", restored, "--listen", "127.0.0.1:0"}, log);
  std::string addr;
  ASSERT_TRUE(WaitUntil(20000, [&] {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    if (!std::regex_search(text, m, std::regex("listening on (http://[0-9.:]+)"))) return false;
    addr = m[1].str();
    return true;
  }));
  auto jobs = RunCommand({CorralBin(), "jobs", "--all", "-o", "json"},
                         {{"CORRAL_ADDR", addr},
                          {"CORRAL_TOKEN", c.token()},
                          {"CORRAL_CONFIG", c.dir() + "/none.json"}});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  Json listed = Json::parse(jobs.out, nullptr, false);
  ASSERT_TRUE(listed.is_array()) << jobs.out;
  std::set<std::string> succeeded;
  for (const Json& j : listed) {
    if (j.value("state", "") == "succeeded")
      succeeded.insert(std::to_string(j["id"].get<uint64_t>()));
  }
  for (const std::string& id : ids) EXPECT_TRUE(succeeded.count(id)) << id << " in " << jobs.out;
}

// Retention with real processes and a real SQLite file: jobs that ended longer ago than
// --retain-finished leave the head's memory (its gauges say so), and the CLI still reads them,
// from the store, before and after a head restart; a retired job cannot be cancelled.
TEST(Cluster, RetiredJobsLeaveMemoryAndAreReadFromTheStore) {
  LocalCluster c("retire", 1, 2, {"--retain-finished", "1s"});
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(c.Submit({"--name", "r" + std::to_string(i), "--", "true"}));
  std::map<std::string, std::string> states;
  ASSERT_TRUE(WaitAllSucceeded([&](const auto& a) { return c.Corral(a); }, ids, 30000, &states));
  auto metric = [&](const std::string& line) {
    std::string text = RunCommand({"/usr/bin/curl", "-sf", c.addr() + "/metrics"}).out;
    return text.find(line + "\n") != std::string::npos;
  };
  ASSERT_TRUE(WaitUntil(20000, [&] { return metric("corral_jobs_retired 3"); }))
      << RunCommand({"/usr/bin/curl", "-sf", c.addr() + "/metrics"}).out;
  EXPECT_TRUE(metric("corral_jobs{state=\"succeeded\"} 0"));
  for (int restart = 0; restart < 2; ++restart) {
    SCOPED_TRACE(restart ? "after a head restart" : "before");
    auto show = c.Corral({"show", ids[1], "-o", "json"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    Json job = Json::parse(show.out, nullptr, false);
    EXPECT_EQ(job.value("state", ""), "succeeded") << show.out;
    EXPECT_EQ(job["spec"].value("name", ""), "r1") << show.out;
    auto all = c.Corral({"jobs", "--all", "-o", "json"});
    ASSERT_EQ(all.exit_code, 0) << all.err;
    Json listed = Json::parse(all.out, nullptr, false);
    ASSERT_TRUE(listed.is_array()) << all.out;
    EXPECT_EQ(listed.size(), 3u) << all.out;
    auto cancel = c.Corral({"cancel", ids[0]});
    EXPECT_NE(cancel.exit_code, 0);
    EXPECT_NE(cancel.err.find("retired"), std::string::npos) << cancel.err;
    c.KillHead();
    c.StartHead();
    ASSERT_TRUE(WaitUntil(20000, [&] { return metric("corral_jobs_retired 3"); }));
  }
  EXPECT_TRUE(metric("corral_jobs{state=\"succeeded\"} 0")) << "a restart loads no retired job";
}

// The event stream over real HTTP, as a browser's EventSource reads it: server-sent events,
// resumed with Last-Event-ID from exactly the next change.
TEST(Cluster, EventStreamSpeaksServerSentEventsAndResumes) {
  LocalCluster c("events", 1, 1);
  c.Submit({"--", "true"});
  c.Submit({"--", "true"});
  auto sse = [&](const std::string& last_id) {
    std::vector<std::string> argv = {"/usr/bin/curl",
                                     "-s",
                                     "-H",
                                     "Accept: text/event-stream",
                                     "-H",
                                     "Authorization: Bearer " + c.token()};
    if (!last_id.empty()) argv.insert(argv.end(), {"-H", "Last-Event-ID: " + last_id});
    argv.push_back(c.addr() + "/v1/events?wait=0");
    return RunCommand(argv).out;
  };
  std::string all = sse("0");
  EXPECT_EQ(all.rfind("retry: ", 0), 0u) << all;
  EXPECT_NE(all.find("\nid: 1\n"), std::string::npos) << all;
  EXPECT_NE(all.find("event: job\ndata: {"), std::string::npos) << all;
  std::vector<uint64_t> ids;
  std::istringstream lines(all);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("id: ", 0) == 0) ids.push_back(std::stoull(line.substr(4)));
  }
  ASSERT_GE(ids.size(), 4u);
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_EQ(ids[i], ids[i - 1] + 1);
  std::string rest = sse(std::to_string(ids[1]));
  size_t first = rest.find("id: ");
  ASSERT_NE(first, std::string::npos) << rest;
  EXPECT_EQ(std::stoull(rest.substr(first + 4)), ids[2]) << "resumed at the next change";
}

// Arrays and dependencies through the real CLI: one submission, elements that know their
// index, at most %P at once, `jobs` folding the array, `wait` on all of it; a dependency on a
// failed job cancels the dependent with the reason, afterany lets it run.
TEST(Cluster, ArraysRunAtMostPAtOnceAndDependenciesFollowOutcomes) {
  LocalCluster c("arrays", 2, 4);
  std::string out = c.dir() + "/array.out";
  std::string id = c.Submit({"--array", "0-5%2", "--", "sh", "-c",
                             "s=$(date +%s%N); sleep 0.3; echo \"$SLURM_ARRAY_JOB_ID "
                             "$SLURM_ARRAY_TASK_ID $s $(date +%s%N)\" >> " +
                                 out});
  auto jobs = c.Corral({"jobs"});
  EXPECT_NE(jobs.out.find(id + "_[0-5]"), std::string::npos) << jobs.out;
  auto wait = c.Corral({"wait", id, "--timeout", "60s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_NE(wait.out.find(id + "_5 succeeded"), std::string::npos) << wait.out;
  std::ifstream in(out);
  std::vector<std::pair<int64_t, int64_t>> spans;
  std::set<int> indices;
  std::string array;
  int index;
  int64_t start, end;
  while (in >> array >> index >> start >> end) {
    EXPECT_EQ(array, id);
    indices.insert(index);
    spans.push_back({start, end});
  }
  EXPECT_EQ(indices, (std::set<int>{0, 1, 2, 3, 4, 5}));
  for (const auto& s : spans) {
    int overlapping = 0;
    for (const auto& o : spans) overlapping += o.first <= s.first && s.first < o.second;
    EXPECT_LE(overlapping, 2) << "more than 2 elements ran at once";
  }

  std::string bad = c.Submit({"--", "false"});
  std::string ok_dep = c.Submit({"--dependency", "afterok:" + bad, "--", "true"});
  std::string any_dep = c.Submit({"--dependency", "afterany:" + bad, "--", "true"});
  EXPECT_EQ(c.Corral({"wait", any_dep, "--timeout", "30s"}).exit_code, 0);
  auto dead = c.Corral({"wait", ok_dep, "--timeout", "30s"});
  EXPECT_EQ(dead.exit_code, 1);
  auto show = c.Corral({"show", ok_dep});
  EXPECT_NE(show.out.find("cancelled"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("can never be met"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("waits for:"), std::string::npos) << show.out;
  auto refused = c.Corral({"submit", "--dependency", "afterok:99999", "--", "true"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("does not exist"), std::string::npos) << refused.err;
}

// The version the build computed (git describe in a checkout, else the project's) is the one
// the CLI, the API and /metrics all show.
TEST(Cluster, CliApiAndMetricsShowOneVersion) {
  LocalCluster c("version", 0, 0);
  auto cli = RunCommand({CorralBin(), "--version"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(cli.out, m, std::regex("corral ([0-9][^ \n]*)\n"))) << cli.out;
  const std::string version = m[1];
  Json api = Json::parse(RunCommand({"/usr/bin/curl", "-sf", c.addr() + "/v1/version"}).out,
                         nullptr, false);
  EXPECT_EQ(api.value("version", ""), version) << api;
  std::string metrics = RunCommand({"/usr/bin/curl", "-sf", c.addr() + "/metrics"}).out;
  EXPECT_NE(metrics.find("corral_build_info{version=\"" + version + "\"} 1"), std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace corral::testing
