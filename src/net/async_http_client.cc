#include "net/async_http_client.h"

// <utility> before any Boost.Asio header: Boost 1.74's awaitable.hpp needs std::exchange.
#include <utility>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <thread>

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

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One exchange: resolve, connect, (TLS handshake,) write, read; owns itself through the
// handlers it queues. Stream: beast::tcp_stream or TlsStream.
template <typename Stream>
class Exchange : public std::enable_shared_from_this<Exchange<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  using std::enable_shared_from_this<Exchange<Stream>>::shared_from_this;

  Exchange(asio::io_context& ioc, std::shared_ptr<const TlsClientContext> tls, ParsedUrl url,
           http::request<http::string_body> req, std::chrono::milliseconds timeout,
           AsyncHttpClient::Done done, std::atomic<int>* in_flight)
      : resolver_(ioc),
        tls_(std::move(tls)),
        stream_(MakeStream(ioc, tls_.get())),
        url_(std::move(url)),
        req_(std::move(req)),
        timeout_(timeout),
        done_(std::move(done)),
        in_flight_(in_flight) {
    parser_.body_limit(64u << 20);
    ++*in_flight_;
  }
  ~Exchange() { --*in_flight_; }

  void Start() {
    if constexpr (kTls) {
      if (Status st = tls_->PrepareConnection(stream_.native_handle(), url_.host); !st.ok()) {
        return Deliver(st);
      }
    }
    Lowest().expires_after(timeout_);
    resolver_.async_resolve(
        url_.host, std::to_string(url_.port),
        [self = shared_from_this()](error_code ec, tcp::resolver::results_type r) {
          if (ec) return self->Fail("resolve", ec);
          self->Lowest().async_connect(r, [self](error_code ec, const tcp::endpoint&) {
            if (ec) return self->Fail("connect", ec);
            if constexpr (kTls) {
              self->stream_.async_handshake(asio::ssl::stream_base::client, [self](error_code ec) {
                if (ec) return self->Fail("TLS handshake", ec);
                self->Write();
              });
            } else {
              self->Write();
            }
          });
        });
  }

 private:
  static Stream MakeStream(asio::io_context& ioc, const TlsClientContext* tls) {
    if constexpr (kTls) {
      return Stream(ioc, tls->asio());
    } else {
      return Stream(ioc);
    }
  }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Write() {
    http::async_write(stream_, req_, [self = shared_from_this()](error_code ec, size_t) {
      if (ec) return self->Fail("write", ec);
      http::async_read(self->stream_, self->buffer_, self->parser_, [self](error_code ec, size_t) {
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
      out.headers[Lower({field.name_string().data(), field.name_string().size()})] =
          std::string(field.value().data(), field.value().size());
    }
    auto ct = out.headers.find("content-type");
    if (ct != out.headers.end()) out.content_type = ct->second;
    out.body = std::move(res.body());
    error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Deliver(std::move(out));
  }

  void Fail(const char* step, error_code ec) {
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
            what + HandshakeFailure(stream_.native_handle(), ec.message(), tls_->trust())));
      }
    }
    Deliver(Unavailable(what + step + ": " + ec.message()));
  }

  void Deliver(Result<HttpResponse> r) {
    if (done_) std::exchange(done_, nullptr)(std::move(r));
  }

  tcp::resolver resolver_;
  std::shared_ptr<const TlsClientContext> tls_;  // outlives the stream that uses it
  Stream stream_;
  ParsedUrl url_;
  http::request<http::string_body> req_;
  std::chrono::milliseconds timeout_;
  AsyncHttpClient::Done done_;
  std::atomic<int>* in_flight_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
};

}  // namespace

struct AsyncHttpClient::Impl {
  std::atomic<int> in_flight{0};  // first: exchanges still count down while ioc is destroyed
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  std::shared_ptr<const TlsClientContext> tls;
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
  req.set(http::field::connection, "close");
  if (!bearer_token.empty()) req.set(http::field::authorization, "Bearer " + bearer_token);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/octet-stream");
    req.body() = std::move(body);
  }
  req.prepare_payload();
  if (url->scheme == "https") {
    auto exchange = std::make_shared<Exchange<TlsStream>>(
        impl_->ioc, impl_->tls ? impl_->tls : DefaultClientTls(), std::move(*url), std::move(req),
        timeout, std::move(done), &impl_->in_flight);
    asio::post(impl_->ioc, [exchange] { exchange->Start(); });
    return;
  }
  auto exchange = std::make_shared<Exchange<beast::tcp_stream>>(
      impl_->ioc, nullptr, std::move(*url), std::move(req), timeout, std::move(done),
      &impl_->in_flight);
  asio::post(impl_->ioc, [exchange] { exchange->Start(); });
}

int AsyncHttpClient::InFlight() const { return impl_->in_flight.load(); }

}  // namespace corral::net
