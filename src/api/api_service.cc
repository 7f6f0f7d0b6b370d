#include "api/api_service.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>

#include "api/step_request.h"
#include "core/codec.h"
#include "core/spec.h"
#include "core/usage.h"
#include "core/version.h"
#include "net/http_client.h"
#include "net/url.h"
#include "web/web_handler.h"

namespace corral::api {
namespace {

using net::HttpRequest;
using net::HttpResponse;
using net::Responder;

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

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

bool ParseU64(const std::string& s, uint64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

Result<int64_t> QueryInt(const HttpRequest& req, const std::string& key, int64_t def, int64_t lo,
                         int64_t hi) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return def;
  uint64_t v = 0;
  if (!ParseU64(it->second, &v) || static_cast<int64_t>(v) < lo || static_cast<int64_t>(v) > hi) {
    return InvalidArgument("query '" + key + "': got \"" + it->second +
                           "\", want an integer from " + std::to_string(lo) + " to " +
                           std::to_string(hi));
  }
  return static_cast<int64_t>(v);
}

Json NodeViewJson(const head::NodeView& v) {
  Json j = ToJson(v.node);
  j["gpus_used"] = v.gpus_used;
  // Each GPU's use beside its description, where the agent measured it.
  for (Json& gpu : j["gpus"]) {
    for (const GpuSample& s : v.gpu_samples) {
      if (gpu.value("index", -1) != s.index) continue;
      gpu["utilization_percent"] = s.utilization_percent;
      gpu["memory_used_bytes"] = s.memory_used_bytes;
    }
  }
  j["runs"] = v.runs;
  return j;
}

// A credential as the API shows it: never its hash.
Json CredentialJson(const head::Credential& c) {
  Json j = head::ToJson(c);
  j.erase("hash");
  return j;
}

Json QueueViewJson(const head::QueueView& v) {
  Json j = ToJson(v.config);
  j["used_gpus"] = v.used_gpus;
  j["pending"] = v.pending;
  j["running"] = v.running;
  return j;
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

namespace {}  // namespace

HttpResponse ErrorResponse(const Status& st) {
  return net::JsonError(HttpStatusFor(st.code()), ErrorCodeName(st.code()), st.message());
}

ApiService::ApiService(head::Head* head, double requests_per_second, AgentTls agent_tls)
    : head_(head),
      rate_(requests_per_second, 2 * requests_per_second),
      agent_tls_(std::move(agent_tls)),
      proxy_(std::make_shared<net::AsyncHttpClient>(agent_tls_.log_trust)) {}

// The route of a request with its variable parts named, for a bounded metrics label.
std::string RouteOf(const std::string& method, const std::vector<std::string>& parts) {
  static const std::set<std::string> kTop = {"metrics", "healthz"};
  static const std::set<std::string> kResources = {"jobs",  "nodes", "queues", "tokens", "events",
                                                   "agent", "usage", "admin",  "version"};
  if (parts.size() == 1 && kTop.count(parts[0])) return method + " /" + parts[0];
  if (parts.empty() || parts[0] == "ui") return method + " /ui";  // the dashboard's files
  if (parts.size() < 2 || parts[0] != "v1" || !kResources.count(parts[1])) return method + " other";
  std::string route = method + " /v1/" + parts[1];
  if (parts.size() >= 3) {
    if (parts[1] == "jobs")
      route += "/{id}";
    else if (parts[1] == "queues")
      return route + "/{queue}";
    else if (parts[1] == "agent" || parts[1] == "admin")
      return route + "/" +
             (parts[2] == "backup" || parts[2] == "register" || parts[2] == "sync" ? parts[2]
                                                                                   : "other");
    else
      route += "/{name}";
  }
  if (parts.size() >= 4)
    route += parts[3] == "logs" || parts[3] == "cancel" || parts[3] == "checkpoint" ||
                     parts[3] == "drain" || parts[3] == "undrain" || parts[3] == "steps" ||
                     parts[3] == "requeue" || parts[3] == "hold" || parts[3] == "release" ||
                     parts[3] == "signal"
                 ? "/" + parts[3]
                 : "/other";
  if (parts.size() >= 5 && parts[3] == "steps") route += "/{step}";
  return route;
}

void ApiService::Handle(HttpRequest req, Responder respond) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> parts = SplitPath(req.path);
  respond = [head = head_, route = RouteOf(req.method, parts), t0,
             request = req.method + " " + req.path, from = req.remote,
             respond = std::move(respond)](HttpResponse r) {
    head->metrics().Observe(
        "corral_api_request_duration_seconds",
        {{"route", route}, {"code", std::to_string(r.status)}},
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (r.status == 401 || r.status == 403) {  // every refusal is audited, with where it came from
      Json body = Json::parse(r.body, nullptr, false);
      std::string why = body.is_object() && body.contains("error") && body["error"].is_object()
                            ? body["error"].value("message", "")
                            : "";
      head->Audit(Json{{"at", SystemClock().Now()},
                       {"from", from},
                       {"request", request},
                       {"status", r.status},
                       {"reason", why}});
    }
    respond(std::move(r));
  };
  Route(std::move(req), parts, std::move(respond));
}

void ApiService::Route(HttpRequest req, const std::vector<std::string>& parts, Responder respond) {
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
  // The dashboard's own files; everything it shows comes from the API below, with its token.
  if (web::IsWebPath(req.path)) return respond(web::ServeWeb(req));
  if (parts.size() < 2 || parts[0] != "v1") {
    return respond(ErrorResponse(NotFound("no such path: " + req.path)));
  }
  std::string bearer = req.BearerToken();
  if (!rate_.Allow(bearer.empty() ? "peer " + req.remote.substr(0, req.remote.rfind(':'))
                                  : bearer)) {
    return respond(ErrorResponse(
        Status(ErrorCode::kResourceExhausted, "too many requests with this token; slow down")));
  }
  if (JsonNestingDepth(req.body) > kMaxJsonNesting) {
    return respond(ErrorResponse(InvalidArgument("body: JSON nested deeper than " +
                                                 std::to_string(kMaxJsonNesting) + " levels")));
  }
  // Open, like /metrics, which says the same: clients check it before they sign in.
  if (req.path == "/v1/version" && req.method == "GET") {
    return respond(JsonResponse(200, Json{{"version", Version()}}));
  }
  if (parts[1] == "agent") return HandleAgent(req, parts, std::move(respond));
  if (parts[1] == "jobs") return HandleJobs(req, parts, std::move(respond));
  if (parts[1] == "nodes") return HandleNodes(req, parts, std::move(respond));
  if (parts[1] == "queues") return HandleQueues(req, parts, std::move(respond));
  if (parts[1] == "tokens") return HandleTokens(req, parts, std::move(respond));
  if (parts[1] == "events" && parts.size() == 2 && req.method == "GET") {
    return HandleEvents(req, std::move(respond));
  }
  if (parts[1] == "usage" && parts.size() == 2 && req.method == "GET") {
    return HandleUsage(req, std::move(respond));
  }
  if (parts[1] == "admin" && parts.size() == 3 && parts[2] == "backup" && req.method == "POST") {
    return HandleBackup(req, std::move(respond));
  }
  respond(ErrorResponse(NotFound("no such path: " + req.path)));
}

// POST /v1/admin/backup {"path": "/abs/file"}: an online copy of the store on the head's host.
void ApiService::HandleBackup(const HttpRequest& req, Responder respond) {
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return respond(ErrorResponse(InvalidArgument("body: want a JSON object {\"path\": ...}")));
  }
  std::string path;
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() == "path" && it->is_string()) {
      path = it->get<std::string>();
    } else {
      return respond(ErrorResponse(InvalidArgument(
          "field '" + it.key() + "': unknown or of the wrong type; want path (a string)")));
    }
  }
  if (path.empty() || path.front() != '/') {
    return respond(ErrorResponse(InvalidArgument("field 'path': got '" + path +
                                                 "', want an absolute path on the head's host")));
  }
  head_->Backup(
      req.BearerToken(), path,
      Answer<store::BackupInfo>(std::move(respond), [](const store::BackupInfo& b) {
        return Json{
            {"path", b.path}, {"bytes", b.bytes}, {"revision", b.revision}, {"jobs", b.jobs}};
      }));
}

