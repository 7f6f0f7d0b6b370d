#include "api/session_proxy.h"

#include <sys/random.h>

#include "api/api_service.h"
#include "core/secrets.h"
#include "core/time.h"
#include "net/url.h"

namespace corral::api {
namespace {

constexpr const char* kCookie = "corral_session";
constexpr auto kForgetAfter = std::chrono::hours(12);

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The request's target without its `token` and `ticket` parameters (the rest of the query as
// it came).
std::string TargetWithoutToken(const std::string& target) {
  auto q = target.find('?');
  if (q == std::string::npos) return target;
  std::string out = target.substr(0, q);
  std::string kept;
  size_t at = q + 1;
  while (at <= target.size()) {
    size_t end = target.find('&', at);
    if (end == std::string::npos) end = target.size();
    std::string part = target.substr(at, end - at);
    const bool secret = part == "token" || part.rfind("token=", 0) == 0 || part == "ticket" ||
                        part.rfind("ticket=", 0) == 0;
    if (!part.empty() && !secret) {
      kept += (kept.empty() ? "" : "&") + part;
    }
    at = end + 1;
  }
  return kept.empty() ? out : out + "?" + kept;
}

// A taken connection whose answers are booked as the API's are (RequestGates::Answered).
class GatedConnection final : public net::TakenConnection {
 public:
  GatedConnection(std::shared_ptr<net::TakenConnection> inner, RequestGates* gates,
                  std::string bearer, std::string remote, std::string request)
      : inner_(std::move(inner)),
        gates_(gates),
        bearer_(std::move(bearer)),
        remote_(std::move(remote)),
        request_(std::move(request)) {}
  bool Encrypted() const override { return inner_->Encrypted(); }
  void Answer(net::HttpResponse r) override {
    gates_->Answered(bearer_, remote_, request_, r);
    inner_->Answer(std::move(r));
  }
  void Splice(std::string base_url, std::shared_ptr<const net::TlsClientContext> tls,
              std::string first, std::chrono::milliseconds idle) override {
    inner_->Splice(std::move(base_url), std::move(tls), std::move(first), idle);
  }

