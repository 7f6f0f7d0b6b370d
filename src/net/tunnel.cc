#include "net/tunnel.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <vector>

#include "net/tls_context.h"
#include "net/tunnel_internal.h"
#include "net/url.h"

namespace corral::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

constexpr auto kConnectTimeout = std::chrono::seconds(10);
constexpr size_t kChunk = 16u << 10;

const char* Reason(int status) {
  switch (status) {
    case 302:
      return "Found";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return status < 400 ? "OK" : "Error";
  }
}

bool HasCrLf(const std::string& s) { return s.find_first_of("\r\n") != std::string::npos; }

std::string SerializeResponse(const HttpResponse& r) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) + "\r\n";
  for (const auto& [k, v] : r.headers) {
    if (HasCrLf(k) || HasCrLf(v)) continue;
    out += k + ": " + v + "\r\n";
  }
  if (!r.content_type.empty() && !HasCrLf(r.content_type)) {
    out += "Content-Type: " + r.content_type + "\r\n";
  }
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\nConnection: close\r\n\r\n";
  return out + r.body;
}

beast::tcp_stream& Lowest(beast::tcp_stream& s) { return s; }
beast::tcp_stream& Lowest(TlsStream& s) { return beast::get_lowest_layer(s); }

// A client stream (A) joined to an upstream one (B), all on the client's strand.
template <typename A, typename B>
class Pipe : public std::enable_shared_from_this<Pipe<A, B>> {
 public:
  Pipe(A&& client, std::shared_ptr<asio::ssl::context> server_ctx,
       std::shared_ptr<const TlsClientContext> tls, ParsedUrl url, std::string first,
       std::chrono::milliseconds idle, std::shared_ptr<void> slot)
      : client_(std::move(client)),
        server_ctx_(std::move(server_ctx)),
        tls_(std::move(tls)),
        upstream_(Make(client_.get_executor(), tls_.get())),
        resolver_(client_.get_executor()),
        idle_timer_(client_.get_executor()),
        url_(std::move(url)),
        first_(std::move(first)),
        idle_(idle),
        slot_(std::move(slot)) {}

  void Start() {
    auto self = this->shared_from_this();
    if constexpr (std::is_same_v<B, TlsStream>) {
      if (Status st = tls_->PrepareConnection(upstream_.native_handle(), url_.host); !st.ok()) {
        return Refuse(st.message());
      }
    }
    Lowest(upstream_).expires_after(kConnectTimeout);
    resolver_.async_resolve(
        url_.host, std::to_string(url_.port), [self](error_code ec, tcp::resolver::results_type r) {
          if (ec) return self->Refuse("resolve " + self->url_.host + ": " + ec.message());
          Lowest(self->upstream_).async_connect(r, [self](error_code ec, const tcp::endpoint&) {
            if (ec) return self->Refuse("connect " + self->url_.ToString() + ": " + ec.message());
            if constexpr (std::is_same_v<B, TlsStream>) {
              self->upstream_.async_handshake(
                  asio::ssl::stream_base::client, [self](error_code ec) {
                    if (ec) {
                      return self->Refuse(self->url_.ToString() + ": " +
                                          HandshakeFailure(self->upstream_.native_handle(),
                                                           ec.message(), self->tls_->trust()));
                    }
                    self->Connected();
                  });
            } else {
              self->Connected();
            }
          });
        });
  }

 private:
  static B Make(const asio::any_io_executor& ex, const TlsClientContext* tls) {
    if constexpr (std::is_same_v<B, TlsStream>) {
      return B(ex, tls->asio());
    } else {
      return B(ex);
    }
  }

  void Refuse(const std::string& why) {
    auto self = this->shared_from_this();
    HttpResponse r = JsonError(502, "unavailable", why);
    answer_ = SerializeResponse(r);
    Lowest(client_).expires_after(std::chrono::seconds(10));
    asio::async_write(client_, asio::buffer(answer_),
                      [self](error_code, size_t) { self->CloseBoth(); });
  }

