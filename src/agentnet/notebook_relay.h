// The agent's half of a notebook's path (docs/interactive.md): the head splices each /s/JOB/
// connection it has authorised to the agent's endpoint, with a relay grant for this node and the
// run (relay_auth.h) and the run itself (X-Corral-Run); the agent swaps the grant for the
// notebook's own token (agent/notebook.h) and
// splices the connection to the Jupyter server on this node's loopback. The head never learns
// the notebook's port or token, and the Jupyter server listens on no address off the node.
#pragma once

#include <memory>
#include <string>

#include "agentnet/relay_auth.h"
#include "net/http.h"
#include "net/tunnel.h"

namespace corral::agentnet {

class NotebookRelay {
 public:
  // `idle`: how long a relayed connection may stay silent both ways before it is closed.
  // `auth` outlives the relay.
  NotebookRelay(std::string state_dir, const RelayAuth* auth,
                net::SpliceIdle idle = net::SpliceIdle{});
  // Any thread; does not block but for reading the run's small notebook file.
  void Take(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn) const;

 private:
  const std::string runs_dir_;
  const RelayAuth* const auth_;
  const net::SpliceIdle idle_;
};

}  // namespace corral::agentnet
