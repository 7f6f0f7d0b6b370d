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
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/agent_protocol.h"
#include "core/metrics.h"
#include "core/time.h"
#include "head/audit_log.h"
#include "head/cluster_series.h"
#include "head/commands.h"
#include "head/commit_pipeline.h"
#include "head/durability.h"
#include "head/head_core.h"
#include "head/job_notice.h"
#include "head/presented.h"
#include "head/rdzv_stores.h"
#include "head/tokens.h"
#include "store/store.h"

namespace corral::head {

// The checkpoint root a head with state directory `state_dir` uses when given `root` (its
// --checkpoint-root; "" for the default). Jobs' users must reach it, and the state directory
// is the head's user's alone (0700), so the default is a directory of its own beside it
// (STATE_DIR-checkpoints; the agents make it 0755 and each job's directory its owner's, 0700),
// and a root inside the state directory is refused, naming the flag.
Result<std::string> CheckpointRootFor(const std::string& root, const std::string& state_dir);

struct HeadConfig {
  std::string state_dir;  // SQLite store and the admin/join secret files (Open)
  std::string store_url;  // "" = STATE_DIR/corral.db; see store::OpenStore
  // This head's API address as clients reach it ("http://10.0.0.1:7070"): written to the
  // store when it leads, so that standbys send clients here. "" writes nothing (one head).
  std::string advertise_url;
  // The core's settings (checkpoint root, liveness, idle runs, retention, scheduler);
  // core.checkpoint_root empty: STATE_DIR-checkpoints (CheckpointRootFor).
  CoreConfig core;
  std::string admin_user = "admin";            // the user the first admin token names
  DurationMs max_sync_hold_ms = 20 * kSecond;  // also held to a third of unreachable_after
  DurationMs tick_ms = 500;
  // Pending jobs' start-time estimates are refreshed on the tick at most this often
  // (HeadCore::EstimateStarts). 0: never.
  DurationMs estimate_interval_ms = 5 * kSecond;
  // Several heads: the leader commits at least this often, an empty commit if nothing
  // changed, which renews its lease in the store (store::Store::SetLease). The renewal
  // starts on the state machine's own thread, so a wedged head stops renewing. 0: never.
  DurationMs lease_renew_ms = 0;
  // An array's cancel commits this many elements a turn, answering other commands between.
  int32_t cancel_slice = 250;
  // The cluster's series for the dashboard (cluster_series.h): a point a step, the newest
  // cluster_series_points kept (six hours of minutes by default).
  DurationMs cluster_series_step_ms = kMinute;
  size_t cluster_series_points = 360;
  DurabilityConfig durability;
  // The Python with torch that runs elastic jobs' rendezvous stores (rdzv_stores.h), when
  // core.rdzv_host is set.
  std::string rdzv_python = "/usr/bin/python3";
  size_t event_buffer = 20000;  // durable changes kept in memory for the event stream
  // Called on the state-machine thread when the store fails a commit: memory then holds
  // changes that are not durable, so the head answers nothing more (503) and the process
  // should restart from what is durable. Default: nothing (tests look at failed()).
  std::function<void(const Status&)> on_store_failure;
  // Called on the state-machine thread for each durable change that people following a job
  // are told of (head/job_notice.h): a begin, an end, a failure, a requeue, a preemption. Only
  // the head that committed it calls it; it must not block (hand the notice to a queue).
  std::function<void(JobNotice)> on_job_notice;
  // Tests that drive a head on virtual time (the simulator's parity test, sim/shell_port.h):
  // the shell arms no timer; the driver ticks and runs the timer's passes when it chooses
  // (TickNow, PassNow) and waits for their effects (Settle); a command gets its pass as in a
  // head that serves. Never set in a head that serves: nothing would run its timers.
  bool driven = false;
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

  // Runs a command (head/commands.h) for the caller `who` names (a bad token is answered
  // 401; an agent's credential only for the agents' commands; a local caller is who the
  // kernel said) and answers once everything it changed is durable.
  template <typename C>
  void Run(Presented who, C command, Callback<typename C::Answer> done);

  bool failed() const;  // the store failed a commit; see HeadConfig::on_store_failure

  // Runs `done` on the state machine's thread: a wedged state machine never answers, which is
  // what the service manager's watchdog must learn. Any thread.
  void Ping(std::function<void()> done) { Post(std::move(done)); }

  // Prometheus text of the head's metrics (DESIGN §11); gauges are taken from the state now.
  void RenderMetrics(Callback<std::string> done);
  // Where other parts of the head process (the API) record their own metrics. Thread-safe.
  MetricsRegistry& metrics() { return metrics_; }
  // Whether `bearer` is a credential the cluster holds and that has not expired, without a
  // turn of the state machine: the API's throttle of unauthenticated traffic asks it of every
  // request whose token it has not seen work. Any thread.
  bool IsCurrentCredential(const std::string& bearer) const;
  // A relay grant (core/relay_grant.h) for `run` on `node`, signed with the key of the node's
  // current credential (the SHA-256 the head keeps of it), valid kRelayGrantLifetimeMs from
  // now: what the API puts on each request it relays to that node's agent (exec, logs,
  // notebooks). FailedPrecondition for a node with no credential. Any thread.
  Result<std::string> RelayGrantFor(const std::string& node, const std::string& run) const;
  // Appends to the audit log, where the head keeps one (Open does); any thread.
  void Audit(const Json& record) {
    if (audit_) audit_->Write(record);
  }

