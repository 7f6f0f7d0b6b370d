#include "store/postgres_store.h"

#include <limits>
#include <mutex>
#include <string_view>

#include "core/codec.h"
#include "store/job_docs.h"
#include "store/pg_conn.h"

namespace corral::store {
namespace {

// kPgMigrations[v] takes the schema from version v to v + 1, with the same meaning as the
// SQLite store's steps. Append only: a released step never changes.
constexpr const char* kPgMigrations[kSchemaVersion] = {
    R"(
      CREATE TABLE IF NOT EXISTS jobs (id BIGINT PRIMARY KEY, state TEXT NOT NULL, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS queues (name TEXT PRIMARY KEY, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS changes (revision BIGINT PRIMARY KEY, doc TEXT NOT NULL);
    )",
    "CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state);",
    R"(
      CREATE TABLE IF NOT EXISTS leadership (id INTEGER PRIMARY KEY CHECK (id = 1),
                                             term BIGINT NOT NULL);
      INSERT INTO leadership (id, term) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
    )",
    "ALTER TABLE leadership ADD COLUMN IF NOT EXISTS renewed_at TIMESTAMPTZ NOT NULL DEFAULT "
    "now();",
    R"(
      ALTER TABLE jobs ADD COLUMN IF NOT EXISTS retired_state TEXT;
      ALTER TABLE jobs ADD COLUMN IF NOT EXISTS ended_at BIGINT;
      ALTER TABLE jobs ADD COLUMN IF NOT EXISTS owner TEXT;
      ALTER TABLE jobs ADD COLUMN IF NOT EXISTS queue TEXT;
      CREATE INDEX IF NOT EXISTS jobs_retired_by_end ON jobs (ended_at)
          WHERE retired_state IS NOT NULL;
    )",
};

constexpr char kPgRetiredJobsSql[] =
    "SELECT doc FROM jobs WHERE retired_state IS NOT NULL AND id > $1::bigint AND ended_at >= "
    "$2::bigint AND ($4::bigint = 0 OR id = $4::bigint) AND ($5::text = '' OR owner = $5) AND "
    "($6::text = '' OR queue = $6) ORDER BY id LIMIT $3::bigint";

// Serialises migrations of one database across heads that start at once (a transaction-level
// advisory lock: released by COMMIT or ROLLBACK). The value is arbitrary but fixed.
constexpr char kMigrationLock[] = "SELECT pg_advisory_xact_lock(7414050172)";
// The leader's lock: session-level, so it is held exactly as long as the leader's connection.
constexpr char kLeaderLock[] = "SELECT pg_try_advisory_lock(7414050173)";
// The session holding that lock whose lease has expired: pg_locks shows a bigint advisory key
// as classid = its high half (1) and objid = its low half (7414050173 - 2^32), objsubid 1.
constexpr char kExpiredLeader[] = R"(
  SELECT l.pid, extract(epoch FROM now() - s.renewed_at)::bigint
    FROM pg_locks l, leadership s
   WHERE l.locktype = 'advisory' AND l.classid = 1 AND l.objid = 3119082877 AND l.objsubid = 1
     AND l.granted AND s.id = 1 AND s.renewed_at < now() - make_interval(secs => $1::float8))";

// The synchronous standbys the server waits for, and how many stream as such now (a role
// without pg_monitor sees no sync_state: none).
constexpr char kSyncStandbys[] =
    "SELECT current_setting('synchronous_standby_names'), (SELECT count(*) FROM "
    "pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))";

class PgStore final : public PostgresStore {
 public:
  PgStore(pg::Conn conn, std::unique_ptr<pg::Notices> notices, std::string conninfo,
          StoreOptions options)
      : conn_(std::move(conn)),
        notices_(std::move(notices)),
        conninfo_(std::move(conninfo)),
        options_(std::move(options)) {
    using SyncStandby = StoreOptions::SyncStandby;
    require_sync_standby_ =
        options_.sync_standby == SyncStandby::kRequire ||
        (options_.sync_standby == SyncStandby::kAuto && pg::NamesSeveralHosts(conninfo_));
  }

