#include "agent/gpus/gpu_share_env.h"

#include <sys/stat.h>

#include <vector>

#include "gpushare/share_contract.h"

namespace corral::agent {

std::string GpuShareLibraryBeside(const std::string& program) {
  const std::string name = CORRAL_GPUSHARE_LIBRARY;
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

std::optional<GpuShareOrder> ShareOfOrder(const RunOrder& order) {
  auto isolation = order.env.find(CORRAL_ENV_GPU_ISOLATION);
  GpuShareOrder share;
  if (isolation == order.env.end() || !ParseGpuIsolation(isolation->second, &share.isolation)) {
    return std::nullopt;
  }
  share.memory_limited = order.env.count(CORRAL_ENV_GPU_MEMORY_LIMIT) > 0;
  return share;
}

std::map<std::string, std::string> GpuShareEnv(const GpuShareOrder& share,
                                               const std::string& share_lib,
                                               const std::string& share_ledger,
                                               const MpsClient* mps) {
  switch (share.isolation) {
    case GpuIsolation::kMemory:
      if (!share.memory_limited) return {};
      if (share_lib.empty()) return {{CORRAL_ENV_GPU_SHARE_ENFORCED, "0"}};
      return {{"LD_PRELOAD", share_lib},
              {CORRAL_ENV_GPU_SHARE_FILE, share_ledger},
              {CORRAL_ENV_GPU_SHARE_ENFORCED, "1"}};
    case GpuIsolation::kMps:
      if (mps == nullptr) return {};
      return {{CORRAL_ENV_MPS_PIPE_DIRECTORY, mps->pipe_dir},
              {CORRAL_ENV_MPS_LOG_DIRECTORY, mps->log_dir},
              {CORRAL_ENV_GPU_SHARE_ENFORCED, "1"}};
  }
  return {};
}

}  // namespace corral::agent
