// Notebook runs (RunOrder::notebook, docs/interactive.md): the job's command is a Jupyter server
// that the agent binds to the node's loopback on a port it picks, with a token only the agent
// knows; the agent relays the head's /s/JOB/ traffic to it (agentnet/notebook_relay.h), so no
// port on the node is open to anyone but local processes that also need the token.
#pragma once

#include <cstdint>
#include <string>

#include "core/agent_protocol.h"
#include "core/status.h"

namespace corral::agent {

struct NotebookServer {
  int32_t port = 0;
  std::string token;
};

// The path under which the head serves job `job`'s notebook: "/s/JOB/".
std::string NotebookBaseUrl(JobId job);

// Before the run starts: picks a free loopback port and a token, records both in `run_dir`
// (0600, for the relay) and makes `order`'s command a Jupyter server on them. `as_root`: its
// tasks run as root (which Jupyter refuses unless told).
Status PrepareNotebook(RunOrder* order, const std::string& run_dir, bool as_root);

// What PrepareNotebook recorded in `run_dir`; kNotFound when the run is no notebook.
Result<NotebookServer> ReadNotebook(const std::string& run_dir);

// While it runs: "notebook ready on NODE" once the server has answered (remembered in
// `run_dir`), "" before. Asks the server at most once per call, briefly.
std::string NotebookNote(const std::string& run_dir, JobId job, const std::string& node);

// After it ended: why a notebook that never answered failed, with its log's tail; "" when it
// had answered.
std::string NotebookEarlyExit(const std::string& run_dir);

}  // namespace corral::agent
