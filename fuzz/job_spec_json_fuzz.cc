// A job spec as POST /v1/jobs receives it: JSON text -> ParseJobSpec. Must not crash, leak or
// hit undefined behaviour on any input; bad specs are errors.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/codec.h"
#include "core/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // The API refuses deeper bodies before parsing them (ApiService::Route).
  if (corral::JsonNestingDepth(text) > corral::kMaxJsonNesting) return 0;
  corral::Json j = corral::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto spec = corral::ParseJobSpec(j);
  if (spec.ok()) (void)corral::ToJson(*spec);
  (void)corral::JobSpecFromJson(j);
  return 0;
}
