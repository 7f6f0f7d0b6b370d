// A relay grant: the head's permission, signed for one node, to relay one request (an exec
// session's, a log read's, a notebook connection's) into one run on that node until an expiry.
// The head signs it with HMAC-SHA256 keyed by the node's grant key, NodeGrantKey(the node's
// credential): the head holds that key as the SHA-256 it keeps of the credential, the agent
// derives it from the credential it was issued. So only that node can verify a grant, a grant
// for one node means nothing on another, and the cluster's join token opens no relay at all.
//
// The grant travels as the relayed request's bearer:
//   "cg1." HEX(node) "." HEX(run) "." EXPIRES_AT_MS "." HEX(HMAC(key, everything before it))
// Hex keeps every field free of the separator, so no two grants sign the same bytes.
#pragma once

#include <string>

#include "core/status.h"
#include "core/time.h"

namespace corral {

// Long enough for a request to reach the agent over a loaded network, short enough that a
// grant seen in a log or a core dump is soon worthless. Each relayed request gets a fresh one.
inline constexpr DurationMs kRelayGrantLifetimeMs = 60000;

struct RelayGrant {
  std::string node;       // the node that may honour it
  std::string run;        // the run id as the agent names it: "JOB.ATTEMPT", or a step's
  TimeMs expires_at = 0;  // wall clock, ms since the epoch
};

// Why an agent refused a grant: decided by this type, never by a message's text.
enum class GrantRefusal {
  kNone,          // accepted
  kMissing,       // no grant, or a bearer that is not one (a join token, a node credential)
  kMalformed,     // the shape of a grant, but a field does not decode
  kBadSignature,  // not signed with this node's key (another node's grant, or forged)
  kOtherNode,     // signed with this node's key but naming another node
  kOtherRun,      // for another run than the one asked for
  kExpired,
  kNoKey,  // this agent has no credential yet (not registered since it started)
};
const char* GrantRefusalName(GrantRefusal r);

// The key both sides derive from a node credential: its SHA-256, in hex.
std::string NodeGrantKey(const std::string& credential);

std::string SignRelayGrant(const std::string& key, const RelayGrant& grant);

struct GrantCheck {
  GrantRefusal refusal = GrantRefusal::kNone;
  std::string why;  // for the refused: what was wrong, naming the values
  bool ok() const { return refusal == GrantRefusal::kNone; }
  // kUnauthenticated for a grant not from this node's head, kPermissionDenied for one that
  // is, but not for this run or this node.
  Status ToStatus() const;
};

// Whether `token` is a grant of `key` for run `run` on node `node`, valid at `now`.
GrantCheck VerifyRelayGrant(const std::string& key, const std::string& token,
                            const std::string& node, const std::string& run, TimeMs now);

}  // namespace corral
