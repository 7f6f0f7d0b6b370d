// Connections an HttpServer hands over after one request, for a proxy whose traffic is not one
// request and one answer (a notebook's pages and its WebSockets, docs/interactive.md): the
// proxy answers it itself, or splices it to an upstream server and relays bytes both ways.
// Boost-free: api/ and agentnet/ code takes connections without seeing Beast.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "net/http.h"

namespace corral::net {

class TlsClientContext;

// A client's connection, taken from the server with its first request read. Any thread;
// call exactly one of Answer and Splice (a connection dropped without either is closed).
class TakenConnection {
 public:
  virtual ~TakenConnection() = default;
  // Whether the client reached the server over TLS (so a cookie set on it may say Secure).
  virtual bool Encrypted() const = 0;
  // Writes `r` (with Connection: close) and closes.
  virtual void Answer(HttpResponse r) = 0;
  // Connects to base_url ("http://host:port" or "https://..."; `tls`: what it trusts, null:
  // DefaultClientTls()), sends `first` (a whole request, SerializeRequest) and then whatever
  // the client sends, and relays the upstream's bytes back, until either side closes or no
  // byte has passed either way for `idle` (0: no limit), when both are closed. A failed
  // connect answers 502 with the reason.
  virtual void Splice(std::string base_url, std::shared_ptr<const TlsClientContext> tls,
                      std::string first, std::chrono::milliseconds idle) = 0;
};

// How long a spliced connection may pass no byte either way before it is closed: a plain
// request's answer comes at once, a WebSocket (a notebook's kernel channel) may wait for a
// user who reads.
struct SpliceIdle {
  std::chrono::milliseconds http{30'000};  // HttpServerOptions::read_timeout's default
  std::chrono::milliseconds websocket{std::chrono::hours(1)};
  std::chrono::milliseconds For(bool websocket_upgrade) const {
    return websocket_upgrade ? websocket : http;
  }
};
// Whether `req` asks to become a WebSocket.
bool IsWebSocketUpgrade(const HttpRequest& req);

// Given a request whose path starts with the server's takeover_prefix, on an I/O thread; must
// not block.
using Takeover = std::function<void(HttpRequest, std::shared_ptr<TakenConnection>)>;

// An HTTP/1.1 request as bytes: `headers` (lower-case names, as HttpRequest has them) less
// Content-Length and Transfer-Encoding, with the body's own length.
std::string SerializeRequest(const std::string& method, const std::string& target,
                             const std::map<std::string, std::string>& headers,
                             const std::string& body);

// A Cookie header's value without the cookie `name` ("" when nothing is left).
std::string CookieWithout(const std::string& cookie_header, const std::string& name);
// The value of cookie `name` in a Cookie header, "" when absent.
std::string CookieValue(const std::string& cookie_header, const std::string& name);

}  // namespace corral::net
