// A job spec file (`corral submit -f spec.yaml`): YAML or JSON text -> ReadSpecFile ->
// ParseJobSpec, through a real file as the CLI reads it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/commands.h"
#include "core/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/corral-fuzz-spec-" + std::to_string(getpid()) + ".yaml";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  auto j = corral::cli::ReadSpecFile(path);
  if (j.ok()) (void)corral::ParseJobSpec(*j);
  return 0;
}
