#include "net/http_server.h"

// <utility> before any Boost.Asio header: Boost 1.74's awaitable.hpp needs std::exchange.
#include <utility>

#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net/address_counts.h"
#include "net/http_server_message.h"
#include "net/tls_context.h"
#include "net/tunnel_internal.h"
#include "net/url.h"

namespace corral::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using unix_stream = asio::local::stream_protocol;
using boost::system::error_code;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// After a response that ends the connection (or a rejected request) the server
// half-closes and reads until the client closes, for at most this long and this much:
// closing with unread input would send a RST that can destroy the response in flight.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kLingerMaxBytes = 64u << 20;
// While a response is pending, bytes the client sends (a pipelined request) are buffered
// up to this much; past it the server stops watching the socket until it has answered.
constexpr size_t kWatchMaxBuffered = 64u << 10;
// How long Stop() lets the I/O threads finish closing before it stops them outright.
constexpr auto kStopGrace = std::chrono::seconds(3);

std::string EndpointString(const tcp::endpoint& ep) {
  const auto addr = ep.address();
  const std::string a = addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string();
  return a + ":" + std::to_string(ep.port());
}

// What a Unix socket's peer is called where a TCP peer's "ip:port" goes (no ':', so that the
// per-address bookkeeping keys it by the whole string: one user's connections together).
std::string LocalRemote(const PeerCredentials& peer) {
  return "local uid " + std::to_string(peer.uid);
}

bool IsHttpParseError(const error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

}  // namespace

class SessionBase;
class ListenerBase;

// Guards posting into the io_context from foreign threads (Responders): Stop() closes it
// first, so no Responder touches a session or the io_context once stopping has begun.
struct Gate {
  std::mutex mu;
  bool open = true;  // GUARDED_BY(mu)
};

struct HttpServer::Impl {
  Handler handler;
  HttpServerOptions options;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();

  // Declared before ioc: sessions destroyed while the io_context is torn down
  // deregister themselves here.
  mutable std::mutex mu;
  bool stopping = false;                                                  // GUARDED_BY(mu)
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions;  // GUARDED_BY(mu)
  std::shared_ptr<AddressCounts> per_address = std::make_shared<AddressCounts>();
  int running_threads = 0;  // GUARDED_BY(mu)
  std::condition_variable threads_done;

  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::shared_ptr<ListenerBase>> listeners;  // owner thread only
  std::vector<std::string> unix_paths;                   // owner thread only: removed at Stop
  std::vector<std::thread> threads;                      // owner thread only
  bool started = false;                                  // owner thread only
  bool stopped = false;                                  // owner thread only

  explicit Impl(Handler h, HttpServerOptions o) : handler(std::move(h)), options(o) {}

  // Called on an accepting strand. Returns false when the server is stopping or the
  // session's address has its most connections open.
  bool Register(const std::shared_ptr<SessionBase>& s);
  void Deregister(SessionBase* s);
  // The session's place under its address's cap, moved to an object that gives it back when
  // dropped (null when it was not counted): for a connection handed over.
  std::shared_ptr<void> HandOver(SessionBase* s);
  // Starts serving an accepted connection (on its strand's executor).
  void Adopt(tcp::socket socket);
  void Adopt(unix_stream::socket socket);
};

// What the server and the Responders need of a connection, whatever its stream.
class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  virtual void Start() = 0;
  // Any thread.
  virtual void Close() = 0;
  // Any thread, at most once per request (the ResponderState guarantees it). Runs inline
  // when called on this connection's strand (a handler answering at once), else posts.
  virtual void PostResponse(uint64_t seq, HttpResponse response) = 0;

  std::string address;                  // the client's, without the port; set before Register
  std::optional<PeerCredentials> peer;  // a Unix listener's connection: set before Start
  bool counted = false;                 // GUARDED_BY(Impl::mu): counted in Impl::per_address
};

template <typename Stream>
Stream MakeStream(tcp::socket&& socket, asio::ssl::context* ctx) {
  if constexpr (std::is_same_v<Stream, TlsStream>) {
    return Stream(std::move(socket), *ctx);
  } else {
    return Stream(std::move(socket));
  }
}

