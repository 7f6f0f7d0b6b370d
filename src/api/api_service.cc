#include "api/api_service.h"

#include <algorithm>
#include <chrono>

#include "api/forwarded.h"
#include "api/service_http.h"
#include "core/codec.h"
#include "core/spec.h"
#include "core/version.h"
#include "net/http_client.h"
#include "net/url.h"
#include "web/web_handler.h"

namespace corral::api {
namespace {

using net::HttpRequest;
using net::HttpResponse;
using net::Responder;

// Threads that route requests of local callers (the head's socket, or forwarded by a node's
// agent), whose user lookups may block on a directory, and how many such requests may wait.
constexpr int kLocalCallerThreads = 4;
constexpr size_t kMaxLocalCallersWaiting = 1024;
// The latest changes about a service that GET /v1/services/NAME lists.
constexpr size_t kServiceEventsShown = 20;

// Where the audit log says a request came from: its peer, and for one a node forwarded, the
// Unix user the node named too.
std::string AuditedFrom(const HttpRequest& req) {
  if (req.peer && req.peer->via_node) {
    return "uid " + std::to_string(req.peer->uid) + " via node at " + req.remote;
  }
  return req.remote;
}

HttpResponse JsonResponse(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return r;
}

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return 200;
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kUnauthenticated:
      return 401;
    case ErrorCode::kPermissionDenied:
      return 403;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kFailedPrecondition:
      return 409;
    case ErrorCode::kResourceExhausted:
      return 429;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

// Whether `parts` match `pattern` ("/v1/jobs/{id}/cancel"; a last part "{name...}" takes the
// rest of the path, a queue's "org/team"); the variable parts go to `args`.
bool Matches(const std::vector<std::string>& want, const std::vector<std::string>& parts,
             PathArgs* args) {
  args->clear();
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string& w = want[i];
    bool variable = w.size() > 2 && w.front() == '{' && w.back() == '}';
    if (variable && w.ends_with("...}") && i + 1 == want.size()) {
      if (i >= parts.size()) return false;
      std::string rest;
      for (size_t k = i; k < parts.size(); ++k) rest += (k > i ? "/" : "") + parts[k];
      args->push_back(std::move(rest));
      return true;
    }
    if (i >= parts.size()) return false;
    if (variable) {
      args->push_back(parts[i]);
    } else if (w != parts[i]) {
      return false;
    }
  }
  return want.size() == parts.size();
}

}  // namespace

// Adapts a head callback to an HTTP answer that says which revision it reflects.
template <typename T, typename F>
head::Head::Callback<T> ApiService::Answer(Responder respond, F to_json, int ok_status) {
  return [head = head_, respond = std::move(respond), to_json, ok_status](Result<T> r) {
    HttpResponse out = r.ok() ? HttpResponse{.status = ok_status} : ErrorResponse(r.status());
    // The value is the head's answer, a copy: it is encoded on the connection's I/O thread,
    // not on the head's state machine, which answers thousands of agents' syncs at a time.
    if (r.ok()) {
      out.render = [to_json, value = std::move(*r)] {
        return to_json(value).dump(-1, ' ', false, Json::error_handler_t::replace);
      };
    }
    out.headers[kRevisionHeader] = std::to_string(head->ReplyRevision());
    respond(std::move(out));
  };
}

HttpResponse ErrorResponse(const Status& st) {
  HttpResponse r = net::JsonError(HttpStatusFor(st.code()), ErrorCodeName(st.code()), st.message());
  // Every limit refills within a second: a well-behaved client waits that long and retries.
  if (r.status == 429) r.headers["Retry-After"] = "1";
  return r;
}

HttpResponse RelayErrorResponse(const Status& st) {
  HttpResponse r = ErrorResponse(st);
  r.status = 502;
  return r;
}

