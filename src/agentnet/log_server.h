// The agent's log endpoint (docs/api.md, "Agents"): the head proxies `corral logs` here.
//   GET /v1/runs/RUN_ID/logs?replica=R&task=T&stream=stdout|stderr&offset=N&max=N
// answers the bytes of one task's log from `offset`, with X-Corral-Next-Offset. Only the head
// may call it (the join token as bearer).
#pragma once

#include <string>

#include "net/http.h"

namespace corral::agentnet {

// One request, answered from the run directories under `state_dir`. Any thread.
net::HttpResponse ServeLog(const std::string& state_dir, const std::string& join_token,
                           const net::HttpRequest& req);

}  // namespace corral::agentnet
