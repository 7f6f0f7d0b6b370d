// A Jepsen-style test of the store under a failover manager (label pg, in CI): a
// pg_auto_failover formation on loopback (a monitor, a primary and two standbys,
// number_sync_standbys 1: testing/pg_auto_failover.h), two real `corral head`s on its
// multi-host URL (restarted when they exit, as their supervisor would), two agents with
// simulated GPUs, and submitters whose every submission has its own name and whose outcome is
// recorded as ok (acknowledged, with its job id), failed or unknown (no answer in time).
// A nemesis, in turn: SIGKILLs the primary, SIGSTOPs it until the monitor has promoted a
// standby, cancels (pg_cancel_backend) and then terminates (pg_terminate_backend) the heads'
// commits waiting for the standbys (the primary's WAL senders stopped) and kills the primary
// before the standbys received them, and SIGKILLs the leader head. The checker, against the final
// state: every acknowledged submission is there exactly once under its id, none other more
// than once, no job started twice (each run appends its id to a file), the change log's
// revisions are contiguous. Two negative controls show the checker can fail: with
// asynchronous replication, and with heads that acknowledge a commit whose replication wait
// was cancelled, the same faults lose acknowledged submissions.
// PGAF_SEED seeds the submitters' pacing; the faults come in the order above. One ctest test
// runs the whole binary: its tests share one formation (a minute to build).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "cluster_fixture.h"
#include "net/http_client.h"
#include "testing/pg_auto_failover.h"
#include "testing/pg_server.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kHeads = 2;
constexpr int kAgents = 2;
// The agents' lease must outlast a database failover (docs/reliability.md: lease > write
// unavailability + 10 s). The tests' monitor timeouts fail over in 20-30 s on a quiet machine,
// but a loaded 2-core one took 60 s, past the default 40 s: every agent fenced. The heads'
// --down-after stays above the lease.
constexpr int kAgentLeaseS = 90;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double Since(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double>(t - t0).count();
}

// One submission's outcome, as the client saw it.
struct Outcome {
  enum Kind { kOk, kFailed, kUnknown } kind;
  std::string id;  // kOk: the acknowledged job id
  Clock::time_point began, ended;
};

// What the checker found in the final state.
struct Verdict {
  int acked = 0, failed = 0, unknown = 0;
  std::vector<std::string> lost;        // acknowledged, absent (or under another id)
  std::string lost_detail;              // each lost one's id and when it was acknowledged
  std::vector<std::string> duplicate;   // a submission with several jobs
  std::vector<std::string> unexpected;  // a job no submission made
  int started_twice = 0;
  std::string revisions;  // "" when contiguous, else what is wrong
  std::string ToString() const {
    std::ostringstream o;
    o << acked << " ok, " << failed << " failed, " << unknown << " unknown; " << lost.size()
      << " lost";
    for (size_t i = 0; i < lost.size() && i < 5; ++i) o << (i ? ", " : " (") << lost[i];
    o << (lost.empty() ? "" : ")") << ", " << duplicate.size() << " duplicated, "
      << unexpected.size() << " unexpected, " << started_twice << " started twice"
      << (revisions.empty() ? "" : "; revisions: " + revisions)
      << (lost_detail.empty() ? "" : "; lost: " + lost_detail);
    return o.str();
  }
};

class Workload;

// One fault the nemesis made, and what followed it.
struct Fault {
  std::string what;
  Clock::time_point at;
  double promoted_s = -1;   // until the monitor promoted a standby (-1: not a database fault)
  double first_ack_s = -1;  // until the first submission begun after it was acknowledged
  std::string ToString(const Workload& w) const;
};