template <typename C, typename Encode>
ApiService::Endpoint ApiService::Serve(const char* method, const char* pattern, Decoder<C> decode,
                                       Encode encode, int ok_status) {
  return {method, pattern,
          [decode, encode, ok_status](ApiService& api, const HttpRequest& req, const PathArgs& args,
                                      Responder respond) {
            auto command = decode(req, args);
            if (!command.ok()) return respond(ErrorResponse(command.status()));
            using Answer = typename C::Answer;
            std::function<Json(const Answer&)> to_json;
            if constexpr (std::is_invocable_v<Encode, const C&, const Answer&>) {
              to_json = [encode, c = *command](const Answer& a) { return encode(c, a); };
            } else {
              to_json = encode;
            }
            api.head_->Run(api.Who(req), std::move(*command),
                           api.Answer<Answer>(std::move(respond), to_json, ok_status));
          }};
}

// Every route of docs/api.md under /v1. A pattern's {name} parts are the PathArgs.
// Long: the route table, one line per route; a new endpoint adds one line here.
const std::vector<ApiService::Endpoint>& ApiService::Routes() {
  using namespace head;
  auto custom = [](const char* method, const char* pattern,
                   void (ApiService::*handle)(const HttpRequest&, const PathArgs&, Responder)) {
    return Endpoint{method, pattern,
                    [handle](ApiService& api, const HttpRequest& req, const PathArgs& args,
                             Responder respond) { (api.*handle)(req, args, std::move(respond)); }};
  };
  static const std::vector<Endpoint> routes = [&] {
    std::vector<Endpoint> table = {
        Serve<SubmitJob>("POST", "/v1/jobs", DecodeSubmitJob, JobAnswer, 201),
        Serve<ListJobs>("GET", "/v1/jobs", DecodeListJobs, JobsPageAnswer),
        Serve<GetJob>("GET", "/v1/jobs/{id}", DecodeGetJob, JobAnswer),
        Serve<CancelJob>("POST", "/v1/jobs/{id}/cancel", DecodeCancelJob, JobAnswer),
        Serve<SignalJob>("POST", "/v1/jobs/{id}/signal", DecodeSignalJob, JobAnswer),
        Serve<RequeueJob>("POST", "/v1/jobs/{id}/requeue", DecodeRequeueJob, JobAnswer),
        Serve<HoldJob>("POST", "/v1/jobs/{id}/hold", DecodeHoldJob, JobAnswer),
        Serve<HoldJob>("POST", "/v1/jobs/{id}/release", DecodeReleaseJob, JobAnswer),
        Serve<UpdateJob>("POST", "/v1/jobs/{id}/update", DecodeUpdateJob, JobAnswer),
        Serve<ReportCheckpoint>("POST", "/v1/jobs/{id}/checkpoint", DecodeReportCheckpoint,
                                JobAnswer),
        custom("GET", "/v1/jobs/{id}/logs", &ApiService::HandleLogs),
        Serve<StartStep>("POST", "/v1/jobs/{id}/steps", DecodeStartStep, StepAnswer, 201),
        Serve<GetStep>("GET", "/v1/jobs/{id}/steps/{step}", DecodeGetStep, StepAnswer),
        custom("POST", "/v1/jobs/{id}/exec", &ApiService::HandleExecOpen),
        custom("POST", "/v1/jobs/{id}/notebook-ticket", &ApiService::HandleNotebookTicket),
        Serve<TouchSession>("POST", "/v1/jobs/{id}/touch", DecodeTouchSession, SessionAnswer),
        custom("GET", "/v1/exec/{session}/{what}", &ApiService::HandleExecRelay),
        custom("POST", "/v1/exec/{session}/{what}", &ApiService::HandleExecRelay),
        custom("DELETE", "/v1/exec/{session}", &ApiService::HandleExecRelay),
        Serve<GetUsage>("GET", "/v1/usage", DecodeGetUsage, UsageAnswer),
        Serve<GetHistory>("GET", "/v1/history", DecodeGetHistory, HistoryAnswer),
        Serve<GetClusterSeries>("GET", "/v1/cluster/series", DecodeGetClusterSeries,
                                ClusterSeriesAnswer),
        Serve<ListNodes>("GET", "/v1/nodes", NoFields<ListNodes>, NodesAnswer),
        Serve<GetNode>("GET", "/v1/nodes/{name}", DecodeGetNode, NodeRecordAnswer),
        Serve<RemoveNode>("DELETE", "/v1/nodes/{name}", DecodeRemoveNode, NodeRecordAnswer),
        Serve<SetDrain>("POST", "/v1/nodes/{name}/drain", DecodeDrain, NodeAnswer),
        Serve<SetDrain>("POST", "/v1/nodes/{name}/undrain", DecodeUndrain, NodeAnswer),
        Serve<SetGpuDrain>("POST", "/v1/nodes/{name}/gpus/{gpu}/drain", DecodeGpuDrainOn,
                           NodeAnswer),
        Serve<SetGpuDrain>("POST", "/v1/nodes/{name}/gpus/{gpu}/undrain", DecodeGpuDrainOff,
                           NodeAnswer),
        Serve<ListQueues>("GET", "/v1/queues", NoFields<ListQueues>, QueuesAnswer),
        Serve<SetQueue>("PUT", "/v1/queues/{queue...}", DecodeSetQueue, QueueAnswer),
        Serve<ListQos>("GET", "/v1/qos", NoFields<ListQos>, QosListAnswer),
        Serve<SetQos>("PUT", "/v1/qos/{name}", DecodeSetQos, QosAnswer),
        Serve<DeleteQos>("DELETE", "/v1/qos/{name}", DecodeDeleteQos, QosAnswer),
        Serve<ListReservations>("GET", "/v1/reservations", NoFields<ListReservations>,
                                ReservationListAnswer),
        Serve<CreateReservation>("POST", "/v1/reservations", DecodeCreateReservation,
                                 ReservationAnswer),
        Serve<DeleteReservation>("DELETE", "/v1/reservations/{name}", DecodeDeleteReservation,
                                 ReservationAnswer),
        Serve<ListDatasets>("GET", "/v1/datasets", NoFields<ListDatasets>, DatasetListAnswer),
        Serve<GetDataset>("GET", "/v1/datasets/{name}", DecodeGetDataset, DatasetAnswer),
        Serve<AddDataset>("POST", "/v1/datasets", DecodeAddDataset, DatasetAnswer, 201),
        Serve<RemoveDataset>("DELETE", "/v1/datasets/{name}", DecodeRemoveDataset, DatasetAnswer),
        Serve<ListSourceBudgets>("GET", "/v1/dataset-limits", NoFields<ListSourceBudgets>,
                                 SourceBudgetListAnswer),
        Serve<SetSourceLimit>("PUT", "/v1/dataset-limits", DecodeSetSourceLimit,
                              SourceBudgetAnswer),
        custom("GET", "/v1/services", &ApiService::HandleServices),
        Serve<CreateService>("POST", "/v1/services", DecodeCreateService, ServiceAnswer, 201),
        custom("GET", "/v1/services/{name}", &ApiService::HandleServices),
        Serve<ScaleService>("POST", "/v1/services/{name}/scale", DecodeScaleService, ServiceAnswer),
        Serve<UpdateService>("POST", "/v1/services/{name}/update", DecodeUpdateService,
                             ServiceAnswer),
        Serve<RemoveService>("DELETE", "/v1/services/{name}", DecodeRemoveService, ServiceAnswer),
        Serve<ListTokens>("GET", "/v1/tokens", NoFields<ListTokens>, TokensAnswer),
        custom("GET", "/v1/whoami", &ApiService::HandleWhoAmI),
        Serve<CreateToken>("POST", "/v1/tokens", DecodeCreateToken, NewTokenAnswer, 201),
        Serve<RevokeToken>("DELETE", "/v1/tokens/{id}", DecodeRevokeToken, RevokedAnswer),
        custom("GET", "/v1/events", &ApiService::HandleEvents),
        Serve<BackupStore>("POST", "/v1/admin/backup", DecodeBackupStore, BackupAnswer),
        custom("POST", "/v1/agent/register", &ApiService::HandleRegister),
        Serve<SyncAgent>("POST", "/v1/agent/sync", DecodeSyncAgent, SyncAnswer),
    };
    for (Endpoint& e : table) {
      e.parts = net::SplitPath(e.pattern);
      e.label = e.method + " " + e.pattern;
      if (auto dots = e.label.find("...}"); dots != std::string::npos) e.label.erase(dots, 3);
    }
    return table;
  }();
  return routes;
}

