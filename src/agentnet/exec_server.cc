#include "agentnet/exec_server.h"

#include <sys/random.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <csignal>

#include "core/codec.h"
#include "core/secrets.h"
#include "core/time.h"
#include "net/url.h"

namespace corral::agentnet {
namespace {

constexpr int64_t kForgetFinishedMs = 5000;  // after its command ended and its output was read
constexpr int64_t kMaxWaitMs = 30000;        // an output request is held at most this long

net::HttpResponse Error(const Status& st) {
  int code = 500;
  switch (st.code()) {
    case ErrorCode::kInvalidArgument:
      code = 400;
      break;
    case ErrorCode::kPermissionDenied:
      code = 403;
      break;
    case ErrorCode::kNotFound:
      code = 404;
      break;
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kAlreadyExists:
      code = 409;
      break;
    case ErrorCode::kResourceExhausted:
      code = 429;
      break;
    case ErrorCode::kUnavailable:
      code = 503;
      break;
    default:
      break;
  }
  return net::JsonError(code, ErrorCodeName(st.code()), st.message());
}

Result<int64_t> QueryNumber(const net::HttpRequest& req, const char* key, int64_t def, int64_t lo,
                            int64_t hi) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return def;
  try {
    size_t used = 0;
    int64_t v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= lo && v <= hi) return v;
  } catch (...) {
  }
  return InvalidArgument(std::string("query '") + key + "': got \"" + it->second + "\", want " +
                         std::to_string(lo) + ".." + std::to_string(hi));
}

net::HttpResponse JsonOk(int status, const Json& body) {
  net::HttpResponse r;
  r.status = status;
  r.body = body.dump();
  return r;
}

}  // namespace

ExecServer::ExecServer(const RelayAuth* auth, TargetLookup target, int64_t abandon_after_ms)
    : auth_(auth), target_(std::move(target)), abandon_after_ms_(abandon_after_ms) {
  reaper_ = std::thread([this] { ReapLoop(); });
}

ExecServer::~ExecServer() {
  pool_.join();
  std::map<std::string, std::shared_ptr<Entry>> all;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    all.swap(sessions_);
  }
  cv_.notify_all();
  reaper_.join();
  all.clear();  // each session's destructor hangs up its command
}

bool ExecServer::Serves(const net::HttpRequest& req) {
  auto parts = net::SplitPath(req.path);
  if (parts.size() >= 3 && parts[0] == "v1" && parts[1] == "exec") return true;
  return parts.size() == 4 && parts[0] == "v1" && parts[1] == "runs" && parts[3] == "exec";
}

