#include "agent/gpu_share_env.h"

#include <sys/stat.h>

#include <vector>

namespace corral::agent {

std::string GpuShareLibraryBeside(const std::string& program) {
  const std::string name = "libcorral_gpushare.so";
  std::vector<std::string> candidates;
  auto slash = program.find_last_of('/');
  if (slash != std::string::npos) candidates.push_back(program.substr(0, slash + 1) + name);
#ifdef CORRAL_GPUSHARE_INSTALLED
  candidates.push_back(CORRAL_GPUSHARE_INSTALLED);
#endif
  for (const std::string& c : candidates) {
    struct stat st {};
    if (stat(c.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return c;
  }
  return {};
}

void AddGpuShareEnv(std::map<std::string, std::string>* env, const std::string& share_lib,
                    const std::string& share_ledger) {
  auto isolation = env->find("CORRAL_GPU_ISOLATION");
  if (isolation == env->end() || isolation->second != "memory" ||
      !env->count("CORRAL_GPU_MEMORY_LIMIT")) {
    return;
  }
  if (share_lib.empty()) {
    (*env)["CORRAL_GPU_SHARE_ENFORCED"] = "0";
    return;
  }
  std::string& preload = (*env)["LD_PRELOAD"];
  preload = share_lib + (preload.empty() ? "" : ":" + preload);
  (*env)["CORRAL_GPU_SHARE_FILE"] = share_ledger;
  (*env)["CORRAL_GPU_SHARE_ENFORCED"] = "1";
}

}  // namespace corral::agent
