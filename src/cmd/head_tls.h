// `corral head`'s TLS flags and what they set up: the head's CA and server certificate in
// STATE_DIR/tls (or the operator's own), and the certificates it issues to agents' log
// endpoints. TLS is on with --tls, --tls-cert, or a non-loopback --listen (unless --no-tls).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "api/api_service.h"
#include "core/status.h"
#include "net/tls_context.h"

namespace corral::cmd {

struct HeadTlsFlags {
  bool tls = false;
  bool no_tls = false;
  std::vector<std::string> sans;
  std::string cert, key;

  void AddTo(CLI::App& app);
};

struct HeadTls {
  bool enabled = false;
  std::shared_ptr<net::TlsServerContext> server;  // what the API listener presents
  api::AgentTls agents;                           // issuing and trusting log endpoints' certs
  std::string ca_path;                            // what clients pass as --ca
  std::vector<std::string> notes;                 // what to tell the operator at start
};

// 127.0.0.0/8, ::1 and "localhost": where plain HTTP stays on one machine.
bool IsLoopbackHost(const std::string& host);

// Errors name the flag or file (kInvalidArgument for flags, kInternal for the state dir).
Result<HeadTls> SetUpHeadTls(const HeadTlsFlags& flags, const std::string& state_dir,
                             const std::string& listen_host);

}  // namespace corral::cmd
