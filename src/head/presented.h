// What a request presents to the head as proof of who sends it (Head::Run): a bearer secret
// the head looks up, or a caller the API already knows from the kernel, not from anything the
// request says (a Unix socket's peer: api/unix_identity.h).
#pragma once

#include <utility>

#include <optional>
#include <string>

#include "core/identity.h"
#include "core/status.h"

namespace corral::head {

struct Presented {
  std::string bearer;
  // Set for a local caller: who the kernel says it is, or why it could not be named (401).
  std::optional<Result<Caller>> local;
  // Set for a Unix user a node's agent forwarded: the credential of the node that vouches for
  // `local`. The head takes `local` only when this is a current node credential.
  std::optional<std::string> vouching_node;

  // Implicit: a token is what almost every caller presents.
  Presented(std::string token) : bearer(std::move(token)) {}  // NOLINT(google-explicit-constructor)
  Presented(const char* token) : bearer(token) {}             // NOLINT(google-explicit-constructor)
  static Presented Local(Result<Caller> who) {
    Presented p{std::string()};
    p.local.emplace(std::move(who));
    return p;
  }
  static Presented Forwarded(std::string node_credential, Result<Caller> who) {
    Presented p = Local(std::move(who));
    p.vouching_node = std::move(node_credential);
    return p;
  }
};

}  // namespace corral::head
