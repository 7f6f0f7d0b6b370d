// The REST handlers of docs/api.md: authenticate, validate, turn a request into a head
// command, and the head's answer into JSON. Owned by the head process; Handle() is called on
// the HTTP server's I/O threads and never blocks (the head answers through callbacks): a local
// caller's request, whose user the user database names (NSS, which may ask a directory), is
// routed on a few threads of its own (`local_callers_`).
#pragma once

#include <functional>
#include <memory>

#include "api/command_http.h"
#include "api/exec_proxy.h"
#include "api/request_gates.h"
#include "api/service_proxy.h"
#include "api/session_proxy.h"
#include "api/unix_identity.h"
#include "head/head.h"
#include "net/async_http_client.h"
#include "net/http.h"
#include "net/worker_pool.h"

namespace corral::api {

// A head that serves TLS issues each agent's log endpoint a certificate at registration and
// talks to those endpoints over https, trusting only its own CA.
struct AgentTls {
  // Signs the registering agent's CSR for the address it registers; kInvalidArgument for a bad
  // CSR. Set: registration requires a CSR.
  std::function<Result<std::string>(const RegisterRequest&)> issue_log_cert;
  std::shared_ptr<const net::TlsClientContext> log_trust;  // the head's CA
};

class ApiService {
 public:
  // `requests_per_second` per token (or per peer address without one), bursts up to twice
  // that; <= 0: no limit. `agent_tls` unset: agents' log endpoints are plain HTTP.
  // `unauthenticated_per_second`: requests per client address whose token has not worked here
  // (AuthThrottle); <= 0: no limit. `relay_idle`: how long a notebook's relayed connection may
  // stay silent.
  explicit ApiService(head::Head* head, double requests_per_second = 0, AgentTls agent_tls = {},
                      double unauthenticated_per_second = 0,
                      net::SpliceIdle relay_idle = net::SpliceIdle{});
  void Handle(net::HttpRequest req, net::Responder respond);
  // The roles of Unix groups for callers over the head's local socket (unix_identity.h).
  // Before the first request.
  void SetUnixGroupRoles(UnixGroupRoles roles) { unix_roles_ = std::move(roles); }
  // Who `req` says it comes from, for Head::Run: its bearer token, or, on the local socket,
  // the Unix user the kernel names (a token sent there is refused: one connection, one
  // identity), or, forwarded by a node (api/forwarded.h), the Unix user that node's kernel
  // named, vouched for by the node's credential (the bearer). Any thread; for a peer it asks
  // the user database (NSS), which Handle does on `local_callers_`.
  head::Presented Who(const net::HttpRequest& req) const;
  // Starts the readiness and liveness probes of services' replicas (service_proxy.h): the head
  // process, once it leads.
  void StartServiceProbes() { services_->Start(); }
  // A /s/ connection (a notebook's traffic, session_proxy.h).
  void TakeSession(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn);

 private:
  // A row of the route table: the method and path pattern it answers, and how.
  struct Endpoint {
    std::string method;
    const char* pattern;
    std::function<void(ApiService&, const net::HttpRequest&, const PathArgs&, net::Responder)>
        handle;
    std::vector<std::string> parts;  // of the pattern, split once
    std::string label;               // for the request metrics: "GET /v1/jobs/{id}"
  };
  // A row that decodes command C from the request, runs it on the head, and answers with
  // `encode` of its answer (which may take the command too, as a page of jobs does).
  template <typename C, typename Encode>
  static Endpoint Serve(const char* method, const char* pattern, Decoder<C> decode, Encode encode,
                        int ok_status = 200);
  static const std::vector<Endpoint>& Routes();
  static const Endpoint* FindRoute(const std::string& method, const std::vector<std::string>& parts,
                                   PathArgs* args);
  static std::string RouteLabel(const std::string& method, const std::vector<std::string>& parts,
                                const Endpoint* found);

  void Route(net::HttpRequest req, const std::vector<std::string>& parts, const Endpoint* found,
             const PathArgs& args, net::Responder respond);
  // The routes that are more than one command: a job's log (the job, its node, the agent's
  // answer), the event stream (long polls or server-sent events), an agent's registration
  // (with its log endpoint's certificate).
  void HandleLogs(const net::HttpRequest& req, const PathArgs& args, net::Responder respond);
  void RelayLogRead(const head::LogSource& at, const LogRead& read, const std::string& grant,
                    net::Responder respond);
  void HandleEvents(const net::HttpRequest& req, const PathArgs& args, net::Responder respond);
  void HandleRegister(const net::HttpRequest& req, const PathArgs& args, net::Responder respond);
  // `corral exec` (exec_proxy.h).
  void HandleExecOpen(const net::HttpRequest& req, const PathArgs& args, net::Responder respond);
  void HandleExecRelay(const net::HttpRequest& req, const PathArgs& args, net::Responder respond);
  // `corral notebook`'s one-time URL (session_proxy.h).
  void HandleNotebookTicket(const net::HttpRequest& req, const PathArgs& args,
                            net::Responder respond);
  // GET /v1/services[/NAME]: the core's view with the shell's observations (service_http.h).
  void HandleServices(const net::HttpRequest& req, const PathArgs& args, net::Responder respond);
  // `corral whoami`: the caller as the head takes it, and how it was identified.
  void HandleWhoAmI(const net::HttpRequest& req, const PathArgs& args, net::Responder respond);

  template <typename T, typename F>
  head::Head::Callback<T> Answer(net::Responder respond, F to_json, int ok_status = 200);

  head::Head* head_;
  UnixGroupRoles unix_roles_;
  RequestGates gates_;  // before sessions_, which uses it
  AgentTls agent_tls_;
  std::shared_ptr<net::AsyncHttpClient> proxy_;  // the log proxy's connections to agents
  std::unique_ptr<ExecProxy> exec_;              // exec sessions relayed to agents
  std::unique_ptr<SessionProxy> sessions_;       // notebooks relayed to agents
  std::unique_ptr<ServiceProxy> services_;       // /v/NAME/ to services' replicas
  // Last: its threads, which route local and forwarded callers' requests (and so look up their
  // Unix users), are joined before the members they use go.
  std::unique_ptr<net::WorkerPool> local_callers_;
};

// Every answer of the API carries the revision of the head's state it reflects.
constexpr char kRevisionHeader[] = "X-Corral-Revision";

// Maps a Status to its HTTP status and the JSON error body of docs/api.md.
net::HttpResponse ErrorResponse(const Status& st);
// The same for a request the head relays to an agent (exec, logs) that got no answer from it
// (refused, reset, timed out, malformed): 502, the head acting as a gateway. Not 503, which
// clients take for a head without a leader and try again on every head for a failover window:
// a dead agent's relay would then fail only after that window.
net::HttpResponse RelayErrorResponse(const Status& st);

}  // namespace corral::api