void ApiService::HandleJobs(const HttpRequest& req, const std::vector<std::string>& parts,
                            Responder respond) {
  auto job_json = [](const Job& j) { return Json{{"job", ToJson(j)}}; };
  if (parts.size() == 2 && req.method == "POST") {
    Json body = Json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return respond(ErrorResponse(
          InvalidArgument("body: want a JSON object {\"spec\": ..., \"user\": ...}")));
    }
    for (auto it = body.begin(); it != body.end(); ++it) {
      if (it.key() != "spec" && it.key() != "user" && it.key() != "request_id") {
        return respond(ErrorResponse(
            InvalidArgument("unknown field '" + it.key() + "'; want spec, user, request_id")));
      }
    }
    auto spec = ParseJobSpec(body.value("spec", Json()));
    if (!spec.ok()) return respond(ErrorResponse(spec.status()));
    std::string user;
    if (auto u = body.find("user"); u != body.end()) {
      if (!u->is_string())
        return respond(ErrorResponse(InvalidArgument("field 'user': want a string")));
      user = u->get<std::string>();
    }
    std::string request_id;
    if (auto r = body.find("request_id"); r != body.end()) {
      if (!r->is_string())
        return respond(ErrorResponse(InvalidArgument("field 'request_id': want a string")));
      request_id = r->get<std::string>();
    }
    return head_->Submit(req.BearerToken(), std::move(*spec), std::move(user),
                         std::move(request_id), Answer<Job>(std::move(respond), job_json, 201));
  }
  if (parts.size() == 2 && req.method == "GET") {
    head::JobFilter f;
    if (auto it = req.query.find("state"); it != req.query.end() && !it->second.empty()) {
      size_t i = 0;
      const std::string& v = it->second;
      while (i <= v.size()) {
        size_t j = v.find(',', i);
        if (j == std::string::npos) j = v.size();
        std::string name = v.substr(i, j - i);
        JobState st;
        if (!ParseJobState(name, &st)) {
          return respond(ErrorResponse(InvalidArgument(
              "query 'state': got \"" + name +
              "\", want pending, scheduled, running, succeeded, failed or cancelled")));
        }
        f.states.insert(st);
        i = j + 1;
      }
    }
    if (auto it = req.query.find("queue"); it != req.query.end()) f.queue = it->second;
    if (auto it = req.query.find("user"); it != req.query.end()) f.user = it->second;
    auto array = QueryInt(req, "array", 0, 0, INT64_MAX);
    if (!array.ok()) return respond(ErrorResponse(array.status()));
    f.array_id = static_cast<JobId>(*array);
    auto ended_since = QueryInt(req, "ended_since", 0, 0, INT64_MAX);
    if (!ended_since.ok()) return respond(ErrorResponse(ended_since.status()));
    f.ended_since = *ended_since;
    auto limit = QueryInt(req, "limit", 1000, 1, 100000);
    auto after = QueryInt(req, "after", 0, 0, INT64_MAX);
    if (!limit.ok()) return respond(ErrorResponse(limit.status()));
    if (!after.ok()) return respond(ErrorResponse(after.status()));
    f.limit = static_cast<int32_t>(*limit);
    f.after = static_cast<JobId>(*after);
    int32_t lim = f.limit;
    return head_->ListJobs(
        req.BearerToken(), f,
        Answer<std::vector<Job>>(std::move(respond), [lim](const std::vector<Job>& jobs) {
          Json arr = Json::array();
          for (const Job& j : jobs) arr.push_back(ToJson(j));
          Json next = static_cast<int32_t>(jobs.size()) == lim && !jobs.empty()
                          ? Json(jobs.back().id)
                          : Json();
          return Json{{"jobs", arr}, {"next_after", next}};
        }));
  }
  uint64_t id = 0;
  if (parts.size() >= 3 && !ParseU64(parts[2], &id)) {
    return respond(
        ErrorResponse(InvalidArgument("job id: got \"" + parts[2] + "\", want a number")));
  }
  if (parts.size() == 3 && req.method == "GET") {
    return head_->GetJob(req.BearerToken(), id, Answer<Job>(std::move(respond), job_json));
  }
  if (parts.size() == 4 && parts[3] == "cancel" && req.method == "POST") {
    bool element_only = req.query.count("element") && req.query.at("element") != "0";
    return head_->Cancel(req.BearerToken(), id, element_only,
                         Answer<Job>(std::move(respond), job_json));
  }
  if (parts.size() == 4 && parts[3] == "signal" && req.method == "POST") {
    auto sig = QueryInt(req, "signal", 0, 1, 64);
    if (!sig.ok()) return respond(ErrorResponse(sig.status()));
    if (*sig == 0) {
      return respond(ErrorResponse(InvalidArgument("query 'signal': want a signal number")));
    }
    std::string to = req.query.count("to") ? req.query.at("to") : "";
    if (!to.empty() && to != "batch" && to != "all") {
      return respond(
          ErrorResponse(InvalidArgument("query 'to': got \"" + to + "\", want batch or all")));
    }
    auto target = to == "batch" ? head::HeadCore::SignalTarget::kBatch
                  : to == "all" ? head::HeadCore::SignalTarget::kAll
                                : head::HeadCore::SignalTarget::kDefault;
    return head_->Signal(req.BearerToken(), id, static_cast<int32_t>(*sig), target,
                         Answer<Job>(std::move(respond), job_json));
  }
  if (parts.size() == 4 && parts[3] == "requeue" && req.method == "POST") {
    return head_->Requeue(req.BearerToken(), id, Answer<Job>(std::move(respond), job_json));
  }
  if (parts.size() == 4 && (parts[3] == "hold" || parts[3] == "release") && req.method == "POST") {
    return head_->SetHold(req.BearerToken(), id, parts[3] == "hold",
                          Answer<Job>(std::move(respond), job_json));
  }
  if (parts.size() == 4 && parts[3] == "checkpoint" && req.method == "POST") {
    return head_->ReportCheckpoint(req.BearerToken(), id,
                                   Answer<Job>(std::move(respond), job_json));
  }
  if (parts.size() == 4 && parts[3] == "logs" && req.method == "GET") {
    return HandleLogs(id, req, std::move(respond));
  }
  if (parts.size() >= 4 && parts[3] == "steps")
    return HandleSteps(id, req, parts, std::move(respond));
  respond(ErrorResponse(NotFound("no such path: " + req.method + " " + req.path)));
}

