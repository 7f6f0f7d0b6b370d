// One trace, two heads: the head's core alone (what `corral simulate` runs) and a whole head
// shell (its SQLite store, group commit, credentials and held syncs; sim/shell_port.h), both
// driven by the simulator's loop with the same emulated agents on virtual time. They must take
// the same decisions in the same order: every placement, start, stop order and end, at the
// same instant (the starts agents report in one instant in any order), the same report and the
// same number of scheduling passes: the core is given a pass after each command, where the
// shell runs one as a head that serves does. What the shell adds (durability, authentication,
// answers after commit, held syncs) must change no decision.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "head/change.h"
#include "sim/report.h"
#include "sim/shell_port.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace corral::sim {
namespace {

// The decisions a head takes, one line each, in the order its changes were made.
using DecisionLog = std::vector<std::string>;

std::string DecisionOf(const head::Change& c) {
  std::ostringstream s;
  if (const auto* p = std::get_if<head::RunPlaced>(&c.what)) {
    s << c.at << " job " << p->job << "." << p->attempt << " placed on";
    for (const ReplicaPlacement& r : p->placement) {
      s << " " << r.node << "[";
      for (int32_t g : r.gpus) s << g << ",";
      s << "]";
    }
  } else if (const auto* p = std::get_if<head::RunStarted>(&c.what)) {
    s << c.at << " job " << p->job << "." << p->attempt << " started";
  } else if (const auto* p = std::get_if<head::StopRequested>(&c.what)) {
    s << c.at << " job " << p->job << "." << p->attempt << " stop " << StopCauseName(p->cause)
      << ": " << p->reason;
  } else if (const auto* p = std::get_if<head::RunEnded>(&c.what)) {
    s << c.at << " job " << p->job << "." << p->attempt << " ended " << RunStateName(p->run_state)
      << ", job " << JobStateName(p->job_state) << " (" << StopCauseName(p->cause)
      << "): " << p->reason;
  }
  return s.str();
}

// A port that passes every call on and writes down the decisions in its output.
class Recorder final : public HeadPort {
 public:
  Recorder(std::unique_ptr<HeadPort> head, DecisionLog* log) : head_(std::move(head)), log_(log) {}
  Status SetQueue(const QueueConfig& q, TimeMs now) override { return head_->SetQueue(q, now); }
  Status CreateReservation(const NodeReservationSpec& r, TimeMs now) override {
    return head_->CreateReservation(r, now);
  }
  Status AddDataset(const Dataset& d, TimeMs now) override { return head_->AddDataset(d, now); }
  Result<Job> Submit(JobSpec spec, const std::string& owner, TimeMs now) override {
    return head_->Submit(std::move(spec), owner, now);
  }
  uint64_t Register(const RegisterRequest& r, TimeMs now) override {
    return head_->Register(r, now);
  }
  void Report(const SyncRequest& r, TimeMs now) override { head_->Report(r, now); }
  void AwaitOrders(const SyncRequest& r, TimeMs now) override { head_->AwaitOrders(r, now); }
  SyncResponse OrdersFor(const std::string& node, uint64_t from) override {
    return head_->OrdersFor(node, from);
  }
  void Tick(TimeMs now) override { head_->Tick(now); }
  void Schedule(TimeMs now) override { head_->Schedule(now); }
  void EstimateStarts(TimeMs now, const std::vector<JobId>& watch) override {
    head_->EstimateStarts(now, watch);
  }
  head::CoreOutput TakeOutput() override {
    head::CoreOutput out = head_->TakeOutput();
    for (const head::Change& c : out.changes) {
      if (std::string d = DecisionOf(c); !d.empty()) log_->push_back(std::move(d));
    }
    return out;
  }
  const head::HeadCore& core() const override { return head_->core(); }
  PassStats pass_stats() const override { return head_->pass_stats(); }

