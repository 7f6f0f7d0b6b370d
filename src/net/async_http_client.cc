#include "net/async_http_client.h"

// <utility> before any Boost.Asio header: Boost 1.74's awaitable.hpp needs std::exchange.
#include <utility>

#include <poll.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <map>
#include <memory>
#include <thread>

#include "net/strings_internal.h"
#include "net/tls_context.h"
#include "net/url.h"

namespace corral::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Connections kept open after an answer (HTTP/1.1 keep-alive), per scheme and host:port, for
// the next request there: a relayed keystroke then costs a request, not a TCP connect (and
// with TLS a handshake) to the agent. Only the client's thread touches it.
class ConnectionPool {
 public:
  // Longer idle connections are not reused: Corral's server closes them after its header
  // timeout (10 s), and one it is closing must not take a request.
  static constexpr std::chrono::milliseconds kMaxIdle{4000};
  static constexpr size_t kMaxIdlePerHost = 16;

  template <typename Stream>
  std::unique_ptr<Stream> Take(const std::string& key) {
    auto& idle = Of<Stream>()[key];
    const auto now = std::chrono::steady_clock::now();
    while (!idle.empty()) {
      Idle<Stream> c = std::move(idle.back());
      idle.pop_back();
      if (now - c.since < kMaxIdle && Quiet(beast::get_lowest_layer(*c.stream).socket())) {
        return std::move(c.stream);
      }
    }
    return nullptr;
  }
  template <typename Stream>
  void Put(const std::string& key, std::unique_ptr<Stream> stream) {
    auto& idle = Of<Stream>()[key];
    if (idle.size() >= kMaxIdlePerHost) idle.pop_front();  // the oldest goes
    idle.push_back({std::move(stream), std::chrono::steady_clock::now()});
  }

 private:
  template <typename Stream>
  struct Idle {
    std::unique_ptr<Stream> stream;
    std::chrono::steady_clock::time_point since;
  };
  template <typename Stream>
  using Idles = std::map<std::string, std::deque<Idle<Stream>>>;

  // Nothing to read on an idle connection: not closed by the server (EOF, a TLS close_notify)
  // and no stray bytes.
  static bool Quiet(tcp::socket& s) {
    struct pollfd p = {s.native_handle(), POLLIN, 0};
    return s.is_open() && poll(&p, 1, 0) == 0;
  }
  template <typename Stream>
  Idles<Stream>& Of() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      return tls_;
    } else {
      return plain_;
    }
  }
  Idles<beast::tcp_stream> plain_;
  Idles<TlsStream> tls_;
};

