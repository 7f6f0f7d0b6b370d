// RAII for libpq's connection and result, and the few calls every PostgreSQL user here makes:
// connect, and run one parametrised statement with its result checked.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::store::pg {

struct ConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Conn = std::unique_ptr<PGconn, ConnDeleter>;
using Res = std::unique_ptr<PGresult, ResultDeleter>;

// What the server said beside a statement's result that changes its meaning: a warning that
// a COMMIT stopped waiting for its synchronous standbys (cancelled, or the session ended):
// the transaction is committed on this server but maybe on no standby, so a failover can
// lose it. Owned by the connection's user; the connection's notice receiver writes it.
struct Notices {
  bool unreplicated = false;
  std::string unreplicated_detail;  // the server's message and detail, for the error
};

// "HOST:PORT/DB" of a connection, for messages (never the password).
std::string Describe(PGconn* conn);

// Connects; the error names the server and libpq's reason. Server notices are dropped,
// but for those `notices` (when given) records; it must outlive the connection (PQreset keeps
// the receiver).
Result<Conn> Connect(const std::string& conninfo, Notices* notices = nullptr);

// Whether a notice (the PGresult libpq hands a notice receiver) says a commit stopped waiting
// for synchronous replication. Decided by the fields the server sends whatever its language:
// severity WARNING raised in SyncRepWaitForLSN, the only place that warns so.
bool IsUnreplicatedCommitWarning(const PGresult* notice);

// Whether a libpq connection string or URI names more than one host (host=a,b or
// postgresql://a:1,b:2/db): a store meant to fail over. Unparseable: false (Connect says why).
bool NamesSeveralHosts(const std::string& conninfo);

// Runs `sql` with text parameters ($1, $2, ...), or, without parameters, one or more
// statements. Ok only when the server answered with rows or
// "done"; otherwise the error carries the server's message (and says so when the connection
// was lost: then the outcome of a COMMIT is unknown).
Result<Res> Exec(PGconn* conn, const char* sql, const std::vector<std::string>& params = {});

// The value at (row, col) as text ("" for NULL).
std::string Value(const PGresult* r, int row, int col);

}  // namespace corral::store::pg
