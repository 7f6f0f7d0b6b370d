// A bearer credential as the head keeps it (only the SHA-256 of the secret), and the codec of
// it and of its caller, shared by the head's change log, the API and the CLI.
#pragma once

#include <string>

#include "core/codec.h"
#include "core/identity.h"
#include "core/status.h"
#include "core/time.h"

namespace corral {

struct Credential {
  std::string id;    // short public name ("t-3f9a2c1b"), for list and revoke
  std::string hash;  // hex SHA-256 of the secret; empty where shown (the API never shows it)
  Caller who;        // user + role, a node, or the join credential
  TimeMs created_at = 0;
  TimeMs expires_at = 0;  // 0: never
  bool operator==(const Credential&) const;
};

const char* CallerKindName(Caller::Kind k);
Json ToJson(const Caller& c);
// An error names the field that is wrong.
Result<Caller> CallerFromJson(const Json& j);
Json ToJson(const Credential& c);
// `hash` may be absent (the API's answers); `id` and `who` may not.
Result<Credential> CredentialFromJson(const Json& j);

}  // namespace corral
