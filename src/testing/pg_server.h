// A throwaway PostgreSQL server for tests: initdb into a fresh temp dir, postgres on a free
// loopback port, stopped and removed when destroyed. PostgreSQL refuses to run as root, so the
// server runs as the `postgres` OS user (Debian's postgresql package creates it) via runuser;
// the test process must therefore be root. fsync is off: the server is not what is tested for
// crash safety (the client is killed, never the server's machine).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"

namespace corral::testing {

class PgServer {
 public:
  // Why a server cannot be started here ("" if it can): tests GTEST_SKIP with it.
  static std::string Unavailable();
  static Result<std::unique_ptr<PgServer>> Start();
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // A new, empty database; returns its URL (postgresql://postgres@127.0.0.1:PORT/NAME).
  Result<std::string> CreateDatabase(const std::string& name);
  std::string Url(const std::string& db) const;
  // Runs SQL on database `db` outside any store (test setup and inspection); returns the first
  // column of the first row ("" when there is none).
  Result<std::string> Query(const std::string& db, const std::string& sql) const;
  int port() const { return port_; }

 private:
  PgServer(std::string dir, std::string bin, int port) : dir_(dir), bin_(bin), port_(port) {}
  std::string dir_;
  std::string bin_;
  int port_;
};

}  // namespace corral::testing
