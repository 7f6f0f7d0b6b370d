// Notebooks through the head (docs/interactive.md): `corral notebook` asks for a ticket
// (IssueTicket: a random value good for one use within kTicketLifetime, for one job) and prints
// http(s)://HEAD/s/JOB/tree?ticket=TICKET, never the user's API token (a URL lands in shell
// history, browser history and proxies' logs); the head takes every /s/ connection from its HTTP
// server (net/tunnel.h), authorises the caller for the job as `corral exec` does (OpenExec:
// the job's owner, its queue's admins, admins; another user gets 403) and splices the
// connection to the job's agent, which relays it to the Jupyter server on its node's loopback.
// One request per connection (WebSockets stay open), so that the head checks every request.
//
// The ticket (or a token, ?token=, which older CLIs printed) in the URL is taken once: the
// ticket is spent at its first use, and the head answers 302 to the same URL without it and a
// session cookie (HttpOnly, SameSite=Strict, Path=/s/JOB/, Secure over TLS) that names an
// entry of this table, in memory, which holds the token; each later request is checked again
// with that token (a revoked token ends the session). A restarted head has no sessions: the
// user opens the printed URL again.
//
// Every /s/ request passes the API's own gates first (request_gates.h: the throttle of
// unauthenticated traffic, the rate limit per token, the audit of refusals), and each session
// opened is audited (who, job, node, address). A spliced connection keeps its place under the
// head's per-address connection cap until it closes, and is closed after `idle` without a byte
// either way (WebSockets get `idle_websocket`).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "api/request_gates.h"
#include "head/head.h"
#include "net/http.h"
#include "net/tunnel.h"

namespace corral::api {

class SessionProxy {
 public:
  // `agent_https`: agents serve https, trusted by `agent_trust` (null: DefaultClientTls()).
  // `gates` outlives the proxy.
  SessionProxy(head::Head* head, RequestGates* gates, bool agent_https,
               std::shared_ptr<const net::TlsClientContext> agent_trust,
               net::SpliceIdle idle = net::SpliceIdle{});

  void Take(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn);

  // A ticket that opens job `job`'s notebook once, as `bearer`, within kTicketLifetime. The
  // caller has authenticated `bearer`; opening checks it for the job as a token would be.
  std::string IssueTicket(const std::string& bearer, JobId job);

  size_t SessionCount();

  static constexpr std::chrono::seconds kTicketLifetime{120};

 private:
  struct Session {
    std::string bearer;
    JobId job = 0;
    std::chrono::steady_clock::time_point last;
  };
  struct Ticket {
    std::string bearer;
    JobId job = 0;
    std::chrono::steady_clock::time_point expires;
  };

  void Open(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn);
  void Forward(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn,
               const head::ExecTarget& target);
  std::string NewSession(const std::string& bearer, JobId job);
  // The bearer a request carries: its ?ticket='s (not spent here), its ?token=, its
  // Authorization header, or its cookie's.
  std::string BearerOf(const net::HttpRequest& req);
  // Spends ticket `ticket` for job `job`: its bearer, or "" (unknown, spent, expired, or
  // another job's).
  std::string SpendTicket(const std::string& ticket, JobId job);

  head::Head* const head_;
  RequestGates* const gates_;
  const net::SpliceIdle idle_;
  const bool agent_https_;
  const std::shared_ptr<const net::TlsClientContext> agent_trust_;
  std::mutex mu_;
  std::map<std::string, Session> sessions_;  // GUARDED_BY(mu_): by cookie value
  std::map<std::string, Ticket> tickets_;    // GUARDED_BY(mu_): by ticket value
};

}  // namespace corral::api
