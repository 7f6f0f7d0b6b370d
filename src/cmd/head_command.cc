// `corral head --state-dir DIR --listen HOST:PORT [--store URL] [--migrate-only]
//              [--tls | --no-tls] [--tls-san NAME]... [--tls-cert F --tls-key F]`
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "api/api_service.h"
#include "api/leader_gate.h"
#include "api/unix_identity.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/head_flags.h"
#include "cmd/head_tls.h"
#include "cmd/local_socket.h"
#include "cmd/service_notifier.h"
#include "cmd/signals.h"
#include "core/spec.h"
#include "head/standby.h"
#include "net/http_server.h"
#include "notify/notifier.h"
#include "store/private_files.h"
#include "store/store.h"

namespace corral::cmd {
namespace {

// Opening a store migrates it (every head start does the same); this only stops there.
int MigrateOnly(const std::string& store_url, const std::string& state_dir) {
  if (Status st = store::SecureStateDir(state_dir); !st.ok()) {
    std::cerr << "corral head: " << st.ToString() << "\n";
    return 1;
  }
  // Migrating leads nothing: no synchronous standby needed.
  store::StoreOptions options;
  options.sync_standby = store::StoreOptions::SyncStandby::kSkip;
  auto store = store::OpenStore(store_url, state_dir, options);
  if (!store.ok()) {
    std::cerr << "corral head: " << store.status().ToString() << "\n";
    return 1;
  }
  std::cout << "corral head: store schema is at version " << store::kSchemaVersion << std::endl;
  return 0;
}

// Several heads on one PostgreSQL: until this one takes the leader's lock it stands by
// (head/standby.h), sending clients to the leader. A standby is a running service (READY=1
// with its status). Returns the warm state once it leads, or nullopt when a stop signal came
// first (`*stopped`) or the store failed.
std::optional<head::ClusterState> StandBy(store::Store& store, api::LeaderGate& gate,
                                          const std::string& self_url, ServiceNotifier& notifier,
                                          bool* stopped) {
  head::StandbyHooks hooks;
  hooks.leader = [&gate](const std::string& url) { gate.SetLeaderUrl(url); };
  hooks.standing_by = [&](uint64_t revision, const std::string& leader) {
    std::string leader_url = leader.empty() ? "unknown" : leader;
    std::cout << "corral head: standby on " << self_url << " (revision " << revision << "), leader "
              << leader_url << std::endl;
    if (Status st = notifier.Ready("standby, leader " + leader_url); !st.ok()) {
      std::cerr << "corral head: " << st.ToString() << std::endl;
    }
  };
  hooks.trouble = [](const Status& st) {
    std::cerr << "corral head: " << st.ToString() << std::endl;
  };
  hooks.wait_or_stop = [&notifier, stopped] {
    notifier.Alive();
    *stopped = PollStopSignal(500) != 0;
    return *stopped;
  };
  auto warm = head::StandByUntilLeader(store, hooks);
  if (!warm.ok()) {
    std::cerr << "corral head: " << warm.status().ToString() << "\n";
    return std::nullopt;
  }
  return std::move(*warm);
}

// The job notifier's settings from --webhook, --sendmail and --mail-domain.
Result<notify::NotifierConfig> JobNotifierConfig(const std::vector<std::string>& webhooks,
                                                 const std::string& sendmail,
                                                 const std::string& mail_domain) {
  notify::NotifierConfig c;
  for (const std::string& w : webhooks) {
    auto target = notify::ParseWebhookTarget("--webhook", w);
    if (!target.ok()) return target.status();
    c.webhooks.push_back(*target);
  }
  if (sendmail == "auto") {
    if (access("/usr/sbin/sendmail", X_OK) == 0) c.sendmail = "/usr/sbin/sendmail";
  } else if (sendmail != "none") {
    if (access(sendmail.c_str(), X_OK) != 0) {
      return InvalidArgument("flag '--sendmail': got \"" + sendmail +
                             "\", want an executable program, auto or none");
    }
    c.sendmail = sendmail;
  }
  if (mail_domain.find_first_of(" @,<>\"\n\r\t") != std::string::npos) {
    return InvalidArgument("flag '--mail-domain': got \"" + mail_domain + "\", want a domain");
  }
  c.mail_domain = mail_domain;
  return c;
}

// The flags given as durations, parsed.
struct HeadDurations {
  int64_t min_runtime_ms = 0, half_life_ms = 0, idle_after_ms = 0, idle_stop_warning_ms = 0;
  int64_t leader_lease_ms = 0, retain_finished_ms = 0, stop_confirm_after_ms = 0;
  int64_t header_timeout_ms = 0, inactive_limit_ms = 0, relay_idle_ms = 0;
  int64_t cluster_series_step_ms = 0, cluster_series_keep_ms = 0;
};

Result<HeadDurations> ParseHeadDurations(const HeadFlags& f) {
  HeadDurations d;
  const std::pair<const char*, std::pair<const std::string*, int64_t*>> flags[] = {
      {"--min-runtime-before-preempt", {&f.min_runtime, &d.min_runtime_ms}},
      {"--fair-share-half-life", {&f.half_life, &d.half_life_ms}},
      {"--idle-after", {&f.idle_after, &d.idle_after_ms}},
      {"--idle-stop-warning", {&f.idle_stop_warning, &d.idle_stop_warning_ms}},
      {"--leader-lease", {&f.leader_lease, &d.leader_lease_ms}},
      {"--retain-finished", {&f.retain_finished, &d.retain_finished_ms}},
      {"--stop-confirm-after", {&f.stop_confirm_after, &d.stop_confirm_after_ms}},
      {"--header-timeout", {&f.header_timeout, &d.header_timeout_ms}},
      {"--inactive-limit", {&f.inactive_limit, &d.inactive_limit_ms}},
      {"--relay-idle-timeout", {&f.relay_idle, &d.relay_idle_ms}},
      {"--cluster-series-step", {&f.cluster_series_step, &d.cluster_series_step_ms}},
      {"--cluster-series-keep", {&f.cluster_series_keep, &d.cluster_series_keep_ms}},
  };
  for (const auto& [flag, text_and_ms] : flags) {
    auto ms = ParseDuration(flag, *text_and_ms.first);
    if (!ms.ok()) return ms.status();
    *text_and_ms.second = *ms;
  }
  if (d.header_timeout_ms <= 0) {
    return InvalidArgument("flag '--header-timeout': got " + f.header_timeout +
                           ", want a duration > 0");
  }
  if (d.cluster_series_step_ms < kSecond) {
    return InvalidArgument("flag '--cluster-series-step': got " + f.cluster_series_step +
                           ", want a duration of 1s or more");
  }
  if (d.cluster_series_keep_ms < d.cluster_series_step_ms ||
      d.cluster_series_keep_ms / d.cluster_series_step_ms > 100000) {
    return InvalidArgument("flag '--cluster-series-keep': got " + f.cluster_series_keep +
                           ", want at least one step (" + f.cluster_series_step +
                           ") and at most 100000 of them");
  }
  if (d.relay_idle_ms <= 0) {
    return InvalidArgument("flag '--relay-idle-timeout': got " + f.relay_idle +
                           ", want a duration > 0");
  }
  return d;
}

// The store's flags checked and folded into its options.
Status CheckStoreFlags(HeadFlags& f) {
  if (f.allow_async_store && f.require_sync_standby) {
    return InvalidArgument(
        "flags '--allow-async-store' and '--require-sync-standby' contradict each other; give "
        "at most one");
  }
  CORRAL_RETURN_IF_ERROR(store::CheckSynchronousCommit("flag '--store-synchronous-commit'",
                                                       f.store_options.synchronous_commit));
  if (f.allow_async_store) f.store_options.sync_standby = store::StoreOptions::SyncStandby::kSkip;
  if (f.require_sync_standby) {
    f.store_options.sync_standby = store::StoreOptions::SyncStandby::kRequire;
  }
  return Status::Ok();
}

Result<std::pair<int32_t, int32_t>> ParseRdzvPorts(const std::string& text) {
  int32_t lo = 0, hi = 0;
  if (char dash = 0; std::sscanf(text.c_str(), "%d%c%d", &lo, &dash, &hi) != 3 || dash != '-' ||
                     lo < 1 || hi < lo || hi > 65535) {
    return InvalidArgument("flag '--rdzv-ports': got \"" + text +
                           "\", want LO-HI ports such as 29400-29499");
  }
  return std::make_pair(lo, hi);
}

// The head's core and shell settings from the flags.
head::HeadConfig HeadConfigOf(const HeadFlags& f, const HeadDurations& d,
                              std::pair<int32_t, int32_t> rdzv_ports) {
  head::HeadConfig config;
  config.state_dir = f.state_dir;
  config.store_url = f.store_url;
  config.core.checkpoint_root = f.checkpoint_root;
  config.core.rdzv_host = f.rdzv_host;
  config.core.rdzv_port_lo = rdzv_ports.first;
  config.core.rdzv_port_hi = rdzv_ports.second;
  config.rdzv_python = f.rdzv_python;
  config.admin_user = f.admin_user;
  // Memory then holds changes the store refused: exit and let the supervisor (systemd,
  // corral up) start a head that recovers from what is durable.
  config.on_store_failure = [](const Status& st) {
    std::cerr << "corral head: the store failed a commit, exiting: " << st.ToString() << std::endl;
    std::_Exit(75);
  };
  config.core.unreachable_after_ms = f.unreachable_s * kSecond;
  config.core.down_after_ms = f.down_s * kSecond;
  config.core.scheduler.min_runtime_before_preempt_ms = d.min_runtime_ms;
  config.core.scheduler.fair_share_half_life_ms = d.half_life_ms;
  config.core.idle_threshold_percent = f.idle_threshold;
  config.core.idle_after_ms = d.idle_after_ms;
  config.core.idle_stop_queues = {f.idle_stop_queues.begin(), f.idle_stop_queues.end()};
  config.core.idle_stop_warning_ms = d.idle_stop_warning_ms;
  config.core.inactive_limit_ms = d.inactive_limit_ms;
  config.core.retain_finished_ms = d.retain_finished_ms;
  config.core.stop_confirm_after_ms = d.stop_confirm_after_ms;
  config.core.max_user_priority = f.max_user_priority;
  config.core.gpu_clean_checks_to_return = f.gpu_clean_checks;
  config.core.max_array_size = f.max_array_size;
  config.core.max_pending_per_user = f.max_pending_per_user;
  config.cluster_series_step_ms = d.cluster_series_step_ms;
  config.cluster_series_points =
      static_cast<size_t>(d.cluster_series_keep_ms / d.cluster_series_step_ms);
  return config;
}

// Everything the head's servers and state machine need, decided from the flags before either
// starts.
struct HeadPlan {
  std::pair<std::string, int> listen;
  HeadTls tls;
  HeadDurations durations;
  api::UnixGroupRoles unix_roles;
  notify::NotifierConfig notify;
  head::HeadConfig config;
};

// A usage error is InvalidArgument (exit 2); a TLS setup that failed otherwise exits 1.
Result<HeadPlan> PlanHead(HeadFlags& f) {
  HeadPlan plan;
  auto rdzv_ports = ParseRdzvPorts(f.rdzv_ports);
  if (!rdzv_ports.ok()) return rdzv_ports.status();
  CORRAL_RETURN_IF_ERROR(CheckStoreFlags(f));
  auto hp = ParseHostPort("--listen", f.listen);
  if (!hp.ok()) return hp.status();
  plan.listen = *hp;
  auto tls = SetUpHeadTls(f.tls, f.state_dir, plan.listen.first);
  if (!tls.ok()) return tls.status();
  plan.tls = std::move(*tls);
  for (const auto& note : plan.tls.notes) std::cerr << "corral head: " << note << "\n";
  if (f.idle_threshold < 0 || f.idle_threshold > 100) {
    return InvalidArgument("flag '--idle-threshold': got " + std::to_string(f.idle_threshold) +
                           ", want a percent from 0 to 100");
  }
  auto durations = ParseHeadDurations(f);
  if (!durations.ok()) return durations.status();
  plan.durations = *durations;
  auto unix_roles = api::ParseUnixGroupRoles(f.unix_group_roles);
  if (!unix_roles.ok()) return unix_roles.status();
  plan.unix_roles = std::move(*unix_roles);
  if (f.unix_socket != "none" && !f.unix_socket.empty() && f.unix_socket.front() != '/') {
    return InvalidArgument("flag '--unix-socket': got \"" + f.unix_socket +
                           "\", want an absolute path or none");
  }
  auto notify_config = JobNotifierConfig(f.webhooks, f.sendmail, f.mail_domain);
  if (!notify_config.ok()) return notify_config.status();
  plan.notify = std::move(*notify_config);
  plan.config = HeadConfigOf(f, plan.durations, *rdzv_ports);
  return plan;
}

// Waits for a stop signal; meanwhile, under a systemd watchdog, each keep-alive is sent from
// the state machine's thread, so that a wedged head stops sending. The signal.
int WaitForStopKeepingAlive(head::Head& head, ServiceNotifier& notifier) {
  if (notifier.watchdog().count() <= 0) return WaitForStopSignal();
  // Asked twice as often as Alive() sends, so that one comes every quarter of the interval.
  auto every = std::chrono::duration_cast<std::chrono::milliseconds>(notifier.watchdog() / 8);
  int sig = 0;
  while ((sig = PollStopSignal(std::max<int>(1, every.count()))) == 0) {
    head.Ping([&notifier] { notifier.Alive(); });
  }
  return sig;
}

// Leads from the (warm) state: the state machine, the API behind the leader gate, notices of
// jobs; until a stop signal, when `server` stops. The exit code.
int Lead(const HeadFlags& f, HeadPlan& plan, std::unique_ptr<store::Store> store,
         std::optional<head::ClusterState> warm, net::HttpServer& server, api::LeaderGate& gate,
         const std::string& self_url, ServiceNotifier& notifier) {
  SystemClock clock;
  // Created before the state machine starts, which is the only caller of on_job_notice.
  std::unique_ptr<notify::Notifier> job_notifier;
  const bool notifies = !plan.notify.webhooks.empty() || !plan.notify.sendmail.empty();
  if (notifies) {
    plan.config.on_job_notice = [&job_notifier](head::JobNotice n) { job_notifier->Enqueue(n); };
  }
  auto head = head::Head::Open(plan.config, &clock, std::move(store), std::move(warm));
  if (!head.ok()) {
    std::cerr << "corral head: " << head.status().ToString() << "\n";
    return 1;
  }
  if (notifies) {
    job_notifier = std::make_unique<notify::Notifier>(plan.notify, &(*head)->metrics());
  }
  api::ApiService api(
      head->get(), f.rate_limit, plan.tls.agents, f.unauthenticated_rate,
      net::SpliceIdle{.websocket = std::chrono::milliseconds(plan.durations.relay_idle_ms)});
  api.SetUnixGroupRoles(std::move(plan.unix_roles));
  (*head)->Start();
  api.StartServiceProbes();
  gate.Lead(&api);
  std::cout << "corral head: listening on " << self_url << " (epoch " << (*head)->epoch()
            << ", state " << f.state_dir << ")"
            << (plan.tls.ca_path.empty() ? "" : "; clients trust " + plan.tls.ca_path + " (--ca)")
            << (f.unix_socket == "none" || f.unix_socket.empty()
                    ? ""
                    : "; local users on " + f.unix_socket)
            << std::endl;
  // The store is open and the listener serves: ready (systemd's Type=notify).
  if (Status st = notifier.Ready("leading, epoch " + std::to_string((*head)->epoch())); !st.ok()) {
    std::cerr << "corral head: " << st.ToString() << std::endl;
  }
  int sig = WaitForStopKeepingAlive(**head, notifier);
  (void)notifier.Stopping();  // where it fails, so did READY, reported
  std::cout << "corral head: stopping on signal " << sig << std::endl;
  server.Stop();  // before the API it calls into goes
  (*head)->Stop();
  return 0;
}

// Opens the store, serves (as a standby first where the store is shared) and leads. The exit
// code.
int ServeAndLead(const HeadFlags& f, HeadPlan& plan, ServiceNotifier& notifier) {
  BlockStopSignals();
  // Once every flag is known good, before the database, the tokens and the audit log are
  // written there (the TLS keys, in tls/, are 0600 from their creation).
  if (Status st = store::SecureStateDir(f.state_dir); !st.ok()) {
    std::cerr << "corral head: " << st.ToString() << "\n";
    return 1;
  }
  auto store = store::OpenStore(f.store_url, f.state_dir, f.store_options);
  if (!store.ok()) {
    std::cerr << "corral head: " << store.status().ToString() << "\n";
    return 1;
  }
  std::unique_ptr<api::LeaderGate> gate;
  net::HttpServer server(
      [&gate](net::HttpRequest req, net::Responder r) {
        gate->Handle(std::move(req), std::move(r));
      },
      net::HttpServerOptions{
          .io_threads = 2,
          .header_timeout = std::chrono::milliseconds(plan.durations.header_timeout_ms),
          .max_connections_per_address = f.max_connections_per_address,
          .tls = plan.tls.server,
          .takeover_prefix = "/s/",
          .takeover = [&gate](net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn) {
            gate->Take(std::move(req), std::move(conn));
          }});
  auto port = server.Listen(plan.listen.first, plan.listen.second);
  if (!port.ok()) {
    std::cerr << "corral head: " << port.status().ToString() << "\n";
    return 1;
  }
  if (Status st = ListenOnLocalSocket(server, f.unix_socket); !st.ok()) {
    std::cerr << "corral head: " << st.ToString() << "\n";
    return 1;
  }
  std::string self_url = f.advertise.empty() ? (plan.tls.enabled ? "https://" : "http://") +
                                                   plan.listen.first + ":" + std::to_string(*port)
                                             : f.advertise;
  gate = std::make_unique<api::LeaderGate>(self_url);
  server.Start();
  std::optional<head::ClusterState> warm;
  if ((*store)->Shared()) {
    (*store)->SetLease(plan.durations.leader_lease_ms);
    plan.config.lease_renew_ms = plan.durations.leader_lease_ms / 3;
    bool stopped = false;
    warm = StandBy(**store, *gate, self_url, notifier, &stopped);
    if (!warm) {
      server.Stop();
      return stopped ? 0 : 1;
    }
    plan.config.advertise_url = self_url;
  }
  int rc = Lead(f, plan, std::move(*store), std::move(warm), server, *gate, self_url, notifier);
  server.Stop();
  return rc;
}

}  // namespace

int HeadMain(std::vector<std::string> args) {
  CLI::App app{"corral head: the control plane"};
  HeadFlags flags;
  AddHeadFlags(app, flags);
  if (auto code = ParseFlags(app, std::move(args))) return *code;
  if (flags.migrate_only) return MigrateOnly(flags.store_url, flags.state_dir);
  // Before any thread starts: it takes NOTIFY_SOCKET out of the environment.
  ServiceNotifier notifier = ServiceNotifier::FromEnvironment();
  auto plan = PlanHead(flags);
  if (!plan.ok()) {
    std::cerr << "corral head: " << plan.status().message() << "\n";
    return plan.status().code() == ErrorCode::kInvalidArgument ? 2 : 1;
  }
  return ServeAndLead(flags, *plan, notifier);
}

}  // namespace corral::cmd