  void Connected() {
    Lowest(upstream_).expires_never();
    Lowest(client_).expires_never();
    last_ = std::chrono::steady_clock::now();
    if (idle_.count() > 0) WatchIdle();
    auto self = this->shared_from_this();
    asio::async_write(upstream_, asio::buffer(first_), [self](error_code ec, size_t) {
      if (ec) return self->CloseBoth();
      self->first_.clear();
      self->Pump(self->client_, self->upstream_, self->to_upstream_);
      self->Pump(self->upstream_, self->client_, self->to_client_);
    });
  }

  // Closes both once no byte has passed either way for idle_ (a tab left open holds a
  // WebSocket, and with it two sockets, until then and no longer).
  void WatchIdle() {
    auto self = this->shared_from_this();
    idle_timer_.expires_at(last_ + idle_);
    idle_timer_.async_wait([self](error_code ec) {
      if (ec || self->closed_) return;
      if (std::chrono::steady_clock::now() - self->last_ >= self->idle_) return self->CloseBoth();
      self->WatchIdle();
    });
  }

  // Reads `from` and writes what came to `to`, until either fails or ends.
  template <typename From, typename To>
  void Pump(From& from, To& to, std::vector<char>& buf) {
    buf.resize(kChunk);
    auto self = this->shared_from_this();
    from.async_read_some(asio::buffer(buf), [self, &from, &to, &buf](error_code ec, size_t n) {
      if (ec || self->closed_) return self->CloseBoth();
      self->last_ = std::chrono::steady_clock::now();
      asio::async_write(to, asio::buffer(buf.data(), n),
                        [self, &from, &to, &buf](error_code ec, size_t) {
                          if (ec || self->closed_) return self->CloseBoth();
                          self->Pump(from, to, buf);
                        });
    });
  }