size_t ExecServer::SessionCount() {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

std::shared_ptr<ExecServer::Entry> ExecServer::Find(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  it->second->last_request_ms = SteadyClock().Now();
  return it->second;
}

std::optional<net::HttpResponse> ExecServer::Refuse(const net::HttpRequest& req,
                                                    const std::string& id) {
  std::string run;
  {
    std::lock_guard lock(mu_);
    if (auto it = sessions_.find(id); it != sessions_.end()) run = it->second->run_id;
  }
  GrantCheck check = auth_->Check(req.BearerToken(), run);
  // No such session: a grant of this node's head (for whichever run) may learn that, no one else.
  if (run.empty() && check.refusal == GrantRefusal::kOtherRun) return std::nullopt;
  if (!check.ok()) return RelayAuth::Refusal(check);
  return std::nullopt;
}

void ExecServer::Handle(net::HttpRequest req, net::Responder respond) {
  auto parts = net::SplitPath(req.path);
  if (parts.size() == 4 && parts[1] == "runs") {
    if (GrantCheck check = auth_->Check(req.BearerToken(), parts[2]); !check.ok()) {
      return respond(RelayAuth::Refusal(check));
    }
    if (req.method != "POST") return respond(Error(NotFound("no such path: " + req.path)));
    return Open(req, parts[2], std::move(respond));
  }
  const std::string& id = parts[2];
  if (auto refused = Refuse(req, id)) return respond(std::move(*refused));
  auto entry = Find(id);
  if (!entry) {
    return respond(Error(NotFound("no exec session " + id + " on this node (it ended)")));
  }
  agent::ExecSession& s = *entry->session;
  const std::string what = parts.size() == 4 ? parts[3] : "";
  if (req.method == "DELETE" && parts.size() == 3) {
    std::shared_ptr<Entry> gone;
    {
      std::lock_guard lock(mu_);
      auto it = sessions_.find(id);
      if (it != sessions_.end()) {
        gone = std::move(it->second);
        sessions_.erase(it);
      }
    }
    // Hanging up waits briefly for the command to go: not on the I/O thread.
    boost::asio::post(pool_, [gone = std::move(gone)]() mutable { gone.reset(); });
    return respond(JsonOk(200, Json{{"session", id}, {"ended", true}}));
  }
  if (req.method == "GET" && what == "output") {
    auto offset = QueryNumber(req, "offset", 0, 0, INT64_MAX);
    auto wait = QueryNumber(req, "wait_ms", 10000, 0, kMaxWaitMs);
    if (!offset.ok()) return respond(Error(offset.status()));
    if (!wait.ok()) return respond(Error(wait.status()));
    std::string stream = req.query.count("stream") ? req.query.at("stream") : "stdout";
    if (stream != "stdout" && stream != "stderr") {
      return respond(
          Error(InvalidArgument("query 'stream': got \"" + stream + "\", want stdout or stderr")));
    }
    return s.Output(stream == "stdout" ? agent::ExecStream::kStdout : agent::ExecStream::kStderr,
                    *offset, *wait, [respond](agent::ExecOutput o) {
                      net::HttpResponse r;
                      r.content_type = "application/octet-stream";
                      r.body = std::move(o.bytes);
                      r.headers["X-Corral-Next-Offset"] = std::to_string(o.next_offset);
                      if (o.ended) {
                        r.headers["X-Corral-Exit-Code"] = std::to_string(o.exit_code);
                        r.headers["X-Corral-Exit-Signal"] = std::to_string(o.signal);
                      }
                      respond(std::move(r));
                    });
  }
  if (req.method != "POST") return respond(Error(NotFound("no such path: " + req.path)));
  if (what == "input") {
    auto offset = QueryNumber(req, "offset", 0, 0, INT64_MAX);
    if (!offset.ok()) return respond(Error(offset.status()));
    auto at = s.Input(*offset, req.body, req.query.count("eof") && req.query.at("eof") == "1");
    if (!at.ok()) return respond(Error(at.status()));
    return respond(JsonOk(200, Json{{"offset", *at}}));
  }
  if (what == "resize") {
    auto rows = QueryNumber(req, "rows", 0, 1, 10000);
    auto cols = QueryNumber(req, "cols", 0, 1, 10000);
    if (!rows.ok()) return respond(Error(rows.status()));
    if (!cols.ok()) return respond(Error(cols.status()));
    Status st = s.Resize(static_cast<int32_t>(*rows), static_cast<int32_t>(*cols));
    if (!st.ok()) return respond(Error(st));
    return respond(JsonOk(200, Json{{"rows", *rows}, {"cols", *cols}}));
  }
  if (what == "signal") {
    auto sig = QueryNumber(req, "signal", 0, 1, 64);
    if (!sig.ok()) return respond(Error(sig.status()));
    s.Signal(static_cast<int>(*sig));
    return respond(JsonOk(200, Json{{"signal", *sig}}));
  }
  respond(Error(NotFound("no such path: " + req.path)));
}

void ExecServer::Open(const net::HttpRequest& req, const std::string& run_id,
                      net::Responder respond) {
  auto replica = QueryNumber(req, "replica", 0, 0, 4095);
  if (!replica.ok()) return respond(Error(replica.status()));
  Json body = Json::parse(req.body, nullptr, false);
  if (!body.is_object()) return respond(Error(InvalidArgument("body: want a JSON object")));
  agent::ExecSpec spec;
  try {
    spec.command = body.value("command", std::vector<std::string>{});
    spec.pty = body.value("pty", false);
    spec.rows = body.value("rows", 24);
    spec.cols = body.value("cols", 80);
    for (const auto& [k, v] : body.value("env", std::map<std::string, std::string>{})) {
      spec.env.push_back(k + "=" + v);
    }
  } catch (const std::exception& e) {
    return respond(Error(InvalidArgument(std::string("body: ") + e.what())));
  }
  if (spec.command.empty()) return respond(Error(InvalidArgument("command: empty")));
  boost::asio::post(pool_, [this, run_id, replica = static_cast<int32_t>(*replica),
                            spec = std::move(spec), respond = std::move(respond)] {
    auto target = target_(run_id, replica);
    if (!target.ok()) return respond(Error(target.status()));
    auto ctx = agent::ContextOfProcess(target->pid);
    if (!ctx.ok()) {
      return respond(
          Error(Status(ctx.status().code(), "the job's main process: " + ctx.status().message())));
    }
    auto entry = std::make_shared<Entry>();
    const agent::ExecSpec* run = &spec;
    bool switch_user = geteuid() == 0;
    if (!target->container_run_dir.empty()) {
      // Into its container: crun exec, started as root in the replica's cgroups.
      auto container = agent::ContainerExec::Prepare(target->container_run_dir, spec);
      if (!container.ok()) return respond(Error(container.status()));
      entry->container = std::make_unique<agent::ContainerExec>(std::move(*container));
      run = &entry->container->crun();
      switch_user = false;
    }
    auto session = agent::ExecSession::Start(*ctx, *run, switch_user);
    if (!session.ok()) return respond(Error(session.status()));
    entry->session = std::move(*session);
    entry->last_request_ms = SteadyClock().Now();
    entry->run_id = run_id;
    std::string id = RandomHex(16);
    {
      std::lock_guard lock(mu_);
      if (stopping_) return respond(Error(Unavailable("the agent is stopping")));
      sessions_[id] = std::move(entry);
    }
    respond(JsonOk(201, Json{{"session", id}}));
  });
}

void ExecServer::ReapLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(500));
    std::vector<std::shared_ptr<Entry>> gone;
    int64_t now = SteadyClock().Now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      int64_t quiet = now - it->second->last_request_ms;
      bool abandoned = quiet > abandon_after_ms_;
      bool done = quiet > kForgetFinishedMs && it->second->session->Finished();
      if (abandoned || done) {
        gone.push_back(std::move(it->second));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    gone.clear();
    lock.lock();
  }
}

}  // namespace corral::agentnet