const ApiService::Endpoint* ApiService::FindRoute(const std::string& method,
                                                  const std::vector<std::string>& parts,
                                                  PathArgs* args) {
  for (const Endpoint& r : Routes()) {
    if (r.method == method && Matches(r.parts, parts, args)) return &r;
  }
  return nullptr;
}

// The route of a request with its variable parts named, for a bounded metrics label.
std::string ApiService::RouteLabel(const std::string& method, const std::vector<std::string>& parts,
                                   const Endpoint* found) {
  if (parts.size() == 1 && (parts[0] == "metrics" || parts[0] == "healthz")) {
    return method + " /" + parts[0];
  }
  if (parts.size() == 2 && parts[0] == "v1" && parts[1] == "version")
    return method + " /v1/version";
  if (parts.empty() || parts[0] == "ui") return method + " /ui";  // the dashboard's files
  return found ? found->label : method + " other";
}

ApiService::ApiService(head::Head* head, double requests_per_second, AgentTls agent_tls,
                       double unauthenticated_per_second, net::SpliceIdle relay_idle)
    : head_(head),
      gates_(head, requests_per_second, unauthenticated_per_second),
      agent_tls_(std::move(agent_tls)),
      proxy_(std::make_shared<net::AsyncHttpClient>(agent_tls_.log_trust)),
      exec_(
          std::make_unique<ExecProxy>(head, proxy_, static_cast<bool>(agent_tls_.issue_log_cert))),
      sessions_(std::make_unique<SessionProxy>(head, &gates_,
                                               static_cast<bool>(agent_tls_.issue_log_cert),
                                               agent_tls_.log_trust, relay_idle)),
      services_(std::make_unique<ServiceProxy>(head)),
      local_callers_(
          std::make_unique<net::WorkerPool>(kLocalCallerThreads, kMaxLocalCallersWaiting)) {}

