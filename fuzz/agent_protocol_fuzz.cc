// The head <-> agent messages (core/agent_protocol.h) as either side decodes them; a decoded
// message must encode again.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  corral::Json j = corral::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  if (auto r = corral::RegisterRequestFromJson(j); r.ok()) (void)corral::ToJson(*r);
  if (auto r = corral::RegisterResponseFromJson(j); r.ok()) (void)corral::ToJson(*r);
  if (auto r = corral::SyncRequestFromJson(j); r.ok()) (void)corral::ToJson(*r);
  if (auto r = corral::SyncResponseFromJson(j); r.ok()) (void)corral::ToJson(*r);
  return 0;
}