  // The session prepared, the startup check, the schema migrated.
  Status Open() {
    CORRAL_RETURN_IF_ERROR(EnsureConnected());
    CORRAL_RETURN_IF_ERROR(CheckSyncStandby());
    return Migrate();
  }

  // Every session's own synchronous_commit (StoreOptions): run on each new connection, by
  // EnsureConnected.
  Status PrepareSession() {
    return pg::Exec(conn_.get(), "SELECT set_config('synchronous_commit', $1, false)",
                    {options_.synchronous_commit})
        .status();
  }

  // Leading needs a synchronous standby where the options say so (StoreOptions::SyncStandby).
  // The refusal names the way out: the head's flag that leads anyway.
  Status CheckSyncStandby() {
    if (!require_sync_standby_) return Status::Ok();
    Status missing = MissingSyncStandby();
    if (missing.code() != ErrorCode::kFailedPrecondition) return missing;  // ok, or unreachable
    return FailedPrecondition("refusing to lead: " + missing.message() +
                              "; configure one (docs/reliability.md, \"The database\"), or "
                              "start the head with --allow-async-store to lead anyway");
  }

  Status MissingSyncStandby() {
    auto r = pg::Exec(conn_.get(), kSyncStandbys);
    if (!r.ok()) return r.status();
    std::string names = pg::Value(r->get(), 0, 0);
    std::string where = "PostgreSQL at " + pg::Describe(conn_.get());
    if (names.empty()) {
      return FailedPrecondition(where +
                                " has no synchronous standby (synchronous_standby_names is "
                                "empty): what it acknowledges may be on no other server, and a "
                                "failover would lose it");
    }
    if (pg::Value(r->get(), 0, 1) == "0") {
      return FailedPrecondition(where + " names synchronous standbys (" + names +
                                ") but none streams as sync or quorum in pg_stat_replication "
                                "(or this role cannot see them: grant it pg_monitor)");
    }
    return Status::Ok();
  }

