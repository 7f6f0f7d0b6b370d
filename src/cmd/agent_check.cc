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

}  // namespace

int AgentCheckMain(std::vector<std::string> args) {
  CLI::App app{"corral agent --check: what the agent would use here, and whether it works"};
  app.allow_extras();
  std::string head_url, join_token_file, simulate, nvml_library, ca_file, health_program;
  std::string cgroups = "auto", mps_control = "auto";
  std::vector<std::string> cdi_dirs;
  double health_limit_s = 60;
  bool check = false;
  app.add_flag("--check", check, "check this node and exit");
  app.add_option("--head", head_url, "the head's URL(s), as for the agent");
  app.add_option("--join-token-file", join_token_file, "file holding the join token");
  app.add_option("--simulate-gpus", simulate, "N or NxMODEL: simulated GPUs instead of NVML");
  app.add_option("--nvml-library", nvml_library, "the NVML library to load");
  app.add_option("--ca", ca_file, "with an https --head: the head's CA");
  app.add_option("--cgroups", cgroups, "auto or off")->check(CLI::IsMember({"auto", "off"}));
  app.add_option("--cdi-dir", cdi_dirs, "a directory of CDI specs (repeatable)");
  app.add_option("--mps-control", mps_control, "nvidia-cuda-mps-control, or none");
  app.add_option("--health-program", health_program, "the node health check");
  app.add_option("--health-limit", health_limit_s, "seconds it may run");
  if (auto code = ParseFlags(app, std::move(args))) return *code;

  std::unique_ptr<agent::GpuProbe> probe;
  agent::NvmlGpuProbe* nvml = nullptr;
  if (!simulate.empty()) {
    auto sim = agent::ParseSimulateGpus(simulate);
    if (!sim.ok()) {
      std::cerr << "corral agent: " << sim.status().message() << "\n";
      return 2;
    }
    probe = std::make_unique<agent::SimulatedGpuProbe>(sim->count, sim->model);
  } else {
    auto n = std::make_unique<agent::NvmlGpuProbe>(nvml_library);
    nvml = n.get();
    probe = std::move(n);
  }
  agent::NodeCheckInputs in;
  in.probe = probe.get();
  in.nvml = nvml;
  in.nvidia_smi = FindOnPath("nvidia-smi");
  in.cgroups = cgroups == "auto";
  agent::ContainerConfig containers;
  in.crun = containers.crun;
  in.cdi_dirs = cdi_dirs.empty() ? containers.cdi_dirs : cdi_dirs;
  in.cdi_kind = containers.cdi_kind;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) in.gpushare_lib = agent::GpuShareLibraryBeside(self.string());
  in.mps_control = mps_control == "auto"   ? agent::MpsDaemons::FindControl()
                   : mps_control == "none" ? ""
                                           : mps_control;
  in.health_program = health_program;
  in.health_limit_ms = static_cast<int64_t>(health_limit_s * 1000);
  std::vector<std::string> heads;
  std::string token;
  if (!head_url.empty()) {
    auto parsed = net::ParseHeadList(head_url);
    if (!parsed.ok()) {
      std::cerr << "corral agent: flag '--head': " << parsed.status().message() << "\n";
      return 2;
    }
    heads = *parsed;
    if (!ca_file.empty() || std::getenv("CORRAL_CA") != nullptr) {
      auto trust = net::TlsClientContext::FromCaFile(
          !ca_file.empty() ? ca_file : std::string(std::getenv("CORRAL_CA")));
      if (!trust.ok()) {
        std::cerr << "corral agent: flag '--ca': " << trust.status().message() << "\n";
        return 2;
      }
      net::SetDefaultClientTls(*trust);
    }
    std::ifstream tf(join_token_file);
    std::getline(tf, token);
    in.reach_head = [&heads, &token, &join_token_file]() -> Status {
      if (token.empty()) {
        return InvalidArgument("flag '--join-token-file': cannot read a token from '" +
                               join_token_file + "'");
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
