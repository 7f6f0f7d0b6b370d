#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string_view>

#include "core/codec.h"
#include "store/job_docs.h"
#include "store/private_files.h"
#include "store/store.h"

namespace corral::store {
namespace {

// RAII for a prepared statement.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// RAII for a connection of its own (a backup's).
struct Connection {
  Connection(const std::string& path, int flags) {
    if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) == SQLITE_OK) {
      sqlite3_busy_timeout(db, 5000);
    } else {
      opened = false;
    }
  }
  ~Connection() { sqlite3_close(db); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  bool ok() const { return opened && db != nullptr; }
  sqlite3* db = nullptr;
  bool opened = true;
};

// kMigrations[v] takes the schema from version v to v + 1. Version 0 is an empty file or one
// written before versioning (its tables are exactly those of step 1, hence IF NOT EXISTS).
// Append only: a released step never changes.
constexpr const char* kMigrations[kSchemaVersion] = {
    R"(
      CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS queues (name TEXT PRIMARY KEY, doc TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS changes (revision INTEGER PRIMARY KEY, doc TEXT NOT NULL);
    )",
    // Active jobs without a scan over every finished one.
    "CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state);",
    // One schema for both backends; only PostgreSQL's heads take turns leading.
    R"(
      CREATE TABLE IF NOT EXISTS leadership (id INTEGER PRIMARY KEY CHECK (id = 1),
                                             term INTEGER NOT NULL);
      INSERT OR IGNORE INTO leadership (id, term) VALUES (1, 0);
    )",
    // The leader's lease (PostgreSQL heads renew it; unused by one SQLite head).
    "ALTER TABLE leadership ADD COLUMN renewed_at INTEGER NOT NULL DEFAULT 0;",
    // Retired jobs (RetireJob): out of the head's memory, read back on demand by end time.
    R"(
      ALTER TABLE jobs ADD COLUMN retired_state TEXT;
      ALTER TABLE jobs ADD COLUMN ended_at INTEGER;
      ALTER TABLE jobs ADD COLUMN owner TEXT;
      ALTER TABLE jobs ADD COLUMN queue TEXT;
      CREATE INDEX IF NOT EXISTS jobs_retired_by_end ON jobs (ended_at)
          WHERE retired_state IS NOT NULL;
    )",
};

// Retired jobs as ReadRetiredJobs wants them; ?1 after, ?2 ended since, ?3 limit, ?4 one id,
// ?5 owner, ?6 queue ('': any). The filters read columns, so rows that do not match are never
// decoded.
constexpr char kRetiredJobsSql[] =
    "SELECT doc FROM jobs WHERE retired_state IS NOT NULL AND id > ?1 AND ended_at >= ?2 AND "
    "(?4 = 0 OR id = ?4) AND (?5 = '' OR owner = ?5) AND (?6 = '' OR queue = ?6) "
    "ORDER BY id LIMIT ?3";

class SqliteStore final : public Store {
 public:
  SqliteStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteStore() override { sqlite3_close(db_); }

  // Brings the schema up to kSchemaVersion, one transaction per step, and refuses a store a
  // newer corral wrote. BEGIN IMMEDIATE takes the write lock first, so two processes opening
  // one file at once migrate it once.
  Status Init() {
    CORRAL_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"));
    while (true) {
      CORRAL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
      Status st = Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
      int64_t version = 0;
      if (st.ok()) st = QueryVersion(&version);
      if (st.ok()) st = CheckSchemaVersion(version);
      if (st.ok() && version == kSchemaVersion) return Exec("COMMIT");
      if (st.ok()) st = Exec(kMigrations[static_cast<size_t>(version)]);
      if (st.ok()) {
        std::string set = "DELETE FROM schema_version; INSERT INTO schema_version VALUES (" +
                          std::to_string(version + 1) + ")";
        st = Exec(set.c_str());
      }
      if (!st.ok()) {
        (void)Exec("ROLLBACK");
        return st;
      }
      CORRAL_RETURN_IF_ERROR(Exec("COMMIT"));
    }
  }

