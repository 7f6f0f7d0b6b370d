// The local socket a head or an agent serves its host's Unix users on (docs/security.md): where
// it goes unless told, and listening on it so that every local user reaches it.
#pragma once

#include <string>

#include "core/status.h"
#include "net/http_server.h"

namespace corral::cmd {

// The service's runtime directory's corral.sock (systemd's RuntimeDirectory=, in
// $RUNTIME_DIRECTORY), which systemd makes and removes; "none" elsewhere, so that daemons
// started by hand or by tests claim no shared path.
std::string DefaultLocalSocket();

// Listens on `path` (unless "none" or empty), its directory made 0755 if missing so that every
// local user reaches the socket (the server makes it 0666).
Status ListenOnLocalSocket(net::HttpServer& server, const std::string& path);

// Whether a --unix-socket value is usable: "none", or an absolute path.
bool IsLocalSocketFlag(const std::string& value);

}  // namespace corral::cmd
