#include "core/relay_grant.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <charconv>
#include <vector>

#include "core/secrets.h"

namespace corral {
namespace {

constexpr char kGrantPrefix[] = "cg1.";

std::string GrantHex(const unsigned char* data, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[data[i] >> 4]);
    out.push_back(kHex[data[i] & 15]);
  }
  return out;
}

std::string GrantHexOf(const std::string& s) {
  return GrantHex(reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

bool GrantUnhex(const std::string& hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned int byte = 0;
    auto [end, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, byte, 16);
    if (ec != std::errc() || end != hex.data() + i + 2) return false;
    out->push_back(static_cast<char>(byte));
  }
  return true;
}

std::string GrantMac(const std::string& key, const std::string& payload) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), digest, &len);
  return GrantHex(digest, len);
}

std::vector<std::string> SplitGrant(const std::string& token) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t dot = token.find('.'); dot != std::string::npos; dot = token.find('.', from)) {
    parts.push_back(token.substr(from, dot - from));
    from = dot + 1;
  }
  parts.push_back(token.substr(from));
  return parts;
}

GrantCheck Refuse(GrantRefusal r, std::string why) { return GrantCheck{r, std::move(why)}; }

}  // namespace

const char* GrantRefusalName(GrantRefusal r) {
  switch (r) {
    case GrantRefusal::kNone:
      return "none";
    case GrantRefusal::kMissing:
      return "missing";
    case GrantRefusal::kMalformed:
      return "malformed";
    case GrantRefusal::kBadSignature:
      return "bad_signature";
    case GrantRefusal::kOtherNode:
      return "other_node";
    case GrantRefusal::kOtherRun:
      return "other_run";
    case GrantRefusal::kExpired:
      return "expired";
    case GrantRefusal::kNoKey:
      return "no_key";
  }
  return "unknown";
}

std::string NodeGrantKey(const std::string& credential) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(credential.data()), credential.size(), digest);
  return GrantHex(digest, sizeof digest);
}

std::string SignRelayGrant(const std::string& key, const RelayGrant& grant) {
  std::string payload = std::string(kGrantPrefix) + GrantHexOf(grant.node) + "." +
                        GrantHexOf(grant.run) + "." + std::to_string(grant.expires_at);
  return payload + "." + GrantMac(key, payload);
}

Status GrantCheck::ToStatus() const {
  switch (refusal) {
    case GrantRefusal::kNone:
      return Status::Ok();
    case GrantRefusal::kOtherNode:
    case GrantRefusal::kOtherRun:
      return PermissionDenied("relay grant refused (" + std::string(GrantRefusalName(refusal)) +
                              "): " + why);
    case GrantRefusal::kNoKey:
      return Unavailable("relay grant refused (" + std::string(GrantRefusalName(refusal)) +
                         "): " + why);
    default:
      return Unauthenticated("relay grant refused (" + std::string(GrantRefusalName(refusal)) +
                             "): " + why);
  }
}

GrantCheck VerifyRelayGrant(const std::string& key, const std::string& token,
                            const std::string& node, const std::string& run, TimeMs now) {
  if (token.rfind(kGrantPrefix, 0) != 0) {
    return Refuse(GrantRefusal::kMissing, "the bearer is not a relay grant from the head");
  }
  if (key.empty()) {
    return Refuse(GrantRefusal::kNoKey, "node " + node + " has no credential from the head yet");
  }
  std::vector<std::string> parts = SplitGrant(token);
  if (parts.size() != 5) return Refuse(GrantRefusal::kMalformed, "want 5 fields separated by '.'");
  const std::string payload = token.substr(0, token.rfind('.'));
  // Before any field is believed: a grant this node's head did not sign says nothing.
  if (!TokensEqual(GrantMac(key, payload), parts[4])) {
    return Refuse(GrantRefusal::kBadSignature, "not signed for node " + node);
  }
  RelayGrant g;
  if (!GrantUnhex(parts[1], &g.node) || !GrantUnhex(parts[2], &g.run)) {
    return Refuse(GrantRefusal::kMalformed, "node or run is not hex");
  }
  auto [end, ec] =
      std::from_chars(parts[3].data(), parts[3].data() + parts[3].size(), g.expires_at);
  if (ec != std::errc() || end != parts[3].data() + parts[3].size()) {
    return Refuse(GrantRefusal::kMalformed, "expiry \"" + parts[3] + "\" is not a number");
  }
  if (g.node != node) {
    return Refuse(GrantRefusal::kOtherNode, "for node " + g.node + ", this is node " + node);
  }
  if (g.run != run) {
    return Refuse(GrantRefusal::kOtherRun, "for run " + g.run + ", not run " + run);
  }
  if (now >= g.expires_at) {
    return Refuse(GrantRefusal::kExpired, "expired " + std::to_string(now - g.expires_at) +
                                              " ms ago (are the head's and this node's clocks "
                                              "in step?)");
  }
  return GrantCheck{};
}

}  // namespace corral
