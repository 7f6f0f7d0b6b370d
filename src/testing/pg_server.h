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

// A loopback port the kernel gives and takes back at once (a server binds it a moment later).
int FreeLoopbackPort();
// The last `max_chars` characters of a file (a server's log, for an error message).
std::string FileTail(const std::string& path, size_t max_chars);

class PgServer {
 public:
  // Why a server cannot be started here ("" if it can): tests GTEST_SKIP with it.
  static std::string Unavailable();
  static Result<std::unique_ptr<PgServer>> Start();
  // A streaming standby of `primary` (pg_basebackup -R), on a port of its own, that reports
  // to it as `name` (its cluster_name: what synchronous_standby_names lists). Returns once
  // it streams.
  static Result<std::unique_ptr<PgServer>> StartStandby(const PgServer& primary,
                                                        const std::string& name);

  // Fast shutdown (a clean stop: a standby flushes what it received); Crash: immediate
  // shutdown, no checkpoint, as a server process that dies; Resume starts it again on its
  // port (crash recovery after Crash). Promote makes a standby a primary and waits for it.
  Status Stop();
  Status Crash();
  Status Resume();
  Status Promote();
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
  PgServer(std::string dir, std::string bin, int port, std::string options)
      : dir_(dir), bin_(bin), port_(port), options_(options) {}
  // Starts the server in `dir`/data on a free port; `extra`: more postgres options.
  static Result<std::unique_ptr<PgServer>> Launch(const std::string& dir, const std::string& bin,
                                                  const std::string& extra);
  Status PgCtl(const std::string& args) const;
  std::string dir_;
  std::string bin_;
  int port_;
  std::string options_;  // postgres' -o options, for Resume
};

}  // namespace corral::testing
