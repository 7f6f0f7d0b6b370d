// `corral agent --check [the agent's flags]`: what the agent would use on this node and whether
// each part works (agent/node_check.h); exit 1 when a part failed. It reads the flags that
// choose those parts and ignores the others, so the agent's own command line can be checked.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "agent/containers/container.h"
#include "agent/gpus/gpu_probe.h"
#include "agent/gpus/gpu_share_env.h"
#include "agent/gpus/mps.h"
#include "agent/node_check.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "net/head_client.h"
#include "net/http_client.h"
#include "net/tls_context.h"

namespace corral::cmd {
namespace {

// nvidia-smi where the shell would find it, else "".
std::string FindOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// A user API call with the join token: the head answers 403 to an agent's credential (it only
// registers and syncs), 401 to a token it does not know, 200 to a user's token.
Status ReachHead(const std::vector<std::string>& heads, const std::string& token) {
  std::string why;
  for (const std::string& url : heads) {
    net::HttpClient client(url, token);
    auto r = client.Get("/v1/nodes", std::chrono::seconds(5));
    if (!r.ok()) {
      why += (why.empty() ? "" : "; ") + url + ": " + r.status().message();
    } else if (r->status == 403 || r->status == 307) {
      return Status::Ok();
    } else if (r->status == 401) {
      why += (why.empty() ? "" : "; ") + url + " rejects the join token (401)";
    } else if (r->status == 200) {
      why += (why.empty() ? "" : "; ") + url + " takes the token as a user's: not the join token";
    } else {
      why += (why.empty() ? "" : "; ") + url + " answered " + std::to_string(r->status);
    }
  }
  return Unavailable(why);
}

struct AgentCheckFlags {
  std::string head_url, join_token_file, simulate, nvml_library, ca_file, health_program;
  std::string cgroups = "auto", mps_control = "auto";
  std::vector<std::string> cdi_dirs;
  double health_limit_s = 60;
  bool check = false;
};

void AddAgentCheckFlags(CLI::App& app, AgentCheckFlags& f) {
  app.add_flag("--check", f.check, "check this node and exit");
  app.add_option("--head", f.head_url, "the head's URL(s), as for the agent");
  app.add_option("--join-token-file", f.join_token_file, "file holding the join token");
  app.add_option("--simulate-gpus", f.simulate, "N or NxMODEL: simulated GPUs instead of NVML");
  app.add_option("--nvml-library", f.nvml_library, "the NVML library to load");
  app.add_option("--ca", f.ca_file, "with an https --head: the head's CA");
  app.add_option("--cgroups", f.cgroups, "auto or off")->check(CLI::IsMember({"auto", "off"}));
  app.add_option("--cdi-dir", f.cdi_dirs, "a directory of CDI specs (repeatable)");
  app.add_option("--mps-control", f.mps_control, "nvidia-cuda-mps-control, or none");
  app.add_option("--health-program", f.health_program, "the node health check");
  app.add_option("--health-limit", f.health_limit_s, "seconds it may run");
}

// The probe the agent would use: simulated GPUs, else NVML (also in *nvml).
Result<std::unique_ptr<agent::GpuProbe>> AgentCheckProbe(const AgentCheckFlags& f,
                                                         const agent::NvmlGpuProbe** nvml) {
  *nvml = nullptr;
  if (!f.simulate.empty()) {
    auto sim = agent::ParseSimulateGpus(f.simulate);
    if (!sim.ok()) return sim.status();
    return std::unique_ptr<agent::GpuProbe>(
        std::make_unique<agent::SimulatedGpuProbe>(sim->count, sim->model));
  }
  auto n = std::make_unique<agent::NvmlGpuProbe>(f.nvml_library);
  *nvml = n.get();
  return std::unique_ptr<agent::GpuProbe>(std::move(n));
}

// The node's parts the agent would use besides its GPUs.
void SetAgentCheckParts(const AgentCheckFlags& f, agent::NodeCheckInputs& in) {
  in.nvidia_smi = FindOnPath("nvidia-smi");
  in.cgroups = f.cgroups == "auto";
  agent::ContainerConfig containers;
  in.crun = containers.crun;
  in.cdi_dirs = f.cdi_dirs.empty() ? containers.cdi_dirs : f.cdi_dirs;
  in.cdi_kind = containers.cdi_kind;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) in.gpushare_lib = agent::GpuShareLibraryBeside(self.string());
  in.mps_control = f.mps_control == "auto"   ? agent::MpsDaemons::FindControl()
                   : f.mps_control == "none" ? ""
                                             : f.mps_control;
  in.health_program = f.health_program;
  in.health_limit_ms = static_cast<int64_t>(f.health_limit_s * 1000);
}

// The heads of --head, with --ca (or CORRAL_CA) trusted, and the join token; an error names
// the flag.
Status AgentCheckHeads(const AgentCheckFlags& f, std::vector<std::string>* heads,
                       std::string* token) {
  auto parsed = net::ParseHeadList(f.head_url);
  if (!parsed.ok()) return InvalidArgument("flag '--head': " + parsed.status().message());
  *heads = *parsed;
  if (!f.ca_file.empty() || std::getenv("CORRAL_CA") != nullptr) {
    auto trust = net::TlsClientContext::FromCaFile(
        !f.ca_file.empty() ? f.ca_file : std::string(std::getenv("CORRAL_CA")));
    if (!trust.ok()) return InvalidArgument("flag '--ca': " + trust.status().message());
    net::SetDefaultClientTls(*trust);
  }
  std::ifstream tf(f.join_token_file);
  std::getline(tf, *token);
  return Status::Ok();
}

}  // namespace

int AgentCheckMain(std::vector<std::string> args) {
  CLI::App app{"corral agent --check: what the agent would use here, and whether it works"};
  app.allow_extras();
  AgentCheckFlags f;
  AddAgentCheckFlags(app, f);
  if (auto code = ParseFlags(app, std::move(args))) return *code;
  agent::NodeCheckInputs in;
  auto probe = AgentCheckProbe(f, &in.nvml);
  if (!probe.ok()) {
    std::cerr << "corral agent: " << probe.status().message() << "\n";
    return 2;
  }
  in.probe = probe->get();
  SetAgentCheckParts(f, in);
  std::vector<std::string> heads;
  std::string token;
  if (!f.head_url.empty()) {
    if (Status st = AgentCheckHeads(f, &heads, &token); !st.ok()) {
      std::cerr << "corral agent: " << st.message() << "\n";
      return 2;
    }
    in.reach_head = [&heads, &token, &f]() -> Status {
      if (token.empty()) {
        return InvalidArgument("flag '--join-token-file': cannot read a token from '" +
                               f.join_token_file + "'");
      }
      return ReachHead(heads, token);
    };
  }
  std::string text;
  int rc = agent::RenderCheck(agent::CheckNode(in), &text);
  std::cout << "corral agent --check\n" << text;
  return rc;
}

}  // namespace corral::cmd
