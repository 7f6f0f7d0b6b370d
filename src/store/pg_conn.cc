#include "store/pg_conn.h"

#include <cstring>

namespace corral::store::pg {
namespace {

std::string Trimmed(const char* msg) {
  std::string s = msg ? msg : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string Field(const PGresult* r, int code) {
  const char* v = PQresultErrorField(r, code);
  return v ? v : "";
}

// libpq calls this for every notice the server sends (instead of printing it to stderr: the
// rest, such as "relation already exists, skipping" from an idempotent migration step, are
// not errors).
void ReceiveNotice(void* arg, const PGresult* notice) {
  auto* notices = static_cast<Notices*>(arg);
  if (!notices || !IsUnreplicatedCommitWarning(notice)) return;
  notices->unreplicated = true;
  notices->unreplicated_detail = Field(notice, PG_DIAG_MESSAGE_PRIMARY);
  if (std::string detail = Field(notice, PG_DIAG_MESSAGE_DETAIL); !detail.empty()) {
    notices->unreplicated_detail += " (" + detail + ")";
  }
}

}  // namespace

bool IsUnreplicatedCommitWarning(const PGresult* notice) {
  return Field(notice, PG_DIAG_SEVERITY_NONLOCALIZED) == "WARNING" &&
         Field(notice, PG_DIAG_SOURCE_FUNCTION) == "SyncRepWaitForLSN";
}

bool NamesSeveralHosts(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err) PQfreemem(err);
  if (!opts) return false;
  bool several = false;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    bool names_hosts =
        std::strcmp(o->keyword, "host") == 0 || std::strcmp(o->keyword, "hostaddr") == 0;
    if (names_hosts && o->val && std::strchr(o->val, ',')) several = true;
  }
  PQconninfoFree(opts);
  return several;
}

std::string Describe(PGconn* conn) {
  const char* host = PQhost(conn);
  const char* port = PQport(conn);
  const char* db = PQdb(conn);
  return std::string(host ? host : "?") + ":" + (port ? port : "?") + "/" + (db ? db : "?");
}

Result<Conn> Connect(const std::string& conninfo, Notices* notices) {
  Conn conn(PQconnectdb(conninfo.c_str()));
  if (!conn) return Unavailable("cannot connect to PostgreSQL: out of memory");
  PQsetNoticeReceiver(conn.get(), &ReceiveNotice, notices);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return Unavailable("cannot connect to PostgreSQL at " + Describe(conn.get()) + ": " +
                       Trimmed(PQerrorMessage(conn.get())));
  }
  return conn;
}

Result<Res> Exec(PGconn* conn, const char* sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  // Without parameters, PQexec: it also runs several statements (a migration step).
  Res r(params.empty() ? PQexec(conn, sql)
                       : PQexecParams(conn, sql, static_cast<int>(values.size()), nullptr,
                                      values.data(), nullptr, nullptr, /*resultFormat=text*/ 0));
  ExecStatusType status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
  std::string why = r ? Trimmed(PQresultErrorMessage(r.get())) : "";
  if (why.empty()) why = Trimmed(PQerrorMessage(conn));
  if (PQstatus(conn) != CONNECTION_OK) {
    return Unavailable("lost the connection to PostgreSQL at " + Describe(conn) + ": " + why);
  }
  return Internal("postgres: " + why);
}

std::string Value(const PGresult* r, int row, int col) {
  if (PQgetisnull(r, row, col)) return "";
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

}  // namespace corral::store::pg
