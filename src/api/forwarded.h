// Requests a node's agent forwards from its own local socket (agentnet/user_socket.h): the
// agent names the Unix user its kernel reported (SO_PEERCRED) in the path,
//   METHOD /v1/forwarded/UID/v1/...   with the node's credential as the bearer,
// and the head serves the inner request as that user, looked up and given its groups' roles
// on the head's host as for the head's own socket. The uid is taken from the path of this one
// route and only with a current node credential (head::Presented::Forwarded): no header names a
// caller, and a user's token never vouches for anyone.
#pragma once

#include <string>

#include "core/status.h"
#include "net/http.h"

namespace corral::api {

// The route's prefix, "/v1/forwarded/".
inline constexpr char kForwardedPrefix[] = "/v1/forwarded/";

// Whether `req` is on the forwarding route (its decoded path or its raw target).
bool IsForwarded(const net::HttpRequest& req);

// Turns a forwarded request into the request it carries: path and target without the prefix,
// and `peer` set to the forwarded uid with `via_node`. Refuses (changing nothing) a request
// that came over a Unix socket, one with no bearer, a uid that is not a number, and an inner
// request that is not under /v1/, is forwarded again, or is an agent's own (/v1/agent/).
Status UnwrapForwarded(net::HttpRequest& req);

// Whether `req` came over the head's own local socket (not forwarded by a node).
inline bool OnLocalSocket(const net::HttpRequest& req) { return req.peer && !req.peer->via_node; }

}  // namespace corral::api
