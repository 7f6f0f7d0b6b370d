#include "cli/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

namespace corral::cli {

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::string DefaultConfigPath(const EnvLookup& env) {
  if (auto p = env("CORRAL_CONFIG"); p && !p->empty()) return *p;
  if (auto home = env("HOME"); home && !home->empty()) return *home + "/.config/corral/config.json";
  return "";
}

Result<ClientConfig> LoadClientConfig(const EnvLookup& env) {
  ClientConfig cfg;
  const std::string path = DefaultConfigPath(env);
  std::error_code ec;
  if (!path.empty() && std::filesystem::exists(path, ec)) {
    std::ifstream in(path);
    if (!in)
      return InvalidArgument("cannot read config file " + path + ": " + std::strerror(errno));
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      return InvalidArgument("config file " + path +
                             " is not a JSON object like {\"addr\": \"http://HOST:PORT\", "
                             "\"token\": \"...\"}");
    }
    for (const char* key : {"addr", "token", "ca"}) {
      auto it = j.find(key);
      if (it == j.end() || it->is_null()) continue;
      if (!it->is_string()) {
        return InvalidArgument("config file " + path + ": field '" + key + "' must be a string");
      }
      const std::string k = key;
      (k == "addr" ? cfg.addr : k == "token" ? cfg.token : cfg.ca) = it->get<std::string>();
    }
    if (!cfg.addr.empty()) cfg.source = path;
  } else if (env("CORRAL_CONFIG") && !env("CORRAL_ADDR")) {
    return InvalidArgument("config file " + path + " (from CORRAL_CONFIG) does not exist");
  }
  if (auto a = env("CORRAL_ADDR"); a && !a->empty()) {
    cfg.addr = *a;
    cfg.source = "CORRAL_ADDR";
  }
  if (auto t = env("CORRAL_TOKEN"); t && !t->empty()) cfg.token = *t;
  if (auto c = env("CORRAL_CA"); c && !c->empty()) cfg.ca = *c;
  if (cfg.addr.empty() && env("CORRAL_STEP_HEAD") && env("CORRAL_STEP_TOKEN")) {
    // Inside a job with no config of the user's: the job's own head and credential, which
    // may act on that job only.
    cfg.addr = *env("CORRAL_STEP_HEAD");
    cfg.token = *env("CORRAL_STEP_TOKEN");
    cfg.ca = env("CORRAL_STEP_CA").value_or("");
    cfg.source = "CORRAL_STEP_HEAD";
  }
  const bool addr_from_env = cfg.source == "CORRAL_ADDR";
  if (cfg.token.empty() && !addr_from_env) {
    // No token: a local socket, where the kernel says who is calling. The one named, else the
    // head's, else a node agent's (which forwards to the head).
    std::vector<std::string> sockets = {kDefaultHeadSocket, kDefaultNodeSocket};
    if (auto named = env("CORRAL_SOCKET")) sockets = {*named};
    for (const std::string& socket : sockets) {
      struct stat st {};
      if (!socket.empty() && ::stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        cfg.addr = "unix://" + socket;
        cfg.source = "the local socket " + socket;
        break;
      }
    }
  }
  // The socket takes no token (its caller is the Unix user): none is sent there.
  if (cfg.addr.rfind("unix://", 0) == 0) cfg.token.clear();
  if (cfg.addr.empty()) {
    return FailedPrecondition(
        "no head address configured: set CORRAL_ADDR (e.g. export "
        "CORRAL_ADDR=http://127.0.0.1:7070) "
        "and CORRAL_TOKEN, or write " +
        (path.empty() ? std::string("$HOME/.config/corral/config.json") : path) +
        " as {\"addr\": \"http://HOST:PORT\", \"token\": \"...\"} (corral up writes it); on a "
        "head's or a node's host, corral uses its local socket without a token (CORRAL_SOCKET, "
        "default " +
        kDefaultHeadSocket + ", then " + kDefaultNodeSocket + ")");
  }
  while (cfg.addr.size() > 1 && cfg.addr.back() == '/') cfg.addr.pop_back();
  return cfg;
}

Result<ClientConfig> LoadClientConfig() { return LoadClientConfig(ProcessEnv()); }

Status WriteClientConfig(const std::string& path, const std::string& addr, const std::string& token,
                         const std::string& ca) {
  namespace fs = std::filesystem;
  fs::path p(path);
  if (p.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec) {
      return Internal("cannot create directory " + p.parent_path().string() + ": " + ec.message());
    }
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot write " + tmp + ": " + std::strerror(errno));
  ::fchmod(fd, 0600);  // in case the umask or an old file left other bits
  nlohmann::json j{{"addr", addr}, {"token", token}};
  if (!ca.empty()) j["ca"] = ca;
  const std::string text = j.dump(2) + "\n";
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string msg = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Internal("cannot write " + tmp + ": " + msg);
    }
    done += static_cast<size_t>(n);
  }
  int rc = ::fsync(fd);
  std::string msg = rc == 0 ? "" : std::strerror(errno);
  if (::close(fd) != 0 && rc == 0) {
    rc = -1;
    msg = std::strerror(errno);
  }
  if (rc != 0) {
    ::unlink(tmp.c_str());
    return Internal("cannot write " + tmp + ": " + msg);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string msg = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Internal("cannot rename " + tmp + " to " + path + ": " + msg);
  }
  return Status::Ok();
}

}  // namespace corral::cli