// Heads, agents and submitters on one database of the formation.
class Workload {
 public:
  Workload(PgAutoFailover& pg, const std::string& name, std::vector<std::string> head_flags)
      : pg_(pg), db_(name), head_flags_(std::move(head_flags)) {
    dir_ = (std::filesystem::temp_directory_path() /
            ("corral-pgaf-" + name + "-" + std::to_string(getpid())))
               .string();
    std::filesystem::remove_all(dir_);
    for (int i = 0; i < kHeads; ++i) {
      std::filesystem::create_directories(HeadDir(i));
      urls_.push_back("");
    }
  }
  ~Workload() {
    StopSubmitters();
    stop_supervisor_ = true;
    if (supervisor_.joinable()) supervisor_.join();
    agents_.clear();
    heads_.clear();
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);
  }
  const std::string& dir() const { return dir_; }

  // `agents`: how many (the negative controls need none: they count acknowledgements only).
  Status Start(unsigned seed, int agents = kAgents) {
    seed_ = seed;
    started_ = Clock::now();
    CORRAL_RETURN_IF_ERROR(pg_.CreateDatabase(db_));
    // Seen twice right after the formation's replication settings changed: a read-write node
    // the same URL led to a moment later lacked the database just made. Wait until the URL
    // leads to it, and start the first head again if it exited meanwhile.
    if (!WaitUntil(60000, [&] { return pg_.QueryPrimary(db_, "SELECT 1").ok(); })) {
      return Internal("database " + db_ + " not reachable through the URL: " +
                      pg_.QueryPrimary(db_, "SELECT 1").status().ToString());
    }
    for (int i = 0; i < kHeads; ++i) urls_[i] = "http://127.0.0.1:" + std::to_string(FreePort());
    StartHead(0);
    if (!WaitUntil(60000, [&] {
          if (Exited(heads_[0]->pid())) StartHead(0);
          return Says(HeadLog(0), "listening on");
        })) {
      return Internal("head0 did not lead: " + ReadAll(HeadLog(0)));
    }
    for (int i = 1; i < kHeads; ++i) {
      for (const char* f : {"/admin.token", "/join.token"}) {
        std::filesystem::copy_file(HeadDir(0) + f, HeadDir(i) + f,
                                   std::filesystem::copy_options::overwrite_existing);
      }
      StartHead(i);
    }
    supervisor_ = std::thread([this] { Supervise(); });
    for (int i = 1; i <= agents; ++i) StartAgent(i);
    if (!WaitUntil(60000, [&] { return ReadyNodes() == agents; })) {
      return Internal("the agents did not register");
    }
    return Status::Ok();
  }

  void StartSubmitters(int n) {
    for (int t = 0; t < n; ++t) {
      submitters_.emplace_back([this, t] { Submit(t); });
    }
  }
  void StopSubmitters() {
    stop_submitting_ = true;
    for (auto& t : submitters_) t.join();
    submitters_.clear();
  }

  // The head that says it leads (-1: none).
  int Leader() const {
    for (int i = 0; i < kHeads; ++i) {
      net::HttpClient http(urls_[static_cast<size_t>(i)], "");
      auto r = http.Get("/v1/leader", std::chrono::seconds(1));
      if (!r.ok()) continue;
      Json j = Json::parse(r->body, nullptr, false);
      if (j.is_object() && j.value("role", "") == "leader") return i;
    }
    return -1;
  }
  void KillHead(int i) {
    std::lock_guard lock(heads_mu_);
    heads_[i]->Kill(SIGKILL);  // the supervisor starts it again
  }
  int head_restarts() const { return head_restarts_.load(); }

  // Cuts the commits of the heads waiting for the standbys short (`how`: pg_cancel_backend or
  // pg_terminate_backend) for `window`; returns how many it cut.
  int CutWaitingCommits(int primary, const std::string& how, std::chrono::milliseconds window) {
    int cut = 0;
    auto end = Clock::now() + window;
    while (Clock::now() < end) {
      auto r = pg_.Query(primary, "postgres",
                         "SELECT count(" + how +
                             "(pid)) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND "
                             "application_name LIKE 'corral-head%'");
      if (r.ok() && !r->empty()) cut += std::atoi(r->c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return cut;
  }

  // A time after the last fault: the first submission begun after `t0` that was acknowledged
  // ended this many seconds after it (-1: none).
  double SinceStart(Clock::time_point t) const { return Since(started_, t); }
  double FirstAckAfter(Clock::time_point t0) {
    std::lock_guard lock(mu_);
    double first = -1;
    for (const auto& [name, o] : outcomes_) {
      if (o.kind != Outcome::kOk || o.began < t0) continue;
      double s = Since(t0, o.ended);
      if (first < 0 || s < first) first = s;
    }
    return first;
  }

  // Waits for every acknowledged job to succeed (at most `timeout_ms`), then checks the final
  // state.
  Verdict Check(int timeout_ms) {
    StopSubmitters();
    std::vector<std::string> acked;
    Verdict v;
    for (const auto& [name, o] : outcomes_) {
      if (o.kind == Outcome::kOk) acked.push_back(o.id);
      v.acked += o.kind == Outcome::kOk;
      v.failed += o.kind == Outcome::kFailed;
      v.unknown += o.kind == Outcome::kUnknown;
    }
    std::map<std::string, std::string> state;
    // A lost job never succeeds: wait for the others only as long as they can take.
    WaitAllSucceeded([&](const std::vector<std::string>& a) { return Corral(a); }, acked,
                     timeout_ms, &state);
    auto listed = Json::parse(Corral({"jobs", "--all", "-o", "json"}).out, nullptr, false);
    std::map<std::string, std::vector<std::string>> ids_named;
    if (listed.is_array()) {
      for (const auto& j : listed) {
        std::string name = j.contains("spec") ? j["spec"].value("name", "") : "";
        ids_named[name].push_back(std::to_string(j["id"].get<uint64_t>()));
      }
    }
    for (const auto& [name, o] : outcomes_) {
      const auto& ids = ids_named[name];
      if (o.kind == Outcome::kOk && (ids.size() != 1 || ids[0] != o.id)) {
        v.lost.push_back(name);
        v.lost_detail += name + " (job " + o.id + ", submitted at " +
                         std::to_string(Since(started_, o.began)) + " s, acknowledged at " +
                         std::to_string(Since(started_, o.ended)) + " s, listed " +
                         std::to_string(ids.size()) + " times) ";
      }
      if (ids.size() > 1) v.duplicate.push_back(name);
    }
    for (const auto& [name, ids] : ids_named) {
      if (!outcomes_.count(name)) v.unexpected.push_back(name);
    }
    std::map<std::string, int> runs;
    std::istringstream lines(ReadAll(dir_ + "/starts"));
    for (std::string line; std::getline(lines, line);) ++runs[line];
    for (const auto& [id, n] : runs) v.started_twice += n > 1;
    v.revisions = CheckRevisions();
    return v;
  }

  // Runs the agents' logs say fencing stopped.
  int FencedRuns() const {
    int fenced = 0;
    for (int i = 1; i <= kAgents; ++i) {
      std::istringstream lines(ReadAll(dir_ + "/node" + std::to_string(i) + ".log"));
      for (std::string line; std::getline(lines, line);) {
        fenced += line.find("unreachable for more than") != std::string::npos;
      }
    }
    return fenced;
  }

 private:
  std::string HeadDir(int i) const { return dir_ + "/head" + std::to_string(i); }
  std::string HeadLog(int i) const { return HeadDir(i) + ".log"; }
  static bool Says(const std::string& log, const std::string& what) {
    return ReadAll(log).find(what) != std::string::npos;
  }
  std::string HeadList() const {
    std::string l;
    for (const auto& u : urls_) l += (l.empty() ? "" : ",") + u;
    return l;
  }
  static int FreePort();

  void StartHead(int i) {
    // Its application_name names its sessions on the server (the nemesis finds its commits).
    std::string url = pg_.Url(db_) + "&application_name=corral-head" + std::to_string(i);
    std::vector<std::string> argv{CorralBin(), "head",     "--state-dir",
                                  HeadDir(i),  "--listen", urls_[static_cast<size_t>(i)].substr(7),
                                  "--store",   url,        "--leader-lease",
                                  "5s"};
    argv.insert(argv.end(), head_flags_.begin(), head_flags_.end());
    heads_[i] = std::make_unique<Daemon>(argv, HeadLog(i));
  }
  static bool Exited(pid_t pid) {
    return waitpid(pid, nullptr, WNOHANG) == pid || ::kill(pid, 0) != 0;
  }
  // A head exits when its store fails a commit (75) or cannot be opened (1): its supervisor
  // starts it again.
  void Supervise() {
    while (!stop_supervisor_) {
      {
        std::lock_guard lock(heads_mu_);
        for (auto& [i, d] : heads_) {
          if (d->pid() > 0 && !Exited(d->pid())) continue;
          d.reset();
          StartHead(i);
          ++head_restarts_;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }

  void StartAgent(int i) {
    std::string name = "node" + std::to_string(i);
    agents_[i] = std::make_unique<Daemon>(std::vector<std::string>{CorralBin(),
                                                                   "agent",
                                                                   "--head",
                                                                   HeadList(),
                                                                   "--join-token-file",
                                                                   HeadDir(0) + "/join.token",
                                                                   "--name",
                                                                   name,
                                                                   "--state-dir",
                                                                   dir_ + "/" + name,
                                                                   "--simulate-gpus",
                                                                   "4",
                                                                   "--cpus",
                                                                   "64",
                                                                   "--memory",
                                                                   "256G",
                                                                   "--run-as",
                                                                   "agent",
                                                                   "--lease",
                                                                   std::to_string(kAgentLeaseS)},
                                          dir_ + "/" + name + ".log");
  }
  int ReadyNodes() const {
    Json nodes = Json::parse(Corral({"nodes", "-o", "json"}).out, nullptr, false);
    if (nodes.is_object()) nodes = nodes.value("nodes", Json::array());
    int ready = 0;
    for (const auto& n : nodes) ready += n.value("state", "") == "ready";
    return ready;
  }
  CommandResult Corral(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"/usr/bin/timeout", "90", CorralBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string token = ReadAll(HeadDir(0) + "/admin.token");
    while (!token.empty() && token.back() == '\n') token.pop_back();
    return RunCommand(argv, {{"CORRAL_ADDR", HeadList()},
                             {"CORRAL_TOKEN", token},
                             {"CORRAL_CONFIG", dir_ + "/no-such-config.json"}});
  }

  // One submitter: each submission its own name (the CLI gives each its own request id and
  // repeats it across failovers), a one-second job that records its start.
  void Submit(int t) {
    std::mt19937 rng(seed_ * 31 + static_cast<unsigned>(t));
    for (int n = 0; !stop_submitting_; ++n) {
      std::string name = "jep-" + std::to_string(t) + "-" + std::to_string(n);
      Outcome o{Outcome::kFailed, "", Clock::now(), {}};
      auto r = Corral({"submit", "--parsable", "--gpus", "1", "--name", name, "--", "/bin/sh", "-c",
                       "echo $CORRAL_JOB_ID >> " + dir_ + "/starts; sleep 1"});
      o.ended = Clock::now();
      std::string id = r.out.substr(0, r.out.find('\n'));
      if (r.exit_code == 0 && !id.empty()) {
        o.kind = Outcome::kOk;
        o.id = id;
      } else if (r.exit_code == 124) {
        o.kind = Outcome::kUnknown;
      }
      {
        std::lock_guard lock(mu_);
        outcomes_[name] = o;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250 + rng() % 250));
    }
  }

  // The change log on the primary: revisions from the oldest kept to the newest, no gap.
  std::string CheckRevisions() const {
    auto r = pg_.QueryPrimary(db_,
                              "SELECT count(*) || ' ' || coalesce(min(revision), 0) || ' ' || "
                              "coalesce(max(revision), 0) FROM changes");
    if (!r.ok()) return r.status().ToString();
    long count = 0, lo = 0, hi = 0;
    std::istringstream(*r) >> count >> lo >> hi;
    if (count == 0) return "no changes";
    if (hi - lo + 1 != count) return *r + " (count, min, max): a gap";
    return "";
  }

  PgAutoFailover& pg_;
  std::string db_;
  std::vector<std::string> head_flags_;
  std::string dir_;
  std::vector<std::string> urls_;
  unsigned seed_ = 1;
  Clock::time_point started_;
  std::mutex heads_mu_;
  std::map<int, std::unique_ptr<Daemon>> heads_;  // GUARDED_BY(heads_mu_) once supervised
  std::map<int, std::unique_ptr<Daemon>> agents_;
  std::thread supervisor_;
  std::atomic<bool> stop_supervisor_{false};
  std::atomic<int> head_restarts_{0};
  std::vector<std::thread> submitters_;
  std::atomic<bool> stop_submitting_{false};
  std::mutex mu_;
  std::map<std::string, Outcome> outcomes_;  // GUARDED_BY(mu_): by submission name
};

int Workload::FreePort() { return FreeLoopbackPort(); }

std::string Fault::ToString(const Workload& w) const {
  std::ostringstream o;
  o << what << " at " << w.SinceStart(at) << " s: ";
  if (promoted_s >= 0) o << "standby promoted after " << promoted_s << " s, ";
  o << "first acknowledged submission " << first_ack_s << " s after";
  return o.str();
}

unsigned Seed() {
  const char* s = std::getenv("PGAF_SEED");
  return s && *s ? static_cast<unsigned>(std::atoi(s)) : 1u;
}

// One formation for every test here (it takes a minute to build); each test its own database.
class PgFailover : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!PgAutoFailover::Unavailable().empty()) return;
    auto f = PgAutoFailover::Start("postgres");
    if (f.ok()) {
      formation_ = f->release();
    } else {
      start_error_ = new std::string(f.status().ToString());
    }
  }
  static void TearDownTestSuite() {
    delete formation_;
    formation_ = nullptr;
  }
  void SetUp() override {
    if (std::string why = PgAutoFailover::Unavailable(); !why.empty()) {
      // One ctest test for the binary: a skip would read as a pass, and CI installs it all.
      const char* ci = std::getenv("CI");
      if (ci && std::string(ci) == "true") FAIL() << "CI=true and " << why;
      GTEST_SKIP() << why;
    }
    ASSERT_TRUE(formation_) << *start_error_;
    ASSERT_TRUE(formation_->Revive().ok());  // after a test that failed midway
    Status whole = formation_->WaitHealthy(120000);
    ASSERT_TRUE(whole.ok()) << whole.ToString();
    auto names =
        formation_->Query(formation_->Primary(), "postgres", "SHOW synchronous_standby_names");
    if (names.ok() && names->empty()) {  // a negative control failed before restoring it
      Status sync = formation_->SetSynchronous(true);
      ASSERT_TRUE(sync.ok()) << sync.ToString();
    }
  }
  PgAutoFailover& pg() { return *formation_; }

  // Replication held (the primary's WAL senders stopped) while `during` runs and the heads
  // commit, then the primary SIGKILLed, so that the promoted standby has none of what the
  // primary committed meanwhile. `*failover_s`: until the monitor promoted a standby.
  void KillPrimaryWithReplicationHeld(const std::function<void()>& during, double* failover_s) {
    int primary = pg().Primary();
    ASSERT_GE(primary, 0);
    Status held = pg().HoldReplication(primary);
    ASSERT_TRUE(held.ok()) << held.ToString();
    during();
    ASSERT_TRUE(pg().Kill(primary).ok());
    auto t0 = Clock::now();
    auto next = pg().WaitFailover(primary, 90000);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    *failover_s = Since(t0, Clock::now());
    ASSERT_TRUE(pg().Restart(primary).ok());
  }

  // 1. The primary's machine dies; the killed node rejoins as a standby.
  void KillPrimary(std::vector<Fault>* faults) {
    int primary = pg().Primary();
    ASSERT_GE(primary, 0);
    ASSERT_TRUE(pg().Kill(primary).ok());
    faults->push_back({"SIGKILL primary", Clock::now()});
    auto next = pg().WaitFailover(primary, 90000);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    faults->back().promoted_s = Since(faults->back().at, Clock::now());
    ASSERT_TRUE(pg().Restart(primary).ok());
    Status whole = pg().WaitHealthy(120000);
    ASSERT_TRUE(whole.ok()) << whole.ToString();
  }
  // 2. The primary hangs until the monitor has promoted a standby, then wakes (its keeper
  // demotes it and it rejoins as a standby).
  void StopPrimary(Workload& w, std::vector<Fault>* faults) {
    int primary = pg().Primary();
    ASSERT_GE(primary, 0);
    ASSERT_TRUE(pg().Stop(primary).ok());
    faults->push_back({"SIGSTOP primary", Clock::now()});
    auto next = pg().WaitFailover(primary, 90000);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    faults->back().promoted_s = Since(faults->back().at, Clock::now());
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ASSERT_TRUE(pg().Continue(primary).ok());
    std::cout << "[pgaf] SIGCONT old primary at " << w.SinceStart(Clock::now()) << " s"
              << std::endl;
    Status whole = pg().WaitHealthy(120000);
    ASSERT_TRUE(whole.ok()) << whole.ToString();
  }
  // 3, 4. Commits waiting for the standbys cut short, cancelled then terminated, then the
  // primary dies before the standbys received them: a commit acknowledged here would be lost.
  void CutCommitsAndKillPrimary(Workload& w, std::vector<Fault>* faults, int* cancelled,
                                int* terminated) {
    double failover_s = 0;
    ASSERT_NO_FATAL_FAILURE(KillPrimaryWithReplicationHeld(
        [&] {
          int primary = pg().Primary();
          *cancelled = w.CutWaitingCommits(primary, "pg_cancel_backend", std::chrono::seconds(2));
          *terminated =
              w.CutWaitingCommits(primary, "pg_terminate_backend", std::chrono::seconds(2));
          faults->push_back({"commits cut short, SIGKILL primary", Clock::now()});
        },
        &failover_s));
    faults->back().promoted_s = failover_s;
    Status whole = pg().WaitHealthy(120000);
    ASSERT_TRUE(whole.ok()) << whole.ToString();
  }
  // 5. The leader head dies (its supervisor starts it again, a standby now).
  void KillLeaderHead(Workload& w, std::vector<Fault>* faults) {
    int leader = -1;
    ASSERT_TRUE(WaitUntil(60000, [&] { return (leader = w.Leader()) >= 0; }));
    w.KillHead(leader);
    faults->push_back({"SIGKILL leader head", Clock::now()});
    std::this_thread::sleep_for(std::chrono::seconds(5));
  }

  static PgAutoFailover* formation_;
  static std::string* start_error_;
};
PgAutoFailover* PgFailover::formation_ = nullptr;
std::string* PgFailover::start_error_ = nullptr;

