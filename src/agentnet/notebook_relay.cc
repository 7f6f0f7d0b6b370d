#include "agentnet/notebook_relay.h"

#include "agent/sessions/notebook.h"

namespace corral::agentnet {
namespace {

// "JOB.ATTEMPT", digits only: it names a directory.
bool ValidRunId(const std::string& run) {
  auto dot = run.find('.');
  return dot != std::string::npos && dot > 0 && dot + 1 < run.size() && run.size() < 40 &&
         run.find_first_not_of("0123456789.") == std::string::npos &&
         run.find('.', dot + 1) == std::string::npos;
}

}  // namespace

NotebookRelay::NotebookRelay(std::string state_dir, const RelayAuth* auth, net::SpliceIdle idle)
    : runs_dir_(std::move(state_dir) + "/runs"), auth_(auth), idle_(idle) {}

void NotebookRelay::Take(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn) const {
  const std::string run = req.Header("x-corral-run");
  if (GrantCheck check = auth_->Check(req.BearerToken(), run); !check.ok()) {
    return conn->Answer(RelayAuth::Refusal(check));
  }
  if (!ValidRunId(run)) {
    return conn->Answer(net::JsonError(
        400, "invalid_argument", "header X-Corral-Run: got \"" + run + "\", want JOB.ATTEMPT"));
  }
  const std::string job = run.substr(0, run.find('.'));
  if (req.path.rfind("/s/" + job + "/", 0) != 0) {
    return conn->Answer(
        net::JsonError(400, "invalid_argument",
                       "path " + req.path + " is not under run " + run + "'s /s/" + job + "/"));
  }
  auto server = agent::ReadNotebook(runs_dir_ + "/" + run + ".0");
  if (!server.ok()) {
    return conn->Answer(
        net::JsonError(404, "not_found", "run " + run + " serves no notebook on this node"));
  }
  const auto idle = idle_.For(net::IsWebSocketUpgrade(req));
  std::map<std::string, std::string> headers = std::move(req.headers);
  headers.erase("x-corral-run");
  headers["authorization"] = "token " + server->token;
  conn->Splice("http://127.0.0.1:" + std::to_string(server->port), nullptr,
               net::SerializeRequest(req.method, req.target, headers, req.body), idle);
}

}  // namespace corral::agentnet
