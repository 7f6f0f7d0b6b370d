// The PostgreSQL backend of Store (DESIGN §9): the same tables and JSON documents as the SQLite
// store, for heads that share one database. One connection, used by one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "store/store.h"

namespace corral::store {

// Connects with a libpq connection string or URI (postgresql://USER@HOST:PORT/DB) and
// migrates the schema. A Commit that loses the connection fails naming the cause (its
// outcome is then unknown, as with any lost COMMIT); the next call reconnects.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& conninfo);

}  // namespace corral::store