TEST_F(PgFailover, NoAcknowledgedSubmissionIsLostOrRunTwiceThroughEveryFault) {
  Workload w(pg(), "jepsen", {});
  Status started = w.Start(Seed());
  ASSERT_TRUE(started.ok()) << started.ToString();
  w.StartSubmitters(2);
  std::this_thread::sleep_for(std::chrono::seconds(3));

  std::vector<Fault> faults;
  ASSERT_NO_FATAL_FAILURE(KillPrimary(&faults));
  ASSERT_NO_FATAL_FAILURE(StopPrimary(w, &faults));
  int cancelled = 0, terminated = 0;
  ASSERT_NO_FATAL_FAILURE(CutCommitsAndKillPrimary(w, &faults, &cancelled, &terminated));
  ASSERT_NO_FATAL_FAILURE(KillLeaderHead(w, &faults));

  for (Fault& f : faults) f.first_ack_s = w.FirstAckAfter(f.at);
  Verdict v = w.Check(120000);
  std::cout << "[pgaf] seed " << Seed() << ": " << v.ToString() << "; " << cancelled
            << " commits cancelled, " << terminated << " terminated; " << w.head_restarts()
            << " head restarts; " << w.FencedRuns() << " runs fenced\n";
  for (const Fault& f : faults) std::cout << "[pgaf] " << f.ToString(w) << "\n";
  EXPECT_TRUE(v.lost.empty()) << v.ToString() << "; see " << w.dir();
  EXPECT_TRUE(v.duplicate.empty()) << v.ToString();
  EXPECT_TRUE(v.unexpected.empty()) << v.ToString();
  EXPECT_EQ(v.started_twice, 0) << v.ToString();
  EXPECT_EQ(v.revisions, "");
  EXPECT_EQ(w.FencedRuns(), 0) << "an agent fenced itself during a database failover";
  EXPECT_GT(cancelled + terminated, 0)
      << "no commit waited for the standbys: the cut step tested nothing";
  EXPECT_GT(v.acked, 30);
  for (const Fault& f : faults) {
    EXPECT_GE(f.first_ack_s, 0) << "writes never resumed after " << f.what;
  }
}