 private:
  std::unique_ptr<HeadPort> head_;
  DecisionLog* log_;
};

HeadPortFactory Recording(HeadPortFactory head, DecisionLog* log) {
  return [head = std::move(head), log](head::CoreConfig c,
                                       TimeMs now) -> Result<std::unique_ptr<HeadPort>> {
    Result<std::unique_ptr<HeadPort>> port = head(std::move(c), now);
    if (!port.ok()) return port.status();
    return std::unique_ptr<HeadPort>(std::make_unique<Recorder>(std::move(*port), log));
  };
}

HeadPortFactory Core() {
  return [](head::CoreConfig c, TimeMs now) -> Result<std::unique_ptr<HeadPort>> {
    return MakeCorePort(std::move(c), now);
  };
}

HeadPortFactory Shell(const std::string& dir, DurationMs sync_hold_ms) {
  return [dir, sync_hold_ms](head::CoreConfig c, TimeMs now) {
    return OpenShellPort(std::move(c), now, dir, sync_hold_ms);
  };
}

// A fresh, empty directory for one head's state.
std::string StateDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/shell_parity_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The starts the agents report in one instant, in the order of their job ids: when agents
// that got orders in the same instant report is theirs, not a decision of the head (a shell's
// agent whose own sync asked for the pass gets its orders a round trip later than the others).
DecisionLog InstantStartsSorted(DecisionLog log) {
  auto is_start = [](const std::string& d) { return d.ends_with(" started"); };
  auto instant = [](const std::string& d) { return d.substr(0, d.find(' ')); };
  for (size_t i = 0; i < log.size();) {
    size_t k = i;
    while (k < log.size() && is_start(log[k]) && instant(log[k]) == instant(log[i])) ++k;
    std::sort(log.begin() + static_cast<std::ptrdiff_t>(i),
              log.begin() + static_cast<std::ptrdiff_t>(k));
    i = std::max(k, i + 1);
  }
  return log;
}

// The first difference between two logs, "" if none.
std::string Difference(const DecisionLog& core_log, const DecisionLog& shell_log) {
  const DecisionLog core = InstantStartsSorted(core_log), shell = InstantStartsSorted(shell_log);
  size_t i = 0;
  while (i < core.size() && i < shell.size() && core[i] == shell[i]) ++i;
  if (i == core.size() && i == shell.size()) return "";
  auto at = [i](const DecisionLog& l) { return i < l.size() ? l[i] : std::string("(none)"); };
  return "decision " + std::to_string(i) + " of " + std::to_string(core.size()) + " (core) and " +
         std::to_string(shell.size()) + " (shell) differs:\n  core:  " + at(core) +
         "\n  shell: " + at(shell);
}

// 40 jobs of four users in two queues on 4 nodes of 4 GPUs over a few hours: single
// GPUs, pairs, whole nodes and gangs of two nodes; bursts submitted in the same second; a
// job in six with a time limit below its run time.
std::vector<TraceJob> MixedTrace() {
  std::mt19937_64 rng(27);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  const int32_t gpus[] = {1, 1, 1, 2, 2, 4, 8};
  std::ostringstream csv;
  csv << "job_id,submit_time,duration,num_gpus,time_limit,queue,user,name\n";
  int64_t t = 0;
  for (int i = 0; i < 40; ++i) {
    if (pick(3) != 0) t += pick(600);  // else in the same second as the one before
    int64_t duration = 60 + pick(3600);
    int64_t limit = pick(6) == 0 ? duration / 2 : 0;
    int64_t user = pick(4);
    csv << "j" << i << "," << t << "," << duration << "," << gpus[pick(7)] << ","
        << (limit > 0 ? std::to_string(limit) : "") << "," << (user < 2 ? "a" : "b") << ",u" << user
        << "," << (pick(2) ? "train" : "eval") << "\n";
  }
  Result<Trace> trace = ParseTrace(csv.str(), "mixed", {});
  CORRAL_CHECK(trace.ok(), trace.status().message());
  return trace->jobs;
}

SimConfig MixedCluster(sched::OrderPolicy policy) {
  SimConfig c;
  c.cluster = {4, 4, 2};
  c.policy = policy;
  c.preempt_grace_ms = 30 * kSecond;
  c.restart_overhead_ms = kMinute;
  c.checkpoint_interval_ms = 10 * kMinute;
  c.node_mtbf_ms = 6 * kHour;
  c.node_repair_ms = 20 * kMinute;
  c.failure_seed = 5;
  return c;
}

size_t Count(const DecisionLog& log, const std::string& what) {
  size_t n = 0;
  for (const std::string& d : log) n += d.find(what) != std::string::npos;
  return n;
}

struct Outcome {
  DecisionLog log;
  SimResult result;
};

Outcome Simulated(const std::vector<TraceJob>& jobs, const SimConfig& config,
                  HeadPortFactory head) {
  Outcome r;
  Result<SimResult> result = Simulate(jobs, config, Recording(std::move(head), &r.log));
  CORRAL_CHECK(result.ok(), result.status().message());
  r.result = std::move(*result);
  return r;
}

void ExpectParity(sched::OrderPolicy policy, const std::string& name, DurationMs sync_hold_ms) {
  std::vector<TraceJob> jobs = MixedTrace();
  SimConfig config = MixedCluster(policy);
  Outcome core = Simulated(jobs, config, Core());
  Outcome shell = Simulated(jobs, config, Shell(StateDir(name), sync_hold_ms));
  ASSERT_EQ(Difference(core.log, shell.log), "");
  EXPECT_EQ(RunsCsv(jobs, core.result), RunsCsv(jobs, shell.result));
  EXPECT_EQ(SummaryJson(Summarize(name, jobs, core.result)),
            SummaryJson(Summarize(name, jobs, shell.result)));
  // The trace tries what it should: every kind of decision happens.
  EXPECT_GT(Count(core.log, " placed on n"), jobs.size());
  EXPECT_GT(Count(core.log, "] n"), 0u) << "a gang over two nodes";
  EXPECT_GT(Count(core.log, " stop time_limit: "), 0u);
  EXPECT_GT(Count(core.log, "ended lost"), 0u) << "runs lost with a failed node";
  EXPECT_GT(core.result.node_failures, 0);
  if (IsPreemptivePolicy(policy)) {
    EXPECT_GT(Count(core.log, " stop preempted: "), 0u);
  }
}

TEST(ShellParityTest, TheShellDecidesAsTheCoreUnderTheCorralPolicy) {
  ExpectParity(sched::OrderPolicy::kCorral, "corral", kMinute);
}

// The head answers each held sync within milliseconds, with nothing new most times: the agents'
// extra syncs change no decision.
TEST(ShellParityTest, TheShellDecidesAsTheCoreUnderFifoWithShortHolds) {
  ExpectParity(sched::OrderPolicy::kFifo, "fifo", 2);
}

// The comparison is not blind: one job that runs a second longer shows.
TEST(ShellParityTest, OneJobASecondLongerIsADifference) {
  std::vector<TraceJob> jobs = MixedTrace();
  SimConfig config = MixedCluster(sched::OrderPolicy::kCorral);
  Outcome same = Simulated(jobs, config, Core());
  auto unlimited = std::find_if(jobs.begin(), jobs.end(),
                                [](const TraceJob& j) { return j.time_limit_ms == 0; });
  ASSERT_NE(unlimited, jobs.end());
  unlimited->duration_ms += kSecond;
  std::string diff = Difference(same.log, Simulated(jobs, config, Core()).log);
  EXPECT_NE(diff.find("differs"), std::string::npos) << diff;
}

}  // namespace
}  // namespace corral::sim
