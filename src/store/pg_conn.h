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

// "HOST:PORT/DB" of a connection, for messages (never the password).
std::string Describe(PGconn* conn);

// Connects; the error names the server and libpq's reason.
Result<Conn> Connect(const std::string& conninfo);

// Runs `sql` with text parameters ($1, $2, ...), or, without parameters, one or more
// statements. Ok only when the server answered with rows or
// "done"; otherwise the error carries the server's message (and says so when the connection
// was lost: then the outcome of a COMMIT is unknown).
Result<Res> Exec(PGconn* conn, const char* sql, const std::vector<std::string>& params = {});

// The value at (row, col) as text ("" for NULL).
std::string Value(const PGresult* r, int row, int col);

}  // namespace corral::store::pg
