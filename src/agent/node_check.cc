#include "agent/node_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "agent/containers/container.h"
#include "agent/containers/image_cache.h"
#include "agent/gpus/health_program.h"
#include "agent/launch/cgroup.h"

namespace corral::agent {
namespace {

using V = CheckVerdict;

bool IsExecutable(const std::string& path) {
  struct stat st {};
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string MigText(int32_t mode) {
  return mode == 1 ? "MIG on" : mode == 0 ? "MIG off" : "MIG not supported";
}

CheckPart CheckNvml(const NodeCheckInputs& in, Result<std::vector<Gpu>>* gpus) {
  CheckPart p{"NVML", V::kOk, "", {}};
  *gpus = in.probe->Probe();
  if (!gpus->ok()) {
    p.verdict = V::kFail;
    p.summary = gpus->status().message();
    return p;
  }
  if (in.nvml == nullptr) {
    p.summary = "simulated GPUs (--simulate-gpus): " + std::to_string((*gpus)->size());
  } else {
    Result<NvmlDriverInfo> info = in.nvml->DriverInfo();
    if (!info.ok()) {
      p.verdict = V::kFail;
      p.summary = info.status().message();
      return p;
    }
    p.summary = info->library + ", driver " +
                (info->driver_version.empty() ? "(unknown)" : info->driver_version) + ", " +
                std::to_string((*gpus)->size()) + " GPU(s)";
    for (size_t i = 0; i < info->mig_modes.size(); ++i) {
      p.detail.push_back("physical GPU " + std::to_string(i) + ": " + MigText(info->mig_modes[i]));
    }
  }
  if ((*gpus)->empty() && in.nvml != nullptr) {
    p.verdict = V::kFail;
    p.summary += ": the driver lists no GPU";
  }
  for (const Gpu& g : **gpus) {
    p.detail.push_back("GPU " + std::to_string(g.index) + ": " + g.model + ", " +
                       std::to_string(g.memory_mb) + " MiB, " + g.uuid + ", group " +
                       std::to_string(g.group));
  }
  return p;
}

CheckPart CheckSmi(const NodeCheckInputs& in, const Result<std::vector<Gpu>>& gpus) {
  CheckPart p{"nvidia-smi", V::kOk, "", {}};
  if (in.nvml == nullptr) return {"nvidia-smi", V::kSkip, "simulated GPUs", {}};
  if (in.nvidia_smi.empty()) return {"nvidia-smi", V::kSkip, "not installed", {}};
  std::string listing;
  int rc = RunTool({in.nvidia_smi, "-L"}, &listing);
  if (rc != 0) {
    return {"nvidia-smi",
            V::kFail,
            in.nvidia_smi + " -L: exit " + std::to_string(rc) + ": " + FirstLine(listing),
            {}};
  }
  std::vector<std::string> listed = UuidsOfSmiList(listing);
  if (!gpus.ok()) {
    p.summary = std::to_string(listed.size()) + " device(s) listed; NVML failed";
    p.verdict = V::kFail;
    return p;
  }
  const std::set<std::string> seen(listed.begin(), listed.end());
  std::set<std::string> ours;
  bool any_mig = false;
  for (const Gpu& g : *gpus) {
    ours.insert(g.uuid);
    any_mig = any_mig || g.uuid.rfind("MIG-", 0) == 0;
    if (!seen.count(g.uuid)) p.detail.push_back("the agent's " + g.uuid + " is not listed");
  }
  for (const std::string& u : listed) {
    // With MIG the agent offers the MIG devices, not their parents.
    if (!ours.count(u) && !(any_mig && u.rfind("GPU-", 0) == 0)) {
      p.detail.push_back(u + " is listed but the agent does not see it");
    }
  }
  p.verdict = p.detail.empty() ? V::kOk : V::kFail;
  p.summary = std::to_string(listed.size()) + " device(s) listed" +
              (p.detail.empty() ? ", the same as the agent's" : ", unlike the agent's");
  return p;
}

CheckPart CheckCgroups(const NodeCheckInputs& in, bool real_gpus) {
  if (!in.cgroups) return {"cgroups", V::kSkip, "off (--cgroups off)", {}};
  if (geteuid() != 0) {
    return {
        "cgroups", V::kWarn, "not root: runs get no cgroup (no CPU, memory or device caps)", {}};
  }
  Cgroups c = Cgroups::Detect(in.cgroup_root);
  if (c.none()) {
    return {"cgroups",
            V::kWarn,
            "no writable hierarchy under " + in.cgroup_root + ": runs are not capped",
            {}};
  }
  CheckPart p{"cgroups", V::kOk, c.Describe(), {}};
  if (real_gpus && !c.isolates_devices()) {
    p.verdict = V::kWarn;
    p.summary += "; GPU devices are NOT isolated (no devices controller or device program)";
  } else if (real_gpus) {
    p.summary += "; each run may open only its own /dev/nvidiaN";
  }
  return p;
}

CheckPart CheckRuntime(const NodeCheckInputs& in) {
  if (!IsExecutable(in.crun)) {
    return {"container runtime", V::kWarn, in.crun + " is missing: jobs with an image fail", {}};
  }
  std::string version;
  int rc = RunTool({in.crun, "--version"}, &version);
  if (rc != 0) {
    return {"container runtime",
            V::kFail,
            in.crun + " --version: exit " + std::to_string(rc) + ": " + FirstLine(version),
            {}};
  }
  return {"container runtime", V::kOk, in.crun + ": " + FirstLine(version), {}};
}

CheckPart CheckCdi(const NodeCheckInputs& in, const Result<std::vector<Gpu>>& gpus) {
  if (!gpus.ok() || gpus->empty()) return {"CDI spec", V::kSkip, "no GPUs", {}};
  std::vector<std::string> names;
  for (const Gpu& g : *gpus) names.push_back(in.cdi_kind + "=" + std::to_string(g.index));
  std::string dirs;
  for (const std::string& d : in.cdi_dirs) dirs += (dirs.empty() ? "" : " ") + d;
  if (Status st = CheckCdiDevices(in.cdi_dirs, names); !st.ok()) {
    return {"CDI spec", V::kWarn, st.message() + ": jobs with an image get no GPU", {}};
  }
  return {"CDI spec",
          V::kOk,
          in.cdi_kind + "=0.." + std::to_string(gpus->size() - 1) + " in " + dirs,
          {}};
}

CheckPart CheckShares(const NodeCheckInputs& in) {
  if (in.gpushare_lib.empty()) {
    return {"share shim",
            V::kWarn,
            "no libcorral_gpushare.so beside corral: shares of a GPU are not enforced",
            {}};
  }
  return {"share shim", V::kOk, in.gpushare_lib, {}};
}

CheckPart CheckMps(const NodeCheckInputs& in) {
  if (in.mps_control.empty()) {
    return {"MPS", V::kWarn, "no nvidia-cuda-mps-control: shares with isolation mps fail", {}};
  }
  if (!IsExecutable(in.mps_control)) {
    return {"MPS", V::kFail, in.mps_control + " is not executable", {}};
  }
  return {"MPS", V::kOk, in.mps_control, {}};
}

CheckPart CheckHealthProgram(const NodeCheckInputs& in) {
  if (in.health_program.empty()) return {"health program", V::kSkip, "none (--health-program)", {}};
  // A check of this machine as it is: its own program runner, never a fake.
  Result<HealthProgramResult> r =
      RunHealthProgram(in.health_program, in.health_limit_ms, RealNodeEnv().programs);
  if (!r.ok()) return {"health program", V::kFail, r.status().message(), {}};
  const V verdict = r->health == GpuHealth::kOk     ? V::kOk
                    : r->health == GpuHealth::kWarn ? V::kWarn
                                                    : V::kFail;
  return {"health program",
          verdict,
          in.health_program + ": " + GpuHealthName(r->health) +
              (r->killed ? " (killed at the limit)" : "") +
              (r->reason.empty() ? "" : ": " + r->reason),
          {}};
}

CheckPart CheckHead(const NodeCheckInputs& in) {
  if (!in.reach_head) return {"head", V::kSkip, "no --head given", {}};
  Status st = in.reach_head();
  if (!st.ok()) return {"head", V::kFail, st.message(), {}};
  return {"head", V::kOk, "reachable; it takes the join token", {}};
}

}  // namespace

const char* CheckVerdictName(CheckVerdict v) {
  switch (v) {
    case V::kOk:
      return "ok";
    case V::kWarn:
      return "warn";
    case V::kFail:
      return "FAIL";
    case V::kSkip:
      return "skip";
  }
  return "?";
}

std::vector<std::string> UuidsOfSmiList(const std::string& listing) {
  std::vector<std::string> out;
  const std::string key = "UUID: ";
  for (size_t at = listing.find(key); at != std::string::npos; at = listing.find(key, at)) {
    at += key.size();
    size_t end = listing.find_first_of(")\n ", at);
    out.push_back(listing.substr(at, end == std::string::npos ? end : end - at));
  }
  return out;
}

std::vector<CheckPart> CheckNode(const NodeCheckInputs& in) {
  std::vector<CheckPart> parts;
  Result<std::vector<Gpu>> gpus = std::vector<Gpu>{};
  parts.push_back(CheckNvml(in, &gpus));
  parts.push_back(CheckSmi(in, gpus));
  const bool real_gpus = in.nvml != nullptr && gpus.ok() && !gpus->empty();
  parts.push_back(CheckCgroups(in, real_gpus));
  parts.push_back(CheckRuntime(in));
  parts.push_back(CheckCdi(in, gpus));
  parts.push_back(CheckShares(in));
  parts.push_back(CheckMps(in));
  parts.push_back(CheckHealthProgram(in));
  parts.push_back(CheckHead(in));
  return parts;
}

int RenderCheck(const std::vector<CheckPart>& parts, std::string* out) {
  size_t width = 0;
  for (const CheckPart& p : parts) width = std::max(width, p.name.size());
  std::ostringstream s;
  std::string failed;
  for (const CheckPart& p : parts) {
    std::string verdict = CheckVerdictName(p.verdict);
    s << "  " << verdict << std::string(6 - verdict.size(), ' ') << p.name
      << std::string(width + 2 - p.name.size(), ' ') << p.summary << "\n";
    for (const std::string& d : p.detail) s << std::string(8 + width + 2, ' ') << d << "\n";
    if (p.verdict == V::kFail) failed += (failed.empty() ? "" : ", ") + p.name;
  }
  s << (failed.empty() ? "the agent can run here\n" : "failed: " + failed + "\n");
  *out = s.str();
  return failed.empty() ? 0 : 1;
}

}  // namespace corral::agent
