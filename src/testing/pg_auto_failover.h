// A throwaway pg_auto_failover formation for tests: a monitor and three PostgreSQL data nodes
// (a primary and two standbys, number_sync_standbys = 1, so a commit waits for one of the two)
// on loopback, each node a `pg_autoctl run` keeper with its postgres, in a fresh temp dir.
// The monitor promotes a standby when the primary stops answering; its timeouts are set short
// for tests (TestTimeouts), so a failover takes seconds, not the production minute.
//
// Like PgServer, everything runs as the `postgres` OS user (PostgreSQL refuses root) through
// runuser, so the test process must be root. Each node's processes are found as the
// descendants of the runuser process the helper started (postgres' children are session
// leaders, so a process group would miss them), which is how a node is killed, stopped and
// continued as a whole, and how the destructor ends everything, stopped processes included.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::testing {

class PgAutoFailover {
 public:
  // Why a formation cannot be started here ("" if it can): tests GTEST_SKIP with it (and fail
  // under CI=true, which installs pg_autoctl).
  static std::string Unavailable();
  // The monitor, the primary, then both standbys; returns once the monitor reports a primary
  // and two secondaries. `db` is created on the primary (replicated to the standbys).
  // `monitor_settings`: "pgautofailover.NAME = VALUE" settings of the monitor (its timeouts);
  // by default the tests' short ones (TestTimeouts), none: pg_auto_failover's defaults.
  static Result<std::unique_ptr<PgAutoFailover>> Start(
      const std::string& db, const std::vector<std::string>& monitor_settings = TestTimeouts());
  // The tests' monitor timeouts: each node checked every second, one unhealthy after 3 s
  // without a report and a failed check, a standby promoted 3 s after an unreachable primary
  // was asked to demote (defaults: 5 s, 20 s and 30 s).
  static std::vector<std::string> TestTimeouts();
  ~PgAutoFailover();
  PgAutoFailover(const PgAutoFailover&) = delete;
  PgAutoFailover& operator=(const PgAutoFailover&) = delete;

  static constexpr int kNodes = 3;
  int port(int node) const { return nodes_[static_cast<size_t>(node)].port; }
  // postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/DB?target_session_attrs=
  // read-write&connect_timeout=2: libpq finds whichever node is the primary now.
  std::string Url(const std::string& db) const;

  // The node the monitor has assigned the primary's role (primary, or wait_primary while it has
  // no standby in sync); -1 while it names none (in the middle of a failover).
  int Primary() const;
  // Until the formation is whole again: every node reports the state the monitor assigned it,
  // one is primary and the others secondaries. The error describes the states last seen.
  Status WaitHealthy(int timeout_ms) const;
  // Until the monitor assigns the primary's role to a node other than `old_primary`.
  Result<int> WaitFailover(int old_primary, int timeout_ms) const;

  // The node's keeper, postgres and every backend: SIGKILL (a machine that dies), SIGSTOP
  // (one that hangs) and SIGCONT. Restart runs `pg_autoctl run` again on a killed node's
  // data; its keeper asks the monitor what to be (a demoted primary rejoins as a standby).
  Status Kill(int node);
  Status Stop(int node);
  Status Continue(int node);
  Status Restart(int node);
  // Stops (SIGSTOP) every WAL sender of `node`, all at once: its standbys receive nothing
  // more and confirm nothing more (a synchronous commit waits), while they and their keepers
  // stay healthy. Continue(node) or Kill(node) ends it.
  Status HoldReplication(int node);
  // Synchronous replication (every node in the quorum, number_sync_standbys 1: the primary's
  // synchronous_standby_names is ANY 1 of the standbys) or asynchronous (no node in the
  // quorum, number_sync_standbys 0: it is empty). Returns once the primary has it.
  Status SetSynchronous(bool synchronous);
  // Continues every stopped node and restarts every killed one (a test's clean start).
  Status Revive();

  // A new database, made where the multi-host URL leads (the primary that accepts writes).
  Status CreateDatabase(const std::string& db) const;
  // Runs SQL where the multi-host URL of `db` leads (as the heads would).
  Result<std::string> QueryPrimary(const std::string& db, const std::string& sql) const;
  // Runs SQL on a node (database `db`); the first column of the first row ("" if none). A
  // node out of range (Primary() in the middle of a failover) is an error.
  Result<std::string> Query(int node, const std::string& db, const std::string& sql) const;
  // Runs SQL on the monitor's pg_auto_failover database (settings, states).
  Result<std::string> MonitorQuery(const std::string& sql) const;

 private:
  struct Node {
    std::string name;  // pg_auto_failover's node name: n1, n2, n3 (the monitor: "monitor")
    int port = 0;
    pid_t runner = -1;  // runuser of `pg_autoctl run`, our child; -1: not running
  };
  explicit PgAutoFailover(std::string dir) : dir_(std::move(dir)) {}
  Status CreateMonitor(const std::vector<std::string>& settings);
  Status CreateNode(size_t i);
  Status Run(Node& node, const std::string& autoctl_args);
  // Every process under `node`'s runuser, top-down: the keeper, postgres, its backends.
  std::vector<pid_t> Processes(const Node& node) const;
  Status SignalAll(Node& node, int sig);
  std::string NodeEnv(const std::string& name) const;
  std::string PgData(const std::string& name) const { return dir_ + "/" + name + "/pgdata"; }
  std::string Log(const std::string& name) const { return dir_ + "/" + name + ".log"; }
  Result<std::string> QueryConninfo(const std::string& conninfo, const std::string& sql) const;
  std::string States() const;

  std::string dir_;
  Node monitor_;
  std::vector<Node> nodes_;
};

}  // namespace corral::testing