 private:
  const std::shared_ptr<net::TakenConnection> inner_;
  RequestGates* const gates_;
  const std::string bearer_, remote_, request_;
};

net::HttpResponse Redirect(const std::string& location) {
  net::HttpResponse r;
  r.status = 302;
  r.content_type = "text/plain";
  r.headers["Location"] = location;
  r.body = "see " + location + "\n";
  return r;
}

}  // namespace

SessionProxy::SessionProxy(head::Head* head, RequestGates* gates, bool agent_https,
                           std::shared_ptr<const net::TlsClientContext> agent_trust,
                           net::SpliceIdle idle)
    : head_(head),
      gates_(gates),
      idle_(idle),
      agent_https_(agent_https),
      agent_trust_(std::move(agent_trust)) {}

std::string SessionProxy::BearerOf(const net::HttpRequest& req) {
  if (auto t = req.query.find("ticket"); t != req.query.end()) {
    std::lock_guard lock(mu_);
    auto it = tickets_.find(t->second);
    return it == tickets_.end() ? "" : it->second.bearer;
  }
  if (auto t = req.query.find("token"); t != req.query.end()) return t->second;
  if (std::string b = req.BearerToken(); !b.empty()) return b;
  const std::string cookie = net::CookieValue(req.Header("cookie"), kCookie);
  if (cookie.empty()) return "";
  std::lock_guard lock(mu_);
  auto it = sessions_.find(cookie);
  return it == sessions_.end() ? "" : it->second.bearer;
}

std::string SessionProxy::IssueTicket(const std::string& bearer, JobId job) {
  const auto now = std::chrono::steady_clock::now();
  std::string ticket = RandomHex(24);
  std::lock_guard lock(mu_);
  std::erase_if(tickets_, [&](const auto& kv) { return kv.second.expires <= now; });
  tickets_[ticket] = Ticket{bearer, job, now + kTicketLifetime};
  return ticket;
}

std::string SessionProxy::SpendTicket(const std::string& ticket, JobId job) {
  std::lock_guard lock(mu_);
  auto it = tickets_.find(ticket);
  if (it == tickets_.end()) return "";
  Ticket t = std::move(it->second);
  tickets_.erase(it);  // spent whatever comes of it: a URL opens once
  return t.job == job && std::chrono::steady_clock::now() < t.expires ? t.bearer : "";
}

size_t SessionProxy::SessionCount() {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

std::string SessionProxy::NewSession(const std::string& bearer, JobId job) {
  const auto now = std::chrono::steady_clock::now();
  std::string id = RandomHex(24);
  std::lock_guard lock(mu_);
  std::erase_if(sessions_, [&](const auto& kv) { return now - kv.second.last > kForgetAfter; });
  sessions_[id] = Session{bearer, job, now};
  return id;
}

void SessionProxy::Take(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn) {
  // The API's gates before any work: a flood of requests without a working token, or one
  // token's past its rate, is answered 429 here and costs the head nothing.
  if (req.peer) {
    // A browser's traffic, which never comes over the local socket: its tokens and tickets
    // belong to the TCP address, where the socket's one identity (the Unix user) cannot mix.
    return conn->Answer(net::JsonError(400, "invalid_argument",
                                       "notebooks are served on the head's TCP address, not on "
                                       "the local socket"));
  }
  std::string bearer = BearerOf(req);
  if (auto refused = gates_->Admit(bearer, req.remote)) return conn->Answer(std::move(*refused));
  conn = std::make_shared<GatedConnection>(std::move(conn), gates_, bearer, req.remote,
                                           AuditedRequest(req.method, req.path));
  Open(std::move(req), std::move(conn));
}

void SessionProxy::Open(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn) {
  // /s/JOB/...
  const std::string& path = req.path;
  size_t slash = path.find('/', 3);
  const std::string id_text =
      path.substr(3, slash == std::string::npos ? std::string::npos : slash - 3);
  JobId job = 0;
  if (id_text.empty() || id_text.size() > 18 ||
      id_text.find_first_not_of("0123456789") != std::string::npos ||
      (job = std::stoull(id_text)) == 0) {
    return conn->Answer(
        net::JsonError(404, "not_found", "no session at " + path + ": want /s/JOB/ (a job id)"));
  }
  const std::string base = "/s/" + id_text + "/";
  if (slash == std::string::npos) {
    auto q = req.target.find('?');
    return conn->Answer(Redirect(base + (q == std::string::npos ? "" : req.target.substr(q))));
  }
  std::string bearer;
  const bool from_ticket = req.query.count("ticket") > 0;
  const bool from_query = from_ticket || req.query.count("token") > 0;
  // The dashboard's "open": its token as a header (never in a URL), answered with the cookie.
  const bool from_header =
      !from_query && req.method == "POST" && req.path == base && !req.BearerToken().empty();
  if (from_ticket) {
    bearer = SpendTicket(req.query.at("ticket"), job);
  } else if (from_query) {
    bearer = req.query.at("token");
  } else if (from_header) {
    bearer = req.BearerToken();
  } else {
    const std::string cookie = net::CookieValue(req.Header("cookie"), kCookie);
    std::lock_guard lock(mu_);
    if (auto it = sessions_.find(cookie);
        !cookie.empty() && it != sessions_.end() && it->second.job == job) {
      it->second.last = std::chrono::steady_clock::now();
      bearer = it->second.bearer;
    }
  }
  if (bearer.empty()) {
    return conn->Answer(net::JsonError(
        401, "unauthenticated",
        "no session for job " + id_text +
            (from_ticket ? ": the URL's ticket is spent, expired or another job's; run `corral "
                           "notebook --url " +
                               id_text + "` for a new one"
                         : ": open the URL `corral notebook` printed (its ticket opens it once)")));
  }
  head_->Run(bearer, head::OpenExec{job, 0},
             [this, req = std::move(req), conn, bearer, job, from_query, from_header,
              base](Result<head::ExecTarget> target) mutable {
               if (!target.ok()) return conn->Answer(ErrorResponse(target.status()));
               if (!target->notebook) {
                 return conn->Answer(net::JsonError(
                     404, "not_found",
                     "job " + std::to_string(job) + " is not a notebook (corral notebook)"));
               }
               if (from_query || from_header) {
                 net::HttpResponse r;
                 if (from_query) {
                   r = Redirect(TargetWithoutToken(req.target));
                 } else {
                   r.status = 204;
                   r.content_type.clear();
                 }
                 r.headers["Set-Cookie"] = std::string(kCookie) + "=" + NewSession(bearer, job) +
                                           "; Path=" + base + "; HttpOnly; SameSite=Strict" +
                                           (conn->Encrypted() ? "; Secure" : "");
                 head_->Audit(Json{{"at", SystemClock().Now()},
                                   {"who", target->caller},
                                   {"what", "notebook_opened"},
                                   {"job", job},
                                   {"owner", target->owner},
                                   {"node", target->node},
                                   {"from", req.remote}});
                 return conn->Answer(std::move(r));
               }
               Forward(std::move(req), conn, *target);
             });
}

void SessionProxy::Forward(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn,
                           const head::ExecTarget& target) {
  std::map<std::string, std::string> headers = std::move(req.headers);
  const bool upgrade = Lower(headers["upgrade"]).find("websocket") != std::string::npos;
  if (!upgrade) headers.erase("upgrade");
  for (const char* h : {"authorization", "keep-alive", "proxy-connection", "x-corral-run"}) {
    headers.erase(h);
  }
  std::string cookie = net::CookieWithout(headers["cookie"], kCookie);
  if (cookie.empty()) {
    headers.erase("cookie");
  } else {
    headers["cookie"] = cookie;
  }
  // One request per connection: the next one comes through the head again, and is checked.
  if (!upgrade) headers["connection"] = "close";
  // A grant for this run on this node alone: the agent takes nothing else.
  auto grant = head_->RelayGrantFor(target.node, target.run_id);
  if (!grant.ok()) return conn->Answer(ErrorResponse(grant.status()));
  headers["authorization"] = "Bearer " + *grant;
  headers["x-corral-run"] = target.run_id;
  conn->Splice((agent_https_ ? "https://" : "http://") + target.address, agent_trust_,
               net::SerializeRequest(req.method, req.target, headers, req.body),
               idle_.For(upgrade));
}

}  // namespace corral::api
