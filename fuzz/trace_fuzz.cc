// The simulator's trace readers: the first byte picks the format (auto, or each reader), the
// rest is the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using corral::sim::TraceFormat;
  static const TraceFormat kFormats[] = {
      TraceFormat::kAuto,     TraceFormat::kCsv,    TraceFormat::kPhilly, TraceFormat::kGavel,
      TraceFormat::kTiresias, TraceFormat::kHelios, TraceFormat::kAlibaba};
  corral::sim::TraceOptions options;
  options.format = kFormats[data[0] % (sizeof kFormats / sizeof kFormats[0])];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  (void)corral::sim::ParseTrace(text, "fuzz", options);
  return 0;
}