// Negative control: with asynchronous replication (no standby in the quorum, the heads told
// to lead anyway) the primary acknowledges what no standby holds, and the failover loses it.
TEST_F(PgFailover, AsynchronousReplicationLosesAcknowledgedSubmissions) {
  Status async = pg().SetSynchronous(false);
  ASSERT_TRUE(async.ok()) << async.ToString();
  Workload w(pg(), "async", {"--allow-async-store"});
  Status started = w.Start(Seed(), /*agents=*/0);
  ASSERT_TRUE(started.ok()) << started.ToString();
  w.StartSubmitters(2);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  double failover_s = 0;
  ASSERT_NO_FATAL_FAILURE(KillPrimaryWithReplicationHeld(
      [] { std::this_thread::sleep_for(std::chrono::seconds(3)); }, &failover_s));
  Status whole = pg().WaitHealthy(120000);
  Status sync = pg().SetSynchronous(true);  // for the tests after this one
  ASSERT_TRUE(whole.ok()) << whole.ToString();
  ASSERT_TRUE(sync.ok()) << sync.ToString();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  Verdict v = w.Check(0);
  std::cout << "[pgaf] asynchronous: " << v.ToString() << "\n";
  EXPECT_FALSE(v.lost.empty()) << "the negative control lost nothing: " << v.ToString();
}

