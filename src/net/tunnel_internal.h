// How HttpServer hands a connection over (tunnel.h): for http_server.cc only.
#pragma once

// <utility> before any Boost.Asio header: Boost 1.74's awaitable.hpp needs std::exchange.
#include <utility>

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <memory>
#include <string>

#include "net/tunnel.h"

namespace corral::net {

// `leftover`: bytes the client sent after its request, read already; relayed after `first`.
// `slot`: the connection's place under its address's cap (may be null), held until it closes.
std::shared_ptr<TakenConnection> TakePlain(boost::beast::tcp_stream&& stream, std::string leftover,
                                           std::shared_ptr<void> slot);
std::shared_ptr<TakenConnection> TakeTls(
    boost::beast::ssl_stream<boost::beast::tcp_stream>&& stream,
    std::shared_ptr<boost::asio::ssl::context> ctx, std::string leftover,
    std::shared_ptr<void> slot);

}  // namespace corral::net
