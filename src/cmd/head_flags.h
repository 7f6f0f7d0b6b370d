// The flags of `corral head`, as given, and where each is declared.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cmd/head_tls.h"
#include "store/store.h"

namespace corral::cmd {

struct HeadFlags {
  // Serving the API.
  std::string state_dir, listen = "127.0.0.1:7070", advertise, unix_socket;
  std::vector<std::string> unix_group_roles;
  // Far above what people and agents send (a CLI call is ~14 ms to start), low enough that one
  // runaway script cannot monopolise the head's strand.
  double rate_limit = 2000;
  // Requests whose token never worked here (random tokens, none): a person mistyping one
  // stays far under it, a script trying tokens does not fill the audit log.
  double unauthenticated_rate = 10;
  size_t max_connections_per_address = 1024;
  std::string header_timeout = "10s";
  // A notebook's kernel channel is quiet while its user reads; a tab left open a night is not.
  std::string relay_idle = "1h";
  HeadTlsFlags tls;
  // The store and leadership.
  std::string store_url, leader_lease = "15s";
  store::StoreOptions store_options;
  bool migrate_only = false, allow_async_store = false, require_sync_standby = false;
  // Nodes, scheduling and jobs.
  int64_t unreachable_s = 15, down_s = 60;
  std::string min_runtime = "5m", half_life = "7d", checkpoint_root, admin_user = "admin";
  int32_t idle_threshold = 1, gpu_clean_checks = 3;
  std::string idle_after = "30m", idle_stop_warning = "10m", inactive_limit = "5m";
  std::vector<std::string> idle_stop_queues;
  std::string retain_finished = "1d", stop_confirm_after = "2m";
  int32_t max_user_priority = 0, max_array_size = 10000, max_pending_per_user = 10000;
  std::string rdzv_host, rdzv_ports = "29400-29499", rdzv_python = "/usr/bin/python3";
  // The dashboard's cluster series: a point every step, kept this long.
  std::string cluster_series_step = "1m", cluster_series_keep = "6h";
  // Notices of jobs.
  std::vector<std::string> webhooks;
  std::string sendmail = "auto", mail_domain;
};

// Declares every flag of `corral head` on `app`, each bound to its field of `flags`.
void AddHeadFlags(CLI::App& app, HeadFlags& flags);

}  // namespace corral::cmd
