// Datasets through a real head and real agents, driven by the real CLI (docs/datasets.md):
// jobs on one node share one cached copy fetched once; a dataset in use cannot be removed;
// an agent killed while it fetches leaves no partial copy and the job still runs; a job goes
// to the node that holds its data; a 2-replica gang has its data on both its nodes; another
// user's job cannot reach a private dataset.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// `files` files of `size` bytes under `dir` (two subdirectories).
void MakeSource(const std::string& dir, int files, int size) {
  fs::create_directories(dir + "/train");
  fs::create_directories(dir + "/val");
  for (int i = 0; i < files; ++i) {
    std::ofstream(dir + (i % 4 ? "/train/" : "/val/") + std::to_string(i) + ".jpg")
        << std::string(size, static_cast<char>('a' + i % 26));
  }
}

Json ShowJob(const LocalCluster& c, const std::string& id) {
  auto r = c.Corral({"show", id, "-o", "json"});
  return Json::parse(r.out, nullptr, false);
}

std::string State(const LocalCluster& c, const std::string& id) {
  Json j = ShowJob(c, id);
  return j.is_object() ? j.value("state", "") : "";
}

std::string NodeOf(const LocalCluster& c, const std::string& id) {
  Json j = ShowJob(c, id);
  if (!j.is_object() || !j.contains("runs") || j["runs"].empty()) return "";
  return j["runs"].back()["placement"][0].value("node", "");
}

bool WaitState(const LocalCluster& c, const std::string& id, const std::string& want,
               int timeout_ms = 60000) {
  return WaitUntil(timeout_ms, [&] { return State(c, id) == want; });
}

int Lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

std::vector<std::string> Entries(const std::string& dir, bool dirs_only) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!dirs_only || e.is_directory()) out.push_back(e.path().filename().string());
  }
  return out;
}

Json DatasetJson(const LocalCluster& c, const std::string& name) {
  auto r = c.Corral({"datasets", "show", name, "-o", "json"});
  return Json::parse(r.out, nullptr, false);
}

