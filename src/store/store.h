// Durable state behind one interface (DESIGN §9). The head is the only writer: it builds
// StateEdits, commits them, and only then acts on them (write-ahead). SQLite is the embedded
// default; PostgreSQL (postgres_store.h) serves several heads behind the same interface.
#pragma once

#include <utility>

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/job.h"
#include "core/node.h"
#include "core/status.h"

namespace corral::store {

struct PutJob {
  Job job;
};
struct PutNode {
  Node node;
};
struct PutQueue {
  QueueConfig queue;
};
struct PutMeta {
  std::string key;
  std::string value;
};
struct DeleteNode {
  std::string name;
};
// One numbered change of the head's state (its JSON document; the store does not read it).
struct ChangeRecord {
  uint64_t revision = 0;
  std::string doc;
  bool operator==(const ChangeRecord&) const = default;
};
struct AppendChange {
  ChangeRecord change;
};
// Marks a job's row retired (JobsRetired): Load leaves it out but for its tombstone, and
// ReadRetiredJobs answers for it. `state`: the tombstone's (ClusterState::retired).
struct RetireJob {
  JobId id = 0;
  std::string state;
};
// Drops changes with a revision below `below` (they are covered by the rows).
struct TruncateChanges {
  uint64_t below = 0;
};
using StateEdit = std::variant<PutJob, PutNode, PutQueue, PutMeta, DeleteNode, AppendChange,
                               TruncateChanges, RetireJob>;

// The rows are a snapshot of the state at revision meta["snapshot_revision"]; `changes` are
// the changes after it, to be applied on top in revision order.
struct StoredState {
  std::vector<Job> jobs;                               // ascending id; not the retired ones
  std::vector<std::pair<JobId, std::string>> retired;  // (id, tombstone state), ascending id
  std::vector<Node> nodes;
  std::vector<QueueConfig> queues;
  std::map<std::string, std::string> meta;
  std::vector<ChangeRecord> changes;  // ascending revision, all above the snapshot
};
constexpr char kSnapshotRevisionKey[] = "snapshot_revision";

// What a backup holds, read back from the copy itself.
struct BackupInfo {
  std::string path;
  int64_t bytes = 0;
  uint64_t revision = 0;  // the last change in it
  int64_t jobs = 0;
};

// Which retired jobs to read back (the shell's on-demand reads).
struct RetiredJobsQuery {
  JobId id = 0;  // > 0: this one job only (none if it is not retired)
  JobId after = 0;
  TimeMs ended_since = 0;  // only jobs that ended at or after this
  int32_t limit = 1000;
  std::string user;   // "": any owner
  std::string queue;  // "": any queue
};

// Not thread-safe (but Backup and ReadRetiredJobs): one caller at a time (the head's commit
// thread).
class Store {
 public:
  virtual ~Store() = default;
  virtual Result<StoredState> Load() = 0;
  // Applies all edits in one transaction; returns once they are durable.
  virtual Status Commit(const std::vector<StateEdit>& edits) = 0;
  // Changes with revision > after, ascending, at most `limit` (watchers and standbys).
  virtual Result<std::vector<ChangeRecord>> ReadChanges(uint64_t after, int32_t limit) = 0;
  // One meta value ("" when absent). The default loads everything; the PostgreSQL store,
  // which standbys poll, reads the one row.
  virtual Result<std::string> ReadMeta(const std::string& key) {
    auto all = Load();
    if (!all.ok()) return all.status();
    auto it = all->meta.find(key);
    return it == all->meta.end() ? std::string() : it->second;
  }
  // Writes a consistent copy of the store, as of one committed transaction, to the new file
  // `path` while commits go on. Thread-safe (it never touches the commit connection).
  // The default: kFailedPrecondition, for stores backed up with their own tools.
  virtual Result<BackupInfo> Backup(const std::string& path) const {
    (void)path;
    return FailedPrecondition("this store cannot back itself up");
  }
  // Retired jobs, ascending id, as their rows hold them. Thread-safe: on a connection of its
  // own, so that reading old jobs never waits for, or holds up, a commit.
  virtual Result<std::vector<Job>> ReadRetiredJobs(const RetiredJobsQuery& q) const = 0;

  // --- leadership ---
  // Whether several heads may share this store. Only then does a head stand by until
  // TryLead gives it a term; a store of one head (SQLite) always leads.
  virtual bool Shared() const { return false; }
  // Tries, without waiting, to lead: the new term, or nullopt while another head leads. From
  // then on a commit of a deposed leader is refused. REQUIRES: the caller loads state only
  // after this returns a term. A store of one head leads at once, in term 1.
  virtual Result<std::optional<uint64_t>> TryLead() { return std::optional<uint64_t>(1); }
  // A leader renews its lease with every Commit (an empty one renews only); one that has not
  // for `lease` may be deposed by another head. 0: a leader leads until its session ends. A
  // store of one head has no one to be deposed by.
  virtual void SetLease(DurationMs lease) { (void)lease; }
};
// Meta: the API address of the head that leads (written in its first commit), where
// standbys send clients.
constexpr char kLeaderUrlKey[] = "leader_url";

// The schema version this corral writes. Both backends keep it in a one-row table
// `schema_version`, migrate an older store up to it at open (one transaction per step, in
// order) and refuse a store that a newer corral wrote (CheckSchemaVersion).
constexpr int64_t kSchemaVersion = 5;
// Ok for a stored version this corral can migrate or use; otherwise the error to show.
Status CheckSchemaVersion(int64_t stored);

// Opens (creating if needed) the SQLite file at `path` in WAL mode with full fsync on commit.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

// How a PostgreSQL store keeps what it acknowledges when its server fails over
// (docs/reliability.md, "The database"). SQLite ignores them.
struct StoreOptions {
  // Every session sets synchronous_commit itself, so that a server or role default (local,
  // off) cannot weaken it: "on" (a commit is acknowledged once flushed on the synchronous
  // standbys the server names, if any), "remote_apply" (and applied there) or "remote_write".
  std::string synchronous_commit = "on";
  // Whether leading needs a synchronous standby (synchronous_standby_names set and one
  // streaming as sync or quorum in pg_stat_replication): checked when the store opens and at
  // every TryLead that would take the lock. kAuto: only when the connection string names
  // several hosts (a store meant to fail over); a single server keeps working alone.
  enum class SyncStandby { kAuto, kRequire, kSkip };
  SyncStandby sync_standby = SyncStandby::kAuto;
  // Tests only (the negative control of the failover test): take a commit that the server
  // says stopped waiting for its standbys as acknowledged, as corral once did.
  bool ignore_unreplicated_commits = false;
};

// Ok for a synchronous_commit value a store accepts; otherwise why not, naming `field`.
Status CheckSynchronousCommit(const std::string& field, const std::string& value);

// Opens the store `url` names, migrating its schema: "" (STATE_DIR/corral.db), "sqlite:PATH",
// or "postgres://USER@HOST:PORT/DB" / "postgresql://..." (any libpq connection URI, several
// hosts too: postgresql://U@H1:P1,H2:P2/DB?target_session_attrs=read-write).
Result<std::unique_ptr<Store>> OpenStore(const std::string& url, const std::string& state_dir,
                                         const StoreOptions& options = {});

}  // namespace corral::store