void ApiService::TakeSession(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn) {
  sessions_->Take(std::move(req), std::move(conn));
}

void ApiService::HandleExecOpen(const HttpRequest& req, const PathArgs& args, Responder respond) {
  exec_->Open(req, args, Who(req), std::move(respond));
}

// A ticket that opens the job's notebook once (session_proxy.h), for whoever may open it now.
void ApiService::HandleNotebookTicket(const HttpRequest& req, const PathArgs& args,
                                      Responder respond) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return respond(ErrorResponse(id.status()));
  if (req.peer) {
    return respond(ErrorResponse(FailedPrecondition(
        "a notebook's page is opened in a browser, which the local socket does not serve: ask "
        "an admin for a token (corral token create) and use the head's TCP address")));
  }
  const std::string bearer = req.BearerToken();
  head_->Run(
      bearer, head::OpenExec{*id, 0},
      [this, bearer, job = *id, respond](Result<head::ExecTarget> target) {
        if (!target.ok()) return respond(ErrorResponse(target.status()));
        if (!target->notebook) {
          return respond(ErrorResponse(
              NotFound("job " + std::to_string(job) + " is not a notebook (corral notebook)")));
        }
        const std::string ticket = sessions_->IssueTicket(bearer, job);
        respond(HttpResponse{
            .status = 201,
            .body = Json{{"ticket", ticket},
                         {"path", "/s/" + std::to_string(job) + "/tree?ticket=" + ticket},
                         {"expires_in_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                               SessionProxy::kTicketLifetime)
                                               .count()}}
                        .dump()});
      });
}

head::Presented ApiService::Who(const HttpRequest& req) const {
  if (!req.peer) return head::Presented(req.BearerToken());
  if (req.peer->via_node) {
    // The bearer is the forwarding node's credential, which the head checks before it takes
    // the user the node's kernel named.
    auto user = LookUpUnixUser(*req.peer);
    if (!user.ok()) return head::Presented::Forwarded(req.BearerToken(), user.status());
    return head::Presented::Forwarded(req.BearerToken(), CallerOfUnixUser(*user, unix_roles_));
  }
  if (!req.Header("authorization").empty()) {
    // One connection, one identity: a token here would be a second claim of who is calling.
    return head::Presented::Local(InvalidArgument(
        "header 'Authorization': the local socket takes no token; the caller is its Unix user "
        "(uid " +
        std::to_string(req.peer->uid) + "). Send tokens to the head's TCP address instead"));
  }
  auto user = LookUpUnixUser(*req.peer);
  if (!user.ok()) return head::Presented::Local(user.status());
  return head::Presented::Local(CallerOfUnixUser(*user, unix_roles_));
}