// One accepted connection, over plain TCP or TLS (Stream). Lives as long as an operation or
// a pending response holds it; all its state is touched only on its strand.
template <typename Stream>
class Session final : public SessionBase {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  Session(HttpServer::Impl* server, tcp::socket socket, std::shared_ptr<asio::ssl::context> ctx)
      : server_(server),
        strand_(socket.get_executor()),
        ctx_(std::move(ctx)),
        stream_(MakeStream<Stream>(std::move(socket), ctx_.get())) {
    error_code ec;
    const auto ep = Lowest().socket().remote_endpoint(ec);
    if (!ec) remote_ = EndpointString(ep);
  }
  ~Session() override { server_->Deregister(this); }

  void Start() override {
    asio::dispatch(strand_, [self = Self()] {
      if constexpr (kTls) {
        self->Handshake();
      } else {
        self->ReadHeader();
      }
    });
  }
  void Close() override {
    asio::post(strand_, [self = Self()] { self->CloseNow(); });
  }
  void PostResponse(uint64_t seq, HttpResponse response) override {
    asio::dispatch(strand_, [self = Self(), seq, r = std::move(response)]() mutable {
      self->Deliver(seq, std::move(r));
    });
  }

 private:
  enum class AfterWatch { kNothing, kReadNext, kLinger };

  const HttpServerOptions& opts() const { return server_->options; }
  std::chrono::milliseconds HeaderDeadline() const {
    return std::min(opts().read_timeout, opts().header_timeout);
  }

  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  // A client that does not complete a TLS handshake (plain HTTP on this port, a client that
  // does not trust this certificate) gets no answer: the connection is closed.
  void Handshake() {
    Lowest().expires_after(HeaderDeadline());
    stream_.async_handshake(asio::ssl::stream_base::server, [self = Self()](error_code ec) {
      if (self->closed_) return;
      if (ec) return self->CloseNow();
      self->ReadHeader();
    });
  }

