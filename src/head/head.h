// The head's shell (DESIGN §7): the Asio side around HeadCore. It authenticates each call,
// runs the command on the core, hands the core's changes to the group commit, and sends the
// answer, and any agent orders, only once everything they reflect is durable (write-ahead).
// It holds agents' long-poll syncs and runs the timers (liveness, time limits, passes).
//
// Threads: one state-machine thread runs every core call and every callback (an io_context
// with one thread); the commit thread only writes the store. The public methods may be
// called from any thread: they post into the state machine. Each callback is called on the
// state-machine thread.
#pragma once

#include <utility>  // before Boost.Asio (DESIGN §13)

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/agent_protocol.h"
#include "core/metrics.h"
#include "core/time.h"
#include "head/audit_log.h"
#include "head/commit_pipeline.h"
#include "head/durability.h"
#include "head/head_core.h"
#include "head/tokens.h"
#include "store/store.h"

namespace corral::head {

struct HeadConfig {
  std::string state_dir;  // SQLite store and the admin/join secret files (Open)
  std::string store_url;  // "" = STATE_DIR/corral.db; see store::OpenStore
  // This head's API address as clients reach it ("http://10.0.0.1:7070"): written to the
  // store when it leads, so that standbys send clients here. "" writes nothing (one head).
  std::string advertise_url;
  std::string checkpoint_root;       // default STATE_DIR/checkpoints; CORRAL_CHECKPOINT_DIR below
  std::string admin_user = "admin";  // the user the first admin token names
  DurationMs unreachable_after_ms = 15 * kSecond;
  DurationMs down_after_ms = 60 * kSecond;
  DurationMs max_sync_hold_ms = 20 * kSecond;  // also held to a third of unreachable_after
  DurationMs tick_ms = 500;
  // Several heads: the leader commits at least this often, an empty commit if nothing
  // changed, which renews its lease in the store (store::PostgresStore::SetLease). The renewal
  // starts on the state machine's own thread, so a wedged head stops renewing. 0: never.
  DurationMs lease_renew_ms = 0;
  int32_t idle_threshold_percent = 1;  // see CoreConfig
  DurationMs idle_after_ms = 30 * kMinute;
  std::set<std::string> idle_stop_queues;  // see CoreConfig
  DurationMs idle_stop_warning_ms = 10 * kMinute;
  DurationMs retain_finished_ms = kDay;  // see CoreConfig
  sched::SchedulerConfig scheduler;
  DurabilityConfig durability;
  size_t event_buffer = 20000;  // durable changes kept in memory for the event stream
  // Called on the state-machine thread when the store fails a commit: memory then holds
  // changes that are not durable, so the head answers nothing more (503) and the process
  // should restart from what is durable. Default: nothing (tests look at failed()).
  std::function<void(const Status&)> on_store_failure;
};

// The secrets a new cluster starts with, handed to the operator in files.
struct Tokens {
  std::string admin;
  std::string join;
};

class Head {
 public:
  template <typename T>
  using Callback = std::function<void(Result<T>)>;

  // The production head: the store config.store_url names, /dev/urandom, and the admin and join
  // secrets in STATE_DIR/admin.token and join.token (created on first start, mode 0600).
  // `store`, when given, is used instead of opening store_url (a standby that took the lead
  // with it); `warm`, when given, is the state that standby kept (WarmState), so that only
  // the changes since the store's last snapshot rows are read, not the whole store.
  static Result<std::unique_ptr<Head>> Open(HeadConfig config, const Clock* clock,
                                            std::unique_ptr<store::Store> store = nullptr,
                                            std::optional<ClusterState> warm = std::nullopt);
  // Any store, clock and random source (tests). `bootstrap` are the admin and join secrets
  // to register if the store has none yet.
  static Result<std::unique_ptr<Head>> Create(HeadConfig config,
                                              std::unique_ptr<store::Store> store,
                                              const Clock* clock, RandomSource* random,
                                              Tokens bootstrap,
                                              std::optional<ClusterState> warm = std::nullopt);
  ~Head();

  void Start();  // starts the state-machine thread
  void Stop();   // answers nothing more; joins threads

