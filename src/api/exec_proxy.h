// `corral exec` through the head (docs/interactive.md): the head authorises the caller for the
// job (OpenExec: its owner, its queue's admins, admins), opens the session on the job's node
// and then relays the session's requests to that node's agent, as it relays `corral logs`.
// Users reach only the head, over the API's own TLS and tokens; the head reaches the agent with
// a relay grant for the session's run on that node (core/relay_grant.h), fresh on each request,
// over TLS where the head serves it (each agent's endpoint has a certificate from the head's
// CA).
//
//   POST /v1/jobs/ID/exec   {"command":[..],"replica":R,"pty":b,"rows":n,"cols":n,"env":{}}
//        -> 201 {"session":"S","node":N,"job":ID}
//   POST /v1/exec/S/input?offset=N[&eof=1], GET /v1/exec/S/output?stream=..&offset=N&wait_ms=M,
//   POST /v1/exec/S/resize?rows=R&cols=C, POST /v1/exec/S/signal?signal=N, DELETE /v1/exec/S
//        -> as the agent answers them (agentnet/exec_server.h)
//
// A session is the caller's alone: each relayed request must carry the token that opened it,
// still valid, or come over the local socket from the Unix user that opened it there. Relaying
// touches nothing in the head's state machine: a keystroke costs the head one table lookup and one
// request to the agent. Sessions live in this table, in memory: a restarted head has none (the
// agent ends each one when nothing asks for it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "api/command_http.h"
#include "head/head.h"
#include "net/async_http_client.h"
#include "net/http.h"

namespace corral::api {

class ExecProxy {
 public:
  // `agent_tls`: agents serve https (the head serves TLS).
  ExecProxy(head::Head* head, std::shared_ptr<net::AsyncHttpClient> client, bool agent_tls);

  // `who`: the caller as the API identified it (ApiService::Who).
  void Open(const net::HttpRequest& req, const PathArgs& args, head::Presented who,
            net::Responder respond);
  // /v1/exec/{session}[/{what}]
  void Relay(const net::HttpRequest& req, const PathArgs& args, net::Responder respond);
  size_t SessionCount();

 private:
  struct Session {
    std::string node;
    std::string agent_url;      // "https://host:port"
    std::string agent_session;  // the agent's id for it
    std::string run_id;         // what each request's grant names
    std::string opener;         // PrincipalOf the request that opened it
    int64_t last_ms = 0;        // steady clock: the last request relayed
  };
  // Whose a session is: the SHA-256 of a token, or the local socket's Unix user.
  static std::string PrincipalOf(const net::HttpRequest& req);
  void Forget(const std::string& id);
  void ExpireIdle(int64_t now_ms);

  head::Head* head_;
  std::shared_ptr<net::AsyncHttpClient> client_;
  const bool agent_tls_;
  std::mutex mu_;
  std::map<std::string, Session> sessions_;
};

}  // namespace corral::api