  void CloseBoth() {
    if (closed_) return;
    closed_ = true;
    idle_timer_.cancel();
    error_code ignored;
    Lowest(client_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    Lowest(client_).close();
    Lowest(upstream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    Lowest(upstream_).close();
  }

  A client_;
  std::shared_ptr<asio::ssl::context> server_ctx_;  // outlives the client's TLS stream
  std::shared_ptr<const TlsClientContext> tls_;     // outlives the upstream's
  B upstream_;
  tcp::resolver resolver_;
  asio::steady_timer idle_timer_;
  ParsedUrl url_;
  std::string first_;
  const std::chrono::milliseconds idle_;
  std::chrono::steady_clock::time_point last_;  // a byte last passed either way
  const std::shared_ptr<void> slot_;            // the client's place under its address's cap
  std::string answer_;
  std::vector<char> to_upstream_, to_client_;
  bool closed_ = false;
};

template <typename A>
class Taken final : public TakenConnection, public std::enable_shared_from_this<Taken<A>> {
 public:
  Taken(A&& stream, std::shared_ptr<asio::ssl::context> ctx, std::string leftover,
        std::shared_ptr<void> slot)
      : stream_(std::move(stream)),
        ctx_(std::move(ctx)),
        leftover_(std::move(leftover)),
        slot_(std::move(slot)) {}
  bool Encrypted() const override { return std::is_same_v<A, TlsStream>; }
  ~Taken() override {
    if (stream_) {
      error_code ignored;
      Lowest(*stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    }
  }

  void Answer(HttpResponse r) override {
    auto self = this->shared_from_this();
    asio::dispatch(stream_->get_executor(), [self, r = std::move(r)] {
      if (!self->stream_) return;
      auto bytes = std::make_shared<std::string>(SerializeResponse(r));
      auto stream = std::make_shared<A>(std::move(*std::exchange(self->stream_, std::nullopt)));
      auto ctx = self->ctx_;
      Lowest(*stream).expires_after(std::chrono::seconds(10));
      asio::async_write(*stream, asio::buffer(*bytes),
                        [bytes, stream, ctx, slot = std::move(self->slot_)](error_code, size_t) {
                          error_code ignored;
                          Lowest(*stream).socket().shutdown(tcp::socket::shutdown_send, ignored);
                          Lowest(*stream).close();
                        });
    });
  }

  void Splice(std::string base_url, std::shared_ptr<const TlsClientContext> tls, std::string first,
              std::chrono::milliseconds idle) override {
    auto self = this->shared_from_this();
    asio::dispatch(
        stream_->get_executor(), [self, base_url = std::move(base_url), tls = std::move(tls),
                                  first = std::move(first), idle]() mutable {
          if (!self->stream_) return;
          auto url = ParseUrl(base_url);
          if (!url.ok()) {
            return self->Answer(
                JsonError(502, "internal", "upstream " + base_url + ": " + url.status().message()));
          }
          first += self->leftover_;
          A client = std::move(*std::exchange(self->stream_, std::nullopt));
          if (url->scheme == "https") {
            if (!tls) tls = DefaultClientTls();
            std::make_shared<Pipe<A, TlsStream>>(std::move(client), self->ctx_, std::move(tls),
                                                 std::move(*url), std::move(first), idle,
                                                 std::move(self->slot_))
                ->Start();
          } else {
            std::make_shared<Pipe<A, beast::tcp_stream>>(std::move(client), self->ctx_, nullptr,
                                                         std::move(*url), std::move(first), idle,
                                                         std::move(self->slot_))
                ->Start();
          }
        });
  }

 private:
  std::optional<A> stream_;
  std::shared_ptr<asio::ssl::context> ctx_;
  std::string leftover_;
  std::shared_ptr<void> slot_;  // handed to the answer's write or the pipe
};

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(' ');
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(' ');
  return s.substr(a, b - a + 1);
}

}  // namespace

std::shared_ptr<TakenConnection> TakePlain(beast::tcp_stream&& stream, std::string leftover,
                                           std::shared_ptr<void> slot) {
  return std::make_shared<Taken<beast::tcp_stream>>(std::move(stream), nullptr, std::move(leftover),
                                                    std::move(slot));
}

std::shared_ptr<TakenConnection> TakeTls(TlsStream&& stream,
                                         std::shared_ptr<asio::ssl::context> ctx,
                                         std::string leftover, std::shared_ptr<void> slot) {
  return std::make_shared<Taken<TlsStream>>(std::move(stream), std::move(ctx), std::move(leftover),
                                            std::move(slot));
}

bool IsWebSocketUpgrade(const HttpRequest& req) {
  std::string upgrade = req.Header("upgrade");
  for (auto& c : upgrade) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return upgrade.find("websocket") != std::string::npos;
}

std::string SerializeRequest(const std::string& method, const std::string& target,
                             const std::map<std::string, std::string>& headers,
                             const std::string& body) {
  std::string out = method + " " + target + " HTTP/1.1\r\n";
  for (const auto& [k, v] : headers) {
    if (k == "content-length" || k == "transfer-encoding" || HasCrLf(k) || HasCrLf(v)) continue;
    out += k + ": " + v + "\r\n";
  }
  if (!body.empty() || (method != "GET" && method != "HEAD")) {
    out += "content-length: " + std::to_string(body.size()) + "\r\n";
  }
  return out + "\r\n" + body;
}

std::string CookieWithout(const std::string& cookie_header, const std::string& name) {
  std::string out;
  size_t at = 0;
  while (at <= cookie_header.size()) {
    size_t end = cookie_header.find(';', at);
    if (end == std::string::npos) end = cookie_header.size();
    std::string part = Trim(cookie_header.substr(at, end - at));
    if (!part.empty() && part.rfind(name + "=", 0) != 0) out += (out.empty() ? "" : "; ") + part;
    at = end + 1;
  }
  return out;
}

std::string CookieValue(const std::string& cookie_header, const std::string& name) {
  size_t at = 0;
  while (at <= cookie_header.size()) {
    size_t end = cookie_header.find(';', at);
    if (end == std::string::npos) end = cookie_header.size();
    std::string part = Trim(cookie_header.substr(at, end - at));
    if (part.rfind(name + "=", 0) == 0) return part.substr(name.size() + 1);
    at = end + 1;
  }
  return "";
}

}  // namespace corral::net