// The core's view of the services (one, or those the caller may call), then the shell's: their
// recent history from the changes the head keeps, and their traffic through this head's proxy.
void ApiService::HandleServices(const HttpRequest& req, const PathArgs& args, Responder respond) {
  const head::Presented who = Who(req);
  auto observe = [this, who, respond](std::vector<head::ServiceView> views, bool one) {
    head::GetServiceHistory query{{}, one ? kServiceEventsShown : 0};
    for (const head::ServiceView& v : views) query.names.insert(v.service.spec.name);
    auto to_json = [views = std::move(views), one, traffic = services_->Traffic()](
                       const std::map<std::string, head::ServiceHistory>& history) {
      const ServiceObserved seen{history, traffic};
      return one ? ServiceViewAnswer(views.front(), seen) : ServiceListAnswer(views, seen);
    };
    head_->Run(who, std::move(query),
               Answer<std::map<std::string, head::ServiceHistory>>(respond, std::move(to_json)));
  };
  if (args.empty()) {
    return head_->Run(who, head::ListServices{},
                      [respond, observe](Result<std::vector<head::ServiceView>> all) {
                        if (!all.ok()) return respond(ErrorResponse(all.status()));
                        observe(std::move(*all), false);
                      });
  }
  head_->Run(who, head::GetService{args.at(0)}, [respond, observe](Result<head::ServiceView> v) {
    if (!v.ok()) return respond(ErrorResponse(v.status()));
    observe({std::move(*v)}, true);
  });
}

void ApiService::HandleWhoAmI(const HttpRequest& req, const PathArgs&, Responder respond) {
  std::optional<net::PeerCredentials> peer = req.peer;
  head_->Run(Who(req), head::WhoAmI{}, [respond, peer](Result<Caller> who) {
    if (!who.ok()) return respond(ErrorResponse(who.status()));
    Json j{{"user", who->name},
           {"kind", CallerKindName(who->kind)},
           {"role", RoleName(who->role)},
           {"queues", who->queues},
           {"groups", who->groups},
           {"via", !peer            ? "token"
                   : peer->via_node ? "node_socket"
                                    : "unix_socket"}};
    if (peer) j["uid"] = peer->uid;
    respond(JsonResponse(200, j));
  });
}

void ApiService::HandleExecRelay(const HttpRequest& req, const PathArgs& args, Responder respond) {
  exec_->Relay(req, args, std::move(respond));
}

