// Which Corral this is: shown by `corral --version`, GET /v1/version, corral_build_info on
// /metrics and the dashboard. Computed at build time (version.cmake) from git, the project's
// version, or -DCORRAL_VERSION (packages).
#pragma once

namespace corral {

const char* Version();

}  // namespace corral
