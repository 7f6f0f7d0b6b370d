#include "cmd/local_socket.h"

#include <cstdlib>
#include <filesystem>

namespace corral::cmd {

std::string DefaultLocalSocket() {
  const char* dir = std::getenv("RUNTIME_DIRECTORY");
  if (dir == nullptr || *dir == '\0') return "none";
  std::string first = dir;  // several directories are separated by ':'
  return first.substr(0, first.find(':')) + "/corral.sock";
}

Status ListenOnLocalSocket(net::HttpServer& server, const std::string& path) {
  if (path.empty() || path == "none") return Status::Ok();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return Unavailable("cannot make " + dir.string() + ": " + ec.message());
    std::filesystem::permissions(dir, std::filesystem::perms(0755), ec);
  }
  return server.ListenUnix(path);
}

bool IsLocalSocketFlag(const std::string& value) {
  return value == "none" || value.empty() || value.front() == '/';
}

}  // namespace corral::cmd
