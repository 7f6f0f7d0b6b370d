// KeepAliveConn: one persistent HTTP/1.1 connection to the head, as an agent's blocking
// HttpClient keeps one, but asynchronous, so that thousands of emulated agents fit on a few
// threads. Owned (shared) by one emulated agent; all of its calls and callbacks run on the
// io_context it was made with, which must be run by one thread. One request at a time.
#pragma once

#include <utility>  // before Boost.Asio (DESIGN §13)

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "net/http.h"

namespace corral::bench {

class KeepAliveConn : public std::enable_shared_from_this<KeepAliveConn> {
 public:
  using Done = std::function<void(Result<net::HttpResponse>)>;

  KeepAliveConn(boost::asio::io_context& ioc, boost::asio::ip::tcp::endpoint head,
                std::string host_header);

  // POSTs `body` (JSON) to `target` with the bearer token; `done` is called once, on the
  // io_context's thread, with the answer (any status) or kUnavailable (connect, write or read
  // failed, or `timeout` passed; the connection is dropped and the next call reconnects).
  // REQUIRES: no request in flight on this connection.
  void Post(std::string target, const std::string& bearer, std::string body,
            std::chrono::milliseconds timeout, Done done);

  bool busy() const { return busy_; }

 private:
  void Write();
  void Fail(const char* step, const boost::system::error_code& ec);
  void Deliver(Result<net::HttpResponse> r);

  boost::beast::tcp_stream stream_;
  boost::asio::ip::tcp::endpoint head_;
  std::string host_header_;
  bool connected_ = false;
  bool busy_ = false;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::request<boost::beast::http::string_body> req_;
  std::optional<boost::beast::http::response<boost::beast::http::string_body>> res_;
  Done done_;
};

}  // namespace corral::bench
