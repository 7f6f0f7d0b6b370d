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

  // Implicit: a token is what almost every caller presents.
  Presented(std::string token) : bearer(std::move(token)) {}  // NOLINT(google-explicit-constructor)
  Presented(const char* token) : bearer(token) {}             // NOLINT(google-explicit-constructor)
  static Presented Local(Result<Caller> who) {
    Presented p{std::string()};
    p.local.emplace(std::move(who));
    return p;
  }
};

}  // namespace corral::head
