// The head: the control plane's single-threaded state machine (DESIGN §7). It owns the
// cluster state, drives the scheduler, persists every change before acting on it (group
// commit through CommitPipeline), and answers agents' long-poll syncs with their desired runs.
//
// Threads: one state-machine thread runs every method body and every callback (an
// io_context with one thread); the commit thread only writes the store. The public methods
// may be called from any thread: they post into the state machine. Each callback is called
// on the state-machine thread once everything the request changed (or saw) is durable.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>  // before Boost.Asio (DESIGN §13)
#include <vector>

#include "core/agent_protocol.h"
#include "core/job.h"
#include "core/node.h"
#include "core/time.h"
#include "head/commit_pipeline.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace corral::head {

struct HeadConfig {
  std::string state_dir;
  std::string checkpoint_root;  // default STATE_DIR/checkpoints; CORRAL_CHECKPOINT_DIR lives below
  DurationMs unreachable_after_ms = 15 * kSecond;
  DurationMs down_after_ms = 60 * kSecond;
  DurationMs max_sync_hold_ms = 25 * kSecond;
  DurationMs tick_ms = 500;
  sched::SchedulerConfig scheduler;
};

struct JobFilter {
  std::set<JobState> states;  // empty: all
  std::string queue;
  std::string user;
  JobId after = 0;
  int32_t limit = 1000;
};

struct NodeView {
  Node node;
  int32_t gpus_used = 0;
  std::vector<std::string> runs;
};

struct QueueView {
  QueueConfig config;
  int32_t used_gpus = 0;
  int32_t pending = 0;
  int32_t running = 0;
};

struct Tokens {
  std::string admin;
  std::string join;
};

class Head {
 public:
  template <typename T>
  using Callback = std::function<void(Result<T>)>;

  // Loads the store from config.state_dir, creating tokens on first start.
  static Result<std::unique_ptr<Head>> Open(HeadConfig config, const Clock* clock);
  ~Head();

  void Start();  // starts the state-machine thread
  void Stop();   // answers nothing more; joins threads

  const Tokens& tokens() const { return tokens_; }  // immutable after Open
  uint64_t epoch() const { return epoch_; }

  void Submit(JobSpec spec, std::string user, Callback<Job> done);
  void Cancel(JobId id, Callback<Job> done);
  void GetJob(JobId id, Callback<Job> done);
  void ListJobs(JobFilter filter, Callback<std::vector<Job>> done);
  void ListNodes(Callback<std::vector<NodeView>> done);
  void GetNode(std::string name, Callback<Node> done);
  void SetDrain(std::string node, bool drain, Callback<NodeView> done);
  void ListQueues(Callback<std::vector<QueueView>> done);
  void SetQueue(QueueConfig queue, Callback<QueueConfig> done);

  void Register(RegisterRequest req, Callback<RegisterResponse> done);
  // `token` is the node token from the request; the answer may be held up to req.wait_ms.
  void Sync(SyncRequest req, std::string token, Callback<SyncResponse> done);

 private:
  struct Parked {
    SyncRequest req;
    Callback<SyncResponse> done;
    std::unique_ptr<boost::asio::steady_timer> timer;
  };

  Head(HeadConfig config, const Clock* clock, std::unique_ptr<store::Store> store);
  Status Recover(store::StoredState state);

  // --- durability (head.cc) ---
  void Edit(store::StateEdit edit);
  void PersistJob(const Job& job);
  void PersistNode(const Node& node);
  void AfterDurable(std::function<void()> fn);
  void FlushEdits();
  void OnDurable(Status st);
  template <typename T>
  void Reply(Callback<T> done, Result<T> result);

  // --- jobs (job_lifecycle.cc) ---
  void DoSubmit(JobSpec spec, std::string user, Callback<Job> done);
  void DoCancel(JobId id, Callback<Job> done);
  void RequestSchedule();
  void RunSchedulePass();
  void ApplyPlacement(const sched::PlaceDecision& d, TimeMs now);
  void RequestStop(Job& job, const std::string& reason, TimeMs now);
  void OnReplicaReport(Job& job, const std::string& node, const RunReport& r, TimeMs now);
  void MaybeFinishRun(Job& job, TimeMs now);
  void FinishRun(Job& job, RunState state, const std::string& reason, TimeMs now);
  void EnforceTimeLimits(TimeMs now);
  sched::PendingJob ToPending(const Job& job) const;
  void AddEvent(Job& job, TimeMs at, std::string what, std::string reason);

  // --- agents (agent_sync.cc) ---
  void DoRegister(RegisterRequest req, Callback<RegisterResponse> done);
  void DoSync(SyncRequest req, std::string token, Callback<SyncResponse> done);
  SyncResponse DesiredFor(const std::string& node);
  void BumpNode(const std::string& node);
  void AnswerParked(const std::string& node);
  void CheckLiveness(TimeMs now);
  void LoseNode(Node& node, TimeMs now);
  sched::NodeInfo ToNodeInfo(const Node& node) const;
  std::map<std::string, std::string> RunEnv(const Job& job, const Run& run, int32_t replica) const;

  void Tick();
  void Post(std::function<void()> fn);

  HeadConfig config_;
  const Clock* clock_;
  std::unique_ptr<store::Store> store_;
  Tokens tokens_;
  uint64_t epoch_ = 0;

  // Everything below is owned by the state-machine thread.
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::steady_timer> tick_timer_;
  sched::Scheduler scheduler_;
  std::map<JobId, Job> jobs_;
  std::map<std::string, Node> nodes_;
  std::map<std::string, QueueConfig> queues_;
  std::map<std::string, std::string> node_tokens_;
  std::map<std::string, std::set<JobId>> node_runs_;  // node -> jobs with an active run there
  std::map<std::string, uint64_t> node_version_;      // desired-state version per node
  std::map<std::string, Parked> parked_;
  std::set<JobId> active_jobs_;            // scheduled or running
  std::set<std::string> nodes_to_answer_;  // parked syncs whose desired state changed
  JobId next_job_id_ = 1;
  bool schedule_requested_ = false;

  std::vector<store::StateEdit> next_edits_;
  std::vector<std::function<void()>> next_callbacks_;
  std::vector<std::function<void()>> inflight_callbacks_;
  bool inflight_ = false;
  bool flush_posted_ = false;

  std::unique_ptr<CommitPipeline> pipeline_;
  std::thread thread_;
  bool stopped_ = false;
};

template <typename T>
void Head::Reply(Callback<T> done, Result<T> result) {
  AfterDurable(
      [done = std::move(done), result = std::move(result)]() mutable { done(std::move(result)); });
}

}  // namespace corral::head
