#include "api/exec_proxy.h"

#include <sys/random.h>

#include <chrono>

#include "api/api_service.h"
#include "api/forwarded.h"
#include "core/secrets.h"
#include "core/time.h"
#include "head/tokens.h"
#include "net/url.h"

namespace corral::api {
namespace {

// Longer than the agent abandons a session after: the agent ends it first.
constexpr int64_t kForgetAfterMs = 5 * 60 * 1000;

net::HttpResponse Error(int status, const std::string& code, const std::string& message) {
  return net::JsonError(status, code, message);
}

// The agent's answer as the caller gets it: its status, body and session headers.
net::HttpResponse Relayed(net::HttpResponse r) {
  net::HttpResponse out;
  out.status = r.status;
  out.content_type =
      r.headers.count("content-type") ? r.headers.at("content-type") : "application/json";
  out.body = std::move(r.body);
  for (const char* h : {"x-corral-next-offset", "x-corral-exit-code", "x-corral-exit-signal"}) {
    if (auto it = r.headers.find(h); it != r.headers.end()) out.headers[h] = it->second;
  }
  return out;
}

}  // namespace

ExecProxy::ExecProxy(head::Head* head, std::shared_ptr<net::AsyncHttpClient> client, bool agent_tls)
    : head_(head), client_(std::move(client)), agent_tls_(agent_tls) {}

size_t ExecProxy::SessionCount() {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

void ExecProxy::Forget(const std::string& id) {
  std::lock_guard lock(mu_);
  sessions_.erase(id);
}

void ExecProxy::ExpireIdle(int64_t now_ms) {
  std::lock_guard lock(mu_);
  std::erase_if(sessions_,
                [&](const auto& kv) { return now_ms - kv.second.last_ms > kForgetAfterMs; });
}

std::string ExecProxy::PrincipalOf(const net::HttpRequest& req) {
  if (req.peer) {
    return (req.peer->via_node ? "forwarded uid " : "local uid ") + std::to_string(req.peer->uid);
  }
  return head::Sha256Hex(req.BearerToken());
}

void ExecProxy::Open(const net::HttpRequest& req, const PathArgs& args, head::Presented who,
                     net::Responder respond) {
  auto command = DecodeOpenExec(req, args);
  if (!command.ok()) return respond(ErrorResponse(command.status()));
  ExpireIdle(SteadyClock().Now());
  Json body = Json::parse(req.body, nullptr, false);
  body.erase("replica");
  head_->Run(
      std::move(who), std::move(*command),
      [this, opener = PrincipalOf(req), respond, from = req.remote,
       body = body.dump()](Result<head::ExecTarget> target) mutable {
        if (!target.ok()) return respond(ErrorResponse(target.status()));
        std::string url = (agent_tls_ ? "https://" : "http://") + target->address;
        std::string path = "/v1/runs/" + target->run_id + "/exec?" +
                           net::EncodeQuery({{"replica", std::to_string(target->replica)}});
        auto grant = head_->RelayGrantFor(target->node, target->run_id);
        if (!grant.ok()) return respond(ErrorResponse(grant.status()));
        client_->Request(
            url, *grant, "POST", path, std::move(body), std::chrono::seconds(20),
            [this, url, opener, respond, from, t = *target](Result<net::HttpResponse> r) mutable {
              if (!r.ok()) {
                return respond(RelayErrorResponse(
                    Status(r.status().code(),
                           "node " + t.node + " (" + t.address + "): " + r.status().message())));
              }
              if (r->status != 201) return respond(Relayed(std::move(*r)));
              Json answer = Json::parse(r->body, nullptr, false);
              if (!answer.is_object() || !answer.contains("session") ||
                  !answer["session"].is_string()) {
                return respond(Error(502, "internal", "node " + t.node + ": a bad answer"));
              }
              head_->Audit(Json{{"at", SystemClock().Now()},
                                {"who", t.caller},
                                {"what", "exec_opened"},
                                {"job", t.job},
                                {"owner", t.owner},
                                {"node", t.node},
                                {"from", from}});
              std::string id = RandomHex(16);
              {
                std::lock_guard lock(mu_);
                sessions_[id] = Session{t.node,   url,    answer["session"].get<std::string>(),
                                        t.run_id, opener, SteadyClock().Now()};
              }
              net::HttpResponse out;
              out.status = 201;
              out.body = Json{{"session", id},
                              {"node", t.node},
                              {"job", t.job},
                              {"run", t.run_id},
                              {"replica", t.replica}}
                             .dump();
              respond(std::move(out));
            });
      });
}

void ExecProxy::Relay(const net::HttpRequest& req, const PathArgs& args, net::Responder respond) {
  const std::string& id = args.at(0);
  const std::string what = args.size() > 1 ? args.at(1) : "";
  std::string bearer = req.BearerToken();
  Session s;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    // The same answer for a session that is not there and one of another token's: an id
    // tells nobody else anything.
    if (it == sessions_.end() || !TokensEqual(it->second.opener, PrincipalOf(req))) {
      return respond(Error(404, "not_found", "no exec session " + id + " for this token"));
    }
    it->second.last_ms = SteadyClock().Now();
    s = it->second;
  }
  // The kernel names a local caller afresh on each connection; a token may have been revoked.
  // A forwarded caller's node may have been removed since (its credential is the bearer).
  if (!OnLocalSocket(req) && !head_->IsCurrentCredential(bearer)) {
    Forget(id);
    return respond(
        Error(401, "unauthenticated", "the token that opened this session is no longer valid"));
  }
  std::map<std::string, std::string> query(req.query.begin(), req.query.end());
  std::string path = "/v1/exec/" + s.agent_session + (what.empty() ? "" : "/" + what) +
                     (query.empty() ? "" : "?" + net::EncodeQuery(query));
  int64_t wait_ms = 0;
  if (auto w = req.query.find("wait_ms"); w != req.query.end()) {
    wait_ms = std::atoll(w->second.c_str());
  }
  const bool closing = req.method == "DELETE";
  // A fresh grant for each request: a session outlives any one grant.
  auto grant = head_->RelayGrantFor(s.node, s.run_id);
  if (!grant.ok()) return respond(ErrorResponse(grant.status()));
  client_->Request(
      s.agent_url, *grant, req.method, path, req.body,
      std::chrono::milliseconds(std::clamp<int64_t>(wait_ms, 0, 30000) + 15000),
      [this, id, closing, respond, node = s.node](Result<net::HttpResponse> r) mutable {
        if (!r.ok()) {
          return respond(RelayErrorResponse(
              Status(r.status().code(), "node " + node + ": " + r.status().message())));
        }
        // A session the agent no longer has, or one ended: forget it here too.
        if (r->status == 404 || closing) Forget(id);
        respond(Relayed(std::move(*r)));
      });
}

}  // namespace corral::api