  const Tokens& tokens() const { return tokens_; }  // immutable after Open
  uint64_t epoch() const { return epoch_; }         // immutable after Start
  // The revision the answer being delivered reflects. Only inside a callback.
  uint64_t ReplyRevision() const { return reply_revision_; }

  // Every call names its caller by bearer secret; a bad one is answered 401.
  // `request_id` (may be ""): see HeadCore::Submit.
  void Submit(std::string bearer, JobSpec spec, std::string owner, std::string request_id,
              Callback<Job> done);
  void Cancel(std::string bearer, JobId id, bool element_only, Callback<Job> done);
  void ReportCheckpoint(std::string bearer, JobId id, Callback<Job> done);
  void GetJob(std::string bearer, JobId id, Callback<Job> done);
  void GetJobForLogs(std::string bearer, JobId id, Callback<Job> done);
  void Requeue(std::string bearer, JobId id, Callback<Job> done);
  void Signal(std::string bearer, JobId id, int32_t signal, HeadCore::SignalTarget to,
              Callback<Job> done);
  void SetHold(std::string bearer, JobId id, bool hold, Callback<Job> done);
  void StartStep(std::string bearer, JobId id, StepRequest req, Callback<Step> done);
  void GetStep(std::string bearer, JobId id, int32_t step, Callback<Step> done);
  void ListJobs(std::string bearer, JobFilter filter, Callback<std::vector<Job>> done);
  void ListNodes(std::string bearer, Callback<std::vector<NodeView>> done);
  void Usage(std::string bearer, UsageBy group, DurationMs since_ms, Callback<UsageReport> done);
  void GetNode(std::string bearer, std::string name, Callback<Node> done);
  void SetDrain(std::string bearer, std::string node, bool drain, Callback<NodeView> done);
  void ListQueues(std::string bearer, Callback<std::vector<QueueView>> done);
  void SetQueue(std::string bearer, QueueConfig queue, Callback<QueueConfig> done);
  struct NewToken {
    Credential credential;
    std::string secret;  // shown once
  };
  void CreateToken(std::string bearer, TokenRequest req, Callback<NewToken> done);
  void RevokeToken(std::string bearer, std::string id, Callback<Credential> done);
  void ListTokens(std::string bearer, Callback<std::vector<Credential>> done);

  // An online backup of the store to `path` on the head's host (admins only; one at a time):
  // taken on a thread of its own while the head goes on committing, audited.
  void Backup(std::string bearer, std::string path, Callback<store::BackupInfo> done);

  void Register(std::string bearer, RegisterRequest req, Callback<RegisterResponse> done);
  // The answer may be held up to req.wait_ms (bounded by the config).
  void Sync(std::string bearer, SyncRequest req, Callback<SyncResponse> done);

  // The event stream (DESIGN §9, §11): durable changes after revision `since`, as the caller
  // may see them, at most `max`; held up to `wait_ms` when there are none yet. `reset` says
  // the caller fell behind what the head keeps and must list again from `revision`.
  struct Events {
    std::vector<Json> changes;
    uint64_t revision = 0;  // the last durable revision
    bool reset = false;
  };
  void WatchEvents(std::string bearer, uint64_t since, int32_t max, DurationMs wait_ms,
                   Callback<Events> done);

  bool failed() const;  // the store failed a commit; see HeadConfig::on_store_failure

  // Runs `done` on the state machine's thread: a wedged state machine never answers, which is
  // what the service manager's watchdog must learn. Any thread.
  void Ping(std::function<void()> done) { Post(std::move(done)); }

  // Prometheus text of the head's metrics (DESIGN §11); gauges are taken from the state now.
  void RenderMetrics(Callback<std::string> done);
  // Where other parts of the head process (the API) record their own metrics. Thread-safe.
  MetricsRegistry& metrics() { return metrics_; }
  // Appends to the audit log, where the head keeps one (Open does); any thread.
  void Audit(const Json& record) {
    if (audit_) audit_->Write(record);
  }

 private:
  struct Parked {
    Callback<SyncResponse> done;
    uint64_t from = 0;  // the version the agent holds, where it takes deltas; 0: answer in full
    std::unique_ptr<boost::asio::steady_timer> timer;
  };
  struct Watcher {
    Caller who;
    uint64_t since = 0;
    int32_t max = 0;
    Callback<Events> done;
    std::unique_ptr<boost::asio::steady_timer> timer;
  };