  void ReadHeader() {
    if (closed_) return;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(opts().max_header_bytes));
    parser_->body_limit(opts().max_body_bytes);
    Lowest().expires_after(HeaderDeadline());
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session<Stream>::OnHeader, Self()));
  }

  void OnHeader(error_code ec, size_t) {
    if (closed_) return;
    if (ec) return OnReadError(ec);
    const auto& req = parser_->get();
    if (req.version() >= 11 && beast::iequals(req[http::field::expect], "100-continue")) {
      continue_.emplace(http::status::continue_, req.version());
      Lowest().expires_after(opts().write_timeout);
      http::async_write(stream_, *continue_, [self = Self()](error_code ec2, size_t) {
        if (self->closed_) return;
        if (ec2) return self->CloseNow();
        self->ReadBody();
      });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    Lowest().expires_after(opts().read_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session<Stream>::OnRead, Self()));
  }

  void OnReadError(const error_code& ec) {
    if (ec == http::error::body_limit) {
      return Reject(
          413, "payload_too_large",
          "request body exceeds the limit of " + std::to_string(opts().max_body_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) {
      return Reject(431, "headers_too_large",
                    "request headers exceed the limit of " +
                        std::to_string(opts().max_header_bytes) + " bytes");
    }
    // A client that closed between requests, a read timeout or a socket error: nothing
    // to answer.
    if (ec == http::error::end_of_stream || !IsHttpParseError(ec)) return CloseNow();
    if (ec == http::error::partial_message) return CloseNow();
    Reject(400, "bad_request", "malformed HTTP request: " + ec.message());
  }

  void OnRead(error_code ec, size_t) {
    if (closed_) return;
    if (ec) return OnReadError(ec);
    auto msg = parser_->release();
    parser_.reset();
    if (opts().takeover && !opts().takeover_prefix.empty() &&
        SV(msg.target()).rfind(opts().takeover_prefix, 0) == 0) {
      return TakeOver(std::move(msg));
    }
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    head_request_ = msg.method() == http::verb::head;
    ++seq_;
    pending_ = true;
    hold_ = Self();  // a held request keeps its connection until answered
    Lowest().expires_never();
    InvokeHandler(Request(std::move(msg)));
    // After the handler: one that answered at once is already writing (no race between
    // its answer and a client that half-closes after its request).
    if (pending_ || writing_) Watch();
  }

  void InvokeHandler(HttpRequest req);  // below: needs ResponderState

  HttpRequest Request(http::request<http::string_body>&& msg) {
    HttpRequest req = ToHttpRequest(std::move(msg), peer ? LocalRemote(*peer) : remote_);
    req.peer = peer;
    return req;
  }

  // The connection leaves the server with its request (tunnel.h): this session is over.
  void TakeOver(http::request<http::string_body>&& msg) {
    std::string leftover(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.clear();
    HttpRequest req = Request(std::move(msg));
    Lowest().expires_never();
    std::shared_ptr<TakenConnection> conn;
    std::shared_ptr<void> slot = server_->HandOver(this);
    if constexpr (kTls) {
      conn = TakeTls(std::move(stream_), ctx_, std::move(leftover), std::move(slot));
    } else {
      conn = TakePlain(std::move(stream_), std::move(leftover), std::move(slot));
    }
    closed_ = true;  // the stream is moved out: nothing here touches it again
    try {
      opts().takeover(std::move(req), std::move(conn));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "corral http: takeover handler failed: %s\n", e.what());
    }
  }

  // While the response is pending, keep a read outstanding so that a client that goes
  // away is noticed (and its socket freed) without waiting for the handler.
  void Watch() {
    if (closed_ || watching_ || buffer_.size() >= kWatchMaxBuffered) return;
    watching_ = true;
    stream_.async_read_some(buffer_.prepare(4096),
                            beast::bind_front_handler(&Session<Stream>::OnWatch, Self()));
  }

  void OnWatch(error_code ec, size_t n) {
    watching_ = false;
    buffer_.commit(n);
    if (closed_) return;
    if (ec && ec != asio::error::operation_aborted) {
      // EOF while the answer is pending: the client went away (as Go's net/http decides),
      // free the socket now. EOF while writing: finish the answer for a client that only
      // half-closed, then close. Anything else (a reset): gone.
      if (writing_ && (ec == asio::error::eof || ec == http::error::end_of_stream)) {
        keep_alive_ = false;
        peer_eof_ = true;
        return;
      }
      return CloseNow();
    }
    const AfterWatch next = std::exchange(after_watch_, AfterWatch::kNothing);
    switch (next) {
      case AfterWatch::kReadNext:
        return ReadHeader();
      case AfterWatch::kLinger:
        return Linger();
      case AfterWatch::kNothing:
        break;
    }
    if ((pending_ || writing_) && !peer_eof_) Watch();
  }

  void Deliver(uint64_t seq, HttpResponse r) {
    if (closed_ || !pending_ || seq != seq_) return;
    pending_ = false;
    auto self = std::exchange(hold_, nullptr);
    if (r.render) {
      try {
        r.body = std::exchange(r.render, nullptr)();
      } catch (const std::exception& e) {
        r = JsonError(500, "internal", std::string("encoding the answer failed: ") + e.what());
      }
    }
    Write(std::move(r));
  }

  void Reject(int status, std::string code, std::string message) {
    keep_alive_ = false;
    version_ = 11;
    head_request_ = false;
    Write(JsonError(status, std::move(code), std::move(message)));
  }

  void Write(HttpResponse r) {
    res_ = {};
    ToBeastResponse(std::move(r), version_, keep_alive_, head_request_, &res_);
    writing_ = true;
    Lowest().expires_after(opts().write_timeout);
    http::async_write(stream_, res_, beast::bind_front_handler(&Session<Stream>::OnWrite, Self()));
  }

  void OnWrite(error_code ec, size_t) {
    writing_ = false;
    if (closed_) return;
    if (ec) return CloseNow();
    if (peer_eof_) return CloseNow();
    const AfterWatch next = keep_alive_ ? AfterWatch::kReadNext : AfterWatch::kLinger;
    if (watching_) {
      after_watch_ = next;
      error_code ignored;
      Lowest().socket().cancel(ignored);  // only the watch read is outstanding
      return;
    }
    if (next == AfterWatch::kReadNext) return ReadHeader();
    Linger();
  }

  void Linger() {
    error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    linger_deadline_ = std::chrono::steady_clock::now() + kLingerTime;
    Drain();
  }

  void Drain() {
    if (closed_) return;
    Lowest().expires_at(linger_deadline_);
    buffer_.clear();
    // Raw bytes, under TLS too: only the TCP close matters now.
    Lowest().async_read_some(buffer_.prepare(16384), [self = Self()](error_code ec, size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > kLingerMaxBytes) return self->CloseNow();
      self->Drain();
    });
  }

  void CloseNow() {
    if (closed_) return;
    closed_ = true;
    pending_ = false;
    error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Lowest().close();
    hold_.reset();  // may be the last reference but for the running handler's own
  }

  HttpServer::Impl* const server_;
  const asio::any_io_executor strand_;
  std::shared_ptr<asio::ssl::context> ctx_;  // TLS: outlives the stream that uses it
  Stream stream_;
  beast::flat_buffer buffer_;
  std::string remote_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::empty_body>> continue_;
  http::response<http::string_body> res_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  uint64_t seq_ = 0;      // the request being answered; a stale Responder never matches
  bool pending_ = false;  // the handler has not answered yet
  bool writing_ = false;
  bool watching_ = false;  // a Watch() read is outstanding
  bool closed_ = false;
  bool peer_eof_ = false;      // the client half-closed while its answer was being written
  bool head_request_ = false;  // the request being answered is a HEAD
  AfterWatch after_watch_ = AfterWatch::kNothing;
  std::shared_ptr<Session> hold_;  // self-reference while a response is pending
  std::chrono::steady_clock::time_point linger_deadline_;
  size_t drained_ = 0;
};

