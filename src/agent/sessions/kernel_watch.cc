#include "agent/sessions/kernel_watch.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "agent/node/loopback.h"

namespace corral::agent {
namespace {

using Json = nlohmann::json;

constexpr uint8_t kContinuation = 0x0, kText = 0x1, kClose = 0x8, kPing = 0x9;
// A message larger than this is output, never a status: skipped, not buffered whole.
constexpr size_t kMaxMessageBytes = 1 << 20;
// Execute requests followed at once; past this the oldest is forgotten (its "idle" was lost).
constexpr size_t kMaxExecuting = 256;
constexpr size_t kMaxReadPerPump = 8 << 20;

}  // namespace

std::string ClientFrame(uint8_t opcode, const std::string& payload, uint32_t mask) {
  std::string f;
  f.push_back(static_cast<char>(0x80 | opcode));
  if (payload.size() < 126) {
    f.push_back(static_cast<char>(0x80 | payload.size()));
  } else if (payload.size() <= 0xffff) {
    f.push_back(static_cast<char>(0x80 | 126));
    f.push_back(static_cast<char>(payload.size() >> 8));
    f.push_back(static_cast<char>(payload.size() & 0xff));
  } else {
    f.push_back(static_cast<char>(0x80 | 127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      f.push_back(static_cast<char>((static_cast<uint64_t>(payload.size()) >> shift) & 0xff));
    }
  }
  const uint8_t key[4] = {static_cast<uint8_t>(mask >> 24), static_cast<uint8_t>(mask >> 16),
                          static_cast<uint8_t>(mask >> 8), static_cast<uint8_t>(mask)};
  f.append(reinterpret_cast<const char*>(key), 4);
  for (size_t i = 0; i < payload.size(); ++i) {
    f.push_back(static_cast<char>(static_cast<uint8_t>(payload[i]) ^ key[i % 4]));
  }
  return f;
}

Result<std::string> KernelStatusTracker::Feed(const std::string& bytes) {
  buffer_ += bytes;
  std::string reply;
  for (;;) {
    if (skip_ > 0) {
      const size_t drop = static_cast<size_t>(std::min<uint64_t>(skip_, buffer_.size()));
      buffer_.erase(0, drop);
      skip_ -= drop;
      if (skip_ > 0) break;
    }
    if (buffer_.size() < 2) break;
    const auto* b = reinterpret_cast<const uint8_t*>(buffer_.data());
    const bool fin = (b[0] & 0x80) != 0;
    const uint8_t opcode = b[0] & 0x0f;
    if ((b[1] & 0x80) != 0) return InvalidArgument("a masked frame from the server");
    uint64_t len = b[1] & 0x7f;
    size_t at = 2;
    if (len == 126) {
      if (buffer_.size() < 4) break;
      len = (uint64_t{b[2]} << 8) | b[3];
      at = 4;
    } else if (len == 127) {
      if (buffer_.size() < 10) break;
      len = 0;
      for (int i = 0; i < 8; ++i) len = (len << 8) | b[2 + i];
      at = 10;
    }
    if (len > kMaxMessageBytes) {
      // Output too large to be a status: dropped as it comes, never held whole.
      if (opcode >= 0x8) return InvalidArgument("a control frame of " + std::to_string(len));
      fragments_.clear();
      fragmented_text_ = false;
      buffer_.erase(0, at);
      skip_ = len;
      continue;
    }
    if (buffer_.size() - at < len) break;
    std::string payload = buffer_.substr(at, len);
    buffer_.erase(0, at + len);
    if (opcode == kClose) {
      closed_ = true;
      break;
    }
    if (opcode == kPing) {
      reply += ClientFrame(0xA, payload, static_cast<uint32_t>(std::random_device{}()));
      continue;
    }
    if (opcode >= 0x8) continue;  // a pong, or another control frame
    if (opcode != kContinuation) {
      fragments_.clear();
      fragmented_text_ = opcode == kText;
    }
    if (fragments_.size() + payload.size() > kMaxMessageBytes) {
      fragmented_text_ = false;  // too large for a status: skipped to its end
      fragments_.clear();
    } else if (fragmented_text_) {
      fragments_ += payload;
    }
    if (!fin) continue;
    if (fragmented_text_) OnMessage(fragments_);
    fragments_.clear();
    fragmented_text_ = false;
  }
  return reply;
}

void KernelStatusTracker::OnMessage(const std::string& json) {
  Json m = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object() || m.value("channel", "") != "iopub") return;
  const Json& header = m.value("header", Json::object());
  if (!header.is_object() || header.value("msg_type", "") != "status") return;
  const Json& content = m.value("content", Json::object());
  const std::string state =
      content.is_object() ? content.value("execution_state", std::string()) : std::string();
  const Json& parent = m.value("parent_header", Json::object());
  if (state == "restarting" || state == "dead") {
    executing_.clear();  // a new kernel process runs nothing yet, and lost our request
    probe_.clear();
    return;
  }
  if (!parent.is_object()) return;
  const std::string id = parent.value("msg_id", std::string());
  if (id.empty()) return;
  if (id == probe_ && state == "idle") {
    probe_.clear();  // answered: nothing ran before it that it had to wait for
    return;
  }
  if (parent.value("msg_type", "") != "execute_request") return;
  if (state == "busy") {
    if (executing_.size() >= kMaxExecuting) executing_.erase(executing_.begin());
    executing_.insert(id);
  } else if (state == "idle") {
    executing_.erase(id);
  }
}

Result<KernelWatch> KernelWatch::Open(int32_t port, const std::string& base_url,
                                      const std::string& kernel, const std::string& token,
                                      int timeout_ms) {
  if (kernel.empty() || kernel.find_first_not_of("0123456789abcdefABCDEF-") != std::string::npos) {
    return InvalidArgument("kernel id '" + kernel + "': not a kernel id");
  }
  auto fd = ConnectLoopback(port, timeout_ms);
  if (!fd.ok()) return fd.status();
  KernelWatch w(std::move(*fd));
  // The key is only the handshake's nonce: the server's answer is not checked against it on
  // loopback, where the agent reaches the server it started.
  const std::string req = "GET " + base_url + "api/kernels/" + kernel +
                          "/channels HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Key: Y29ycmFsLWtlcm5lbC13YQ==\r\n"
                          "Sec-WebSocket-Version: 13\r\nAuthorization: token " +
                          token + "\r\n\r\n";
  if (send(w.fd_.get(), req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return Unavailable("send to port " + std::to_string(port) + ": " + strerror(errno));
  }
  return w;
}

Status KernelWatch::Pump() {
  if (!fd_.valid()) return Unavailable("not connected");
  char buf[16384];
  // A kernel printing without pause never leaves the socket empty: what is left is read at
  // the next poll, so that one poll takes bounded time.
  for (size_t taken = 0; taken < kMaxReadPerPump;) {
    ssize_t n = recv(fd_.get(), buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::Ok();
    if (n < 0) return Unavailable(std::string("recv: ") + strerror(errno));
    if (n == 0) return Unavailable("the server closed the connection");
    taken += static_cast<size_t>(n);
    std::string data(buf, static_cast<size_t>(n));
    if (!upgraded_) {
      head_ += data;
      auto end = head_.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (head_.size() > 16384) return Unavailable("an upgrade answer without an end");
        continue;
      }
      if (head_.compare(0, 12, "HTTP/1.1 101") != 0) {
        return Unavailable("the upgrade was answered " + head_.substr(0, head_.find('\r')));
      }
      upgraded_ = true;
      data = head_.substr(end + 4);
      head_.clear();
      // Whether a cell runs already: the kernel answers this after it (the header's comment).
      const std::string id = "corral-agent-" + std::to_string(std::random_device{}());
      const Json probe = {{"channel", "shell"},
                          {"header",
                           {{"msg_id", id},
                            {"username", "corral-agent"},
                            {"session", id},
                            {"msg_type", "kernel_info_request"},
                            {"version", "5.3"}}},
                          {"parent_header", Json::object()},
                          {"metadata", Json::object()},
                          {"content", Json::object()}};
      const std::string frame =
          ClientFrame(kText, probe.dump(), static_cast<uint32_t>(std::random_device{}()));
      if (send(fd_.get(), frame.data(), frame.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(frame.size())) {
        return Unavailable(std::string("send: ") + strerror(errno));
      }
      tracker_.AwaitAnswer(id);
    }
    auto reply = tracker_.Feed(data);
    if (!reply.ok()) return Unavailable(reply.status().message());
    if (!reply->empty()) (void)send(fd_.get(), reply->data(), reply->size(), MSG_NOSIGNAL);
    if (tracker_.closed()) return Unavailable("the server closed the WebSocket");
  }
  return Status::Ok();
}

}  // namespace corral::agent