// One exchange: resolve, connect, (TLS handshake,) write, read; or write and read on a kept
// connection (ConnectionPool), and the connection kept after the answer where the server keeps
// it. Owns itself through the handlers it queues. Stream: beast::tcp_stream or TlsStream.
template <typename Stream>
class Exchange : public std::enable_shared_from_this<Exchange<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  using std::enable_shared_from_this<Exchange<Stream>>::shared_from_this;

  Exchange(asio::io_context& ioc, std::shared_ptr<const TlsClientContext> tls, ParsedUrl url,
           http::request<http::string_body> req, std::chrono::milliseconds timeout,
           AsyncHttpClient::Done done, std::atomic<int>* in_flight, ConnectionPool* pool)
      : ioc_(ioc),
        resolver_(ioc),
        tls_(std::move(tls)),
        url_(std::move(url)),
        req_(std::move(req)),
        timeout_(timeout),
        done_(std::move(done)),
        in_flight_(in_flight),
        pool_(pool),
        key_(url_.scheme + "://" + url_.HostPort()) {
    parser_.body_limit(64u << 20);
    ++*in_flight_;
  }
  ~Exchange() { --*in_flight_; }

  void Start() {
    deadline_ = std::chrono::steady_clock::now() + timeout_;
    stream_ = pool_->Take<Stream>(key_);
    if (stream_) {
      reused_ = true;
      Lowest().expires_at(deadline_);
      return Write();
    }
    Connect();
  }

 private:
  void Connect() {
    reused_ = false;
    stream_ = MakeStream(ioc_, tls_.get());
    if constexpr (kTls) {
      if (Status st = tls_->PrepareConnection(stream_->native_handle(), url_.host); !st.ok()) {
        return Deliver(st);
      }
    }
    Lowest().expires_at(deadline_);
    resolver_.async_resolve(
        url_.host, std::to_string(url_.port),
        [self = shared_from_this()](error_code ec, tcp::resolver::results_type r) {
          if (ec) return self->Fail("resolve", ec);
          self->Lowest().async_connect(r, [self](error_code ec, const tcp::endpoint&) {
            if (ec) return self->Fail("connect", ec);
            if constexpr (kTls) {
              self->stream_->async_handshake(asio::ssl::stream_base::client, [self](error_code ec) {
                if (ec) return self->Fail("TLS handshake", ec);
                self->Write();
              });
            } else {
              self->Write();
            }
          });
        });
  }

  static std::unique_ptr<Stream> MakeStream(asio::io_context& ioc, const TlsClientContext* tls) {
    if constexpr (kTls) {
      return std::make_unique<Stream>(ioc, tls->asio());
    } else {
      return std::make_unique<Stream>(ioc);
    }
  }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(*stream_); }

  void Write() {
    http::async_write(*stream_, req_, [self = shared_from_this()](error_code ec, size_t) {
      if (ec) return self->Fail("write", ec);
      http::async_read(*self->stream_, self->buffer_, self->parser_, [self](error_code ec, size_t) {
        if (ec) return self->Fail("read", ec);
        self->Finish();
      });
    });
  }

  void Finish() {
    auto& res = parser_.get();
    HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    for (const auto& field : res) {
      out.headers[AsciiLower({field.name_string().data(), field.name_string().size()})] =
          std::string(field.value().data(), field.value().size());
    }
    auto ct = out.headers.find("content-type");
    if (ct != out.headers.end()) out.content_type = ct->second;
    const bool keep = res.keep_alive() && buffer_.size() == 0;
    out.body = std::move(res.body());
    if (keep) {
      Lowest().expires_never();
      pool_->Put(key_, std::move(stream_));
    } else {
      error_code ignored;
      Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    }
    Deliver(std::move(out));
  }

  // A kept connection the server closed while it was idle (between the pool's check and this
  // request): the request never reached it, so it goes again on a new connection. Only where
  // no byte of an answer came, and once.
  bool ClosedWhileIdle(error_code ec) const {
    return reused_ && !parser_.got_some() &&
           (ec == http::error::end_of_stream || ec == asio::error::eof ||
            ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
            ec == asio::ssl::error::stream_truncated);
  }

  void Fail(const char* step, error_code ec) {
    if (ClosedWhileIdle(ec)) {
      buffer_.clear();
      return Connect();
    }
    std::string what =
        req_.method_string().to_string() + " " + url_.ToString() + req_.target().to_string() + ": ";
    if (ec == beast::error::timeout) {
      return Deliver(
          Unavailable(what + "timed out after " + std::to_string(timeout_.count()) + " ms"));
    }
    if (ec == http::error::body_limit) return Deliver(Internal(what + "response over 64 MiB"));
    if constexpr (kTls) {
      if (std::string_view(step) == "TLS handshake") {
        return Deliver(Unavailable(
            what + HandshakeFailure(stream_->native_handle(), ec.message(), tls_->trust())));
      }
    }
    Deliver(Unavailable(what + step + ": " + ec.message()));
  }

  void Deliver(Result<HttpResponse> r) {
    if (done_) std::exchange(done_, nullptr)(std::move(r));
  }

  asio::io_context& ioc_;
  tcp::resolver resolver_;
  std::shared_ptr<const TlsClientContext> tls_;  // outlives the stream that uses it
  std::unique_ptr<Stream> stream_;
  ParsedUrl url_;
  http::request<http::string_body> req_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point deadline_;  // of the whole exchange, retry included
  AsyncHttpClient::Done done_;
  std::atomic<int>* in_flight_;
  ConnectionPool* pool_;
  const std::string key_;
  bool reused_ = false;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
};

}  // namespace

struct AsyncHttpClient::Impl {
  std::atomic<int> in_flight{0};  // first: exchanges still count down while ioc is destroyed
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  std::shared_ptr<const TlsClientContext> tls;
  ConnectionPool pool;  // after ioc: its sockets go before the context they use
  std::thread thread{[this] { ioc.run(); }};
};

AsyncHttpClient::AsyncHttpClient(std::shared_ptr<const TlsClientContext> tls)
    : impl_(std::make_unique<Impl>()) {
  impl_->tls = std::move(tls);
}

AsyncHttpClient::~AsyncHttpClient() {
  impl_->work.reset();
  impl_->ioc.stop();  // pending exchanges are destroyed with the context, undelivered
  impl_->thread.join();
}

void AsyncHttpClient::Request(const std::string& base_url, const std::string& bearer_token,
                              std::string method, std::string path_and_query, std::string body,
                              std::chrono::milliseconds timeout, Done done) {
  auto url = ParseUrl(base_url);
  if (!url.ok()) return done(url.status());
  if (url->scheme != "http" && url->scheme != "https") {
    return done(InvalidArgument(base_url + ": want an http:// or https:// URL"));
  }
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(url->path + path_and_query);
  req.version(11);
  req.set(http::field::host, url->HostPort());
  req.set(http::field::user_agent, "corral");
  if (!bearer_token.empty()) req.set(http::field::authorization, "Bearer " + bearer_token);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/octet-stream");
    req.body() = std::move(body);
  }
  req.prepare_payload();
  if (url->scheme == "https") {
    auto exchange = std::make_shared<Exchange<TlsStream>>(
        impl_->ioc, impl_->tls ? impl_->tls : DefaultClientTls(), std::move(*url), std::move(req),
        timeout, std::move(done), &impl_->in_flight, &impl_->pool);
    asio::post(impl_->ioc, [exchange] { exchange->Start(); });
    return;
  }
  auto exchange = std::make_shared<Exchange<beast::tcp_stream>>(
      impl_->ioc, nullptr, std::move(*url), std::move(req), timeout, std::move(done),
      &impl_->in_flight, &impl_->pool);
  asio::post(impl_->ioc, [exchange] { exchange->Start(); });
}

int AsyncHttpClient::InFlight() const { return impl_->in_flight.load(); }

}  // namespace corral::net