// GET /v1/usage?by=user|queue&since=SECONDS: GPU-hours, jobs, wait and preemptions per user
// or queue over the last SECONDS (default 7 days).
void ApiService::HandleUsage(const HttpRequest& req, Responder respond) {
  auto it = req.query.find("by");
  auto by = ParseUsageBy("query 'by'", it == req.query.end() ? "user" : it->second);
  if (!by.ok()) return respond(ErrorResponse(by.status()));
  constexpr int64_t kWeek = 7 * 86400;
  auto since = QueryInt(req, "since", kWeek, 1, int64_t{100} * 365 * 86400);
  if (!since.ok()) return respond(ErrorResponse(since.status()));
  head_->Usage(
      req.BearerToken(), *by, *since * kSecond,
      Answer<UsageReport>(std::move(respond), [](const UsageReport& r) { return ToJson(r); }));
}

// Job steps (srun in a batch script; HeadCore::StartStep): POST /v1/jobs/{id}/steps starts
// one, GET /v1/jobs/{id}/steps/{step} says how it is doing.
void ApiService::HandleSteps(JobId id, const HttpRequest& req,
                             const std::vector<std::string>& parts, Responder respond) {
  auto step_json = [](const Step& s) { return Json{{"step", ToJson(s)}}; };
  if (parts.size() == 4 && req.method == "POST") {
    auto parsed = StepRequestFromJson(req.body);
    if (!parsed.ok()) return respond(ErrorResponse(parsed.status()));
    return head_->StartStep(req.BearerToken(), id, std::move(*parsed),
                            Answer<Step>(std::move(respond), step_json, 201));
  }
  uint64_t step = 0;
  if (parts.size() == 5 && req.method == "GET") {
    if (!ParseU64(parts[4], &step) || step > INT32_MAX) {
      return respond(
          ErrorResponse(InvalidArgument("step id: got \"" + parts[4] + "\", want a number")));
    }
    return head_->GetStep(req.BearerToken(), id, static_cast<int32_t>(step),
                          Answer<Step>(std::move(respond), step_json));
  }
  respond(ErrorResponse(NotFound("no such path: " + req.method + " " + req.path)));
}

