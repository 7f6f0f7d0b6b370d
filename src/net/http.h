// Plain HTTP request/response values shared by HttpServer and HttpClient (DESIGN §10).
// No Boost in this header: api/ and head/ code handles requests without seeing Beast.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace corral::net {

// Who is at the other end of a local (Unix) socket, as the kernel says (SO_PEERCRED, read when
// the connection was accepted): the process's user and group ids and its pid.
struct PeerCredentials {
  uint32_t uid = 0;
  uint32_t gid = 0;
  int32_t pid = 0;
  // Set by the head's API, never by the server, for a request a node's agent forwarded from
  // its own local socket (api/forwarded.h): `uid` is then what that node's kernel said, vouched
  // for by the node credential the request carries; gid and pid are not sent.
  bool via_node = false;
};

struct HttpRequest {
  std::string method;                          // "GET", "POST", ... as sent
  std::string target;                          // raw request target, e.g. "/v1/jobs?state=running"
  std::string path;                            // target without the query, percent-decoded
  std::map<std::string, std::string> query;    // url-decoded; last value wins on repeats
  std::map<std::string, std::string> headers;  // lower-case names; repeats joined with ", "
  std::string body;
  std::string remote;  // peer "ip:port"; "local uid N" for a Unix socket's peer
  // Set by the server for a request that came over one of its Unix listeners, and only then:
  // nothing the client sends sets it.
  std::optional<PeerCredentials> peer;

  // The token of an "Authorization: Bearer <token>" header (scheme case-insensitive,
  // surrounding spaces trimmed); "" when there is none or the scheme is not Bearer.
  std::string BearerToken() const;
  // Header value by lower-case name, or "" when absent.
  std::string Header(const std::string& lower_name) const;
};

struct HttpResponse {
  int status = 200;  // the server sends 500 for one outside 200..999
  std::string content_type = "application/json";
  std::string body;
  // When set (server side), makes the body on the connection's own I/O thread just before it
  // is written, so that a large answer is not encoded on the thread that answered (the head's
  // state machine). Owns what it encodes. A throw answers 500.
  std::function<std::string()> render;
  // Extra headers. The server sets Content-Type, Content-Length, Connection and Server
  // itself; on the client side this holds every response header, lower-case names.
  std::map<std::string, std::string> headers;
};

// {"error":{"code":<code>,"message":<message>}} with the given status: the one error
// shape of the API (DESIGN §10). code is stable and machine-readable ("not_found"),
// message is for humans.
HttpResponse JsonError(int status, std::string code, std::string message);

// Answers one request. Safe to call from any thread, exactly once; later calls are
// ignored. If the client has gone away (or the server stopped) the call is a no-op.
// Dropping every copy without calling it answers 500, so a request is never left hanging.
using Responder = std::function<void(HttpResponse)>;

// Called on an I/O thread for every request; must not block (hand slow work to another
// thread and answer through the Responder, which may be called later, from any thread).
using Handler = std::function<void(HttpRequest, Responder)>;

}  // namespace corral::net
