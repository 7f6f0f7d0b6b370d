// A job spec file (`corral submit -f spec.yaml`): YAML or JSON text -> ReadSpecFile ->
// ParseJobSpec, through a real file as the CLI reads it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "core/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The pid fixed-width: the path is in the error messages, and their length should not vary
  // from one run to the next (one source of divergence fewer; ASLR leaves others, fuzz/README.md).
  static const std::string path = [] {
    char p[64];
    std::snprintf(p, sizeof(p), "/tmp/corral-fuzz-spec-%010d.yaml", static_cast<int>(getpid()));
    return std::string(p);
  }();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  auto j = corral::cli::ReadSpecFile(path);
  if (j.ok()) (void)corral::ParseJobSpec(*j);
  return 0;
}