void ApiService::HandleLogs(JobId id, const HttpRequest& req, Responder respond) {
  std::string stream = req.query.count("stream") ? req.query.at("stream") : "stdout";
  if (stream != "stdout" && stream != "stderr") {
    return respond(ErrorResponse(
        InvalidArgument("query 'stream': got \"" + stream + "\", want stdout or stderr")));
  }
  auto replica = QueryInt(req, "replica", 0, 0, 4095);
  auto task = QueryInt(req, "task", 0, 0, 1023);
  auto offset = QueryInt(req, "offset", 0, 0, INT64_MAX);
  auto max = QueryInt(req, "max", 1 << 16, 1, 1 << 22);
  auto step = QueryInt(req, "step", -1, -1, INT32_MAX);  // -1: the job's own processes
  for (const auto* r : {&replica, &task, &offset, &max, &step}) {
    if (!r->ok()) return respond(ErrorResponse(r->status()));
  }
  std::string bearer = req.BearerToken();
  head_->GetJobForLogs(
      bearer, id,
      [this, bearer, respond, stream, replica = *replica, task = *task, offset = *offset,
       max = *max, step = *step](Result<Job> job) mutable {
        if (!job.ok()) return respond(ErrorResponse(job.status()));
        const Run* run = nullptr;
        for (auto it = job->runs.rbegin(); it != job->runs.rend(); ++it) {
          if (!it->placement.empty()) {
            run = &*it;
            break;
          }
        }
        std::string state = JobStateName(job->state);
        if (!run) {
          HttpResponse r;
          r.content_type = "text/plain";
          r.headers["X-Corral-Next-Offset"] = std::to_string(offset);
          r.headers["X-Corral-Job-State"] = state;
          return respond(std::move(r));
        }
        if (replica >= static_cast<int64_t>(run->placement.size())) {
          return respond(ErrorResponse(InvalidArgument("query 'replica': the job has " +
                                                       std::to_string(run->placement.size()) +
                                                       " replica(s)")));
        }
        int32_t tasks = run->placement[replica].tasks;
        if (step >= 0) {
          // A step's share on this replica's node: its own run there, its own task count.
          if (step >= static_cast<int64_t>(run->steps.size())) {
            return respond(ErrorResponse(InvalidArgument(
                "query 'step': the run has " + std::to_string(run->steps.size()) + " step(s)")));
          }
          const Step& s = run->steps[step];
          auto at = std::find(s.replicas.begin(), s.replicas.end(), replica);
          if (at == s.replicas.end()) {
            return respond(ErrorResponse(
                InvalidArgument("query 'replica': step " + std::to_string(step) +
                                " does not run on replica " + std::to_string(replica))));
          }
          tasks = s.tasks[at - s.replicas.begin()];
        }
        if (task >= std::max<int64_t>(1, tasks)) {
          return respond(ErrorResponse(
              InvalidArgument("query 'task': replica " + std::to_string(replica) + " has " +
                              std::to_string(std::max<int32_t>(1, tasks)) + " task(s)")));
        }
        std::string node = run->placement[replica].node;
        std::string run_id =
            step >= 0 ? StepRunId(RunId{job->id, run->attempt}, static_cast<int32_t>(step))
                      : ToString(RunId{job->id, run->attempt});
        head_->GetNode(
            bearer, node,
            [this, respond, node, run_id, stream, replica, task, offset, max,
             state](Result<Node> found) mutable {
              std::string address = found.ok() ? found->address : "";
              if (address.empty()) {
                return respond(
                    ErrorResponse(Unavailable("node " + node + " has no address for logs")));
              }
              std::string token = head_->tokens().join;
              // Asynchronous: a slow or unreachable agent holds a socket, not a thread.
              proxy_->Request(
                  (agent_tls_.issue_log_cert ? "https://" : "http://") + address, token, "GET",
                  "/v1/runs/" + run_id + "/logs?" +
                      net::EncodeQuery({{"replica", std::to_string(replica)},
                                        {"task", std::to_string(task)},
                                        {"stream", stream},
                                        {"offset", std::to_string(offset)},
                                        {"max", std::to_string(max)}}),
                  std::chrono::seconds(10),
                  [respond, offset, state](Result<net::HttpResponse> r) mutable {
                    if (!r.ok()) return respond(ErrorResponse(r.status()));
                    if (r->status == 404 && state == JobStateName(JobState::kScheduled)) {
                      // Placed, and the agent has not started it yet: no output so far.
                      HttpResponse empty;
                      empty.content_type = "text/plain";
                      empty.headers["X-Corral-Next-Offset"] = std::to_string(offset);
                      empty.headers["X-Corral-Job-State"] = state;
                      return respond(std::move(empty));
                    }
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
            });
      });
}

void ApiService::HandleNodes(const HttpRequest& req, const std::vector<std::string>& parts,
                             Responder respond) {
  if (parts.size() == 2 && req.method == "GET") {
    return head_->ListNodes(req.BearerToken(),
                            Answer<std::vector<head::NodeView>>(
                                std::move(respond), [](const std::vector<head::NodeView>& nodes) {
                                  Json arr = Json::array();
                                  for (const auto& v : nodes) arr.push_back(NodeViewJson(v));
                                  return Json{{"nodes", arr}};
                                }));
  }
  if (parts.size() == 4 && req.method == "POST" && (parts[3] == "drain" || parts[3] == "undrain")) {
    return head_->SetDrain(req.BearerToken(), parts[2], parts[3] == "drain",
                           Answer<head::NodeView>(std::move(respond), [](const head::NodeView& v) {
                             return Json{{"node", NodeViewJson(v)}};
                           }));
  }
  respond(ErrorResponse(NotFound("no such path: " + req.method + " " + req.path)));
}

void ApiService::HandleQueues(const HttpRequest& req, const std::vector<std::string>& parts,
                              Responder respond) {
  if (parts.size() == 2 && req.method == "GET") {
    return head_->ListQueues(req.BearerToken(),
                             Answer<std::vector<head::QueueView>>(
                                 std::move(respond), [](const std::vector<head::QueueView>& qs) {
                                   Json arr = Json::array();
                                   for (const auto& q : qs) arr.push_back(QueueViewJson(q));
                                   return Json{{"queues", arr}};
                                 }));
  }
  if (parts.size() >= 3 && req.method == "PUT") {
    std::string name;
    for (size_t i = 2; i < parts.size(); ++i) name += (i > 2 ? "/" : "") + parts[i];
    Json body = Json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return respond(ErrorResponse(InvalidArgument("body: want a JSON object")));
    }
    QueueConfig q{name, 0, -1, 1.0};
    for (auto it = body.begin(); it != body.end(); ++it) {
      const std::string& k = it.key();
      if (k == "max_pending_per_user") {
        if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 10000000) {
          return respond(ErrorResponse(InvalidArgument("field 'max_pending_per_user': got " +
                                                       it->dump() + ", want an integer >= 0")));
        }
        q.max_pending_per_user = it->get<int32_t>();
      } else if (k == "quota_gpus" || k == "limit_gpus") {
        int64_t lo = k == "limit_gpus" ? -1 : 0;
        if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > 10000000) {
          return respond(
              ErrorResponse(InvalidArgument("field '" + k + "': got " + it->dump() +
                                            ", want an integer >= " + std::to_string(lo))));
        }
        (k == "quota_gpus" ? q.quota_gpus : q.limit_gpus) = it->get<int32_t>();
      } else if (k == "weight") {
        if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 1e6) {
          return respond(ErrorResponse(
              InvalidArgument("field 'weight': got " + it->dump() + ", want a number > 0")));
        }
        q.weight = it->get<double>();
      } else {
        return respond(ErrorResponse(
            InvalidArgument("unknown field '" + k +
                            "'; want quota_gpus, limit_gpus, weight, max_pending_per_user")));
      }
    }
    return head_->SetQueue(req.BearerToken(), q,
                           Answer<QueueConfig>(std::move(respond), [](const QueueConfig& q) {
                             return Json{{"queue", ToJson(q)}};
                           }));
  }
  respond(ErrorResponse(NotFound("no such path: " + req.method + " " + req.path)));
}