void ApiService::Handle(HttpRequest req, Responder respond) {
  auto t0 = std::chrono::steady_clock::now();
  // A node's agent forwarding one of its local users: served as the request it carries.
  const Status unwrapped = IsForwarded(req) ? UnwrapForwarded(req) : Status::Ok();
  std::vector<std::string> parts = net::SplitPath(req.path);
  std::string request = AuditedRequest(req.method, req.path);
  PathArgs args;
  const Endpoint* found = FindRoute(req.method, parts, &args);
  respond = [this, route = RouteLabel(req.method, parts, found), t0, request = std::move(request),
             from = AuditedFrom(req), bearer = req.BearerToken(), local = OnLocalSocket(req),
             respond = std::move(respond)](HttpResponse r) {
    gates_.Answered(local ? "" : bearer, from, request, r);
    head_->metrics().Observe(
        "corral_api_request_duration_seconds",
        {{"route", route}, {"code", std::to_string(r.status)}},
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    respond(std::move(r));
  };
  if (!unwrapped.ok()) return respond(ErrorResponse(unwrapped));
  if (!req.peer) return Route(std::move(req), parts, found, args, std::move(respond));
  // A local or forwarded caller: its Unix user is looked up (Who) on a thread of the pool's.
  Responder refuse = respond;
  const bool queued = local_callers_->Post(
      [this, req = std::move(req), parts, found, args, respond = std::move(respond)]() mutable {
        Route(std::move(req), parts, found, args, std::move(respond));
      });
  if (!queued) {
    refuse(
        ErrorResponse(Status(ErrorCode::kResourceExhausted,
                             "too many local callers waiting for the user database; slow down")));
  }
}

void ApiService::Route(HttpRequest req, const std::vector<std::string>& parts,
                       const Endpoint* found, const PathArgs& args, Responder respond) {
  if (req.path == "/healthz") return respond(JsonResponse(200, Json{{"ok", true}}));
  if (req.path == "/metrics" && req.method == "GET") {
    // Unauthenticated, like most exporters: it holds counts, never job ids or user names.
    return head_->RenderMetrics([respond](Result<std::string> text) {
      HttpResponse r;
      r.content_type = "text/plain; version=0.0.4";
      r.body = text.ok() ? *text : "";
      respond(std::move(r));
    });
  }
  // Open, like /metrics, which says the same: clients check it before they sign in.
  if (req.path == "/v1/version" && req.method == "GET") {
    return respond(JsonResponse(200, Json{{"version", Version()}}));
  }
  // The dashboard's own files; everything it shows comes from the API below, with its token.
  if (web::IsWebPath(req.path)) return respond(web::ServeWeb(req));
  if (!parts.empty() && parts[0] == "v" && req.path.size() > 3) {  // /v/NAME/: a service
    if (req.peer) {
      // A service's callers carry tokens of their own (or none the service asks for); the
      // socket's one identity is its Unix user, which a service's replica does not see.
      return respond(ErrorResponse(InvalidArgument(
          "services (/v/NAME/) are served on the head's TCP address, not on the local socket")));
    }
    if (auto refused = gates_.Admit(req.BearerToken(), req.remote, OnLocalSocket(req))) {
      return respond(std::move(*refused));
    }
    return services_->Handle(std::move(req), std::move(respond));
  }
  if (parts.size() < 2 || parts[0] != "v1") {
    return respond(ErrorResponse(NotFound("no such path: " + req.path)));
  }
  if (auto refused = gates_.Admit(req.BearerToken(), req.remote, OnLocalSocket(req))) {
    return respond(std::move(*refused));
  }
  // A session's input is what its user types, not JSON.
  const bool raw_body = parts[1] == "exec";
  if (!raw_body && JsonNestingDepth(req.body) > kMaxJsonNesting) {
    return respond(ErrorResponse(InvalidArgument("body: JSON nested deeper than " +
                                                 std::to_string(kMaxJsonNesting) + " levels")));
  }
  if (!found) {
    return respond(ErrorResponse(NotFound("no such path: " + req.method + " " + req.path)));
  }
  found->handle(*this, req, args, std::move(respond));
}

namespace {

// Output so far of a job whose run has not started on its agent yet: none, from where the
// client is.
HttpResponse NoOutputYet(int64_t offset, const std::string& state) {
  HttpResponse r;
  r.content_type = "text/plain";
  r.headers["X-Corral-Next-Offset"] = std::to_string(offset);
  r.headers["X-Corral-Job-State"] = state;
  return r;
}

}  // namespace

// The core finds the output (LocateLogs); this relays the read to the agent there with a grant
// for that run alone.
void ApiService::HandleLogs(const HttpRequest& req, const PathArgs& args, Responder respond) {
  auto read = DecodeLogRead(req, args);
  if (!read.ok()) return respond(ErrorResponse(read.status()));
  head_->Run(Who(req), read->locate,
             [this, respond, read = *read](Result<head::LogSource> at) mutable {
               if (!at.ok()) return respond(ErrorResponse(at.status()));
               std::string state = JobStateName(at->job_state);
               if (at->run_id.empty()) return respond(NoOutputYet(read.offset, state));
               auto grant = head_->RelayGrantFor(at->node, at->run_id);
               if (!grant.ok()) return respond(ErrorResponse(grant.status()));
               RelayLogRead(*at, read, *grant, std::move(respond));
             });
}

void ApiService::RelayLogRead(const head::LogSource& at, const LogRead& read,
                              const std::string& grant, Responder respond) {
  std::string state = JobStateName(at.job_state);
  const int64_t offset = read.offset;
  // Asynchronous: a slow or unreachable agent holds a socket, not a thread.
  proxy_->Request((agent_tls_.issue_log_cert ? "https://" : "http://") + at.address, grant, "GET",
                  "/v1/runs/" + at.run_id + "/logs?" +
                      net::EncodeQuery({{"replica", std::to_string(read.locate.query.replica)},
                                        {"task", std::to_string(read.locate.query.task)},
                                        {"stream", read.stream},
                                        {"offset", std::to_string(offset)},
                                        {"max", std::to_string(read.max)}}),
                  std::chrono::seconds(10),
                  [respond, offset, state, scheduled = at.job_state == JobState::kScheduled](
                      Result<net::HttpResponse> r) mutable {
                    if (!r.ok()) return respond(RelayErrorResponse(r.status()));
                    // Placed, and the agent has not started it yet: no output so far.
                    if (r->status == 404 && scheduled) return respond(NoOutputYet(offset, state));
                    HttpResponse out;
                    out.status = r->status;
                    out.content_type = r->status == 200 ? "text/plain" : "application/json";
                    out.body = std::move(r->body);
                    auto next = r->headers.find("x-corral-next-offset");
                    out.headers["X-Corral-Next-Offset"] =
                        next != r->headers.end() ? next->second : std::to_string(offset);
                    out.headers["X-Corral-Job-State"] = state;
                    respond(std::move(out));
                  });
}

void ApiService::HandleEvents(const HttpRequest& req, const PathArgs& args, Responder respond) {
  auto command = DecodeWatchEvents(req, args);
  if (!command.ok()) return respond(ErrorResponse(command.status()));
  bool sse = WantsEventStream(req);
  head_->Run(Who(req), std::move(*command),
             [head = head_, respond = std::move(respond), sse](Result<head::Events> r) {
               if (!r.ok()) return respond(ErrorResponse(r.status()));
               HttpResponse out;
               out.headers[kRevisionHeader] = std::to_string(head->ReplyRevision());
               if (!sse) {
                 out.body = ToJson(*r).dump();
                 return respond(std::move(out));
               }
               out.content_type = "text/event-stream";
               out.headers["Cache-Control"] = "no-cache";
               std::string body = "retry: 250\n";
               if (r->reset) {
                 body += "id: " + std::to_string(r->revision) +
                         "\nevent: reset\ndata: " + Json{{"revision", r->revision}}.dump() + "\n\n";
               }
               for (const Json& c : r->events) {
                 const std::string kind = EventKind(c);
                 body += "id: " + std::to_string(EventRevision(c)) +
                         "\nevent: " + (kind.empty() ? "change" : kind) + "\ndata: " + c.dump() +
                         "\n\n";
               }
               if (r->events.empty() && !r->reset) body += ": nothing new\n\n";
               out.body = std::move(body);
               respond(std::move(out));
             });
}

// A head that serves TLS signs the agent's log endpoint certificate before registering it, so
// that a bad CSR changes nothing; it is handed out only to an agent whose registration the
// head accepted.
void ApiService::HandleRegister(const HttpRequest& req, const PathArgs& args, Responder respond) {
  auto command = DecodeRegisterAgent(req, args);
  if (!command.ok()) return respond(ErrorResponse(command.status()));
  auto answer = Answer<RegisterResponse>(std::move(respond), RegisterAnswer);
  if (!agent_tls_.issue_log_cert) return head_->Run(Who(req), std::move(*command), answer);
  if (command->request.csr_pem.empty()) {
    return answer(InvalidArgument(
        "csr_pem: this head serves TLS and issues the agent's log endpoint a certificate; "
        "the agent must send a certificate request (an older corral agent?)"));
  }
  auto cert = agent_tls_.issue_log_cert(command->request);
  if (!cert.ok()) return answer(cert.status());
  head_->Run(Who(req), std::move(*command),
             [answer, cert = std::move(*cert)](Result<RegisterResponse> registered) mutable {
               if (registered.ok()) registered->log_cert_pem = std::move(cert);
               answer(std::move(registered));
             });
}

}  // namespace corral::api