  Result<StoredState> Load() override {
    StoredState state;
    auto rows = [&](const char* sql, auto&& fn) -> Status {
      Statement st(db_, sql);
      if (!st.get()) return Internal(std::string("sqlite prepare: ") + sqlite3_errmsg(db_));
      int rc;
      while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
        CORRAL_RETURN_IF_ERROR(fn(st.get()));
      }
      if (rc != SQLITE_DONE) return Internal(std::string("sqlite load: ") + sqlite3_errmsg(db_));
      return Status::Ok();
    };
    auto text = [](sqlite3_stmt* s, int col) {
      const unsigned char* t = sqlite3_column_text(s, col);
      return std::string(t ? reinterpret_cast<const char*>(t) : "");
    };
    CORRAL_RETURN_IF_ERROR(
        rows("SELECT count(*) FROM jobs WHERE retired_state IS NULL", [&](sqlite3_stmt* s) {
          state.jobs.reserve(static_cast<size_t>(sqlite3_column_int64(s, 0)));
          return Status::Ok();
        }));
    // In batches: the documents of one batch are decoded on every core while the next batch is
    // read, and memory holds only those two batches' text.
    constexpr size_t kBatch = 8192;
    std::vector<std::string> batch;
    JobDocsPipeline decoder(&state.jobs);
    CORRAL_RETURN_IF_ERROR(
        rows("SELECT doc FROM jobs WHERE retired_state IS NULL ORDER BY id", [&](sqlite3_stmt* s) {
          batch.push_back(text(s, 0));
          return batch.size() == kBatch ? decoder.Add(&batch) : Status::Ok();
        }));
    CORRAL_RETURN_IF_ERROR(decoder.Add(&batch));
    CORRAL_RETURN_IF_ERROR(decoder.Finish());
    CORRAL_RETURN_IF_ERROR(rows(
        "SELECT id, retired_state FROM jobs WHERE retired_state IS NOT NULL ORDER BY id",
        [&](sqlite3_stmt* s) {
          state.retired.emplace_back(static_cast<JobId>(sqlite3_column_int64(s, 0)), text(s, 1));
          return Status::Ok();
        }));
    CORRAL_RETURN_IF_ERROR(rows("SELECT doc FROM nodes ORDER BY name", [&](sqlite3_stmt* s) {
      auto j = ParseStoredDoc(text(s, 0));
      if (!j.ok()) return j.status();
      auto node = NodeFromJson(*j);
      if (!node.ok()) return node.status();
      state.nodes.push_back(std::move(*node));
      return Status::Ok();
    }));
    CORRAL_RETURN_IF_ERROR(rows("SELECT doc FROM queues ORDER BY name", [&](sqlite3_stmt* s) {
      auto j = ParseStoredDoc(text(s, 0));
      if (!j.ok()) return j.status();
      auto q = QueueFromJson(*j);
      if (!q.ok()) return q.status();
      state.queues.push_back(std::move(*q));
      return Status::Ok();
    }));
    CORRAL_RETURN_IF_ERROR(rows("SELECT key, value FROM meta", [&](sqlite3_stmt* s) {
      state.meta[text(s, 0)] = text(s, 1);
      return Status::Ok();
    }));
    uint64_t snapshot = 0;
    if (auto it = state.meta.find(kSnapshotRevisionKey); it != state.meta.end()) {
      snapshot = std::stoull(it->second);
    }
    auto tail = ReadChanges(snapshot, std::numeric_limits<int32_t>::max());
    if (!tail.ok()) return tail.status();
    state.changes = std::move(*tail);
    return Result<StoredState>(std::move(state));  // spelled out: GCC 12 copied 100k jobs here
  }

  Result<std::vector<ChangeRecord>> ReadChanges(uint64_t after, int32_t limit) override {
    std::vector<ChangeRecord> out;
    Statement st(db_,
                 "SELECT revision, doc FROM changes WHERE revision > ? ORDER BY revision LIMIT ?");
    if (!st.get()) return Internal(std::string("sqlite prepare: ") + sqlite3_errmsg(db_));
    sqlite3_bind_int64(st.get(), 1, static_cast<sqlite3_int64>(after));
    sqlite3_bind_int64(st.get(), 2, limit);
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st.get(), 1);
      out.push_back({static_cast<uint64_t>(sqlite3_column_int64(st.get(), 0)),
                     std::string(t ? reinterpret_cast<const char*>(t) : "")});
    }
    if (rc != SQLITE_DONE) return Internal(std::string("sqlite read: ") + sqlite3_errmsg(db_));
    return out;
  }

  Status Commit(const std::vector<StateEdit>& edits) override {
    if (edits.empty()) return Status::Ok();
    CORRAL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Status st = ApplyAll(edits);
    if (!st.ok()) {
      (void)Exec("ROLLBACK");
      return st;
    }
    return Exec("COMMIT");
  }

 private:
  Status ApplyAll(const std::vector<StateEdit>& edits) {
    Statement put_job(db_, "INSERT OR REPLACE INTO jobs (id, state, doc) VALUES (?, ?, ?)");
    Statement put_node(db_, "INSERT OR REPLACE INTO nodes (name, doc) VALUES (?, ?)");
    Statement put_queue(db_, "INSERT OR REPLACE INTO queues (name, doc) VALUES (?, ?)");
    Statement put_meta(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
    Statement del_node(db_, "DELETE FROM nodes WHERE name = ?");
    Statement put_change(db_, "INSERT INTO changes (revision, doc) VALUES (?, ?)");
    Statement del_changes(db_, "DELETE FROM changes WHERE revision < ?");
    // The end time comes from the row's own document: the head no longer holds the job.
    Statement retire(db_,
                     "UPDATE jobs SET retired_state = ?, ended_at = "
                     "coalesce(json_extract(doc, '$.ended_at'), 0), owner = "
                     "json_extract(doc, '$.owner'), queue = json_extract(doc, '$.spec.queue') "
                     "WHERE id = ?");
    for (const StateEdit& edit : edits) {
      sqlite3_stmt* s = nullptr;
      if (const auto* e = std::get_if<PutJob>(&edit)) {
        s = put_job.get();
        sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(e->job.id));
        BindText(s, 2, JobStateName(e->job.state));
        BindText(s, 3, ToStoredJson(e->job).dump());
      } else if (const auto* e = std::get_if<PutNode>(&edit)) {
        s = put_node.get();
        BindText(s, 1, e->node.name);
        BindText(s, 2, ToJson(e->node).dump());
      } else if (const auto* e = std::get_if<PutQueue>(&edit)) {
        s = put_queue.get();
        BindText(s, 1, e->queue.name);
        BindText(s, 2, ToJson(e->queue).dump());
      } else if (const auto* e = std::get_if<PutMeta>(&edit)) {
        s = put_meta.get();
        BindText(s, 1, e->key);
        BindText(s, 2, e->value);
      } else if (const auto* e = std::get_if<DeleteNode>(&edit)) {
        s = del_node.get();
        BindText(s, 1, e->name);
      } else if (const auto* e = std::get_if<AppendChange>(&edit)) {
        s = put_change.get();
        sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(e->change.revision));
        BindText(s, 2, e->change.doc);
      } else if (const auto* e = std::get_if<TruncateChanges>(&edit)) {
        s = del_changes.get();
        sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(e->below));
      } else if (const auto* e = std::get_if<RetireJob>(&edit)) {
        s = retire.get();
        BindText(s, 1, e->state);
        sqlite3_bind_int64(s, 2, static_cast<sqlite3_int64>(e->id));
      }
      if (!s) return Internal(std::string("sqlite prepare: ") + sqlite3_errmsg(db_));
      int rc = sqlite3_step(s);
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
      if (rc != SQLITE_DONE) return Internal(std::string("sqlite write: ") + sqlite3_errmsg(db_));
    }
    return Status::Ok();
  }

  Status QueryVersion(int64_t* version) {
    Statement st(db_, "SELECT coalesce(max(version), 0) FROM schema_version");
    if (!st.get()) return Internal(std::string("sqlite prepare: ") + sqlite3_errmsg(db_));
    if (sqlite3_step(st.get()) != SQLITE_ROW) {
      return Internal(std::string("sqlite schema version: ") + sqlite3_errmsg(db_));
    }
    *version = sqlite3_column_int64(st.get(), 0);
    return Status::Ok();
  }

  static void BindText(sqlite3_stmt* s, int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown";
      sqlite3_free(err);
      return Internal("sqlite: " + msg);
    }
    return Status::Ok();
  }

  Result<BackupInfo> Backup(const std::string& path) const override {
    if (path.empty() || path.front() != '/') {
      return InvalidArgument("path: got '" + path + "', want an absolute path on the head's host");
    }
    // Created empty first, so that a backup never replaces a file and the copy (which holds
    // token hashes and jobs' environments) is the owner's alone from the start.
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      return FailedPrecondition("path: cannot create " + path + ": " + std::strerror(errno) +
                                (errno == EEXIST ? " (a backup never overwrites a file)" : ""));
    }
    close(fd);
    auto fail = [&](const std::string& what, sqlite3* db) -> Status {
      std::string msg = what + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
      (void)unlink(path.c_str());
      return Internal("backup to " + path + " failed: " + msg);
    };
    // A connection of its own: VACUUM INTO copies one consistent snapshot (a read transaction
    // on the WAL) while the commit connection goes on writing.
    {
      Connection src(path_, SQLITE_OPEN_READONLY);
      if (!src.ok()) return fail("cannot open " + path_, src.db);
      Statement vacuum(src.db, "VACUUM INTO ?1");
      if (!vacuum.get()) return fail("prepare", src.db);
      BindText(vacuum.get(), 1, path);
      if (sqlite3_step(vacuum.get()) != SQLITE_DONE) return fail("vacuum into", src.db);
    }
    // VACUUM INTO does not sync what it wrote.
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    bool synced = fd >= 0 && fsync(fd) == 0;
    if (fd >= 0) close(fd);
    std::string dir = path.substr(0, std::max<size_t>(1, path.rfind('/')));
    int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      synced = synced && fsync(dfd) == 0;
      close(dfd);
    }
    if (!synced) return fail("fsync", nullptr);
    // Read back from the copy: it opens, passes SQLite's check, and says what it holds.
    Connection copy(path, SQLITE_OPEN_READONLY);
    if (!copy.ok()) return fail("cannot open the copy", copy.db);
    BackupInfo info;
    info.path = path;
    std::string check;
    auto one = [&](const char* sql, auto&& read) -> bool {
      Statement q(copy.db, sql);
      if (!q.get() || sqlite3_step(q.get()) != SQLITE_ROW) return false;
      read(q.get());
      return true;
    };
    if (!one("PRAGMA quick_check",
             [&](sqlite3_stmt* q) {
               const unsigned char* t = sqlite3_column_text(q, 0);
               check = t ? reinterpret_cast<const char*>(t) : "";
             }) ||
        check != "ok") {
      return fail("the copy fails its check (" + check + ")", copy.db);
    }
    if (!one("SELECT coalesce(max(revision), 0) FROM changes",
             [&](sqlite3_stmt* q) {
               info.revision = static_cast<uint64_t>(sqlite3_column_int64(q, 0));
             }) ||
        !one("SELECT count(*) FROM jobs",
             [&](sqlite3_stmt* q) { info.jobs = sqlite3_column_int64(q, 0); })) {
      return fail("reading the copy", copy.db);
    }
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) info.bytes = st.st_size;
    return info;
  }

  Result<std::vector<Job>> ReadRetiredJobs(const RetiredJobsQuery& q) const override {
    std::lock_guard<std::mutex> lock(read_mu_);
    if (!reader_) {
      auto c = std::make_unique<Connection>(path_, SQLITE_OPEN_READONLY);
      if (!c->ok()) {
        return Unavailable("cannot open store " + path_ + " to read retired jobs: " +
                           (c->db ? sqlite3_errmsg(c->db) : "out of memory"));
      }
      reader_ = std::move(c);
    }
    sqlite3* db = reader_->db;
    Statement st(db, kRetiredJobsSql);
    if (!st.get()) return Internal(std::string("sqlite prepare: ") + sqlite3_errmsg(db));
    sqlite3_bind_int64(st.get(), 1, static_cast<sqlite3_int64>(q.after));
    sqlite3_bind_int64(st.get(), 2, q.ended_since);
    sqlite3_bind_int64(st.get(), 3, q.limit);
    sqlite3_bind_int64(st.get(), 4, static_cast<sqlite3_int64>(q.id));
    BindText(st.get(), 5, q.user);
    BindText(st.get(), 6, q.queue);
    std::vector<std::string> docs;
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st.get(), 0);
      docs.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
    }
    if (rc != SQLITE_DONE) return Internal(std::string("sqlite read: ") + sqlite3_errmsg(db));
    std::vector<Job> out;
    CORRAL_RETURN_IF_ERROR(DecodeJobDocs({docs.begin(), docs.end()}, &out));
    return out;
  }

  sqlite3* db_;
  std::string path_;
  mutable std::mutex read_mu_;
  mutable std::unique_ptr<Connection> reader_;  // GUARDED_BY(read_mu_)
};

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  CORRAL_RETURN_IF_ERROR(SecureDatabaseFile(path));
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Unavailable("cannot open store " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  auto store = std::make_unique<SqliteStore>(db, path);
  CORRAL_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace corral::store
