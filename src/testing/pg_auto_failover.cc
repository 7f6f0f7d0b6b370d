#include "testing/pg_auto_failover.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "testing/pg_server.h"

namespace corral::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kAutoctl[] = "/usr/bin/pg_autoctl";

// The states in which the monitor has given a node the primary's role.
constexpr char kPrimaryStates[] =
    "('single', 'primary', 'wait_primary', 'join_primary', 'apply_settings')";

std::string AutoFailoverPgBin() {
  std::string best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    std::string bin = (e.path() / "bin").string();
    if (fs::exists(bin + "/pg_ctl") && bin > best) best = bin;
  }
  return best;
}

// A /proc file's text ("" once the process is gone: plain read(2), since a stream's read
// error there throws).
std::string ReadProcFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// pid -> parent pid of every process now.
std::map<pid_t, pid_t> ParentsOfAll() {
  std::map<pid_t, pid_t> parents;
  DIR* proc = opendir("/proc");
  if (!proc) return parents;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::string stat = ReadProcFile(std::string("/proc/") + e->d_name + "/stat");
    auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) continue;
    std::istringstream rest(stat.substr(paren + 2));
    char state = 0;
    long ppid = 0;
    rest >> state >> ppid;
    parents[static_cast<pid_t>(pid)] = static_cast<pid_t>(ppid);
  }
  closedir(proc);
  return parents;
}

std::string CommandLine(pid_t pid) {
  std::string s = ReadProcFile("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}

bool WaitFor(int timeout_ms, const std::function<bool()>& done) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return done();
}

}  // namespace

std::string PgAutoFailover::Unavailable() {
  if (std::string why = PgServer::Unavailable(); !why.empty()) return why;
  if (access(kAutoctl, X_OK) != 0) {
    return "no pg_autoctl (apt-get install pg-auto-failover-cli postgresql-15-auto-failover)";
  }
  return "";
}

std::vector<std::string> PgAutoFailover::TestTimeouts() {
  return {
      "pgautofailover.health_check_period = 1000",
      "pgautofailover.health_check_timeout = 1000",
      "pgautofailover.health_check_max_retries = 1",
      "pgautofailover.health_check_retry_delay = 500",
      "pgautofailover.node_considered_unhealthy_timeout = 3000",
      "pgautofailover.primary_demote_timeout = 3000",
      "pgautofailover.startup_grace_period = 2000",
  };
}