// Negative control: heads that take a commit whose replication wait was cancelled as durable
// (the server's warning ignored) acknowledge it, and the failover loses it.
TEST_F(PgFailover, AcknowledgingACancelledReplicationWaitLosesTheSubmission) {
  Workload w(pg(), "ignoring", {"--unsafe-acknowledge-unreplicated-commits"});
  Status started = w.Start(Seed(), /*agents=*/0);
  ASSERT_TRUE(started.ok()) << started.ToString();
  w.StartSubmitters(2);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  int cut = 0;
  double failover_s = 0;
  ASSERT_NO_FATAL_FAILURE(KillPrimaryWithReplicationHeld(
      [&] {
        cut = w.CutWaitingCommits(pg().Primary(), "pg_cancel_backend", std::chrono::seconds(3));
      },
      &failover_s));
  Status whole = pg().WaitHealthy(120000);
  ASSERT_TRUE(whole.ok()) << whole.ToString();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  Verdict v = w.Check(0);
  std::cout << "[pgaf] warning ignored: " << cut << " commits cancelled; " << v.ToString() << "\n";
  EXPECT_GT(cut, 0);
  EXPECT_FALSE(v.lost.empty()) << "the negative control lost nothing: " << v.ToString();
}

}  // namespace
}  // namespace corral::testing
