#include "net/http_client.h"

// <utility> before any Boost.Asio header: Boost 1.74's awaitable.hpp needs std::exchange.
#include <utility>

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <optional>
#include <vector>

#include "net/strings_internal.h"
#include "net/tls_context.h"

namespace corral::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

// A closed connection that may not have seen the request: safe to retry on a new one.
bool IsStaleConnectionError(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted || ec == asio::ssl::error::stream_truncated;
}

}  // namespace

// The one kept connection, plain or TLS, and the io_context its blocking calls run on (in
// the caller's thread).
struct HttpClient::Conn {
  asio::io_context ioc{1};
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  int opened = 0;
  std::string failure;  // why the last Connect failed, when the error code does not say it

  beast::tcp_stream& Tcp() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  bool connected() { return (plain || tls) && Tcp().socket().is_open(); }

  // Calls f with the stream requests go over.
  template <typename F>
  void WithStream(F&& f) {
    if (tls) {
      f(*tls);
    } else {
      f(*plain);
    }
  }

  void Close() {
    if (plain || tls) {
      error_code ignored;
      Tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
      Tcp().close();
      plain.reset();
      tls.reset();
    }
    buffer.clear();
  }

  // True when the server closed the idle connection (or sent something unasked for):
  // then it cannot carry the next request.
  bool PeerClosed() {
    char c;
    const ssize_t n = ::recv(Tcp().socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    return true;  // 0: orderly close; >0: stray bytes
  }

  // Runs the queued operation to completion (tcp_stream's expiry bounds it).
  void Run() {
    ioc.restart();
    ioc.run();
  }

  // tls_ctx == nullptr: plain TCP. Else the TLS handshake, verifying the server's
  // certificate and that it names url.host.
  error_code Connect(const ParsedUrl& url, Clock::time_point deadline,
                     const TlsClientContext* tls_ctx) {
    Close();
    failure.clear();
    if (!url.socket_path.empty()) return ConnectUnix(url.socket_path);
    error_code ec;
    std::vector<tcp::endpoint> endpoints;
    const auto addr = asio::ip::make_address(url.host, ec);
    if (!ec) {
      endpoints.emplace_back(addr, static_cast<unsigned short>(url.port));
    } else {
      // Synchronous getaddrinfo: no resolver thread, but not bounded by the deadline.
      tcp::resolver resolver(ioc);
      auto results = resolver.resolve(url.host, std::to_string(url.port), ec);
      if (ec) return ec;
      for (const auto& r : results) endpoints.push_back(r.endpoint());
      if (endpoints.empty()) return asio::error::host_not_found;
    }
    if (tls_ctx != nullptr) {
      tls.emplace(ioc, tls_ctx->asio());
      if (Status st = tls_ctx->PrepareConnection(tls->native_handle(), url.host); !st.ok()) {
        failure = st.message();
        tls.reset();
        return asio::error::invalid_argument;
      }
    } else {
      plain.emplace(ioc);
    }
    Tcp().expires_at(deadline);
    error_code result;
    Tcp().async_connect(endpoints, [&result](error_code e, const tcp::endpoint&) { result = e; });
    Run();
    if (!result && tls) {
      Tcp().expires_at(deadline);
      tls->async_handshake(asio::ssl::stream_base::client, [&result](error_code e) { result = e; });
      Run();
      if (result && result != beast::error::timeout) {
        failure = HandshakeFailure(tls->native_handle(), result.message(), tls_ctx->trust());
      }
    }
    if (result) {
      Close();
      return result;
    }
    ++opened;
    Tcp().socket().set_option(tcp::no_delay(true), ec);
    return {};
  }

  // A head's local socket. Connecting is immediate (refused, or queued by the kernel); the
  // connected socket is carried in the plain stream's tcp::socket handle, as the server does
  // (http_server.cc): reads, writes and shutdown are the same calls on AF_UNIX.
  error_code ConnectUnix(const std::string& path) {
    error_code ec;
    asio::local::stream_protocol::socket s(ioc);
    s.connect(asio::local::stream_protocol::endpoint(path), ec);
    if (ec) return ec;
    const int fd = s.release(ec);
    if (ec) return ec;
    plain.emplace(ioc);
    plain->socket().assign(tcp::v4(), fd, ec);
    if (ec) {
      ::close(fd);
      plain.reset();
      return ec;
    }
    ++opened;
    return {};
  }
  // Writes `req` and reads its answer into `parser` on the connected stream, by `deadline`.
  // Reads even after a failed write: a server that rejects a request early (413) may have
  // closed its side with the answer already sent.
  error_code Exchange(const http::request<http::string_body>& req,
                      http::response_parser<http::string_body>& parser,
                      Clock::time_point deadline) {
    Tcp().expires_at(deadline);
    error_code write_ec;
    WithStream([&](auto& stream) {
      http::async_write(stream, req, [&write_ec](error_code e, size_t) { write_ec = e; });
    });
    Run();
    error_code read_ec = write_ec == beast::error::timeout ? write_ec : error_code{};
    if (!read_ec && connected()) {
      Tcp().expires_at(deadline);
      WithStream([&](auto& stream) {
        http::async_read(stream, buffer, parser, [&read_ec](error_code e, size_t) { read_ec = e; });
      });
      Run();
    } else if (!read_ec) {
      read_ec = write_ec;
    }
    return read_ec;
  }
};

HttpClient::HttpClient(std::string base_url, std::string bearer_token, HttpClientOptions options)
    : base_url_(std::move(base_url)),
      bearer_token_(std::move(bearer_token)),
      options_(std::move(options)),
      url_(ParseClientUrl(base_url_)),
      conn_(std::make_unique<Conn>()) {}

HttpClient::~HttpClient() = default;

void HttpClient::CloseConnection() {
  std::lock_guard<std::mutex> lock(mu_);
  conn_->Close();
}

int HttpClient::connections_opened() const {
  std::lock_guard<std::mutex> lock(mu_);
  return conn_->opened;
}

namespace {

// The request as it goes on the wire; bad input (a method, path or header that would split the
// request) is refused, naming it.
Result<http::request<http::string_body>> MakeRequest(
    const ParsedUrl& url, const HttpClientOptions& options, const std::string& bearer_token,
    const std::string& method, const std::string& target, std::string body,
    const std::map<std::string, std::string>& headers) {
  http::request<http::string_body> req;
  req.version(11);
  const http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) {
    req.method_string(method);
  } else {
    req.method(verb);
  }
  req.target(target);
  req.set(http::field::host, url.HostPort());
  req.set(http::field::user_agent, options.user_agent);
  if (!bearer_token.empty()) req.set(http::field::authorization, "Bearer " + bearer_token);
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) {
    if (name.find_first_of("\r\n") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      return InvalidArgument("invalid header '" + name + "': contains a line break");
    }
    req.set(name, value);
  }
  req.keep_alive(true);
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

HttpResponse ResponseOf(http::response<http::string_body>&& res) {
  HttpResponse out;
  out.status = static_cast<int>(res.result_int());
  out.content_type = std::string(SV(res[http::field::content_type]));
  for (const auto& field : res) {
    auto [it, inserted] =
        out.headers.try_emplace(AsciiLower(SV(field.name_string())), SV(field.value()));
    if (!inserted) {
      it->second += ", ";
      it->second += SV(field.value());
    }
  }
  out.body = std::move(res.body());
  return out;
}

}  // namespace