Result<std::unique_ptr<PgAutoFailover>> PgAutoFailover::Start(
    const std::string& db, const std::vector<std::string>& monitor_settings) {
  if (std::string why = Unavailable(); !why.empty()) return FailedPrecondition(why);
  std::string tmpl = (fs::temp_directory_path() / "corral-pgaf-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return Internal("mkdtemp failed");
  std::unique_ptr<PgAutoFailover> f(new PgAutoFailover(tmpl));
  passwd* pw = getpwnam("postgres");
  for (const std::string& sub : {std::string(), std::string("/run")}) {
    fs::create_directories(tmpl + sub);
    if (chown((tmpl + sub).c_str(), pw->pw_uid, pw->pw_gid) != 0) return Internal("chown");
  }
  f->monitor_ = {"monitor", FreeLoopbackPort(), -1};
  for (int i = 1; i <= kNodes; ++i) {
    f->nodes_.push_back({"n" + std::to_string(i), FreeLoopbackPort(), -1});
  }
  CORRAL_RETURN_IF_ERROR(f->CreateMonitor(monitor_settings));
  // The first node becomes the primary ("single" until a standby joins); the others clone it.
  CORRAL_RETURN_IF_ERROR(f->CreateNode(0));
  if (!WaitFor(60000, [&] { return f->Primary() == 0; })) {
    return Internal("node n1 never became the primary: " + f->States() +
                    FileTail(f->Log("n1"), 3000));
  }
  for (size_t i = 1; i < kNodes; ++i) CORRAL_RETURN_IF_ERROR(f->CreateNode(i));
  CORRAL_RETURN_IF_ERROR(f->WaitHealthy(120000));
  if (db != "postgres") CORRAL_RETURN_IF_ERROR(f->CreateDatabase(db));
  return f;
}

Status PgAutoFailover::CreateMonitor(const std::vector<std::string>& settings) {
  std::string pgdata = PgData("monitor");
  std::string create = "runuser -u postgres -- " + NodeEnv("monitor") + " " + kAutoctl +
                       " create monitor --pgctl " + AutoFailoverPgBin() + "/pg_ctl --pgdata " +
                       pgdata + " --pgport " + std::to_string(monitor_.port) +
                       " --hostname 127.0.0.1 --auth trust --no-ssl >>" + Log("monitor") +
                       " 2>&1 && runuser -u postgres -- " + NodeEnv("monitor") + " " + kAutoctl +
                       " config set --pgdata " + pgdata +
                       " postgresql.listen_addresses 127.0.0.1 >>" + Log("monitor") + " 2>&1";
  if (std::system(create.c_str()) != 0) {
    return Internal("pg_autoctl create monitor failed: " + FileTail(Log("monitor"), 3000));
  }
  CORRAL_RETURN_IF_ERROR(Run(monitor_, "run --pgdata " + pgdata));
  if (!WaitFor(60000, [&] { return MonitorQuery("SELECT 1").ok(); })) {
    return Internal("the monitor did not start: " + FileTail(Log("monitor"), 3000));
  }
  for (const std::string& setting : settings) {
    CORRAL_RETURN_IF_ERROR(MonitorQuery("ALTER SYSTEM SET " + setting).status());
  }
  return MonitorQuery("SELECT pg_reload_conf()").status();
}

Status PgAutoFailover::CreateNode(size_t i) {
  Node& node = nodes_[i];
  std::string monitor_url = "postgres://autoctl_node@127.0.0.1:" + std::to_string(monitor_.port) +
                            "/pg_auto_failover?sslmode=disable";
  return Run(node, "create postgres --pgctl " + AutoFailoverPgBin() + "/pg_ctl --pgdata " +
                       PgData(node.name) + " --pgport " + std::to_string(node.port) +
                       " --hostname 127.0.0.1 --listen 127.0.0.1 --name " + node.name +
                       " --auth trust --no-ssl --monitor " + monitor_url + " --run");
}

std::string PgAutoFailover::NodeEnv(const std::string& name) const {
  // pg_autoctl keeps its configuration, state and pid file under the XDG directories: each
  // node its own, inside this formation's directory.
  return "env XDG_CONFIG_HOME=" + dir_ + "/" + name + "/config XDG_DATA_HOME=" + dir_ + "/" + name +
         "/data XDG_RUNTIME_DIR=" + dir_ + "/run";
}

Status PgAutoFailover::Run(Node& node, const std::string& autoctl_args) {
  std::string cmd = "exec runuser -u postgres -- " + NodeEnv(node.name) + " " + kAutoctl + " " +
                    autoctl_args + " >>" + Log(node.name) + " 2>&1";
  pid_t pid = fork();
  if (pid < 0) return Internal("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  node.runner = pid;
  return Status::Ok();
}

std::vector<pid_t> PgAutoFailover::Processes(const Node& node) const {
  if (node.runner <= 0) return {};
  std::map<pid_t, std::vector<pid_t>> children;
  for (const auto& [pid, parent] : ParentsOfAll()) children[parent].push_back(pid);
  std::vector<pid_t> out{node.runner};
  for (size_t i = 0; i < out.size(); ++i) {
    for (pid_t c : children[out[i]]) out.push_back(c);
  }
  return out;
}

Status PgAutoFailover::SignalAll(Node& node, int sig) {
  if (node.runner <= 0) return FailedPrecondition("node " + node.name + " is not running");
  if (sig == SIGCONT) {
    for (pid_t p : Processes(node)) kill(p, SIGCONT);
    return Status::Ok();
  }
  // Stopped first, until no new process appears: a running postmaster could fork a backend
  // between the listing and the signal, and that one would escape.
  std::set<pid_t> stopped;
  for (bool more = true; more;) {
    more = false;
    for (pid_t p : Processes(node)) {
      if (stopped.insert(p).second) {
        kill(p, SIGSTOP);
        more = true;
      }
    }
  }
  if (sig == SIGSTOP) return Status::Ok();
  for (pid_t p : stopped) kill(p, sig);
  if (sig == SIGKILL) {
    waitpid(node.runner, nullptr, 0);
    node.runner = -1;
  }
  return Status::Ok();
}

Status PgAutoFailover::Kill(int node) {
  return SignalAll(nodes_[static_cast<size_t>(node)], SIGKILL);
}
Status PgAutoFailover::Stop(int node) {
  return SignalAll(nodes_[static_cast<size_t>(node)], SIGSTOP);
}
Status PgAutoFailover::Continue(int node) {
  return SignalAll(nodes_[static_cast<size_t>(node)], SIGCONT);
}

Status PgAutoFailover::Restart(int node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  if (n.runner > 0) return FailedPrecondition("node " + n.name + " is running");
  return Run(n, "run --pgdata " + PgData(n.name));
}

Status PgAutoFailover::HoldReplication(int node) {
  std::vector<pid_t> senders;
  for (pid_t p : Processes(nodes_[static_cast<size_t>(node)])) {
    if (CommandLine(p).rfind("postgres: walsender", 0) == 0) senders.push_back(p);
  }
  if (senders.empty()) return NotFound("node n" + std::to_string(node + 1) + " sends no WAL");
  for (pid_t p : senders) kill(p, SIGSTOP);
  return Status::Ok();
}

Status PgAutoFailover::SetSynchronous(bool synchronous) {
  // The monitor takes one settings change at a time (the primary must be back in "primary"
  // from applying the last): each is retried until it is accepted.
  auto apply = [&](const std::string& sql) -> Status {
    Status last;
    if (WaitFor(60000, [&] { return (last = MonitorQuery(sql).status()).ok(); })) {
      return Status::Ok();
    }
    return last;
  };
  std::vector<std::string> steps;
  std::string count = std::string("SELECT pgautofailover.set_formation_number_sync_standbys(") +
                      "'default', " + (synchronous ? "1" : "0") + ")";
  if (!synchronous) steps.push_back(count);  // lowered before the quorum shrinks
  for (const Node& n : nodes_) {
    steps.push_back("SELECT pgautofailover.set_node_replication_quorum('default', '" + n.name +
                    "', " + (synchronous ? "true" : "false") + ")");
  }
  if (synchronous) steps.push_back(count);  // raised once the quorum is back
  for (const std::string& sql : steps) CORRAL_RETURN_IF_ERROR(apply(sql));
  bool applied = WaitFor(60000, [&] {
    auto names = Query(Primary(), "postgres", "SHOW synchronous_standby_names");
    return names.ok() && names->empty() != synchronous;
  });
  if (!applied) return corral::Unavailable("synchronous_standby_names did not change: " + States());
  return WaitHealthy(120000);
}

Status PgAutoFailover::Revive() {
  for (int i = 0; i < kNodes; ++i) {
    Status st = nodes_[static_cast<size_t>(i)].runner > 0 ? Continue(i) : Restart(i);
    CORRAL_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

PgAutoFailover::~PgAutoFailover() {
  for (Node& n : nodes_) {
    if (n.runner > 0) (void)SignalAll(n, SIGKILL);
  }
  if (monitor_.runner > 0) (void)SignalAll(monitor_, SIGKILL);
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string PgAutoFailover::Url(const std::string& db) const {
  std::string hosts;
  for (const Node& n : nodes_) {
    hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(n.port);
  }
  return "postgresql://postgres@" + hosts + "/" + db +
         "?target_session_attrs=read-write&connect_timeout=2";
}

Result<std::string> PgAutoFailover::QueryConninfo(const std::string& conninfo,
                                                  const std::string& sql) const {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(conninfo.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) return corral::Unavailable(PQerrorMessage(conn.get()));
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn.get(), sql.c_str()), &PQclear);
  ExecStatusType st = PQresultStatus(r.get());
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return Internal(sql + ": " + PQresultErrorMessage(r.get()));
  }
  if (st == PGRES_TUPLES_OK && PQntuples(r.get()) > 0) {
    return std::string(PQgetvalue(r.get(), 0, 0));
  }
  return std::string();
}

Result<std::string> PgAutoFailover::Query(int node, const std::string& db,
                                          const std::string& sql) const {
  if (node < 0 || node >= kNodes) {
    return corral::Unavailable("no node " + std::to_string(node) + " (no primary now?)");
  }
  return QueryConninfo("postgresql://postgres@127.0.0.1:" + std::to_string(port(node)) + "/" + db +
                           "?connect_timeout=2",
                       sql);
}

Result<std::string> PgAutoFailover::MonitorQuery(const std::string& sql) const {
  return QueryConninfo("postgresql://postgres@127.0.0.1:" + std::to_string(monitor_.port) +
                           "/pg_auto_failover?connect_timeout=2",
                       sql);
}

Result<std::string> PgAutoFailover::QueryPrimary(const std::string& db,
                                                 const std::string& sql) const {
  return QueryConninfo(Url(db), sql);
}

Status PgAutoFailover::CreateDatabase(const std::string& db) const {
  return QueryConninfo(Url("postgres"), "CREATE DATABASE \"" + db + "\"").status();
}

int PgAutoFailover::Primary() const {
  auto port = MonitorQuery(
      std::string("SELECT nodeport FROM pgautofailover.node WHERE goalstate IN ") + kPrimaryStates +
      " AND reportedstate IN " + kPrimaryStates + " ORDER BY nodeid LIMIT 1");
  if (!port.ok() || port->empty()) return -1;
  for (int i = 0; i < kNodes; ++i) {
    if (std::to_string(this->port(i)) == *port) return i;
  }
  return -1;
}

std::string PgAutoFailover::States() const {
  auto s = MonitorQuery(
      "SELECT string_agg(nodename || ' ' || reportedstate || '/' || goalstate, ', ' ORDER BY "
      "nodeid) FROM pgautofailover.node");
  return s.ok() ? *s : s.status().ToString();
}

Status PgAutoFailover::WaitHealthy(int timeout_ms) const {
  bool whole = WaitFor(timeout_ms, [&] {
    auto s = MonitorQuery(
        "SELECT count(*) FILTER (WHERE reportedstate = 'primary' AND goalstate = 'primary') "
        "|| '/' || count(*) FILTER (WHERE reportedstate = 'secondary' AND goalstate = "
        "'secondary') FROM pgautofailover.node");
    return s.ok() && *s == "1/" + std::to_string(kNodes - 1);
  });
  if (whole) return Status::Ok();
  return corral::Unavailable("the formation is not whole after " + std::to_string(timeout_ms) +
                             " ms: " + States());
}

Result<int> PgAutoFailover::WaitFailover(int old_primary, int timeout_ms) const {
  int now = -1;
  if (WaitFor(timeout_ms, [&] {
        now = Primary();
        return now >= 0 && now != old_primary;
      })) {
    return now;
  }
  return corral::Unavailable("no failover from n" + std::to_string(old_primary + 1) + " within " +
                             std::to_string(timeout_ms) + " ms: " + States());
}

}  // namespace corral::testing