  Status Migrate() {
    while (true) {
      bool done = false;
      CORRAL_RETURN_IF_ERROR(InTransaction("BEGIN", [&]() -> Status {
        CORRAL_RETURN_IF_ERROR(pg::Exec(conn_.get(), kMigrationLock).status());
        CORRAL_RETURN_IF_ERROR(
            pg::Exec(conn_.get(),
                     "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
                .status());
        auto r = pg::Exec(conn_.get(), "SELECT coalesce(max(version), 0) FROM schema_version");
        if (!r.ok()) return r.status();
        int64_t version = std::stoll(pg::Value(r->get(), 0, 0));
        CORRAL_RETURN_IF_ERROR(CheckSchemaVersion(version));
        if (version == kSchemaVersion) {
          done = true;
          return Status::Ok();
        }
        CORRAL_RETURN_IF_ERROR(
            pg::Exec(conn_.get(), kPgMigrations[static_cast<size_t>(version)]).status());
        CORRAL_RETURN_IF_ERROR(pg::Exec(conn_.get(), "DELETE FROM schema_version").status());
        return pg::Exec(conn_.get(), "INSERT INTO schema_version VALUES ($1)",
                        {std::to_string(version + 1)})
            .status();
      }));
      if (done) return Status::Ok();
    }
  }

  Result<StoredState> Load() override {
    StoredState state;
    // One snapshot for all tables: another head may be writing meanwhile.
    Status st = InTransaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [&]() -> Status {
      auto jobs =
          pg::Exec(conn_.get(), "SELECT doc FROM jobs WHERE retired_state IS NULL ORDER BY id");
      if (!jobs.ok()) return jobs.status();
      int n = PQntuples(jobs->get());
      state.jobs.reserve(static_cast<size_t>(n));
      std::vector<std::string_view> docs;
      docs.reserve(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        docs.emplace_back(PQgetvalue(jobs->get(), i, 0),
                          static_cast<size_t>(PQgetlength(jobs->get(), i, 0)));
      }
      CORRAL_RETURN_IF_ERROR(DecodeJobDocs(docs, &state.jobs));
      jobs->reset();
      auto retired = pg::Exec(conn_.get(),
                              "SELECT id, retired_state FROM jobs WHERE retired_state IS NOT NULL "
                              "ORDER BY id");
      if (!retired.ok()) return retired.status();
      for (int i = 0; i < PQntuples(retired->get()); ++i) {
        state.retired.emplace_back(std::stoull(pg::Value(retired->get(), i, 0)),
                                   pg::Value(retired->get(), i, 1));
      }
      auto nodes = pg::Exec(conn_.get(), "SELECT doc FROM nodes ORDER BY name COLLATE \"C\"");
      if (!nodes.ok()) return nodes.status();
      for (int i = 0; i < PQntuples(nodes->get()); ++i) {
        auto j = ParseStoredDoc(pg::Value(nodes->get(), i, 0));
        if (!j.ok()) return j.status();
        auto node = NodeFromJson(*j);
        if (!node.ok()) return node.status();
        state.nodes.push_back(std::move(*node));
      }
      auto queues = pg::Exec(conn_.get(), "SELECT doc FROM queues ORDER BY name COLLATE \"C\"");
      if (!queues.ok()) return queues.status();
      for (int i = 0; i < PQntuples(queues->get()); ++i) {
        auto j = ParseStoredDoc(pg::Value(queues->get(), i, 0));
        if (!j.ok()) return j.status();
        auto q = QueueFromJson(*j);
        if (!q.ok()) return q.status();
        state.queues.push_back(std::move(*q));
      }
      auto meta = pg::Exec(conn_.get(), "SELECT key, value FROM meta");
      if (!meta.ok()) return meta.status();
      for (int i = 0; i < PQntuples(meta->get()); ++i) {
        state.meta[pg::Value(meta->get(), i, 0)] = pg::Value(meta->get(), i, 1);
      }
      uint64_t snapshot = 0;
      if (auto it = state.meta.find(kSnapshotRevisionKey); it != state.meta.end()) {
        snapshot = std::stoull(it->second);
      }
      auto tail = ReadChangesNow(snapshot, std::numeric_limits<int32_t>::max());
      if (!tail.ok()) return tail.status();
      state.changes = std::move(*tail);
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return Result<StoredState>(std::move(state));
  }

  Result<std::vector<ChangeRecord>> ReadChanges(uint64_t after, int32_t limit) override {
    CORRAL_RETURN_IF_ERROR(EnsureConnected());
    return ReadChangesNow(after, limit);
  }

  Result<std::string> ReadMeta(const std::string& key) override {
    CORRAL_RETURN_IF_ERROR(EnsureConnected());
    auto r = pg::Exec(conn_.get(), "SELECT value FROM meta WHERE key = $1", {key});
    if (!r.ok()) return r.status();
    if (PQntuples(r->get()) == 0) return std::string();
    return pg::Value(r->get(), 0, 0);
  }

  Result<BackupInfo> Backup(const std::string&) const override {
    return FailedPrecondition(
        "a PostgreSQL store is backed up with PostgreSQL's own tools (pg_dump for a copy, or "
        "pg_basebackup with WAL archiving for point-in-time recovery): see docs/reliability.md");
  }

  // A leader's Commit also renews its lease, an empty one only that.
  Status Commit(const std::vector<StateEdit>& edits) override {
    if (edits.empty() && term_ == 0) return Status::Ok();
    return InTransaction("BEGIN", [&]() -> Status {
      if (term_ != 0) CORRAL_RETURN_IF_ERROR(CheckTermAndRenew());
      for (size_t i = 0; i < edits.size();) {
        // A retirement marks thousands of rows: one statement per state, not one per row.
        if (const auto* r = std::get_if<RetireJob>(&edits[i])) {
          std::string ids;
          size_t j = i;
          for (; j < edits.size(); ++j) {
            const auto* next = std::get_if<RetireJob>(&edits[j]);
            if (!next || next->state != r->state) break;
            ids += (ids.empty() ? "{" : ",") + std::to_string(next->id);
          }
          CORRAL_RETURN_IF_ERROR(RetireRows(r->state, ids + "}"));
          i = j;
          continue;
        }
        CORRAL_RETURN_IF_ERROR(Apply(edits[i++]));
      }
      return Status::Ok();
    });
  }

  Result<std::optional<uint64_t>> TryLead() override {
    CORRAL_RETURN_IF_ERROR(EnsureConnected());
    auto locked = pg::Exec(conn_.get(), kLeaderLock);
    if (!locked.ok()) return locked.status();
    if (pg::Value(locked->get(), 0, 0) != "t") {
      if (lease_ms_ > 0) CORRAL_RETURN_IF_ERROR(EndExpiredLeadership());
      return std::optional<uint64_t>();
    }
    uint64_t term = 0;
    // The term's commit is the new leader's first: it must reach the synchronous standbys
    // (InTransaction refuses it otherwise). WAL is ordered, so then every change committed
    // before it is replicated too, even one a deposed leader's ended session left behind.
    Status st = CheckSyncStandby();
    if (st.ok())
      st = InTransaction("BEGIN", [&]() -> Status {
        auto r = pg::Exec(conn_.get(),
                          "UPDATE leadership SET term = term + 1, renewed_at = now() WHERE id = 1 "
                          "RETURNING term");
        if (!r.ok()) return r.status();
        if (PQntuples(r->get()) != 1) return Internal("postgres store: no leadership row");
        term = std::stoull(pg::Value(r->get(), 0, 0));
        return Status::Ok();
      });
    if (!st.ok()) {
      // Without a new term this session must not keep the lock either.
      if (PQstatus(conn_.get()) == CONNECTION_OK) {
        (void)pg::Exec(conn_.get(), "SELECT pg_advisory_unlock_all()");
      }
      return st;
    }
    term_ = term;
    return std::optional<uint64_t>(term);
  }

  uint64_t term() const override { return term_; }
  void SetLease(DurationMs lease) override { lease_ms_ = lease; }

 private:
  // A leader that holds the lock but has not renewed its lease (hung: stopped, stuck on a
  // disk, its state machine wedged) would keep it for as long as its session lives. Its
  // session is ended instead, which releases the lock for the next TryLead; the term it led
  // is then superseded, so even if it wakes it commits nothing.
  Status EndExpiredLeadership() {
    auto r = pg::Exec(conn_.get(), kExpiredLeader, {std::to_string(lease_ms_ / 1000.0)});
    if (!r.ok()) return r.status();
    if (PQntuples(r->get()) == 0) return Status::Ok();
    std::string pid = pg::Value(r->get(), 0, 0);
    std::string silent = pg::Value(r->get(), 0, 1);
    auto end = pg::Exec(conn_.get(), "SELECT pg_terminate_backend($1::int)", {pid});
    if (!end.ok()) return end.status();
    return Unavailable("the leader (PostgreSQL backend " + pid +
                       ") has not renewed its lease for " + silent +
                       " s; its session was ended so that a standby can lead");
  }

  // Inside a leader's transaction: the term must still be this one (the row lock also makes a
  // new leader's increment wait for this transaction), and the lease is renewed.
  Status CheckTermAndRenew() {
    auto renewed =
        pg::Exec(conn_.get(), "UPDATE leadership SET renewed_at = now() WHERE id = 1 AND term = $1",
                 {std::to_string(term_)});
    if (!renewed.ok()) return renewed.status();
    if (std::string(PQcmdTuples(renewed->get())) == "1") return Status::Ok();
    auto r = pg::Exec(conn_.get(), "SELECT term FROM leadership WHERE id = 1");
    if (!r.ok()) return r.status();
    uint64_t stored = PQntuples(r->get()) == 1 ? std::stoull(pg::Value(r->get(), 0, 0)) : 0;
    if (stored == term_) return Status::Ok();
    return FailedPrecondition("deposed: the store's leadership term is " + std::to_string(stored) +
                              ", this head led term " + std::to_string(term_) +
                              "; its writes are refused");
  }

  // Runs `body` between `begin` and COMMIT; any failure rolls back (if the connection is
  // still there) and is returned. COMMIT returning ok means durable: the session's
  // synchronous_commit (PrepareSession) flushes the WAL here and on the synchronous standbys
  // before the server answers, unless the wait was cut short, which the server reports only
  // as a warning beside a successful COMMIT: that commit fails here.
  template <typename Body>
  Status InTransaction(const char* begin, Body&& body) {
    CORRAL_RETURN_IF_ERROR(EnsureConnected());
    CORRAL_RETURN_IF_ERROR(pg::Exec(conn_.get(), begin).status());
    *notices_ = {};
    Status st = body();
    if (st.ok()) st = pg::Exec(conn_.get(), "COMMIT").status();
    if (!st.ok() && PQstatus(conn_.get()) == CONNECTION_OK) {
      (void)pg::Exec(conn_.get(), "ROLLBACK");
    }
    if (notices_->unreplicated && !options_.ignore_unreplicated_commits) {
      return Unavailable("PostgreSQL at " + pg::Describe(conn_.get()) +
                         " committed the transaction but may not have replicated it (" +
                         notices_->unreplicated_detail +
                         "): it is not acknowledged, since a failover could lose it");
    }
    return st;
  }

  // A connection the server or network dropped is reset here, on the call after the one that
  // failed: that call already reported the loss.
  // With several hosts, PQreset tries them all again and keeps the one that target_session_attrs
  // accepts: after a failover, the new primary. No statement runs on a session before it is
  // prepared (PrepareSession).
  Status EnsureConnected() {
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      prepared_ = false;
      PQreset(conn_.get());
      if (PQstatus(conn_.get()) != CONNECTION_OK) {
        std::string why = PQerrorMessage(conn_.get());
        while (!why.empty() && why.back() == '\n') why.pop_back();
        return Unavailable("cannot reconnect to PostgreSQL at " + pg::Describe(conn_.get()) + ": " +
                           why);
      }
    }
    if (!prepared_) {
      CORRAL_RETURN_IF_ERROR(PrepareSession());
      prepared_ = true;
    }
    return Status::Ok();
  }

  Result<std::vector<ChangeRecord>> ReadChangesNow(uint64_t after, int32_t limit) {
    auto r = pg::Exec(conn_.get(),
                      "SELECT revision, doc FROM changes WHERE revision > $1 ORDER BY revision "
                      "LIMIT $2",
                      {std::to_string(after), std::to_string(limit)});
    if (!r.ok()) return r.status();
    std::vector<ChangeRecord> out;
    int n = PQntuples(r->get());
    out.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      out.push_back({std::stoull(pg::Value(r->get(), i, 0)), pg::Value(r->get(), i, 1)});
    }
    return out;
  }

