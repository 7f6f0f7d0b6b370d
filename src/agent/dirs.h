// Directories the agent makes (its state, run records, cgroups).
#pragma once

#include <string>

#include "core/status.h"

namespace corral::agent {

// mkdir -p with mode 0755 for each directory it creates; existing ones are left as they are.
Status MakeDirs(const std::string& path);

}  // namespace corral::agent
