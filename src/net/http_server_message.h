// How HttpServer translates between Beast's messages and Corral's HttpRequest/HttpResponse:
// what a handler sees of a request, and what of a handler's response reaches the wire (never a
// header that would inject another, nor one the connection owns). For http_server.cc only.
#pragma once

// <utility> before any Boost.Asio header: Boost 1.74's awaitable.hpp needs std::exchange.
#include <utility>

#include <boost/beast/http.hpp>
#include <string>
#include <string_view>

#include "net/http.h"
#include "net/strings_internal.h"

namespace corral::net {

// The request as a handler sees it: path decoded, query parsed, header names lower-case
// (repeated headers joined with ", "), `remote` the peer's "address:port".
HttpRequest ToHttpRequest(boost::beast::http::request<boost::beast::http::string_body>&& r,
                          const std::string& remote);

// Fills `res` with `r` for a client speaking HTTP/1.`version` (10 or 11): a status outside
// 200..999 becomes 500; Content-Length, Connection, Transfer-Encoding and any header with CR or
// LF are dropped; a HEAD request gets the length without the body.
void ToBeastResponse(HttpResponse&& r, unsigned version, bool keep_alive, bool head_request,
                     boost::beast::http::response<boost::beast::http::string_body>* res);

}  // namespace corral::net