  // `ids`: a PostgreSQL array literal. The end time comes from each row's own document: the
  // head no longer holds the jobs.
  Status RetireRows(const std::string& state, const std::string& ids) {
    return pg::Exec(conn_.get(),
                    "UPDATE jobs SET retired_state = $1, ended_at = "
                    "coalesce((doc::json->>'ended_at')::bigint, 0), owner = doc::json->>'owner', "
                    "queue = doc::json->'spec'->>'queue' WHERE id = ANY($2::bigint[])",
                    {state, ids})
        .status();
  }

  Status Apply(const StateEdit& edit) {
    PGconn* c = conn_.get();
    if (const auto* e = std::get_if<PutJob>(&edit)) {
      return pg::Exec(c,
                      "INSERT INTO jobs (id, state, doc) VALUES ($1, $2, $3) ON CONFLICT (id) DO "
                      "UPDATE SET state = EXCLUDED.state, doc = EXCLUDED.doc",
                      {std::to_string(e->job.id), JobStateName(e->job.state),
                       ToStoredJson(e->job).dump()})
          .status();
    }
    if (const auto* e = std::get_if<PutNode>(&edit)) {
      return pg::Exec(c,
                      "INSERT INTO nodes (name, doc) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE "
                      "SET doc = EXCLUDED.doc",
                      {e->node.name, ToJson(e->node).dump()})
          .status();
    }
    if (const auto* e = std::get_if<PutQueue>(&edit)) {
      return pg::Exec(c,
                      "INSERT INTO queues (name, doc) VALUES ($1, $2) ON CONFLICT (name) DO "
                      "UPDATE SET doc = EXCLUDED.doc",
                      {e->queue.name, ToJson(e->queue).dump()})
          .status();
    }
    if (const auto* e = std::get_if<PutMeta>(&edit)) {
      return pg::Exec(c,
                      "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE "
                      "SET value = EXCLUDED.value",
                      {e->key, e->value})
          .status();
    }
    if (const auto* e = std::get_if<DeleteNode>(&edit)) {
      return pg::Exec(c, "DELETE FROM nodes WHERE name = $1", {e->name}).status();
    }
    if (const auto* e = std::get_if<AppendChange>(&edit)) {
      return pg::Exec(c, "INSERT INTO changes (revision, doc) VALUES ($1, $2)",
                      {std::to_string(e->change.revision), e->change.doc})
          .status();
    }
    if (const auto* e = std::get_if<TruncateChanges>(&edit)) {
      return pg::Exec(c, "DELETE FROM changes WHERE revision < $1", {std::to_string(e->below)})
          .status();
    }
    return Internal("postgres store: unknown edit");  // RetireJob: Commit marks runs of them
  }

