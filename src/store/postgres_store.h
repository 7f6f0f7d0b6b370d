// The PostgreSQL backend of Store (DESIGN §9): the same tables and JSON documents as the SQLite
// store, for heads that share one database. One connection, used by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "store/store.h"

namespace corral::store {

class PostgresStore : public Store {
 public:
  bool Shared() const override { return true; }
  // Leadership of several heads on one database. Tries (without waiting) to take the
  // session-level advisory lock that only the leader holds; holding it, increments the term
  // row and returns the new term, or nullopt while another session holds the lock. From then
  // on every Commit first reads the term row inside its transaction (FOR SHARE, so a new
  // leader's increment waits for it) and is refused unless the term is still this one: a
  // leader whose session was lost and whose lock another head took can never commit again,
  // even after this store reconnects. A store that never led commits unfenced (one head).
  Result<std::optional<uint64_t>> TryLead() override = 0;
  // The term this store took with TryLead (0: it never led).
  virtual uint64_t term() const = 0;
  // One that has not renewed for `lease` is deposed by the next standby's TryLead, which ends
  // its PostgreSQL session (TryLead then returns kUnavailable saying so; the lock is free at a
  // later call).
  void SetLease(DurationMs lease) override = 0;
};

// Connects with a libpq connection string or URI (postgresql://USER@HOST:PORT/DB, or several
// hosts with target_session_attrs=read-write: every connect and reconnect finds the primary),
// sets the session's synchronous_commit, checks for a synchronous standby where `options`
// ask (kFailedPrecondition saying what is missing), and migrates the schema. A Commit that
// loses the connection fails naming the cause (its outcome is then unknown, as with any lost
// COMMIT); the next call reconnects. A COMMIT the server says stopped waiting for its
// synchronous standbys (pg_cancel_backend or pg_terminate_backend of the waiting session)
// fails with kUnavailable: it holds on this server but maybe on no standby.
Result<std::unique_ptr<PostgresStore>> OpenPostgresStore(const std::string& conninfo,
                                                         const StoreOptions& options = {});

}  // namespace corral::store