TEST(Datasets, JobsShareOneCopyFetchedOnceAndADatasetInUseStays) {
  LocalCluster c("datasets-share", 1, 2);
  const std::string src = c.dir() + "/shared/imagenet";
  MakeSource(src, 200, 3000);
  // Bad input is refused naming the field, and changes nothing.
  auto bad = c.Corral({"datasets", "add", "no good", "--source", src});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("field 'name'"), std::string::npos) << bad.err;
  auto missing = c.Corral({"datasets", "add", "ghost", "--source", c.dir() + "/nowhere"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("field 'source'"), std::string::npos) << missing.err;
  auto add = c.Corral({"datasets", "add", "imagenet", "--source", src});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_NE(add.out.find("200 files"), std::string::npos) << add.out;
  auto unknown = c.Corral({"submit", "--dataset", "nope", "--", "true"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("no dataset 'nope'"), std::string::npos) << unknown.err;

  // Two jobs at once, one GPU each on the same node: each reads the dataset where its variable
  // says, the first file's bytes as the source has them.
  const std::string script =
      "test \"$(head -c 3 \"$CORRAL_DATASET_IMAGENET/val/0.jpg\")\" = aaa && "
      "ls \"$CORRAL_DATASET_IMAGENET/train\" | wc -l && echo \"at $CORRAL_DATASET_IMAGENET\" && "
      "sleep 1";
  const std::string a =
      c.Submit({"--gpus", "1", "--dataset", "imagenet", "--", "/bin/sh", "-c", script});
  const std::string b =
      c.Submit({"--gpus", "1", "--dataset",
                "imagenet@" + DatasetJson(c, "imagenet")["version"].get<std::string>(), "--",
                "/bin/sh", "-c", script});
  ASSERT_TRUE(WaitState(c, a, "succeeded")) << ShowJob(c, a).dump();
  ASSERT_TRUE(WaitState(c, b, "succeeded")) << ShowJob(c, b).dump();
  auto log_a = c.Corral({"logs", a}), log_b = c.Corral({"logs", b});
  EXPECT_NE(log_a.out.find("150\n"), std::string::npos) << log_a.out;
  const std::string cache = c.dir() + "/agents/node1/datasets";
  const std::string digest = DatasetJson(c, "imagenet")["digest"];
  const std::string copy = cache + "/data/" + digest.substr(7);
  EXPECT_NE(log_a.out.find("at " + copy), std::string::npos) << log_a.out;
  EXPECT_NE(log_b.out.find("at " + copy), std::string::npos) << log_b.out;
  EXPECT_EQ(Lines(cache + "/fetches"), 1) << "one fetch for both jobs";
  EXPECT_EQ(Entries(cache + "/data", true).size(), 1u) << "one copy";
  // The list says which nodes hold it (as the agent reports at its next sync).
  EXPECT_TRUE(WaitUntil(30000, [&] {
    auto l = c.Corral({"datasets"});
    return l.out.find("node1") != std::string::npos;
  })) << c.Corral({"datasets"}).out;

  // In use by a running job, it cannot be removed; once the job is over it can.
  const std::string holder =
      c.Submit({"--gpus", "1", "--dataset", "imagenet", "--", "sleep", "60"});
  ASSERT_TRUE(WaitState(c, holder, "running")) << ShowJob(c, holder).dump();
  auto refused = c.Corral({"datasets", "rm", "imagenet"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("used by jobs not yet over (" + holder + ")"), std::string::npos)
      << refused.err;
  ASSERT_EQ(c.Corral({"cancel", holder}).exit_code, 0);
  ASSERT_TRUE(WaitState(c, holder, "cancelled"));
  auto removed = c.Corral({"datasets", "rm", "imagenet"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(c.Corral({"datasets", "show", "imagenet"}).exit_code, 1);
}

TEST(Datasets, AnAgentKilledWhileFetchingLeavesNoPartialCopyAndTheJobStillRuns) {
  LocalCluster c("datasets-kill", 1, 1);
  const std::string src = c.dir() + "/shared/big";
  MakeSource(src, 24, 8 << 20);  // 192 MiB: long enough to catch the fetch under way
  ASSERT_EQ(c.Corral({"datasets", "add", "big", "--source", src}).exit_code, 0);
  const std::string cache = c.dir() + "/agents/node1/datasets";
  const std::string id = c.Submit(
      {"--dataset", "big", "--", "/bin/sh", "-c", "ls \"$CORRAL_DATASET_BIG/train\" | wc -l"});
  ASSERT_TRUE(WaitUntil(60000, [&] { return !Entries(cache + "/tmp", false).empty(); }));
  c.KillAgent(1);
  // What the fetch wrote is in tmp/ only: no copy is published that was not complete.
  for (const std::string& d : Entries(cache + "/data", true)) {
    auto m = c.Corral({"datasets", "show", "big", "-o", "json"});
    EXPECT_EQ("sha256:" + d, Json::parse(m.out)["digest"]) << "only a complete copy";
  }
  EXPECT_EQ(State(c, id), "scheduled") << "its processes never started";
  c.StartAgent(1);
  ASSERT_TRUE(WaitState(c, id, "succeeded", 120000)) << ShowJob(c, id).dump();
  EXPECT_EQ(c.Corral({"logs", id}).out, "18\n");
  EXPECT_TRUE(Entries(cache + "/tmp", false).empty()) << "the interrupted fetch is cleaned";
  EXPECT_EQ(Entries(cache + "/data", true).size(), 1u);
}

TEST(Datasets, AJobGoesToTheNodeThatHoldsItsData) {
  LocalCluster c("datasets-place", 2, 1);
  const std::string src = c.dir() + "/shared/cifar";
  MakeSource(src, 20, 1000);
  ASSERT_EQ(c.Corral({"datasets", "add", "cifar", "--source", src}).exit_code, 0);
  // node1 busy: the first job with the data goes to node2, which then holds it.
  const std::string blocker = c.Submit({"--gpus", "1", "--", "sleep", "60"});
  ASSERT_TRUE(WaitState(c, blocker, "running"));
  const std::string blocked_node = NodeOf(c, blocker);
  const std::string first = c.Submit({"--gpus", "1", "--dataset", "cifar", "--", "true"});
  ASSERT_TRUE(WaitState(c, first, "succeeded")) << ShowJob(c, first).dump();
  const std::string holder = NodeOf(c, first);
  ASSERT_NE(holder, blocked_node);
  ASSERT_EQ(c.Corral({"cancel", blocker}).exit_code, 0);
  ASSERT_TRUE(WaitState(c, blocker, "cancelled"));
  ASSERT_TRUE(WaitUntil(30000, [&] {
    Json d = DatasetJson(c, "cifar");
    return d.is_object() && d["nodes"] == Json::array({holder});
  })) << DatasetJson(c, "cifar").dump();
  // Both nodes free: a job without data goes where best fit puts it (the blocker's node), a
  // job with the data goes where the data is.
  const std::string plain = c.Submit({"--gpus", "1", "--", "true"});
  ASSERT_TRUE(WaitState(c, plain, "succeeded"));
  EXPECT_EQ(NodeOf(c, plain), blocked_node) << "the control: locality is what moves the next";
  const std::string second = c.Submit({"--gpus", "1", "--dataset", "cifar", "--", "true"});
  ASSERT_TRUE(WaitState(c, second, "succeeded")) << ShowJob(c, second).dump();
  EXPECT_EQ(NodeOf(c, second), holder);
  EXPECT_EQ(Lines(c.dir() + "/agents/" + holder + "/datasets/fetches"), 1);
}

// A gang whose replicas each read a dataset: with one GPU on each of two nodes, a 2-replica
// job runs a replica on each node; each node's agent stages the dataset into its own cache
// (one fetch each, one copy each) before its replica starts, and each replica reads it there.
TEST(Datasets, A2ReplicaGangHasItsDatasetOnBothNodes) {
  LocalCluster c("datasets-gang", 2, 1);
  const std::string src = c.dir() + "/shared/coco";
  MakeSource(src, 40, 2000);
  ASSERT_EQ(c.Corral({"datasets", "add", "coco", "--source", src}).exit_code, 0);
  const std::string digest = DatasetJson(c, "coco")["digest"];
  const std::string script =
      "test \"$(head -c 3 \"$CORRAL_DATASET_COCO/val/0.jpg\")\" = aaa && "
      "echo \"$CORRAL_NODE $(ls \"$CORRAL_DATASET_COCO/train\" | wc -l) at "
      "$CORRAL_DATASET_COCO\"";
  const std::string id = c.Submit(
      {"--gpus", "1", "--replicas", "2", "--dataset", "coco", "--", "/bin/sh", "-c", script});
  ASSERT_TRUE(WaitState(c, id, "succeeded")) << ShowJob(c, id).dump();
  const Json placement = ShowJob(c, id)["runs"].back()["placement"];
  ASSERT_EQ(placement.size(), 2u);
  std::vector<std::string> nodes;
  for (int rep = 0; rep < 2; ++rep) {
    const std::string node = placement[rep]["node"];
    nodes.push_back(node);
    const std::string cache = c.dir() + "/agents/" + node + "/datasets";
    const std::string copy = cache + "/data/" + digest.substr(7);
    // The node's cache holds the one complete copy, fetched once there.
    EXPECT_EQ(Entries(cache + "/data", true), std::vector<std::string>{digest.substr(7)}) << node;
    EXPECT_EQ(Lines(cache + "/fetches"), 1) << node;
    EXPECT_TRUE(fs::exists(copy + "/train/1.jpg")) << copy;
    // The replica on it read the dataset from that copy.
    auto logs = c.Corral({"logs", id, "--replica", std::to_string(rep)});
    ASSERT_EQ(logs.exit_code, 0) << logs.err;
    EXPECT_EQ(logs.out, node + " 30 at " + copy + "\n") << "replica " << rep;
  }
  EXPECT_NE(nodes[0], nodes[1]) << "one replica on each node";
  // The head hears from both agents that they hold it.
  EXPECT_TRUE(WaitUntil(30000, [&] {
    Json d = DatasetJson(c, "coco");
    if (!d.is_object() || !d.contains("nodes")) return false;
    std::vector<std::string> held = d["nodes"];
    std::sort(held.begin(), held.end());
    return held == std::vector<std::string>{"node1", "node2"};
  })) << DatasetJson(c, "coco").dump();
}

// Multi-user, as root (agents run jobs as their owners): a dataset whose files only its owner
// may read reaches no other user's job, neither through the job's staging nor on the node.
constexpr char kAna[] = "corral-ds-ana";
constexpr char kBob[] = "corral-ds-bob";

bool EnsureUnixUser(const std::string& name) {
  if (getpwnam(name.c_str()) != nullptr) return true;
  auto r = RunCommand({"/usr/sbin/useradd", "--create-home", "--shell", "/bin/sh", name});
  return r.exit_code == 0 && getpwnam(name.c_str()) != nullptr;
}

CommandResult As(const LocalCluster& c, const std::string& user,
                 const std::vector<std::string>& args) {
  auto token = c.Corral({"token", "create", "--user", user});
  std::vector<std::string> argv = {CorralBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {{"CORRAL_ADDR", c.addr()},
                           {"CORRAL_TOKEN", token.out.substr(0, token.out.find('\n'))},
                           {"CORRAL_CONFIG", c.dir() + "/none.json"}});
}

TEST(Datasets, AnotherUsersJobCannotReadAPrivateDataset) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: creates Unix users and runs jobs as them";
  ASSERT_TRUE(EnsureUnixUser(kAna) && EnsureUnixUser(kBob));
  LocalCluster c("datasets-private", 1, 2, {}, {});  // the agent as root: jobs as their owners
  const std::string src = c.dir() + "/shared/private";
  MakeSource(src, 10, 100);
  struct passwd* ana = getpwnam(kAna);
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    ASSERT_EQ(chown(e.path().c_str(), ana->pw_uid, ana->pw_gid), 0);
    chmod(e.path().c_str(), e.is_directory() ? 0700 : 0600);
  }
  ASSERT_EQ(chown(src.c_str(), ana->pw_uid, ana->pw_gid), 0);
  chmod(src.c_str(), 0700);
  chmod((c.dir() + "/shared").c_str(), 0755);
  auto add = As(c, kAna, {"datasets", "add", "private", "--source", src});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  const std::string script = "head -c 3 \"$CORRAL_DATASET_PRIVATE/val/0.jpg\"";
  auto mine =
      As(c, kAna, {"submit", "--parsable", "--dataset", "private", "--", "/bin/sh", "-c", script});
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  const std::string ana_job = mine.out.substr(0, mine.out.find('\n'));
  ASSERT_TRUE(WaitState(c, ana_job, "succeeded")) << ShowJob(c, ana_job).dump();
  EXPECT_EQ(c.Corral({"logs", ana_job}).out, "aaa");
  // Bob's job asks for the same data, now cached on the node: refused, naming it.
  auto theirs =
      As(c, kBob, {"submit", "--parsable", "--dataset", "private", "--", "/bin/sh", "-c", script});
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  const std::string bob_job = theirs.out.substr(0, theirs.out.find('\n'));
  ASSERT_TRUE(WaitState(c, bob_job, "failed")) << ShowJob(c, bob_job).dump();
  const std::string why = ShowJob(c, bob_job).dump();
  EXPECT_NE(why.find("dataset private from " + src), std::string::npos) << why;
  EXPECT_NE(why.find(std::string("user ") + kBob), std::string::npos) << why;
  // On the node the copy keeps the source's owner and modes: bob cannot read it there either.
  const std::string digest = DatasetJson(c, "private")["digest"];
  const std::string copied = c.dir() + "/agents/node1/datasets/data/" + digest.substr(7);
  struct stat st {};
  ASSERT_EQ(stat((copied + "/val/0.jpg").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ana->pw_uid);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto peek =
      RunCommand({"/usr/sbin/runuser", "-u", kBob, "--", "/bin/cat", copied + "/val/0.jpg"});
  EXPECT_NE(peek.exit_code, 0) << peek.out;
}

TEST(Datasets, AnotherUsersJobCannotReadAPrivateArchive) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: creates Unix users and runs jobs as them";
  ASSERT_TRUE(EnsureUnixUser(kAna) && EnsureUnixUser(kBob));
  LocalCluster c("datasets-private-tar", 1, 2, {}, {});  // the agent as root: jobs as owners
  const std::string dir = c.dir() + "/shared/private";
  MakeSource(dir, 6, 100);
  const std::string tar = c.dir() + "/shared/private.tar";
  ASSERT_EQ(RunCommand({"/bin/tar", "-cf", tar, "-C", dir, "train", "val"}).exit_code, 0);
  fs::remove_all(dir);
  struct passwd* ana = getpwnam(kAna);
  ASSERT_EQ(chown(tar.c_str(), ana->pw_uid, ana->pw_gid), 0);
  ASSERT_EQ(chmod(tar.c_str(), 0600), 0);
  chmod((c.dir() + "/shared").c_str(), 0755);
  auto add = As(c, kAna, {"datasets", "add", "ptar", "--source", tar});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  const std::string script = "head -c 3 \"$CORRAL_DATASET_PTAR/val/0.jpg\"";
  auto mine =
      As(c, kAna, {"submit", "--parsable", "--dataset", "ptar", "--", "/bin/sh", "-c", script});
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  const std::string ana_job = mine.out.substr(0, mine.out.find('\n'));
  ASSERT_TRUE(WaitState(c, ana_job, "succeeded")) << ShowJob(c, ana_job).dump();
  EXPECT_EQ(c.Corral({"logs", ana_job}).out, "aaa");
  // Now cached on the node, unpacked as ana's 0600 files; bob's job is refused before it runs.
  auto theirs =
      As(c, kBob, {"submit", "--parsable", "--dataset", "ptar", "--", "/bin/sh", "-c", script});
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  const std::string bob_job = theirs.out.substr(0, theirs.out.find('\n'));
  ASSERT_TRUE(WaitState(c, bob_job, "failed")) << ShowJob(c, bob_job).dump();
  const std::string why = ShowJob(c, bob_job)["runs"].back().value("reason", "");
  EXPECT_NE(why.find("dataset ptar from " + tar), std::string::npos) << why;
  EXPECT_NE(why.find(std::string("user ") + kBob + " may not read it"), std::string::npos) << why;
  EXPECT_EQ(c.Corral({"logs", bob_job}).out, "") << "its processes never ran";
  const std::string digest = DatasetJson(c, "ptar")["digest"];
  const std::string copied = c.dir() + "/agents/node1/datasets/data/" + digest.substr(7);
  struct stat st {};
  ASSERT_EQ(stat((copied + "/val/0.jpg").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ana->pw_uid);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto peek =
      RunCommand({"/usr/sbin/runuser", "-u", kBob, "--", "/bin/cat", copied + "/val/0.jpg"});
  EXPECT_NE(peek.exit_code, 0) << peek.out;
}

// Fetches from one source are queued and paced: with one fetch at a time per source and 4 MiB/s,
// three jobs' different datasets (8 MiB each) on one file system are fetched one after another,
// each no faster than the rate, as the agent's own record of its fetches says; a job waiting its
// turn says where it is in line.
struct FetchRecord {
  int64_t bytes = 0, ms = 0, start = 0, end = 0;
};

std::vector<FetchRecord> Fetches(const std::string& path) {
  std::vector<FetchRecord> out;
  std::ifstream in(path);
  std::string hex;
  for (FetchRecord r; in >> hex >> r.bytes >> r.ms >> r.start >> r.end;) out.push_back(r);
  return out;
}

TEST(Datasets, FetchesFromOneSourceAreQueuedAndPaced) {
  constexpr int64_t kRate = 4 << 20;
  LocalCluster c(
      "datasets-pace", 1, 3, {},
      {"--run-as", "agent", "--dataset-fetches-per-source", "1", "--dataset-source-rate", "4M"});
  std::vector<std::string> ids;
  for (int d = 0; d < 3; ++d) {
    const std::string name = "set" + std::to_string(d);
    const std::string src = c.dir() + "/shared/" + name;
    // 8 MiB: two seconds a fetch at the rate, so that the jobs behind it wait long enough for
    // a poll (three `corral show`s) to see them waiting, even on a loaded machine.
    MakeSource(src, 8, 1 << 20);
    std::ofstream(src + "/which") << name;  // each its own content
    ASSERT_EQ(c.Corral({"datasets", "add", name, "--source", src}).exit_code, 0);
  }
  for (int d = 0; d < 3; ++d) {
    ids.push_back(c.Submit({"--gpus", "1", "--dataset", "set" + std::to_string(d), "--", "true"}));
  }
  std::string seen;
  EXPECT_TRUE(WaitUntil(30000, [&] {
    for (const std::string& id : ids) {
      const std::string j = ShowJob(c, id).dump();
      if (j.find("queued for its source") != std::string::npos) seen = j;
    }
    return !seen.empty();
  })) << "a job waiting for its turn says so";
  // Its place: 1 is next, behind the fetch that holds the source; 2 waits behind that one too
  // (which of them a poll sees first is a matter of timing).
  static const std::regex kPlace("queued for its source, (1 \\(next\\)|2 in line)");
  EXPECT_TRUE(std::regex_search(seen, kPlace)) << seen;
  for (const std::string& id : ids) ASSERT_TRUE(WaitState(c, id, "succeeded")) << id;
  std::vector<FetchRecord> f = Fetches(c.dir() + "/agents/node1/datasets/fetches");
  ASSERT_EQ(f.size(), 3u);
  std::sort(f.begin(), f.end(),
            [](const FetchRecord& a, const FetchRecord& b) { return a.start < b.start; });
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_GE(f[i].ms, f[i].bytes * 1000 / kRate - 20) << "fetch " << i << " ran over the rate";
    if (i > 0) {
      EXPECT_GE(f[i].start, f[i - 1].end) << "one fetch at a time from the source";
    }
  }
}

// A cluster-wide budget for one source: 4 MiB/s for at most 2 nodes at once. Three jobs on
// three nodes each fetch 8 MiB from it, and no agent paces anything itself: two fetch at once,
// each capped at 2 MiB/s by the head, the third waits at the head, saying so, until one of them
// starts. Together, as the agents' own records of their fetches say, they never read faster
// than the budget; without it each fetch runs at the disk's speed.
TEST(Datasets, ASourceBudgetHoldsForEveryNodesFetchesTogether) {
  constexpr int64_t kBudget = 4 << 20;
  constexpr int64_t kCap = kBudget / 2;
  LocalCluster c("datasets-budget", 3, 1, {}, {"--run-as", "agent"});
  const std::string shared = c.dir() + "/shared";
  auto limit = c.Corral({"datasets", "source-limit", shared, "--rate", "4M", "--fetches", "2"});
  ASSERT_EQ(limit.exit_code, 0) << limit.err;
  std::vector<std::string> ids;
  for (int d = 0; d < 3; ++d) {
    const std::string name = "part" + std::to_string(d);
    MakeSource(shared + "/" + name, 8, 1 << 20);
    std::ofstream(shared + "/" + name + "/which") << name;  // each its own content
    ASSERT_EQ(c.Corral({"datasets", "add", name, "--source", shared + "/" + name}).exit_code, 0);
  }
  for (int d = 0; d < 3; ++d) {
    ids.push_back(c.Submit({"--gpus", "1", "--dataset", "part" + std::to_string(d), "--", "true"}));
  }
  std::string seen;
  EXPECT_TRUE(WaitUntil(30000, [&] {
    for (const std::string& id : ids) {
      const std::string j = ShowJob(c, id).dump();
      if (j.find("(cluster budget)") != std::string::npos) seen = j;
    }
    return !seen.empty();
  })) << "a job waiting for its turn at the head says so";
  EXPECT_NE(seen.find("queued for " + shared + " (cluster budget), 1 (next)"), std::string::npos)
      << seen;
  auto listed = c.Corral({"datasets", "limits", "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const Json limits = Json::parse(listed.out, nullptr, false);
  ASSERT_TRUE(limits.is_array() && limits.size() == 1u) << listed.out;
  EXPECT_EQ(limits[0]["source"], shared);
  EXPECT_EQ(limits[0]["rate"], kBudget);
  for (const std::string& id : ids) ASSERT_TRUE(WaitState(c, id, "succeeded")) << id;

  std::vector<FetchRecord> f;
  for (const char* node : {"node1", "node2", "node3"}) {
    std::vector<FetchRecord> mine = Fetches(c.dir() + "/agents/" + node + "/datasets/fetches");
    ASSERT_EQ(mine.size(), 1u) << node;
    f.push_back(mine[0]);
  }
  std::sort(f.begin(), f.end(),
            [](const FetchRecord& a, const FetchRecord& b) { return a.start < b.start; });
  int64_t bytes = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    bytes += f[i].bytes;
    EXPECT_GE(f[i].ms, f[i].bytes * 1000 / kCap - 50) << "fetch " << i << " ran over its cap";
    int overlapping = 0;  // fetches under way when this one began
    for (size_t j = 0; j < i; ++j) overlapping += f[j].end > f[i].start;
    EXPECT_LE(overlapping, 1) << "at most 2 nodes fetch at once";
  }
  EXPECT_GT(f[1].start, 0);
  EXPECT_LT(f[1].start, f[0].end) << "the first two shared the budget at once";
  const int64_t span_ms = f.back().end - f.front().start;
  EXPECT_GE(span_ms, bytes * 1000 / kBudget - 100)
      << "all of them together read at most the budget: " << bytes << " bytes in " << span_ms
      << " ms";
}

// Stage-out, as root (agents run jobs as their owners): what a job leaves in its directory on
// the node is copied to shared storage as its owner once its processes end and before its GPU
// goes to the next job; a copy the owner may not make fails the job, naming the path, and
// leaves what the job made where it was.
int64_t BytesUnder(const std::string& dir) {
  int64_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file()) n += static_cast<int64_t>(it->file_size());
  }
  return n;
}

std::string EventNamed(const Json& job, const std::string& what) {
  if (!job.is_object() || !job.contains("events")) return "";
  for (const Json& e : job["events"]) {
    if (e.value("what", "") == what) return e.value("reason", "");
  }
  return "";
}

TEST(Datasets, StageOutCopiesBackAsTheOwnerBeforeTheGpuIsFreed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: creates Unix users and runs jobs as them";
  ASSERT_TRUE(EnsureUnixUser(kAna) && EnsureUnixUser(kBob));
  LocalCluster c("datasets-stageout", 1, 1, {}, {});  // the agent as root: jobs as their owners
  struct passwd* ana = getpwnam(kAna);
  const std::string scratch = c.dir() + "/scratch", shared = c.dir() + "/shared";
  fs::create_directories(scratch);
  fs::create_directories(shared + "/ana");
  chmod(scratch.c_str(), 01777);
  chmod(shared.c_str(), 0755);
  ASSERT_EQ(chown((shared + "/ana").c_str(), ana->pw_uid, ana->pw_gid), 0);
  chmod((shared + "/ana").c_str(), 0755);

  // Bad input is refused naming the field, and submits nothing.
  auto relative = As(c, kAna, {"submit", "--stage-out", "out:" + shared + "/ana/r", "--", "true"});
  EXPECT_NE(relative.exit_code, 0);
  EXPECT_NE(relative.err.find("field 'stage_out'"), std::string::npos) << relative.err;
  auto nested =
      As(c, kAna, {"submit", "--stage-out", scratch + ":" + scratch + "/x", "--", "true"});
  EXPECT_NE(nested.exit_code, 0);
  EXPECT_NE(nested.err.find("field 'stage_out'"), std::string::npos) << nested.err;
  // A destination its user may not write is refused by the CLI run as that user.
  auto token = c.Corral({"token", "create", "--user", kBob});
  auto unwritable =
      RunCommand({"/usr/sbin/runuser", "-u", kBob, "--", CorralBin(), "submit", "--stage-out",
                  scratch + "/b:" + shared + "/ana/from-bob", "--", "true"},
                 {{"CORRAL_ADDR", c.addr()},
                  {"CORRAL_TOKEN", token.out.substr(0, token.out.find('\n'))},
                  {"CORRAL_CONFIG", c.dir() + "/none.json"}});
  EXPECT_NE(unwritable.exit_code, 0);
  EXPECT_NE(unwritable.err.find("field 'stage_out'"), std::string::npos) << unwritable.err;
  EXPECT_NE(unwritable.err.find("may not write in " + shared + "/ana"), std::string::npos)
      << unwritable.err;
  EXPECT_EQ(c.Corral({"jobs", "-o", "json"}).out.find("\"id\""), std::string::npos)
      << "nothing was submitted";

  // Ana's job writes 48 MiB and a log; the next job on the only GPU finds all of it in place.
  const std::string dest = shared + "/ana/run1";
  const std::string writer =
      "mkdir -p \"$CORRAL_STAGE_OUT/ckpt\" && head -c 50331648 /dev/urandom > "
      "\"$CORRAL_STAGE_OUT/ckpt/model.bin\" && echo done > \"$CORRAL_STAGE_OUT/log.txt\"";
  auto a = As(c, kAna,
              {"submit", "--parsable", "--gpus", "1", "--stage-out", scratch + "/ana-1:" + dest,
               "--", "/bin/sh", "-c", writer});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const std::string first = a.out.substr(0, a.out.find('\n'));
  const std::string reader =
      "find " + dest + " -type f -printf '%s\\n' | awk '{n+=$1} END {print n}'";
  auto b = As(c, kAna, {"submit", "--parsable", "--gpus", "1", "--", "/bin/sh", "-c", reader});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string next = b.out.substr(0, b.out.find('\n'));
  ASSERT_TRUE(WaitState(c, first, "succeeded")) << ShowJob(c, first).dump();
  ASSERT_TRUE(WaitState(c, next, "succeeded")) << ShowJob(c, next).dump();
  const int64_t want = 50331648 + 5;
  EXPECT_EQ(c.Corral({"logs", next}).out, std::to_string(want) + "\n")
      << "the next job on the GPU saw the whole stage-out";
  EXPECT_EQ(BytesUnder(dest), want);
  const std::string said = EventNamed(ShowJob(c, first), "staged out");
  EXPECT_NE(said.find(std::to_string(want) + " bytes, 2 files"), std::string::npos)
      << ShowJob(c, first).dump();
  struct stat st {};
  ASSERT_EQ(stat((dest + "/ckpt/model.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ana->pw_uid) << "copied as its owner";

  // Bob's job names ana's directory as its destination (past the CLI's check: the agent's copy
  // as bob is what enforces it): it fails naming the path and why; its output stays.
  auto theirs = As(
      c, kBob,
      {"submit", "--parsable", "--stage-out", scratch + "/bob-1:" + shared + "/ana/from-bob", "--",
       "/bin/sh", "-c", "mkdir -p \"$CORRAL_STAGE_OUT\" && echo mine > \"$CORRAL_STAGE_OUT/out\""});
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  const std::string bobs = theirs.out.substr(0, theirs.out.find('\n'));
  ASSERT_TRUE(WaitState(c, bobs, "failed")) << ShowJob(c, bobs).dump();
  const std::string why = ShowJob(c, bobs)["runs"].back().value("reason", "");
  EXPECT_NE(why.find("stage-out of " + scratch + "/bob-1 to " + shared + "/ana/from-bob"),
            std::string::npos)
      << ShowJob(c, bobs).dump();
  EXPECT_NE(why.find("Permission denied"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(shared + "/ana/from-bob")) << "nothing written as root";
  std::ifstream kept(scratch + "/bob-1/out");
  std::string line;
  std::getline(kept, line);
  EXPECT_EQ(line, "mine") << "what the job made is kept";
}

// Staging while a job waits for a reservation: node1's one GPU is busy with a run that has a
// time limit, so the next job, which reads a dataset, is reserved node1 for when that run
// ends. The agent fetches the dataset ahead while the job waits (the job's reason says so),
// through its paced queue for the source, and once the run ahead ends the job starts there
// with its data cached: one fetch, ended before the job was placed, and a stage-in hit.
TEST(Datasets, AJobWaitingForAReservationHasItsDataFetchedAheadAndStartsWithAHit) {
  LocalCluster c("datasets-ahead", 1, 1, {}, {"--run-as", "agent", "--dataset-source-rate", "4M"});
  const std::string src = c.dir() + "/shared/slow";
  MakeSource(src, 12, 1 << 20);  // 12 MiB: three seconds at the rate
  ASSERT_EQ(c.Corral({"datasets", "add", "slow", "--source", src}).exit_code, 0);
  const std::string ahead = c.Submit({"--gpus", "1", "--time-limit", "10m", "--", "sleep", "600"});
  ASSERT_TRUE(WaitState(c, ahead, "running"));
  const std::string waiting = c.Submit({"--gpus", "1", "--dataset", "slow", "--", "/bin/sh", "-c",
                                        "ls \"$CORRAL_DATASET_SLOW/train\" | wc -l"});
  std::string seen;
  EXPECT_TRUE(WaitUntil(30000,
                        [&] {
                          Json j = ShowJob(c, waiting);
                          seen = j.dump();
                          return j.value("pending_reason", "").find("staging slow on node1") !=
                                 std::string::npos;
                        }))
      << "the waiting job says how far its data is fetched ahead: " << seen;
  const std::string cache = c.dir() + "/agents/node1/datasets";
  ASSERT_TRUE(WaitUntil(30000, [&] { return Lines(cache + "/fetches") == 1; }));
  ASSERT_TRUE(WaitUntil(30000, [&] {
    return ShowJob(c, waiting).value("pending_reason", "").find("its data is cached on node1") !=
           std::string::npos;
  })) << ShowJob(c, waiting).dump();
  EXPECT_EQ(State(c, waiting), "pending") << "fetched while it waited";
  EXPECT_EQ(State(c, ahead), "running");

  ASSERT_EQ(c.Corral({"cancel", ahead}).exit_code, 0);
  ASSERT_TRUE(WaitState(c, waiting, "succeeded")) << ShowJob(c, waiting).dump();
  EXPECT_EQ(NodeOf(c, waiting), "node1");
  EXPECT_EQ(c.Corral({"logs", waiting}).out, "9\n");
  std::vector<FetchRecord> f = Fetches(cache + "/fetches");
  ASSERT_EQ(f.size(), 1u) << "fetched once, ahead";
  const Json job = ShowJob(c, waiting);
  EXPECT_LT(f[0].end, job["runs"][0]["scheduled_at"].get<int64_t>()) << job.dump();
  // The agent counts the job's stage-in a hit, and the fetch ahead as no stage-in.
  Json nodes = Json::parse(c.Corral({"nodes", "-o", "json"}).out, nullptr, false);
  if (nodes.is_object() && nodes.contains("nodes")) nodes = nodes["nodes"];
  ASSERT_TRUE(nodes.is_array() && !nodes.empty()) << nodes.dump();
  const std::string metrics =
      RunCommand(
          {"/usr/bin/curl", "-sf", "http://" + nodes[0]["address"].get<std::string>() + "/metrics"})
          .out;
  EXPECT_NE(metrics.find("corral_dataset_stage_ins_total{result=\"cached\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("corral_dataset_stage_ins_total{result=\"fetched\"} 0"), std::string::npos)
      << metrics;
}

// Each source's measured stage-in rate is shown: a job placed on a node lacking its dataset
// measures the dataset's source (the directory holding it) by its stage-in, and `corral
// datasets sources` (the API's GET /v1/datasets) and the head's /metrics show the rate, when
// it was measured and from how many bytes.
TEST(Datasets, TheSourcesMeasuredRatesAreShown) {
  LocalCluster c("datasets-rates", 1, 1);
  const std::string shared = c.dir() + "/shared";
  MakeSource(shared + "/cifar", 20, 1000);
  ASSERT_EQ(c.Corral({"datasets", "add", "cifar", "--source", shared + "/cifar"}).exit_code, 0);
  auto none = c.Corral({"datasets", "sources", "-o", "json"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(Json::parse(none.out, nullptr, false), Json::array()) << "nothing measured yet";
  const int64_t before = static_cast<int64_t>(time(nullptr)) * 1000;
  const std::string id = c.Submit({"--gpus", "1", "--dataset", "cifar", "--", "true"});
  ASSERT_TRUE(WaitState(c, id, "succeeded")) << ShowJob(c, id).dump();
  auto shown = c.Corral({"datasets", "sources", "-o", "json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  Json sources = Json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(sources.is_array() && sources.size() == 1u) << shown.out;
  const Json& s = sources[0];
  EXPECT_EQ(s.value("source", ""), shared);
  EXPECT_EQ(s.value("bytes", int64_t{0}), 20000);
  const int64_t ms = s.value("ms", int64_t{0});
  ASSERT_GT(ms, 0);
  EXPECT_EQ(s.value("bytes_per_second", int64_t{0}), 20000 * 1000 / ms);
  EXPECT_GE(s.value("measured_at", int64_t{0}), before);
  auto table = c.Corral({"datasets", "sources"});
  EXPECT_NE(table.out.find(shared), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("19.5 KiB in " + std::to_string(ms) + " ms"), std::string::npos)
      << table.out;
  const std::string metrics = RunCommand({"/usr/bin/curl", "-sf", c.addr() + "/metrics"}).out;
  const std::string metric =
      "corral_dataset_source_rate_bytes_per_second{source=\"" + shared + "\"} ";
  const size_t at = metrics.find(metric);
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_EQ(std::stod(metrics.substr(at + metric.size())), static_cast<double>(20000 * 1000 / ms))
      << metrics;
}

}  // namespace
}  // namespace corral::testing