  Result<std::vector<Job>> ReadRetiredJobs(const RetiredJobsQuery& q) const override {
    std::lock_guard<std::mutex> lock(read_mu_);
    if (!reader_ || PQstatus(reader_.get()) != CONNECTION_OK) {
      auto c = pg::Connect(conninfo_);
      if (!c.ok()) return c.status();
      reader_ = std::move(*c);
    }
    auto r = pg::Exec(reader_.get(), kPgRetiredJobsSql,
                      {std::to_string(q.after), std::to_string(q.ended_since),
                       std::to_string(q.limit), std::to_string(q.id), q.user, q.queue});
    if (!r.ok()) return r.status();
    std::vector<std::string_view> docs;
    for (int i = 0; i < PQntuples(r->get()); ++i) {
      docs.emplace_back(PQgetvalue(r->get(), i, 0),
                        static_cast<size_t>(PQgetlength(r->get(), i, 0)));
    }
    std::vector<Job> out;
    CORRAL_RETURN_IF_ERROR(DecodeJobDocs(docs, &out));
    return out;
  }

  pg::Conn conn_;
  std::unique_ptr<pg::Notices> notices_;  // conn_'s notice receiver writes here
  std::string conninfo_;
  StoreOptions options_;
  bool require_sync_standby_ = false;
  bool prepared_ = false;  // conn_'s session ran PrepareSession
  mutable std::mutex read_mu_;
  mutable pg::Conn reader_;  // GUARDED_BY(read_mu_): ReadRetiredJobs' own connection
  uint64_t term_ = 0;        // 0 until TryLead succeeds; then every Commit checks it
  DurationMs lease_ms_ = 0;  // 0: a silent leader is never deposed
};

}  // namespace

Result<std::unique_ptr<PostgresStore>> OpenPostgresStore(const std::string& conninfo,
                                                         const StoreOptions& options) {
  CORRAL_RETURN_IF_ERROR(CheckSynchronousCommit("synchronous_commit", options.synchronous_commit));
  auto notices = std::make_unique<pg::Notices>();
  auto conn = pg::Connect(conninfo, notices.get());
  if (!conn.ok()) return conn.status();
  auto store = std::make_unique<PgStore>(std::move(*conn), std::move(notices), conninfo, options);
  CORRAL_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<PostgresStore>(std::move(store));
}

}  // namespace corral::store
