#include "agent/sessions/notebook_activity.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "agent/node/loopback.h"

namespace corral::agent {
namespace {

using Json = nlohmann::json;
using std::chrono::steady_clock;

// An answer larger than this is no kernel list: refused, not buffered.
constexpr size_t kMaxAnswerBytes = 1 << 20;

// Milliseconds left until `deadline`, at least 0.
int Left(steady_clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, ms.count()));
}

// GET `path` from 127.0.0.1:`port` with Jupyter's token: the body of a 200 answer.
Result<std::string> GetLoopback(int32_t port, const std::string& path, const std::string& token,
                                int timeout_ms) {
  const auto deadline = steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto s = ConnectLoopback(port, Left(deadline));
  if (!s.ok()) return s.status();
  pollfd p{s->get(), POLLIN, 0};
  // HTTP/1.0: the server closes the connection after its answer, which marks its end.
  const std::string req =
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: token " + token + "\r\n\r\n";
  if (send(s->get(), req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return Unavailable("send to port " + std::to_string(port) + ": " + strerror(errno));
  }
  std::string answer;
  char buf[8192];
  for (;;) {
    if (poll(&p, 1, Left(deadline)) != 1) return Unavailable(path + ": no answer in time");
    ssize_t n = recv(s->get(), buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return Unavailable(path + ": " + strerror(errno));
    if (n == 0) break;
    answer.append(buf, static_cast<size_t>(n));
    if (answer.size() > kMaxAnswerBytes) return Unavailable(path + ": answer over 1 MiB");
  }
  if (answer.size() < 12 || answer.compare(9, 3, "200") != 0) {
    return Unavailable(path + ": answered " + answer.substr(0, answer.find('\r')));
  }
  auto body = answer.find("\r\n\r\n");
  if (body == std::string::npos) return Unavailable(path + ": an answer without a body");
  return answer.substr(body + 4);
}

}  // namespace

Result<TimeMs> ParseIsoUtc(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) !=
          6 ||
      used != 19 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) {
    return InvalidArgument("'" + text + "' is no ISO-8601 time (YYYY-MM-DDTHH:MM:SS)");
  }
  size_t i = 19;
  int64_t ms = 0;
  if (i < text.size() && text[i] == '.') {
    int64_t scale = 100;
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      ms += (text[i] - '0') * scale;
      scale /= 10;
    }
  }
  const std::string zone = text.substr(i);
  if (zone != "Z" && zone != "+00:00" && zone != "") {
    return InvalidArgument("'" + text + "': only UTC times (Z or +00:00) are understood");
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return static_cast<TimeMs>(timegm(&tm)) * 1000 + ms;
}

Result<TimeMs> LastActivity(const std::string& body, TimeMs now) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return InvalidArgument("not a JSON array of kernels or terminals");
  TimeMs latest = 0;
  for (const Json& k : j) {
    if (!k.is_object()) return InvalidArgument("an entry is not a JSON object");
    auto state = k.find("execution_state");
    // Running a cell: in use now, however long the cell takes. Not "starting": Jupyter shows a
    // kernel no client has talked to as starting for ever (its culler, too, spares only busy).
    if (state != k.end() && state->is_string() && state->get<std::string>() == "busy") {
      return now;
    }
    auto last = k.find("last_activity");
    if (last == k.end()) continue;  // a terminal of an older Jupyter: says nothing
    if (!last->is_string()) return InvalidArgument("last_activity: not a string");
    auto at = ParseIsoUtc(last->get<std::string>());
    if (!at.ok()) return InvalidArgument("last_activity: " + at.status().message());
    latest = std::max(latest, std::min(*at, now));
  }
  return latest;
}

std::vector<std::string> KernelIds(const std::string& body) {
  std::vector<std::string> out;
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return out;
  for (const Json& k : j) {
    if (k.is_object() && k.contains("id") && k["id"].is_string()) out.push_back(k["id"]);
  }
  return out;
}

Result<TimeMs> PollNotebookActivity(const NotebookServer& server, JobId job, TimeMs now,
                                    int timeout_ms, std::vector<std::string>* kernels) {
  TimeMs latest = 0;
  for (const char* what : {"kernels", "terminals"}) {
    const std::string path = NotebookBaseUrl(job) + "api/" + what;
    auto body = GetLoopback(server.port, path, server.token, timeout_ms);
    if (!body.ok()) return body.status();
    auto at = LastActivity(*body, now);
    if (!at.ok()) return InvalidArgument(path + ": " + at.status().message());
    latest = std::max(latest, *at);
    if (kernels != nullptr && std::string(what) == "kernels") *kernels = KernelIds(*body);
  }
  return latest;
}

namespace {

// Follows each kernel of `ids` (opening the WebSockets of new ones, dropping those of kernels
// gone) and says whether any runs a cell.
bool FollowKernels(KernelFollows* follows, const NotebookServer& server, JobId job,
                   const std::vector<std::string>& ids, TimeMs now, int timeout_ms) {
  std::erase_if(*follows, [&](const auto& f) {
    return std::find(ids.begin(), ids.end(), f.first) == ids.end();
  });
  bool cell = false;
  for (const std::string& id : ids) {
    KernelFollow& f = (*follows)[id];
    if (!f.watch && now >= f.retry_at) {
      auto w = KernelWatch::Open(server.port, NotebookBaseUrl(job), id, server.token, timeout_ms);
      if (w.ok()) {
        f.watch = std::move(*w);
      } else {
        f.retry_at = now + kKernelWatchRetryMs;
        spdlog::warn("notebook of job {}: cannot follow kernel {}: {}", job, id,
                     w.status().message());
      }
    }
    if (!f.watch) continue;
    if (Status st = f.watch->Pump(); !st.ok()) {
      spdlog::warn("notebook of job {}: stopped following kernel {}: {}", job, id, st.message());
      f.watch.reset();
      f.retry_at = now + kKernelWatchRetryMs;
      continue;
    }
    cell = cell || f.watch->running_cell();
  }
  return cell;
}

}  // namespace

bool UpdateNotebookActivity(NotebookActivity* a, const NotebookServer& server, JobId job,
                            TimeMs now, DurationMs every_ms, int timeout_ms) {
  if (a->polled_at != 0 && now - a->polled_at < every_ms) return false;
  a->polled_at = now;
  std::vector<std::string> kernels;
  auto at = PollNotebookActivity(server, job, now, timeout_ms, &kernels);
  if (!at.ok()) {
    spdlog::warn("notebook of job {}: cannot tell its kernel activity: {}", job,
                 at.status().message());
    return false;
  }
  if (a->kernels == nullptr) a->kernels = std::make_shared<KernelFollows>();
  const bool cell = FollowKernels(a->kernels.get(), server, job, kernels, now, timeout_ms);
  const TimeMs seen = cell ? now : *at;
  const TimeMs before = a->active_at;
  a->active_at = std::max(a->active_at, seen);
  const bool was = a->busy;
  a->busy = seen == now;  // LastActivity's word for a kernel at work, or its cell seen running
  const bool woke = a->active_at > before && now - before > kNotebookWakeMs;
  return a->busy != was || woke;
}

}  // namespace corral::agent
