// The agent's log endpoint (docs/api.md, "Agents"): the head proxies `corral logs` here.
//   GET /v1/runs/RUN_ID/logs?replica=R&task=T&stream=stdout|stderr&offset=N&max=N
// answers the bytes of one task's log from `offset`, with X-Corral-Next-Offset. Only the head
// may call it: the bearer is a relay grant for this node and RUN_ID (relay_auth.h). The same
// server answers GET /metrics.
#pragma once

#include <utility>  // before Boost.Asio (DESIGN §13)

#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <string>

#include "agentnet/exec_server.h"
#include "agentnet/relay_auth.h"
#include "net/http.h"

namespace corral::agentnet {

// One request, answered from the run directories under `state_dir`. Any thread; it reads a
// file, so not on a thread that other requests wait on (LogService).
net::HttpResponse ServeLog(const std::string& state_dir, const RelayAuth& auth,
                           const net::HttpRequest& req);

// The agent's HTTP handler. The server's I/O thread only hands each log read to a small pool
// of its own: a read that is slow (a busy or remote disk) delays that request alone, never the
// others on the node. /metrics takes the join token too, except from loopback: the samples say
// what every job on the node is doing with its GPUs, which is for the cluster's operators (and
// for anyone on the node itself, who can ask nvidia-smi) but not for whoever reaches the port.
// Owned by the agent's main(); Handle is called from the server's I/O threads.
class LogService {
 public:
  // `auth` outlives the service; `join_token` only reads /metrics from off the node.
  LogService(std::string state_dir, const RelayAuth* auth, std::string join_token,
             std::function<std::string()> render_metrics, int threads = 4);
  ~LogService();  // waits for the reads in flight
  LogService(const LogService&) = delete;
  LogService& operator=(const LogService&) = delete;

  void Handle(net::HttpRequest req, net::Responder respond);
  // `corral exec`'s paths go to `exec` (exec_server.h); unset: they are not found. Before the
  // server starts.
  void SetExec(ExecServer* exec) { exec_ = exec; }

 private:
  ExecServer* exec_ = nullptr;
  std::string state_dir_;
  const RelayAuth* const auth_;
  std::string join_token_;
  std::function<std::string()> render_metrics_;
  boost::asio::thread_pool pool_;
};

}  // namespace corral::agentnet
