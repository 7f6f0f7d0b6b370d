#include "agent/sessions/notebook.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "agent/node/loopback.h"
#include "core/secrets.h"

namespace corral::agent {
namespace {

constexpr int kProbeTimeoutMs = 300;
constexpr size_t kTailBytes = 2000;
const char* const kServerFile = "notebook";
const char* const kReadyFile = "notebook-ready";

// A port the kernel deems free on loopback now. Jupyter binds it a moment later; a race
// lost to another process ends the notebook with "address in use" in its log, said at once.
Result<int32_t> FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal("socket: " + std::string(strerror(errno)));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int32_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  if (port == 0) return Internal("no free loopback port for the notebook");
  return port;
}

// Whether the server answers an authenticated request with 200, within kProbeTimeoutMs.
bool Answers(const NotebookServer& s, JobId job) {
  auto fd = ConnectLoopback(s.port, kProbeTimeoutMs);
  if (!fd.ok()) return false;
  const std::string req = "GET " + NotebookBaseUrl(job) +
                          "api/status HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: token " +
                          s.token + "\r\n\r\n";
  if (send(fd->get(), req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return false;
  }
  pollfd p{fd->get(), POLLIN, 0};
  char buf[32] = {};
  if (poll(&p, 1, kProbeTimeoutMs) != 1) return false;
  ssize_t n = recv(fd->get(), buf, sizeof(buf) - 1, 0);
  return n >= 12 && std::string(buf, 12).substr(9, 3) == "200";
}

std::string Tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  std::streamoff from = size > static_cast<std::streamoff>(kTailBytes)
                            ? size - static_cast<std::streamoff>(kTailBytes)
                            : 0;
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (from > 0) {
    auto nl = text.find('\n');
    if (nl != std::string::npos) text = "..." + text.substr(nl);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

std::string NotebookBaseUrl(JobId job) { return "/s/" + std::to_string(job) + "/"; }

Status PrepareNotebook(RunOrder* order, const std::string& run_dir, bool as_root) {
  auto port = FreeLoopbackPort();
  if (!port.ok()) return port.status();
  NotebookServer s{*port, RandomHex(24)};
  const std::string path = run_dir + "/" + kServerFile;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Internal("cannot write " + path + ": " + strerror(errno));
  const std::string line = std::to_string(s.port) + " " + s.token + "\n";
  const bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!written) return Internal("cannot write " + path);
  // Loopback only; the head's Host header passes (remote access); the token from the
  // environment, not the command line, which other users on the node can read.
  for (const std::string& arg :
       {std::string("--no-browser"), std::string("--ip=127.0.0.1"),
        "--port=" + std::to_string(s.port), std::string("--port-retries=0"),
        "--NotebookApp.base_url=" + NotebookBaseUrl(order->job_id),
        std::string("--NotebookApp.allow_remote_access=True")}) {
    order->command.push_back(arg);
  }
  if (as_root) order->command.push_back("--allow-root");
  order->env["JUPYTER_TOKEN"] = s.token;
  for (auto& env : order->task_envs) env["JUPYTER_TOKEN"] = s.token;
  return Status::Ok();
}

Result<NotebookServer> ReadNotebook(const std::string& run_dir) {
  std::ifstream in(run_dir + "/" + kServerFile);
  NotebookServer s;
  if (!(in >> s.port >> s.token) || s.port <= 0 || s.token.empty()) {
    return NotFound("no notebook server in run directory " + run_dir);
  }
  return s;
}

std::string NotebookNote(const std::string& run_dir, JobId job, const std::string& node) {
  const std::string note = "notebook ready on " + node;
  const std::string ready = run_dir + "/" + kReadyFile;
  struct stat st {};
  if (stat(ready.c_str(), &st) == 0) return note;
  auto s = ReadNotebook(run_dir);
  if (!s.ok() || !Answers(*s, job)) return "";
  int fd = open(ready.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) close(fd);
  return note;
}

std::string NotebookEarlyExit(const std::string& run_dir) {
  struct stat st {};
  if (stat((run_dir + "/" + kReadyFile).c_str(), &st) == 0) return "";
  std::string tail = Tail(run_dir + "/logs/stderr");
  return "the notebook server exited before it answered" +
         (tail.empty() ? std::string(" (its log is empty)") : "; its log ends:\n" + tail);
}

}  // namespace corral::agent
