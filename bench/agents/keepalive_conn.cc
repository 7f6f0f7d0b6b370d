#include "agents/keepalive_conn.h"

#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace corral::bench {

namespace http = boost::beast::http;
using boost::system::error_code;

KeepAliveConn::KeepAliveConn(boost::asio::io_context& ioc, boost::asio::ip::tcp::endpoint head,
                             std::string host_header)
    : stream_(ioc), head_(std::move(head)), host_header_(std::move(host_header)) {}

void KeepAliveConn::Post(std::string target, const std::string& bearer, std::string body,
                         std::chrono::milliseconds timeout, Done done) {
  busy_ = true;
  done_ = std::move(done);
  req_ = {};
  req_.method(http::verb::post);
  req_.target(target);
  req_.version(11);
  req_.set(http::field::host, host_header_);
  req_.set(http::field::user_agent, "corral-agents");
  req_.set(http::field::content_type, "application/json");
  req_.set(http::field::authorization, "Bearer " + bearer);
  req_.keep_alive(true);
  req_.body() = std::move(body);
  req_.prepare_payload();
  stream_.expires_after(timeout);
  if (connected_) return Write();
  stream_.async_connect(head_, [self = shared_from_this()](error_code ec) {
    if (ec) return self->Fail("connect", ec);
    self->connected_ = true;
    self->stream_.socket().set_option(boost::asio::ip::tcp::no_delay(true), ec);
    self->Write();
  });
}

void KeepAliveConn::Write() {
  http::async_write(stream_, req_, [self = shared_from_this()](error_code ec, size_t) {
    if (ec) return self->Fail("write", ec);
    self->res_.emplace();
    http::async_read(self->stream_, self->buffer_, *self->res_, [self](error_code ec, size_t) {
      if (ec) return self->Fail("read", ec);
      self->stream_.expires_never();
      net::HttpResponse out;
      out.status = static_cast<int>(self->res_->result_int());
      out.body = std::move(self->res_->body());
      if (!self->res_->keep_alive()) {
        error_code ignored;
        self->stream_.socket().close(ignored);
        self->connected_ = false;
      }
      self->Deliver(std::move(out));
    });
  });
}

void KeepAliveConn::Fail(const char* step, const error_code& ec) {
  error_code ignored;
  stream_.socket().close(ignored);
  connected_ = false;
  buffer_.clear();
  Deliver(Unavailable(std::string(step) + ": " + ec.message()));
}

void KeepAliveConn::Deliver(Result<net::HttpResponse> r) {
  busy_ = false;
  if (done_) std::exchange(done_, nullptr)(std::move(r));
}

}  // namespace corral::bench
