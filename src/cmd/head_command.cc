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
#include "cmd/commands.h"
#include "cmd/flags.h"
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

}  // namespace

int HeadMain(std::vector<std::string> args) {
  CLI::App app{"corral head: the control plane"};
  std::string state_dir, listen = "127.0.0.1:7070", checkpoint_root;
  int64_t unreachable_s = 15, down_s = 60;
  std::string min_runtime = "5m", half_life = "7d";
  app.add_option("--state-dir", state_dir, "directory for corral.db and tokens")->required();
  // Far above what people and agents send (a CLI call is ~14 ms to start), low enough that one
  // runaway script cannot monopolise the head's strand.
  double rate_limit = 2000;
  app.add_option("--rate-limit", rate_limit,
                 "API requests per second per token (bursts of twice that); 0: no limit")
      ->check(CLI::NonNegativeNumber);
  // Requests whose token never worked here (random tokens, none): a person mistyping one
  // stays far under it, a script trying tokens does not fill the audit log.
  double unauthenticated_rate = 10;
  app.add_option("--rate-limit-unauthenticated", unauthenticated_rate,
                 "API requests per second per client address whose token has not worked here "
                 "(bursts of ten times that); past it 429, unaudited; 0: no limit")
      ->check(CLI::NonNegativeNumber);
  size_t max_connections_per_address = 1024;
  std::string header_timeout = "10s";
  // A notebook's kernel channel is quiet while its user reads; a tab left open a night is not.
  std::string relay_idle = "1h";
  app.add_option("--relay-idle-timeout", relay_idle,
                 "a notebook's WebSocket relayed through the head is closed after this long "
                 "without a byte either way (its plain requests after the API's 30s)");
  app.add_option("--header-timeout", header_timeout,
                 "a request's whole header must arrive within this (slow clients are cut)");
  app.add_option("--max-connections-per-address", max_connections_per_address,
                 "open connections from one client address at most (more are closed as they "
                 "are accepted); 0: no limit");
  std::string store_url, leader_lease = "15s";
  bool migrate_only = false;
  app.add_option("--store", store_url,
                 "where state is kept: sqlite:PATH (default STATE_DIR/corral.db) or "
                 "postgres://USER@HOST:PORT/DB (several hosts: "
                 "postgresql://USER@H1:P1,H2:P2/DB?target_session_attrs=read-write)");
  store::StoreOptions store_options;
  app.add_option("--store-synchronous-commit", store_options.synchronous_commit,
                 "PostgreSQL: the synchronous_commit every session of this head sets (on, "
                 "remote_apply or remote_write), whatever the server's default");
  bool allow_async_store = false, require_sync_standby = false;
  app.add_flag("--allow-async-store", allow_async_store,
               "PostgreSQL on several hosts: lead even when the server has no synchronous "
               "standby (a failover may then lose acknowledged changes)");
  app.add_flag("--require-sync-standby", require_sync_standby,
               "PostgreSQL on one host (a proxy or virtual IP in front of a replicated "
               "cluster): refuse to lead without a synchronous standby, as with several hosts");
  // Hidden (no group): a negative control for the failover test only, which must show that
  // acknowledging such a commit loses it. Never for a cluster.
  app.add_flag("--unsafe-acknowledge-unreplicated-commits",
               store_options.ignore_unreplicated_commits,
               "TESTS ONLY: take a COMMIT whose synchronous replication wait was cut short as "
               "durable (loses acknowledged changes on a failover)")
      ->group("");
  app.add_option("--leader-lease", leader_lease,
                 "several heads on PostgreSQL: a leader that has not renewed its lease this long "
                 "(hung) is deposed by a standby; it renews every third of it");
  app.add_flag("--migrate-only", migrate_only,
               "bring the store's schema up to this corral's version, then exit");
  app.add_option("--listen", listen, "HOST:PORT to serve the API on");
  std::string advertise;
  app.add_option("--advertise", advertise,
                 "this head's URL as clients and agents reach it, where standbys send them "
                 "(default http://LISTEN)");
  app.add_option("--checkpoint-root", checkpoint_root, "root of CORRAL_CHECKPOINT_DIR");
  std::vector<std::string> webhooks;
  app.add_option("--webhook", webhooks,
                 "[user:NAME=|queue:NAME=]URL: POST a JSON notice there when a job (of that user "
                 "or queue) begins, ends, fails, is requeued or preempted (repeatable)");
  std::string sendmail = "auto";
  app.add_option("--sendmail", sendmail,
                 "the program jobs' --mail-type mail goes through; auto: /usr/sbin/sendmail "
                 "where it exists; none: no mail");
  std::string mail_domain;
  app.add_option("--mail-domain", mail_domain,
                 "appended as @DOMAIN to a mail address without one (a job's owner)");
  std::string admin_user = "admin";
  app.add_option("--admin-user", admin_user,
                 "the user named by the first admin token (STATE_DIR/admin.token)");
  app.add_option("--unreachable-after", unreachable_s, "seconds without a sync before unreachable");
  app.add_option("--down-after", down_s, "seconds without a sync before down (runs lost)");
  app.add_option("--min-runtime-before-preempt", min_runtime,
                 "a run is not preempted before it ran this long (anti-thrashing)");
  app.add_option("--fair-share-half-life", half_life, "half-life of the usage behind fair share");
  int32_t idle_threshold = 1;
  std::string idle_after = "30m";
  app.add_option("--idle-threshold", idle_threshold,
                 "GPU utilisation percent under which a run's GPUs count as idle (0-100)");
  app.add_option("--idle-after", idle_after,
                 "a run whose GPUs all stay idle this long is flagged idle");
  HeadTlsFlags tls_flags;
  tls_flags.AddTo(app);
  std::string unix_socket = DefaultLocalSocket();
  app.add_option("--unix-socket", unix_socket,
                 "serve the API on this local socket too, to every local user as their Unix user "
                 "(no token); default $RUNTIME_DIRECTORY/corral.sock under systemd "
                 "(/run/corral/corral.sock), else none; none: no socket");
  std::vector<std::string> unix_group_roles;
  app.add_option("--unix-group-role", unix_group_roles,
                 "GROUP=ROLE: callers over the local socket in Unix group GROUP get ROLE (admin, "
                 "user, or queue-admin:QUEUE); repeatable; others are plain users");
  std::vector<std::string> idle_stop_queues;
  std::string idle_stop_warning = "10m";
  app.add_option("--idle-stop-queues", idle_stop_queues,
                 "queues (with their sub-queues) whose preemptible runs, once flagged idle, are "
                 "warned and then cancelled")
      ->delimiter(',');
  app.add_option("--idle-stop-warning", idle_stop_warning,
                 "time between an idle run's warning event and its stop");
  std::string inactive_limit = "5m";
  app.add_option("--inactive-limit", inactive_limit,
                 "an interactive session (corral run, srun --pty, salloc) whose client has not "
                 "been heard from this long is ended; batch jobs never are (0s: never)");
  std::string retain_finished = "1d";
  std::string stop_confirm_after = "2m";
  int32_t max_user_priority = 0, max_array_size = 10000, max_pending_per_user = 10000;
  app.add_option("--max-array-size", max_array_size,
                 "elements of one array submission at most, for users other than admins (0: no "
                 "limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-pending-per-user", max_pending_per_user,
                 "a user's jobs pending at once, over all queues, for users other than admins (0: "
                 "no limit); queues may set a lower one of their own")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-user-priority", max_user_priority,
                 "the highest job priority a plain user may set (more takes an admin or an admin "
                 "of the job's queue)");
  int32_t gpu_clean_checks = 3;
  app.add_option("--gpu-clean-checks", gpu_clean_checks,
                 "clean health checks in a row that return a GPU the checks drained (admin drains "
                 "stay)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--stop-confirm-after", stop_confirm_after,
                 "a run whose node has not confirmed its stop this long after the run's grace "
                 "is declared lost and its GPUs freed");
  app.add_option("--retain-finished", retain_finished,
                 "jobs that ended longer ago than this leave the head's memory; the store "
                 "answers for them (corral show, corral jobs --all) (0s: keep all)");
  std::string rdzv_host, rdzv_ports = "29400-29499", rdzv_python = "/usr/bin/python3";
  app.add_option("--rdzv-host", rdzv_host,
                 "the address replicas reach this host at: elastic jobs' torchrun rendezvous "
                 "stores run here, one per job (docs/elastic.md); none without it");
  app.add_option("--rdzv-ports", rdzv_ports, "LO-HI: the ports the rendezvous stores listen on");
  app.add_option("--rdzv-python", rdzv_python, "the Python with torch that runs the stores");
  if (auto code = ParseFlags(app, std::move(args))) return *code;
  if (migrate_only) return MigrateOnly(store_url, state_dir);
  int32_t rdzv_lo = 0, rdzv_hi = 0;
  if (char dash = 0; std::sscanf(rdzv_ports.c_str(), "%d%c%d", &rdzv_lo, &dash, &rdzv_hi) != 3 ||
                     dash != '-' || rdzv_lo < 1 || rdzv_hi < rdzv_lo || rdzv_hi > 65535) {
    std::cerr << "corral head: flag '--rdzv-ports': got \"" << rdzv_ports
              << "\", want LO-HI ports such as 29400-29499\n";
    return 2;
  }
  if (allow_async_store && require_sync_standby) {
    std::cerr << "corral head: flags '--allow-async-store' and '--require-sync-standby' "
                 "contradict each other; give at most one\n";
    return 2;
  }
  if (Status st = store::CheckSynchronousCommit("flag '--store-synchronous-commit'",
                                                store_options.synchronous_commit);
      !st.ok()) {
    std::cerr << "corral head: " << st.message() << "\n";
    return 2;
  }
  if (allow_async_store) store_options.sync_standby = store::StoreOptions::SyncStandby::kSkip;
  if (require_sync_standby) {
    store_options.sync_standby = store::StoreOptions::SyncStandby::kRequire;
  }
  // Before any thread starts: it takes NOTIFY_SOCKET out of the environment.
  ServiceNotifier notifier = ServiceNotifier::FromEnvironment();
  auto hp = ListenFlag("head", listen);
  if (!hp) return 2;
  auto tls = SetUpHeadTls(tls_flags, state_dir, hp->first);
  if (!tls.ok()) {
    std::cerr << "corral head: " << tls.status().message() << "\n";
    return tls.status().code() == ErrorCode::kInvalidArgument ? 2 : 1;
  }
  for (const auto& note : tls->notes) std::cerr << "corral head: " << note << "\n";
  auto min_runtime_ms = ParseDuration("--min-runtime-before-preempt", min_runtime);
  auto half_life_ms = ParseDuration("--fair-share-half-life", half_life);
  auto idle_after_ms = ParseDuration("--idle-after", idle_after);
  auto idle_stop_warning_ms = ParseDuration("--idle-stop-warning", idle_stop_warning);
  auto leader_lease_ms = ParseDuration("--leader-lease", leader_lease);
  auto retain_finished_ms = ParseDuration("--retain-finished", retain_finished);
  auto stop_confirm_after_ms = ParseDuration("--stop-confirm-after", stop_confirm_after);
  auto header_timeout_ms = ParseDuration("--header-timeout", header_timeout);
  auto inactive_limit_ms = ParseDuration("--inactive-limit", inactive_limit);
  auto relay_idle_ms = ParseDuration("--relay-idle-timeout", relay_idle);
  if (idle_threshold < 0 || idle_threshold > 100) {
    std::cerr << "corral head: flag '--idle-threshold': got " << idle_threshold
              << ", want a percent from 0 to 100\n";
    return 2;
  }
  for (const auto* d : {&min_runtime_ms, &half_life_ms, &idle_after_ms, &idle_stop_warning_ms,
                        &leader_lease_ms, &retain_finished_ms, &stop_confirm_after_ms,
                        &header_timeout_ms, &inactive_limit_ms, &relay_idle_ms}) {
    if (!d->ok()) {
      std::cerr << "corral head: " << d->status().message() << "\n";
      return 2;
    }
  }
  if (*header_timeout_ms <= 0) {
    std::cerr << "corral head: flag '--header-timeout': got " << header_timeout
              << ", want a duration > 0\n";
    return 2;
  }
  if (*relay_idle_ms <= 0) {
    std::cerr << "corral head: flag '--relay-idle-timeout': got " << relay_idle
              << ", want a duration > 0\n";
    return 2;
  }
  auto unix_roles = api::ParseUnixGroupRoles(unix_group_roles);
  if (!unix_roles.ok()) {
    std::cerr << "corral head: " << unix_roles.status().message() << "\n";
    return 2;
  }
  if (unix_socket != "none" && !unix_socket.empty() && unix_socket.front() != '/') {
    std::cerr << "corral head: flag '--unix-socket': got \"" << unix_socket
              << "\", want an absolute path or none\n";
    return 2;
  }
  auto notify_config = JobNotifierConfig(webhooks, sendmail, mail_domain);
  if (!notify_config.ok()) {
    std::cerr << "corral head: " << notify_config.status().message() << "\n";
    return 2;
  }
  BlockStopSignals();
  SystemClock clock;
  head::HeadConfig config;
  config.state_dir = state_dir;
  config.store_url = store_url;
  config.core.checkpoint_root = checkpoint_root;
  config.core.rdzv_host = rdzv_host;
  config.core.rdzv_port_lo = rdzv_lo;
  config.core.rdzv_port_hi = rdzv_hi;
  config.rdzv_python = rdzv_python;
  config.admin_user = admin_user;
  // Memory then holds changes the store refused: exit and let the supervisor (systemd,
  // corral up) start a head that recovers from what is durable.
  config.on_store_failure = [](const Status& st) {
    std::cerr << "corral head: the store failed a commit, exiting: " << st.ToString() << std::endl;
    std::_Exit(75);
  };
  config.core.unreachable_after_ms = unreachable_s * kSecond;
  config.core.down_after_ms = down_s * kSecond;
  config.core.scheduler.min_runtime_before_preempt_ms = *min_runtime_ms;
  config.core.scheduler.fair_share_half_life_ms = *half_life_ms;
  config.core.idle_threshold_percent = idle_threshold;
  config.core.idle_after_ms = *idle_after_ms;
  config.core.idle_stop_queues = {idle_stop_queues.begin(), idle_stop_queues.end()};
  config.core.idle_stop_warning_ms = *idle_stop_warning_ms;
  config.core.inactive_limit_ms = *inactive_limit_ms;
  config.core.retain_finished_ms = *retain_finished_ms;
  config.core.stop_confirm_after_ms = *stop_confirm_after_ms;
  config.core.max_user_priority = max_user_priority;
  config.core.gpu_clean_checks_to_return = gpu_clean_checks;
  config.core.max_array_size = max_array_size;
  config.core.max_pending_per_user = max_pending_per_user;
  // Once every flag is known good, before the database, the tokens and the audit log are
  // written there (the TLS keys, in tls/, are 0600 from their creation).
  if (Status st = store::SecureStateDir(state_dir); !st.ok()) {
    std::cerr << "corral head: " << st.ToString() << "\n";
    return 1;
  }
  auto store = store::OpenStore(store_url, state_dir, store_options);
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
          .header_timeout = std::chrono::milliseconds(*header_timeout_ms),
          .max_connections_per_address = max_connections_per_address,
          .tls = tls->server,
          .takeover_prefix = "/s/",
          .takeover = [&gate](net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn) {
            gate->Take(std::move(req), std::move(conn));
          }});
  auto port = server.Listen(hp->first, hp->second);
  if (!port.ok()) {
    std::cerr << "corral head: " << port.status().ToString() << "\n";
    return 1;
  }
  if (Status st = ListenOnLocalSocket(server, unix_socket); !st.ok()) {
    std::cerr << "corral head: " << st.ToString() << "\n";
    return 1;
  }
  std::string self_url = advertise.empty() ? (tls->enabled ? "https://" : "http://") + hp->first +
                                                 ":" + std::to_string(*port)
                                           : advertise;
  gate = std::make_unique<api::LeaderGate>(self_url);
  server.Start();
  std::optional<head::ClusterState> warm;
  if ((*store)->Shared()) {
    (*store)->SetLease(*leader_lease_ms);
    config.lease_renew_ms = *leader_lease_ms / 3;
    bool stopped = false;
    warm = StandBy(**store, *gate, self_url, notifier, &stopped);
    if (!warm) {
      server.Stop();
      return stopped ? 0 : 1;
    }
    config.advertise_url = self_url;
  }
  // Created before the state machine starts, which is the only caller of on_job_notice.
  std::unique_ptr<notify::Notifier> job_notifier;
  const bool notifies = !notify_config->webhooks.empty() || !notify_config->sendmail.empty();
  if (notifies) {
    config.on_job_notice = [&job_notifier](head::JobNotice n) { job_notifier->Enqueue(n); };
  }
  auto head = head::Head::Open(config, &clock, std::move(*store), std::move(warm));
  if (!head.ok()) {
    std::cerr << "corral head: " << head.status().ToString() << "\n";
    return 1;
  }
  if (notifies) {
    job_notifier = std::make_unique<notify::Notifier>(*notify_config, &(*head)->metrics());
  }
  api::ApiService api(head->get(), rate_limit, tls->agents, unauthenticated_rate,
                      net::SpliceIdle{.websocket = std::chrono::milliseconds(*relay_idle_ms)});
  api.SetUnixGroupRoles(std::move(*unix_roles));
  (*head)->Start();
  api.StartServiceProbes();
  gate->Lead(&api);
  std::cout << "corral head: listening on " << self_url << " (epoch " << (*head)->epoch()
            << ", state " << state_dir << ")"
            << (tls->ca_path.empty() ? "" : "; clients trust " + tls->ca_path + " (--ca)")
            << (unix_socket == "none" || unix_socket.empty() ? ""
                                                             : "; local users on " + unix_socket)
            << std::endl;
  // The store is open and the listener serves: ready (systemd's Type=notify).
  if (Status st = notifier.Ready("leading, epoch " + std::to_string((*head)->epoch())); !st.ok()) {
    std::cerr << "corral head: " << st.ToString() << std::endl;
  }
  int sig = 0;
  if (notifier.watchdog().count() > 0) {
    // Each keep-alive is sent from the state machine's thread: a wedged head stops sending.
    // Asked twice as often as Alive() sends, so that one comes every quarter of the interval.
    auto every = std::chrono::duration_cast<std::chrono::milliseconds>(notifier.watchdog() / 8);
    while ((sig = PollStopSignal(std::max<int>(1, every.count()))) == 0) {
      (*head)->Ping([&notifier] { notifier.Alive(); });
    }
  } else {
    sig = WaitForStopSignal();
  }
  (void)notifier.Stopping();  // where it fails, so did READY, reported
  std::cout << "corral head: stopping on signal " << sig << std::endl;
  server.Stop();
  (*head)->Stop();
  return 0;
}

}  // namespace corral::cmd