void ApiService::HandleTokens(const HttpRequest& req, const std::vector<std::string>& parts,
                              Responder respond) {
  if (parts.size() == 2 && req.method == "GET") {
    return head_->ListTokens(req.BearerToken(),
                             Answer<std::vector<head::Credential>>(
                                 std::move(respond), [](const std::vector<head::Credential>& cs) {
                                   Json arr = Json::array();
                                   for (const auto& c : cs) arr.push_back(CredentialJson(c));
                                   return Json{{"tokens", arr}};
                                 }));
  }
  if (parts.size() == 2 && req.method == "POST") {
    Json body = Json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return respond(ErrorResponse(InvalidArgument("body: want a JSON object {\"user\": ...}")));
    }
    head::TokenRequest t;
    for (auto it = body.begin(); it != body.end(); ++it) {
      const std::string& k = it.key();
      if (k == "user" && it->is_string()) {
        t.user = it->get<std::string>();
      } else if (k == "role" && it->is_string()) {
        if (!ParseRole(it->get<std::string>(), &t.role)) {
          return respond(ErrorResponse(InvalidArgument("field 'role': got " + it->dump() +
                                                       ", want user, queue-admin or admin")));
        }
      } else if (k == "queues" && it->is_array()) {
        for (const Json& q : *it) {
          if (!q.is_string()) {
            return respond(ErrorResponse(InvalidArgument("field 'queues': want queue names")));
          }
          t.queues.push_back(q.get<std::string>());
        }
      } else if (k == "expires" && it->is_string()) {
        auto d = ParseDuration("expires", it->get<std::string>());
        if (!d.ok()) return respond(ErrorResponse(d.status()));
        t.expires_after_ms = *d;
      } else {
        return respond(ErrorResponse(InvalidArgument(
            "field '" + k + "': unknown or of the wrong type; want user, role, queues, expires")));
      }
    }
    if (t.user.empty() || t.user.front() == '@') {
      return respond(ErrorResponse(InvalidArgument("field 'user': want a user name")));
    }
    return head_->CreateToken(
        req.BearerToken(), t,
        Answer<head::Head::NewToken>(
            std::move(respond),
            [](const head::Head::NewToken& n) {
              return Json{{"token", n.secret}, {"credential", CredentialJson(n.credential)}};
            },
            201));
  }
  if (parts.size() == 3 && req.method == "DELETE") {
    return head_->RevokeToken(req.BearerToken(), parts[2],
                              Answer<head::Credential>(std::move(respond), [](const auto& c) {
                                return Json{{"revoked", CredentialJson(c)}};
                              }));
  }
  respond(ErrorResponse(NotFound("no such path: " + req.method + " " + req.path)));
}

