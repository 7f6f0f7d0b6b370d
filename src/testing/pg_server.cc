#include "testing/pg_server.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace corral::testing {
namespace {

namespace fs = std::filesystem;

// The newest installed server's bin dir (Debian: /usr/lib/postgresql/VERSION/bin).
std::string FindBin() {
  std::string best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    std::string bin = (e.path() / "bin").string();
    if (fs::exists(bin + "/initdb") && fs::exists(bin + "/pg_ctl") && bin > best) best = bin;
  }
  return best;
}

int RunAsPostgres(const std::string& cmd) {
  return std::system(("runuser -u postgres -- " + cmd).c_str());
}

}  // namespace

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string FileTail(const std::string& path, size_t max_chars) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > max_chars ? s.substr(s.size() - max_chars) : s;
}

std::string PgServer::Unavailable() {
  if (geteuid() != 0) {
    return "needs root: the test starts its own PostgreSQL as the 'postgres' user via runuser";
  }
  if (FindBin().empty()) {
    return "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install "
           "postgresql)";
  }
  if (!getpwnam("postgres")) return "no 'postgres' OS user (apt-get install postgresql)";
  return "";
}

namespace {

// A new directory owned by the postgres user.
Result<std::string> MakeServerDir() {
  std::string tmpl = (fs::temp_directory_path() / "corral-pg-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return Internal("mkdtemp failed");
  passwd* pw = getpwnam("postgres");
  if (chown(tmpl.c_str(), pw->pw_uid, pw->pw_gid) != 0) return Internal("chown " + tmpl);
  return tmpl;
}

}  // namespace

Result<std::unique_ptr<PgServer>> PgServer::Start() {
  if (std::string why = Unavailable(); !why.empty()) return FailedPrecondition(why);
  std::string bin = FindBin();
  auto dir = MakeServerDir();
  if (!dir.ok()) return dir.status();
  if (RunAsPostgres(bin + "/initdb -D " + *dir + "/data -U postgres -A trust -E UTF8 --no-sync >" +
                    *dir + "/initdb.log 2>&1") != 0) {
    std::string log = FileTail(*dir + "/initdb.log", 2000);
    fs::remove_all(*dir);
    return Internal("initdb failed: " + log);
  }
  return Launch(*dir, bin, "");
}

Result<std::unique_ptr<PgServer>> PgServer::StartStandby(const PgServer& primary,
                                                         const std::string& name) {
  auto dir = MakeServerDir();
  if (!dir.ok()) return dir.status();
  if (RunAsPostgres(primary.bin_ + "/pg_basebackup -D " + *dir + "/data -R -X stream -h " +
                    "127.0.0.1 -p " + std::to_string(primary.port_) +
                    " -U postgres --no-sync --checkpoint=fast >" + *dir + "/basebackup.log 2>&1") !=
      0) {
    std::string log = FileTail(*dir + "/basebackup.log", 2000);
    fs::remove_all(*dir);
    return Internal("pg_basebackup failed: " + log);
  }
  auto standby = Launch(*dir, primary.bin_, " -c cluster_name=" + name);
  if (!standby.ok()) return standby;
  // Streaming once the primary lists it (the walreceiver connects a moment after start).
  for (int i = 0; i < 300; ++i) {
    auto n = primary.Query(
        "postgres", "SELECT count(*) FROM pg_stat_replication WHERE application_name = '" + name +
                        "' AND state = 'streaming'");
    if (n.ok() && *n == "1") return standby;
    usleep(100 * 1000);
  }
  return Internal("standby " + name + " did not start streaming within 30 s: " +
                  FileTail((*standby)->dir_ + "/server.log", 2000));
}

Result<std::unique_ptr<PgServer>> PgServer::Launch(const std::string& dir, const std::string& bin,
                                                   const std::string& extra) {
  // A port that was free a moment ago can be taken before postgres binds it: try a few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    int port = FreeLoopbackPort();
    std::string opts = "-p " + std::to_string(port) + " -k " + dir +
                       " -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
                       " -c full_page_writes=off" +
                       extra;
    if (RunAsPostgres(bin + "/pg_ctl -D " + dir + "/data -l " + dir + "/server.log -w -t 30 -o '" +
                      opts + "' start >/dev/null 2>&1") == 0) {
      return std::unique_ptr<PgServer>(new PgServer(dir, bin, port, opts));
    }
  }
  std::string log = FileTail(dir + "/server.log", 2000);
  fs::remove_all(dir);
  return Internal("postgres did not start: " + log);
}

Status PgServer::PgCtl(const std::string& args) const {
  if (RunAsPostgres(bin_ + "/pg_ctl -D " + dir_ + "/data -l " + dir_ + "/server.log -w -t 60 " +
                    args + " >/dev/null 2>&1") != 0) {
    return Internal("pg_ctl " + args + " failed: " + FileTail(dir_ + "/server.log", 2000));
  }
  return Status::Ok();
}

Status PgServer::Stop() { return PgCtl("-m fast stop"); }
Status PgServer::Crash() { return PgCtl("-m immediate stop"); }
Status PgServer::Resume() { return PgCtl("-o '" + options_ + "' start"); }
Status PgServer::Promote() { return PgCtl("promote"); }

PgServer::~PgServer() {
  (void)RunAsPostgres(bin_ + "/pg_ctl -D " + dir_ + "/data -m immediate -w stop >/dev/null 2>&1");
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string PgServer::Url(const std::string& db) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

Result<std::string> PgServer::Query(const std::string& db, const std::string& sql) const {
  PGconn* conn = PQconnectdb(Url(db).c_str());
  std::unique_ptr<PGconn, decltype(&PQfinish)> guard(conn, &PQfinish);
  if (PQstatus(conn) != CONNECTION_OK) return Internal(PQerrorMessage(conn));
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn, sql.c_str()), &PQclear);
  ExecStatusType st = PQresultStatus(r.get());
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return Internal(sql + ": " + PQresultErrorMessage(r.get()));
  }
  if (st == PGRES_TUPLES_OK && PQntuples(r.get()) > 0)
    return std::string(PQgetvalue(r.get(), 0, 0));
  return std::string();
}

Result<std::string> PgServer::CreateDatabase(const std::string& name) {
  auto r = Query("postgres", "CREATE DATABASE \"" + name + "\"");
  if (!r.ok()) return r.status();
  return Url(name);
}

}  // namespace corral::testing
