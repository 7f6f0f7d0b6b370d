// Where the CLI finds the head: CORRAL_ADDR / CORRAL_TOKEN / CORRAL_CA, else a JSON config file
// ($CORRAL_CONFIG or $HOME/.config/corral/config.json) that `corral up` writes.
// Environment variables override the file field by field. With no token anywhere and no
// CORRAL_ADDR, a local socket where one exists: $CORRAL_SOCKET, else the head's
// (/run/corral/corral.sock), else a node agent's (/run/corral-node/corral.sock). The caller is
// then its Unix user (docs/security.md).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/status.h"

namespace corral::cli {

// Where a head serves its local socket unless told otherwise (corral head --unix-socket).
inline constexpr char kDefaultHeadSocket[] = "/run/corral/corral.sock";
// Where an agent serves its node's users unless told otherwise (corral agent --unix-socket);
// looked for after the head's, so that a host running both talks to its head directly.
inline constexpr char kDefaultNodeSocket[] = "/run/corral-node/corral.sock";

struct ClientConfig {
  std::string addr;    // e.g. http://127.0.0.1:7070, or unix:///run/corral/corral.sock
  std::string token;   // bearer token
  std::string ca;      // PEM file of the CA that signed an https head's certificate ("": system)
  std::string source;  // where addr came from, for messages ("CORRAL_ADDR", a file path)
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

// The config file path: $CORRAL_CONFIG, else $HOME/.config/corral/config.json ("" if no HOME).
std::string DefaultConfigPath(const EnvLookup& env);

// Reads the environment and the config file. A missing file is fine when the environment
// gives the address; an unreadable or malformed file, or no address at all, is an error
// that says how to set one.
Result<ClientConfig> LoadClientConfig(const EnvLookup& env);
Result<ClientConfig> LoadClientConfig();  // with the process environment

// Writes {"addr","token"[,"ca"]} to path with mode 0600, creating parent directories (0700).
// Replaces the file atomically (write to a temporary file, then rename).
Status WriteClientConfig(const std::string& path, const std::string& addr, const std::string& token,
                         const std::string& ca = "");

}  // namespace corral::cli