// GET /v1/events?since=REV[&max=N][&wait=MS]: the changes after REV. As server-sent events
// (Accept: text/event-stream, or format=sse) each answer ends after a batch or the wait, and
// the browser's EventSource comes back with Last-Event-ID: a resumable stream over plain
// long polls, which the server holds as cheaply as an agent's sync.
void ApiService::HandleEvents(const HttpRequest& req, Responder respond) {
  bool sse = req.Header("accept").find("text/event-stream") != std::string::npos ||
             (req.query.count("format") && req.query.at("format") == "sse");
  auto since = QueryInt(req, "since", -1, 0, INT64_MAX);
  auto max = QueryInt(req, "max", 1000, 1, 10000);
  auto wait = QueryInt(req, "wait", sse ? 25000 : 0, 0, 60000);
  for (const auto* r : {&since, &max, &wait}) {
    if (!r->ok()) return respond(ErrorResponse(r->status()));
  }
  int64_t from = *since;
  if (from < 0) {
    uint64_t last = 0;
    std::string id = req.Header("last-event-id");
    if (!id.empty() && !ParseU64(id, &last)) {
      return respond(ErrorResponse(
          InvalidArgument("header 'Last-Event-ID': got \"" + id + "\", want a revision")));
    }
    from = static_cast<int64_t>(last);
  }
  head_->WatchEvents(
      req.BearerToken(), static_cast<uint64_t>(from), static_cast<int32_t>(*max), *wait,
      [head = head_, respond = std::move(respond), sse](Result<head::Head::Events> r) {
        if (!r.ok()) return respond(ErrorResponse(r.status()));
        HttpResponse out;
        out.headers[kRevisionHeader] = std::to_string(head->ReplyRevision());
        if (!sse) {
          Json arr = Json::array();
          for (Json& c : r->changes) arr.push_back(std::move(c));
          out.body = Json{{"events", arr}, {"revision", r->revision}, {"reset", r->reset}}.dump();
          return respond(std::move(out));
        }
        out.content_type = "text/event-stream";
        out.headers["Cache-Control"] = "no-cache";
        std::string body = "retry: 250\n";
        if (r->reset) {
          body += "id: " + std::to_string(r->revision) +
                  "\nevent: reset\ndata: " + Json{{"revision", r->revision}}.dump() + "\n\n";
        }
        for (const Json& c : r->changes) {
          body += "id: " + std::to_string(c.value("rev", uint64_t{0})) +
                  "\nevent: " + c.value("kind", std::string("change")) + "\ndata: " + c.dump() +
                  "\n\n";
        }
        if (r->changes.empty() && !r->reset) body += ": nothing new\n\n";
        out.body = std::move(body);
        respond(std::move(out));
      });
}