  Head(HeadConfig config, std::unique_ptr<store::Store> store, const Clock* clock,
       RandomSource* random);

  // Runs `fn` on the state machine as the caller named by `bearer`, then commits what it
  // changed and answers once that is durable.
  // Runs `fn` for the caller `bearer` names. Agents' credentials (join, node) are refused
  // unless `for_agents`: a node reports on itself and reads nothing else.
  template <typename T>
  void Command(std::string bearer, Callback<T> done,
               std::function<Result<T>(const Caller&, TimeMs)> fn, bool for_agents = false);
  // The start of every command: nothing is answered after a failed commit, and the caller is
  // the one `bearer` names. nullopt: `done` has been answered.
  template <typename T>
  std::optional<Caller> Admit(const std::string& bearer, TimeMs now, bool for_agents,
                              Callback<T>& done);
  template <typename T>
  void Reply(Callback<T> done, Result<T> result);
  void Drain();  // moves the core's output into the next batch
  // Runs `ok` once everything changed so far is durable, or `fail` if the store fails.
  void AfterDurable(std::function<void()> ok, std::function<void(const Status&)> fail);
  void PostFlush();  // FlushEdits on the state machine's next turn, once
  void FlushEdits();
  void OnDurable(Status st);
  void RequestSchedule();
  void AnswerParked(const std::string& node);
  Events EventsFor(const Caller& who, uint64_t since, int32_t max) const;
  void DescribeMetrics();
  void CountDurable(const Change& c);  // counters and histograms fed by committed changes
  void AnswerWatchers();
  Result<Caller> AuthenticateFor(const std::string& bearer, TimeMs now, bool for_agents) const;
  void Tick();
  void Post(std::function<void()> fn);
  void GetJob(std::string bearer, JobId id, Callback<Job> done, bool for_logs);
  // Retired jobs (HeadCore::RetiredState): read from the store on the archive thread, so that
  // the state machine never waits for old rows; `then` runs on the state machine.
  void ReadRetired(std::function<Result<std::vector<Job>>()> read,
                   std::function<void(Result<std::vector<Job>>)> then);
  // Whether jobs that match `f` may include retired ones.
  bool ReachesRetired(const JobFilter& f, TimeMs now) const;

  HeadConfig config_;
  std::unique_ptr<store::Store> store_;
  const Clock* clock_;
  RandomSource* random_;
  std::unique_ptr<RandomSource> owned_random_;  // Open's /dev/urandom
  std::unique_ptr<AuditLog> audit_;             // Open's STATE_DIR/audit.log
  Tokens tokens_;
  uint64_t epoch_ = 0;

  // Everything below is owned by the state-machine thread.
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::steady_timer> tick_timer_;
  HeadCore core_;
  EditLog log_;
  std::map<std::string, Parked> parked_;
  std::map<uint64_t, Watcher> watchers_;  // by watch id
  uint64_t next_watch_ = 1;
  std::deque<Change> recent_;                              // durable changes, oldest first
  std::vector<Change> next_changes_;                       // for the next batch, with next_edits_
  std::shared_ptr<std::vector<Change>> inflight_changes_;  // in the batch being written
  uint64_t durable_revision_ = 0;
  std::chrono::steady_clock::time_point commit_started_;
  MetricsRegistry metrics_;
  uint64_t reply_revision_ = 0;
  bool schedule_posted_ = false;

  std::vector<store::StateEdit> next_edits_;
  struct Waiting {
    std::function<void()> ok;
    std::function<void(const Status&)> fail;
  };
  std::vector<Waiting> next_callbacks_;
  std::vector<Waiting> inflight_callbacks_;
  std::set<std::string> nodes_to_answer_;  // parked syncs whose desired state changed
  bool inflight_ = false;
  bool flush_posted_ = false;
  std::atomic<bool> failed_{false};

  std::unique_ptr<CommitPipeline> pipeline_;
  std::thread backup_thread_;           // the last backup's; joined before the next and at Stop
  bool backup_running_ = false;         // state-machine thread
  boost::asio::io_context archive_io_;  // ReadRetired's, run by archive_thread_
  std::thread archive_thread_;
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace corral::head
