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

int FreePort() {
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

std::string Tail(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

int RunAsPostgres(const std::string& cmd) {
  return std::system(("runuser -u postgres -- " + cmd).c_str());
}

}  // namespace

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

Result<std::unique_ptr<PgServer>> PgServer::Start() {
  if (std::string why = Unavailable(); !why.empty()) return FailedPrecondition(why);
  std::string bin = FindBin();
  std::string tmpl = (fs::temp_directory_path() / "corral-pg-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return Internal("mkdtemp failed");
  std::string dir = tmpl;
  passwd* pw = getpwnam("postgres");
  if (chown(dir.c_str(), pw->pw_uid, pw->pw_gid) != 0) return Internal("chown " + dir);
  if (RunAsPostgres(bin + "/initdb -D " + dir + "/data -U postgres -A trust -E UTF8 --no-sync >" +
                    dir + "/initdb.log 2>&1") != 0) {
    std::string log = Tail(dir + "/initdb.log");
    fs::remove_all(dir);
    return Internal("initdb failed: " + log);
  }
  // A port that was free a moment ago can be taken before postgres binds it: try a few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    int port = FreePort();
    std::string opts = "-p " + std::to_string(port) + " -k " + dir +
                       " -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
                       " -c full_page_writes=off";
    if (RunAsPostgres(bin + "/pg_ctl -D " + dir + "/data -l " + dir + "/server.log -w -t 30 -o '" +
                      opts + "' start >/dev/null 2>&1") == 0) {
      return std::unique_ptr<PgServer>(new PgServer(dir, bin, port));
    }
  }
  std::string log = Tail(dir + "/server.log");
  fs::remove_all(dir);
  return Internal("postgres did not start: " + log);
}

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
