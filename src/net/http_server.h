// HttpServer: an asynchronous HTTP/1.1 server (Boost.Beast) with keep-alive, on a small
// fixed pool of I/O threads. Owned by the process that serves (the head); one instance
// may listen on several addresses.
//
// Threading: the Handler runs on an I/O thread, never two at once for one connection,
// but concurrently for different connections when io_threads > 1: it must be
// thread-safe, and must not block (post the work to the owner's thread). It may keep the Responder
// and call it later from any thread: a held request (a long-poll) costs a socket and a few hundred
// bytes, not a thread, so thousands can wait. While a response is pending the connection has no
// read timeout, and the server keeps watching the socket: if the client disconnects (EOF or reset),
// the connection is closed at once and the Responder becomes a no-op. (So a client that half-closes
// its side after sending a request counts as gone, as in Go's net/http.)
//
// Lifecycle: construct, Listen() one or more times, Start(), ..., Stop() (or destroy).
// Listen/Start/Stop are called from the owning thread, not from a Handler.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"
#include "net/http.h"
#include "net/tunnel.h"

namespace corral::net {

class TlsServerContext;

struct HttpServerOptions {
  int io_threads = 2;
  size_t max_body_bytes = 8u << 20;     // larger -> 413
  size_t max_header_bytes = 16u << 10;  // larger -> 431
  // Time to receive a whole request header once the connection is idle, and again for
  // its body; an idle keep-alive connection is closed after it. Not applied while a
  // response is pending (long-polls wait as long as the handler takes).
  std::chrono::milliseconds read_timeout{30'000};
  // The whole of a request's header (and a TLS handshake) must arrive within this (or
  // read_timeout, if shorter) of the connection's start or of the previous answer, however it
  // trickles in: a slow client holds a connection this long at most.
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds write_timeout{30'000};  // to send one response
  // Open connections from one client address at most; one more is closed unanswered as it is
  // accepted, so that one client's idle connections cannot use up the process's files and
  // leave others unserved. 0: no cap (the head sets one: --max-connections-per-address).
  size_t max_connections_per_address = 0;
  // Set: every listener serves HTTPS only (a connection whose TLS handshake fails, e.g. plain
  // HTTP, is closed unanswered). The handshake counts against read_timeout.
  std::shared_ptr<TlsServerContext> tls;
  // Set (with a non-empty prefix): a request whose target starts with the prefix is not
  // given to the Handler; its connection is handed to `takeover` (tunnel.h) and leaves the
  // server (it no longer counts in ConnectionCount), but keeps its place under its address's
  // cap until it closes: relayed connections and WebSockets are held to the same cap.
  std::string takeover_prefix;
  Takeover takeover;
};

class HttpServer {
 public:
  // REQUIRES: io_threads >= 1.
  explicit HttpServer(Handler handler, int io_threads = 2);
  HttpServer(Handler handler, HttpServerOptions options);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens on host:port (port 0: an ephemeral port). Returns the bound port.
  // REQUIRES: before Start().
  Result<int> Listen(const std::string& host, int port);

  // Binds and listens on a local (Unix) stream socket at `path`, mode 0666 so that every local
  // user may connect: each request on it carries its connection's peer credentials
  // (HttpRequest::peer) and is served over plain HTTP whatever `tls` says. A socket left at
  // `path` by a process that is gone is replaced; one that answers, or a file that is not a
  // socket, is refused. The file is removed at Stop(). REQUIRES: before Start().
  Status ListenUnix(const std::string& path);

  // Starts the I/O threads and begins accepting. Idempotent.
  void Start();

  // Graceful stop: closes the listeners and every connection (held requests get no
  // answer; their Responders become no-ops), then joins the I/O threads. Idempotent;
  // after it, the server cannot be restarted.
  void Stop();

  // Number of open connections (for metrics and tests). Any thread.
  size_t ConnectionCount() const;

  struct Impl;  // public only so that the .cc's session classes can name it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral::net