// Shared by all copies of one Responder. Answers at most once; answers 500 if dropped.
class ResponderState {
 public:
  ResponderState(std::shared_ptr<Gate> gate, std::weak_ptr<SessionBase> session, uint64_t seq)
      : gate_(std::move(gate)), session_(std::move(session)), seq_(seq) {}
  ~ResponderState() {
    if (!done_.load(std::memory_order_acquire)) {
      Send(JsonError(500, "internal", "the server dropped the request without answering"));
    }
  }
  ResponderState(const ResponderState&) = delete;
  ResponderState& operator=(const ResponderState&) = delete;

  void Send(HttpResponse r) {
    if (done_.exchange(true, std::memory_order_acq_rel)) return;
    std::lock_guard<std::mutex> lock(gate_->mu);
    if (!gate_->open) return;
    if (auto s = session_.lock()) s->PostResponse(seq_, std::move(r));
  }

 private:
  std::shared_ptr<Gate> gate_;
  std::weak_ptr<SessionBase> session_;
  const uint64_t seq_;
  std::atomic<bool> done_{false};
};

template <typename Stream>
void Session<Stream>::InvokeHandler(HttpRequest req) {
  auto state = std::make_shared<ResponderState>(server_->gate, weak_from_this(), seq_);
  Responder responder = [state](HttpResponse r) { state->Send(std::move(r)); };
  try {
    server_->handler(std::move(req), std::move(responder));
  } catch (const std::exception& e) {
    state->Send(JsonError(500, "internal", std::string("handler failed: ") + e.what()));
  } catch (...) {
    state->Send(JsonError(500, "internal", "handler failed"));
  }
}

// Accepts connections on one address, each onto its own strand.
class ListenerBase {
 public:
  virtual ~ListenerBase() = default;
  virtual void Start() = 0;
  virtual void Close() = 0;     // any thread
  virtual void CloseNow() = 0;  // only when no I/O thread runs
};

template <typename Protocol>
class Listener final : public ListenerBase,
                       public std::enable_shared_from_this<Listener<Protocol>> {
 public:
  using Acceptor = typename Protocol::acceptor;
  using Socket = typename Protocol::socket;

  Listener(HttpServer::Impl* server, Acceptor acceptor)
      : server_(server), acceptor_(std::move(acceptor)), retry_(acceptor_.get_executor()) {}

  void Start() override {
    asio::dispatch(acceptor_.get_executor(), [self = this->shared_from_this()] { self->Accept(); });
  }
  void Close() override {
    asio::post(acceptor_.get_executor(), [self = this->shared_from_this()] { self->CloseNow(); });
  }
  void CloseNow() override {
    closed_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
  }
  int port() const { return acceptor_.local_endpoint().port(); }

 private:
  void Accept() {
    if (closed_) return;
    acceptor_.async_accept(
        asio::make_strand(server_->ioc),
        beast::bind_front_handler(&Listener::OnAccept, this->shared_from_this()));
  }

  void OnAccept(error_code ec, Socket socket) {
    if (closed_) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // EMFILE and friends: back off instead of spinning; the listen queue holds clients.
      std::fprintf(stderr, "corral http: accept failed: %s\n", ec.message().c_str());
      retry_.expires_after(std::chrono::milliseconds(100));
      retry_.async_wait([self = this->shared_from_this()](error_code wait_ec) {
        if (!wait_ec) self->Accept();
      });
      return;
    }
    server_->Adopt(std::move(socket));
    Accept();
  }

  HttpServer::Impl* const server_;
  Acceptor acceptor_;
  asio::steady_timer retry_;
  bool closed_ = false;
};

