// AsyncHttpClient: HTTP/1.1 requests that block no thread while they wait. One event loop of
// its own (one thread) carries any number of requests at once, each on a fresh connection;
// for a server that proxies to slow peers (the head fetching logs from agents), so that a
// hundred `corral logs -f` callers cost sockets, not threads.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/status.h"
#include "net/http.h"

namespace corral::net {

class TlsClientContext;

class AsyncHttpClient {
 public:
  using Done = std::function<void(Result<HttpResponse>)>;

  // `tls`: what https URLs trust (null: DefaultClientTls()); names are verified per request.
  explicit AsyncHttpClient(std::shared_ptr<const TlsClientContext> tls = nullptr);
  ~AsyncHttpClient();  // drops what is in flight (their `done` is never called), joins
  AsyncHttpClient(const AsyncHttpClient&) = delete;
  AsyncHttpClient& operator=(const AsyncHttpClient&) = delete;

  // Sends method path_and_query to base_url ("http://host:port" or "https://host:port"), with a bearer token unless
  // it is empty; `done` is called exactly once, on the client's thread, with the response
  // (any status) or kUnavailable (refused, reset, or `timeout` for the whole exchange passed),
  // kInvalidArgument (bad URL), kInternal (malformed or over 64 MiB). Any thread.
  void Request(const std::string& base_url, const std::string& bearer_token, std::string method,
               std::string path_and_query, std::chrono::milliseconds timeout, Done done) {
    Request(base_url, bearer_token, std::move(method), std::move(path_and_query), {}, timeout,
            std::move(done));
  }
  // The same with a request body (sent as application/octet-stream unless it is empty).
  void Request(const std::string& base_url, const std::string& bearer_token, std::string method,
               std::string path_and_query, std::string body, std::chrono::milliseconds timeout,
               Done done);

  // Requests in flight now (tests, metrics).
  int InFlight() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral::net