void ApiService::HandleAgent(const HttpRequest& req, const std::vector<std::string>& parts,
                             Responder respond) {
  if (req.method != "POST" || parts.size() != 3) {
    return respond(ErrorResponse(NotFound("no such path: " + req.method + " " + req.path)));
  }
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return respond(ErrorResponse(InvalidArgument("body: not JSON")));
  if (parts[2] == "register") {
    auto r = RegisterRequestFromJson(body);
    if (!r.ok()) return respond(ErrorResponse(r.status()));
    auto answer =
        Answer<RegisterResponse>(std::move(respond), [](const auto& x) { return ToJson(x); });
    if (!agent_tls_.issue_log_cert)
      return head_->Register(req.BearerToken(), std::move(*r), answer);
    // Signed before registering, so that a bad CSR changes nothing; handed out only to an
    // agent whose registration the head accepted.
    if (r->csr_pem.empty()) {
      return answer(InvalidArgument(
          "csr_pem: this head serves TLS and issues the agent's log endpoint a certificate; "
          "the agent must send a certificate request (an older corral agent?)"));
    }
    auto cert = agent_tls_.issue_log_cert(*r);
    if (!cert.ok()) return answer(cert.status());
    return head_->Register(
        req.BearerToken(), std::move(*r),
        [answer, cert = std::move(*cert)](Result<RegisterResponse> registered) mutable {
          if (registered.ok()) registered->log_cert_pem = std::move(cert);
          answer(std::move(registered));
        });
  }
  if (parts[2] == "sync") {
    auto r = SyncRequestFromJson(body);
    if (!r.ok()) return respond(ErrorResponse(r.status()));
    return head_->Sync(
        req.BearerToken(), std::move(*r),
        Answer<SyncResponse>(std::move(respond), [](const auto& x) { return ToJson(x); }));
  }
  respond(ErrorResponse(NotFound("no such path: " + req.path)));
}

}  // namespace corral::api