void HttpServer::Impl::Adopt(tcp::socket socket) {
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  const auto peer = socket.remote_endpoint(ignored);
  std::string address = ignored ? std::string() : peer.address().to_string();
  std::shared_ptr<SessionBase> session;
  if (options.tls) {
    session = std::make_shared<Session<TlsStream>>(this, std::move(socket), options.tls->Current());
  } else {
    session = std::make_shared<Session<beast::tcp_stream>>(this, std::move(socket), nullptr);
  }
  session->address = std::move(address);
  if (Register(session)) session->Start();
}

// Beast's streams are TCP's; an AF_UNIX stream socket takes the same calls (recv, send,
// shutdown, close), so once its peer's credentials are read the connection is carried in a
// tcp::socket handle and served like any other, over plain HTTP (the kernel carries it). Nothing
// TCP-specific is asked of it: its address comes from the credentials, not remote_endpoint().
void HttpServer::Impl::Adopt(unix_stream::socket socket) {
  struct ucred cred {};
  socklen_t len = sizeof(cred);
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    std::fprintf(stderr, "corral http: SO_PEERCRED failed: %s\n", std::strerror(errno));
    return;  // closed as it is dropped: a caller the kernel cannot name is served nothing
  }
  const auto executor = socket.get_executor();
  error_code ec;
  const int fd = socket.release(ec);
  if (ec) return;
  tcp::socket carried(executor);
  carried.assign(tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  auto session = std::make_shared<Session<beast::tcp_stream>>(this, std::move(carried), nullptr);
  session->peer = PeerCredentials{cred.uid, cred.gid, cred.pid};
  session->address = LocalRemote(*session->peer);
  if (Register(session)) session->Start();
}

bool HttpServer::Impl::Register(const std::shared_ptr<SessionBase>& s) {
  std::lock_guard<std::mutex> lock(mu);
  if (stopping) return false;  // the session closes as it is dropped
  if (options.max_connections_per_address > 0) {
    if (!per_address->Take(s->address, options.max_connections_per_address)) {
      return false;  // closed as it is dropped
    }
    s->counted = true;
  }
  sessions.emplace(s.get(), s);
  return true;
}

void HttpServer::Impl::Deregister(SessionBase* s) {
  std::lock_guard<std::mutex> lock(mu);
  sessions.erase(s);
  if (s->counted) per_address->Release(s->address);
}

std::shared_ptr<void> HttpServer::Impl::HandOver(SessionBase* s) {
  std::lock_guard<std::mutex> lock(mu);
  if (!s->counted) return nullptr;
  s->counted = false;
  return std::make_shared<AddressSlot>(per_address, s->address);
}

HttpServer::HttpServer(Handler handler, int io_threads)
    : HttpServer(std::move(handler), HttpServerOptions{.io_threads = io_threads}) {}

HttpServer::HttpServer(Handler handler, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(handler), options)) {
  CORRAL_CHECK(options.io_threads >= 1, "HttpServer needs at least one I/O thread");
  CORRAL_CHECK(impl_->handler != nullptr, "HttpServer needs a handler");
}

HttpServer::~HttpServer() { Stop(); }

Result<int> HttpServer::Listen(const std::string& host, int port) {
  Impl& s = *impl_;
  CORRAL_CHECK(!s.stopped, "Listen after Stop");
  if (port < 0 || port > 65535) {
    return InvalidArgument("listen port " + std::to_string(port) + " is not in 0..65535");
  }
  const std::string where = host + ":" + std::to_string(port);
  error_code ec;
  tcp::endpoint endpoint;
  const auto addr = asio::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(addr, static_cast<unsigned short>(port));
  } else {
    // A name (e.g. "localhost"): resolve synchronously (no resolver thread), first match.
    tcp::resolver resolver(s.ioc);
    auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
    if (ec || results.empty()) {
      return Unavailable("cannot listen on " + where +
                         ": cannot resolve host: " + (ec ? ec.message() : "no addresses"));
    }
    endpoint = results.begin()->endpoint();
  }
  tcp::acceptor acceptor(asio::make_strand(s.ioc));
  auto fail = [&](const char* step) -> Status {
    return Unavailable("cannot listen on " + where + ": " + step + ": " + ec.message());
  };
  acceptor.open(endpoint.protocol(), ec);
  if (ec) return fail("open");
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) return fail("SO_REUSEADDR");
  acceptor.bind(endpoint, ec);
  if (ec) return fail("bind");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  auto listener = std::make_shared<Listener<tcp>>(impl_.get(), std::move(acceptor));
  s.listeners.push_back(listener);
  if (s.started) listener->Start();
  return listener->port();
}

