// HttpClient: a small blocking HTTP/1.1 client for the CLI and the agent's own threads.
// Owned by its caller; keeps one keep-alive connection to one base URL.
//
// Threading: Request() blocks the calling thread (no threads of its own); calls from
// several threads are safe and run one at a time on an internal mutex. Use one client
// per thread that needs requests in parallel (e.g. an agent's long-poll and its log
// uploads).
//
// Transport: http, or https verifying the server's certificate chain and name (options.tls,
// else the process default of DefaultClientTls(): --ca / CORRAL_CA, or the system's store).
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "net/http.h"
#include "net/url.h"

namespace corral::net {

class TlsClientContext;

struct HttpClientOptions {
  size_t max_response_body_bytes = 64u << 20;  // larger -> kInternal
  std::string user_agent = "corral";
  std::shared_ptr<const TlsClientContext> tls;  // for https URLs; null: DefaultClientTls()
};

class HttpClient {
 public:
  // base_url: "http://host:port" with an optional path prefix ("http://h:8080/corral").
  // An invalid URL is reported by every Request(). An empty token sends no
  // Authorization header.
  HttpClient(std::string base_url, std::string bearer_token, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends method path_and_query (e.g. "/v1/jobs?state=running"; appended to the base
  // URL's path) with body (sent as application/json unless headers say otherwise), and
  // waits at most `timeout` for the whole exchange, connecting included.
  //
  // Any HTTP status is a successful Result: the caller reads response.status.
  // Errors: kUnavailable for connection refused, timeouts, resets (message names the
  // method and URL; the connection is dropped and the next call reconnects);
  // (a failed TLS handshake too, saying why: "TLS certificate verify failed: hostname
  // mismatch (trusting CA file F)"); kInvalidArgument for a bad base URL; kInternal for a
  // malformed or oversized response.
  //
  // A reused keep-alive connection that the server has closed is replaced transparently,
  // once, when the failure happened before any response byte arrived (the server did
  // not process the request), so a POST is never sent twice to a server that saw it.
  Result<HttpResponse> Request(std::string method, std::string path_and_query, std::string body,
                               std::chrono::milliseconds timeout,
                               const std::map<std::string, std::string>& headers = {});

  Result<HttpResponse> Get(std::string path_and_query, std::chrono::milliseconds timeout) {
    return Request("GET", std::move(path_and_query), "", timeout);
  }
  Result<HttpResponse> Post(std::string path_and_query, std::string body,
                            std::chrono::milliseconds timeout) {
    return Request("POST", std::move(path_and_query), std::move(body), timeout);
  }

  // Drops the kept connection (the next request reconnects).
  void CloseConnection();

  const std::string& base_url() const { return base_url_; }
  // Connections opened so far (1 while keep-alive works): for tests and metrics.
  int connections_opened() const;

 private:
  struct Conn;
  const std::string base_url_;
  const std::string bearer_token_;
  const HttpClientOptions options_;
  const Result<ParsedUrl> url_;
  mutable std::mutex mu_;
  std::unique_ptr<Conn> conn_;  // GUARDED_BY(mu_)
};

}  // namespace corral::net
