// Job arrays and dependencies in Slurm's forms (sbatch --array, --dependency).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace corral {

struct ArraySpec {
  std::vector<int32_t> indices;  // ascending, distinct
  int32_t max_running = 0;       // %P; 0: no limit
};
constexpr size_t kMaxArraySize = 100000;
constexpr int32_t kMaxArrayIndex = 4'000'000;

// "0-999", "0-999:2", "0-15%4", "1,5,9", "1-3,7-9:2%2". Errors name the field 'array'.
Result<ArraySpec> ParseArray(const std::string& text);

enum class DependencyType { kAfterOk, kAfterAny, kAfterNotOk, kSingleton };
const char* DependencyTypeName(DependencyType t);

struct Dependency {
  DependencyType type = DependencyType::kAfterOk;
  std::vector<uint64_t> jobs;  // empty for singleton
  bool operator==(const Dependency&) const = default;
};

// "afterok:12:13,afterany:14", "singleton". All must hold (Slurm's ','; '?' is not taken).
Result<std::vector<Dependency>> ParseDependencies(const std::string& text);
std::string FormatDependencies(const std::vector<Dependency>& deps);

}  // namespace corral