  // --- a head driven on virtual time (HeadConfig::driven; tests only) ---
  // The timer's work (liveness, time limits, retirement, snapshots), or one scheduling pass,
  // at the clock's now, on the state machine's next turn. Any thread.
  void TickNow() {
    Post([this] { Tick(); });
  }
  void PassNow() {
    Post([this] { RunPass(); });
  }
  // The start-time estimates at the clock's now (what the timer refreshes every
  // estimate_interval_ms), alone: no liveness, no limits.
  void EstimateNow() {
    Post([this] { core_.EstimateStarts(clock_->Now()); });
  }
  // Blocks until everything posted before it has run, every change is durable and every
  // answer it allows has been delivered: nothing is left to post, commit or answer (a held
  // sync stays held). Any thread but the state machine's.
  void Settle();
  // The core, to read while settled (then nothing else runs on it). Driven heads only.
  const HeadCore& core() const { return core_; }

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

  // What runs a command once its caller is known: the core's call for most (the command's
  // own operator()), the shell's own for those that need the store, the clock's timers or a
  // secret (head_commands.cc; Sync and WatchEvents here, they are held).
  template <typename C>
  void Execute(const Caller& by, TimeMs now, C command, Callback<typename C::Answer> done);
  void Execute(const Caller& by, TimeMs now, GetJob command, Callback<Job> done);
  void Execute(const Caller& by, TimeMs now, LocateLogs command, Callback<LogSource> done);
  void FindJob(const Caller& by, JobId id, bool for_logs, Callback<Job> done);
  void Execute(const Caller& by, TimeMs now, CancelJob command, Callback<Job> done);
  void CancelRest(Caller by, JobId id, Callback<Job> done);
  void CancelSlice(Caller by, JobId id, Callback<Job> done);
  void Execute(const Caller& by, TimeMs now, ListJobs command, Callback<std::vector<Job>> done);
  void Execute(const Caller& by, TimeMs now, GetUsage command, Callback<UsageReport> done);
  void Execute(const Caller& by, TimeMs now, GetHistory command, Callback<History> done);
  void Execute(const Caller& by, TimeMs now, GetClusterSeries command,
               Callback<ClusterSeriesView> done);
  void Execute(const Caller& by, TimeMs now, CreateToken command, Callback<NewToken> done);
  void Execute(const Caller& by, TimeMs now, BackupStore command, Callback<store::BackupInfo> done);
  void Execute(const Caller& by, TimeMs now, WatchEvents command, Callback<Events> done);
  void Execute(const Caller& by, TimeMs now, GetServiceHistory command,
               Callback<std::map<std::string, ServiceHistory>> done);
  void Execute(const Caller& by, TimeMs now, RegisterAgent command,
               Callback<RegisterResponse> done);
  void Execute(const Caller& by, TimeMs now, SyncAgent command, Callback<SyncResponse> done);
  // The start of every command: nothing is answered after a failed commit, and the caller is
  // the one `who` names. nullopt: `done` has been answered.
  template <typename T>
  std::optional<Caller> Admit(const Presented& who, TimeMs now, bool for_agents, Callback<T>& done);
  template <typename T>
  void Reply(Callback<T> done, Result<T> result);
  void Drain();  // moves the core's output into the next batch
  // Runs `ok` once everything changed so far is durable, or `fail` if the store fails.
  void AfterDurable(std::function<void()> ok, std::function<void(const Status&)> fail);
  void PostFlush();  // FlushEdits on the state machine's next turn, once
  void FlushEdits();
  void OnDurable(Status st);
  void RequestSchedule();
  void RunPass();
  void AnswerParked(const std::string& node);
  Events EventsFor(const Caller& who, uint64_t since, int32_t max) const;
  void DescribeMetrics();
  void CountDurable(const Change& c);  // counters and histograms fed by committed changes
  void AnswerWatchers();
  Result<Caller> AuthenticateFor(const Presented& who, TimeMs now, bool for_agents) const;
  void Tick();
  void Post(std::function<void()> fn);
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
  TimeMs last_estimate_at_ = 0;   // of the last start-time estimate (Tick)
  ClusterSeries cluster_series_;  // sampled by Tick
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

  // The credentials' hashes with their expiry, for IsCurrentCredential: kept by
  // NoteCredentials (state-machine thread) from the changes, read by any thread.
  void NoteCredentials(const std::vector<Change>& changes);
  mutable std::mutex credentials_mu_;
  std::unordered_map<std::string, TimeMs> credential_expiry_;   // GUARDED_BY(credentials_mu_)
  std::unordered_map<std::string, std::string> credential_of_;  // id or "node/NAME" -> hash

  std::unique_ptr<CommitPipeline> pipeline_;
  // Elastic jobs' rendezvous stores (state-machine thread; none without core.rdzv_host).
  std::unique_ptr<RendezvousStores> rdzv_;
  std::thread backup_thread_;           // the last backup's; joined before the next and at Stop
  bool backup_running_ = false;         // state-machine thread
  boost::asio::io_context archive_io_;  // ReadRetired's, run by archive_thread_
  std::thread archive_thread_;
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace corral::head