Result<HttpResponse> HttpClient::Request(std::string method, std::string path_and_query,
                                         std::string body, std::chrono::milliseconds timeout,
                                         const std::map<std::string, std::string>& headers) {
  if (!url_.ok()) return url_.status();
  const ParsedUrl& url = *url_;
  std::shared_ptr<const TlsClientContext> tls;
  if (url.scheme == "https") {
    tls = options_.tls ? options_.tls : DefaultClientTls();
  } else if (url.scheme != "http" && url.scheme != "unix") {
    return InvalidArgument("cannot reach " + base_url_ + ": want an http:// or https:// URL");
  }
  if (method.empty() || method.find_first_of(" \r\n") != std::string::npos) {
    return InvalidArgument("invalid HTTP method '" + method + "'");
  }
  if (path_and_query.find_first_of(" \r\n") != std::string::npos) {
    return InvalidArgument("invalid request path '" + path_and_query +
                           "': encode spaces and line breaks (UrlEncode)");
  }
  if (path_and_query.empty() || path_and_query.front() != '/') path_and_query.insert(0, "/");
  const std::string target = url.path + path_and_query;
  auto req = MakeRequest(url, options_, bearer_token_, method, target, std::move(body), headers);
  if (!req.ok()) return req.status();
  const std::string what =
      method + " " +
      (url.scheme == "unix" ? url.ToString() + " " : url.scheme + "://" + url.HostPort()) + target;
  // A huge timeout ("forever") must not overflow the clock: cap it at a year.
  const auto deadline =
      Clock::now() + std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 365));
  std::lock_guard<std::mutex> lock(mu_);
  Conn& c = *conn_;
  for (int attempt = 0;; ++attempt) {
    bool reused = c.connected();
    if (reused && c.PeerClosed()) {
      c.Close();
      reused = false;
    }
    if (!reused) {
      const error_code ec = c.Connect(url, deadline, tls.get());
      if (ec == beast::error::timeout) {
        return Unavailable("cannot connect to " + base_url_ + ": no connection within " +
                           std::to_string(timeout.count()) + " ms");
      }
      if (ec) {
        return Unavailable("cannot connect to " + base_url_ + ": " +
                           (c.failure.empty() ? ec.message() : c.failure));
      }
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_response_body_bytes);
    parser.header_limit(64u << 10);
    if (req->method() == http::verb::head) parser.skip(true);
    const error_code read_ec = c.Exchange(*req, parser, deadline);
    if (!read_ec) {
      auto res = parser.release();
      if (!res.keep_alive()) c.Close();
      return ResponseOf(std::move(res));
    }
    const bool got_response_bytes = parser.got_some() || c.buffer.size() > 0;
    c.Close();
    if (read_ec == beast::error::timeout) {
      return Unavailable(what + ": no response within " + std::to_string(timeout.count()) + " ms");
    }
    if (read_ec == http::error::body_limit) {
      return Internal(what + ": response body exceeds " +
                      std::to_string(options_.max_response_body_bytes) + " bytes");
    }
    if (reused && attempt == 0 && !got_response_bytes && IsStaleConnectionError(read_ec)) {
      continue;  // the server closed the kept connection: once more on a new one
    }
    if (got_response_bytes &&
        read_ec.category() == http::make_error_code(http::error::bad_method).category() &&
        read_ec != http::error::end_of_stream && read_ec != http::error::partial_message) {
      return Internal(what + ": malformed response: " + read_ec.message());
    }
    return Unavailable(what + ": " + read_ec.message());
  }
}

}  // namespace corral::net