namespace {

// Whether a process accepts connections on the Unix socket at `path` now.
bool UnixSocketAnswers(const std::string& path) {
  asio::io_context ioc;
  unix_stream::socket probe(ioc);
  error_code ec;
  probe.connect(unix_stream::endpoint(path), ec);
  return !ec;
}

}  // namespace

Status HttpServer::ListenUnix(const std::string& path) {
  Impl& s = *impl_;
  CORRAL_CHECK(!s.stopped, "ListenUnix after Stop");
  const std::string where = "cannot listen on unix socket " + path + ": ";
  if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
    return InvalidArgument(where + "want a path of 1 to " +
                           std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes");
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return FailedPrecondition(where + "a file that is not a socket is there");
    if (UnixSocketAnswers(path)) return Unavailable(where + "another process serves it");
    ::unlink(path.c_str());  // left by a process that is gone
  }
  error_code ec;
  unix_stream::acceptor acceptor(asio::make_strand(s.ioc));
  auto fail = [&](const char* step) -> Status {
    return Unavailable(where + step + ": " + ec.message());
  };
  acceptor.open(unix_stream(), ec);
  if (ec) return fail("open");
  acceptor.bind(unix_stream::endpoint(path), ec);
  if (ec) return fail("bind");
  // Every local user may connect: who they are is what the kernel says of them.
  if (::chmod(path.c_str(), 0666) != 0) {
    ::unlink(path.c_str());
    return Unavailable(where + "chmod: " + std::strerror(errno));
  }
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    ::unlink(path.c_str());
    return fail("listen");
  }
  auto listener = std::make_shared<Listener<unix_stream>>(impl_.get(), std::move(acceptor));
  s.listeners.push_back(listener);
  s.unix_paths.push_back(path);
  if (s.started) listener->Start();
  return Status::Ok();
}

void HttpServer::Start() {
  Impl& s = *impl_;
  if (s.started || s.stopped) return;
  s.started = true;
  s.work.emplace(s.ioc.get_executor());
  for (const auto& l : s.listeners) l->Start();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.running_threads = s.options.io_threads;
  }
  for (int i = 0; i < s.options.io_threads; ++i) {
    s.threads.emplace_back([&s, i] {
      const std::string name = "corral-http-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      for (;;) {
        try {
          s.ioc.run();
          break;
        } catch (const std::exception& e) {  // a bug in a completion handler; keep serving
          std::fprintf(stderr, "corral http: I/O thread caught: %s\n", e.what());
        }
      }
      std::lock_guard<std::mutex> lock(s.mu);
      --s.running_threads;
      s.threads_done.notify_all();
    });
  }
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  for (const auto& t : s.threads) {
    CORRAL_CHECK(t.get_id() != std::this_thread::get_id(),
                 "HttpServer::Stop called from its own I/O thread (e.g. inside a Handler)");
  }
  s.stopped = true;
  {
    std::lock_guard<std::mutex> lock(s.gate->mu);
    s.gate->open = false;  // from here on Responders are no-ops
  }
  std::vector<std::shared_ptr<SessionBase>> sessions;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stopping = true;
    for (auto& [ptr, weak] : s.sessions) {
      if (auto session = weak.lock()) sessions.push_back(std::move(session));
    }
  }
  for (const std::string& path : s.unix_paths) ::unlink(path.c_str());
  if (!s.started) {
    for (const auto& l : s.listeners) l->CloseNow();
    s.listeners.clear();
    return;
  }
  for (const auto& l : s.listeners) l->Close();
  for (const auto& session : sessions) session->Close();
  sessions.clear();
  s.work.reset();
  {
    // Let the threads run the closes to completion; whatever is still queued after the
    // grace period is destroyed with the io_context.
    std::unique_lock<std::mutex> lock(s.mu);
    s.threads_done.wait_for(lock, kStopGrace, [&s] { return s.running_threads == 0; });
  }
  s.ioc.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
  s.listeners.clear();
}

size_t HttpServer::ConnectionCount() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->sessions.size();
}

}  // namespace corral::net
