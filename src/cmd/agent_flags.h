// The flags of `corral agent`, as given, and where each is declared.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace corral::cmd {

struct AgentFlags {
  // Reaching the head and being reached.
  std::string head_url, ca_file, join_token_file, name, state_dir, advertise, listen;
  std::string unix_socket;
  int64_t lease_s = 40;  // below the head's --down-after (60 s): a run is stopped here before it
                         // is requeued there
  double relay_idle_s = 3600;
  // What the node offers.
  std::string simulate, nvml_library, memory, port_range = "29500-29999";
  double cpus = 0;
  std::vector<std::string> labels;
  // Checks and samples.
  std::string health_program;
  double health_interval_s = 300, health_limit_s = 60, gpu_check_interval_s = 10;
  double usage_interval_s = 60;
  // How jobs run.
  std::string run_as, cgroups = "auto", job_map_dir, mps_control = "auto";
  bool allow_root_jobs = false;
  bool check = false;  // handled before parsing (AgentCheckMain); declared for --help
  std::string image_cache, image_cache_size = "20G", dataset_cache, dataset_cache_size = "0";
  int32_t dataset_fetches_per_source = 2;
  std::string dataset_source_rate = "0";
  std::vector<std::string> insecure_registries, cdi_dirs;
};

// Declares every flag of `corral agent` on `app`, each bound to its field of `flags`.
void AddAgentFlags(CLI::App& app, AgentFlags& flags);

}  // namespace corral::cmd
