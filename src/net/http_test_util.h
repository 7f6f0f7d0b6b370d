// What the HTTP tests share: servers that echo, hold or follow a script, and a raw socket for
// what HttpClient will not send.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "net/http_server.h"

namespace corral::net::http_test {

using namespace std::chrono_literals;

inline constexpr auto kTimeout = 5s;

// Holds Responders that a test answers later, from its own thread.
class Held {
 public:
  void Add(HttpRequest req, Responder r) {
    std::lock_guard<std::mutex> lock(mu_);
    reqs_.push_back(std::move(req));
    responders_.push_back(std::move(r));
    cv_.notify_all();
  }
  bool WaitFor(size_t n, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return responders_.size() >= n; });
  }
  std::vector<Responder> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(responders_, {});
  }
  std::vector<HttpRequest> Requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return reqs_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<HttpRequest> reqs_;
  std::vector<Responder> responders_;
};

inline HttpResponse Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

// Echoes the request as JSON; /hold/... is kept in `held`; /drop is dropped unanswered.
inline Handler EchoHandler(Held* held = nullptr) {
  return [held](HttpRequest req, Responder respond) {
    if (req.path.rfind("/hold", 0) == 0 && held != nullptr)
      return held->Add(std::move(req), std::move(respond));
    if (req.path == "/drop") return;
    if (req.path == "/missing")
      return respond(JsonError(404, "not_found", "no such thing: " + req.path));
    nlohmann::json j;
    j["method"] = req.method;
    j["target"] = req.target;
    j["path"] = req.path;
    j["query"] = req.query;
    j["headers"] = req.headers;
    j["body"] = req.body;
    j["remote"] = req.remote;
    j["token"] = req.BearerToken();
    HttpResponse r;
    r.body = j.dump();
    r.headers["X-Corral-Test"] = "yes";
    respond(std::move(r));
  };
}

struct TestServer {
  explicit TestServer(Handler h, HttpServerOptions o = {}) : server(std::move(h), o) {
    auto p = server.Listen("127.0.0.1", 0);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    port = p.ok() ? *p : 0;
    server.Start();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  HttpServer server;
  int port = 0;
};

inline bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A raw blocking socket, for what HttpClient will not send.
class RawConn {
 public:
  explicit RawConn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawConn() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }
  void ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }
  bool Send(std::string_view s) {
    while (!s.empty()) {
      const ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads until `needle` has been seen `count` times, or EOF/timeout; returns all read.
  std::string ReadUntil(std::string_view needle, int count = 1) {
    while (Count(needle) < count) {
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      data_.append(buf, static_cast<size_t>(n));
    }
    return data_;
  }
  // True when the server closed the connection (recv returns 0) within the timeout.
  bool ReadsEof() {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      data_.append(buf, static_cast<size_t>(n));
    }
  }
  const std::string& data() const { return data_; }

 private:
  int Count(std::string_view needle) const {
    int c = 0;
    for (size_t pos = data_.find(needle); pos != std::string::npos;
         pos = data_.find(needle, pos + 1))
      ++c;
    return c;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string data_;
};

// A scripted one-thread TCP server: for the i-th accepted connection, script(i, fd)
// runs the conversation. Lets tests misbehave in ways HttpServer never would.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::function<void(int, int)> script) : script_(std::move(script)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listen_fd_, 16);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (int i = 0;; ++i) {
        const int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd < 0) return;
        script_(i, fd);
        ::close(fd);
      }
    });
  }
  ~ScriptedServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Reads one header-only request; false on EOF.
  static bool ReadRequest(int fd) {
    std::string got;
    char c;
    while (got.size() < 4 || got.compare(got.size() - 4, 4, "\r\n\r\n") != 0) {
      if (::recv(fd, &c, 1, 0) != 1) return false;
      got.push_back(c);
    }
    return true;
  }
  static void Send(int fd, std::string_view s) { ::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }
  static std::string Ok(std::string_view body) {
    return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
           std::string(body);
  }

 private:
  std::function<void(int, int)> script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace corral::net::http_test
