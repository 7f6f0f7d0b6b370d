#include "cmd/head_flags.h"

#include "cmd/local_socket.h"

namespace corral::cmd {
namespace {

void AddHeadServingFlags(CLI::App& app, HeadFlags& f) {
  app.add_option("--state-dir", f.state_dir, "directory for corral.db and tokens")->required();
  app.add_option("--listen", f.listen, "HOST:PORT to serve the API on");
  app.add_option("--advertise", f.advertise,
                 "this head's URL as clients and agents reach it, where standbys send them "
                 "(default http://LISTEN)");
  app.add_option("--rate-limit", f.rate_limit,
                 "API requests per second per token (bursts of twice that); 0: no limit")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rate-limit-unauthenticated", f.unauthenticated_rate,
                 "API requests per second per client address whose token has not worked here "
                 "(bursts of ten times that); past it 429, unaudited; 0: no limit")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--relay-idle-timeout", f.relay_idle,
                 "a notebook's WebSocket relayed through the head is closed after this long "
                 "without a byte either way (its plain requests after the API's 30s)");
  app.add_option("--header-timeout", f.header_timeout,
                 "a request's whole header must arrive within this (slow clients are cut)");
  app.add_option("--max-connections-per-address", f.max_connections_per_address,
                 "open connections from one client address at most (more are closed as they "
                 "are accepted); 0: no limit");
  f.tls.AddTo(app);
  f.unix_socket = DefaultLocalSocket();
  app.add_option("--unix-socket", f.unix_socket,
                 "serve the API on this local socket too, to every local user as their Unix user "
                 "(no token); default $RUNTIME_DIRECTORY/corral.sock under systemd "
                 "(/run/corral/corral.sock), else none; none: no socket");
  app.add_option("--unix-group-role", f.unix_group_roles,
                 "GROUP=ROLE: callers over the local socket in Unix group GROUP get ROLE (admin, "
                 "user, or queue-admin:QUEUE); repeatable; others are plain users");
  app.add_option("--admin-user", f.admin_user,
                 "the user named by the first admin token (STATE_DIR/admin.token)");
}

void AddHeadStoreFlags(CLI::App& app, HeadFlags& f) {
  app.add_option("--store", f.store_url,
                 "where state is kept: sqlite:PATH (default STATE_DIR/corral.db) or "
                 "postgres://USER@HOST:PORT/DB (several hosts: "
                 "postgresql://USER@H1:P1,H2:P2/DB?target_session_attrs=read-write)");
  app.add_option("--store-synchronous-commit", f.store_options.synchronous_commit,
                 "PostgreSQL: the synchronous_commit every session of this head sets (on, "
                 "remote_apply or remote_write), whatever the server's default");
  app.add_flag("--allow-async-store", f.allow_async_store,
               "PostgreSQL on several hosts: lead even when the server has no synchronous "
               "standby (a failover may then lose acknowledged changes)");
  app.add_flag("--require-sync-standby", f.require_sync_standby,
               "PostgreSQL on one host (a proxy or virtual IP in front of a replicated "
               "cluster): refuse to lead without a synchronous standby, as with several hosts");
  // Hidden (no group): a negative control for the failover test only, which must show that
  // acknowledging such a commit loses it. Never for a cluster.
  app.add_flag("--unsafe-acknowledge-unreplicated-commits",
               f.store_options.ignore_unreplicated_commits,
               "TESTS ONLY: take a COMMIT whose synchronous replication wait was cut short as "
               "durable (loses acknowledged changes on a failover)")
      ->group("");
  app.add_option("--leader-lease", f.leader_lease,
                 "several heads on PostgreSQL: a leader that has not renewed its lease this long "
                 "(hung) is deposed by a standby; it renews every third of it");
  app.add_flag("--migrate-only", f.migrate_only,
               "bring the store's schema up to this corral's version, then exit");
}

void AddHeadNodeFlags(CLI::App& app, HeadFlags& f) {
  app.add_option("--unreachable-after", f.unreachable_s,
                 "seconds without a sync before unreachable");
  app.add_option("--down-after", f.down_s, "seconds without a sync before down (runs lost)");
  app.add_option("--gpu-clean-checks", f.gpu_clean_checks,
                 "clean health checks in a row that return a GPU the checks drained (admin drains "
                 "stay)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--stop-confirm-after", f.stop_confirm_after,
                 "a run whose node has not confirmed its stop this long after the run's grace "
                 "is declared lost and its GPUs freed");
  app.add_option("--idle-threshold", f.idle_threshold,
                 "GPU utilisation percent under which a run's GPUs count as idle (0-100)");
  app.add_option("--idle-after", f.idle_after,
                 "a run whose GPUs all stay idle this long is flagged idle");
  app.add_option("--idle-stop-queues", f.idle_stop_queues,
                 "queues (with their sub-queues) whose preemptible runs, once flagged idle, are "
                 "warned and then cancelled")
      ->delimiter(',');
  app.add_option("--idle-stop-warning", f.idle_stop_warning,
                 "time between an idle run's warning event and its stop");
  app.add_option("--cluster-series-step", f.cluster_series_step,
                 "the dashboard's plots of the cluster: how often the head takes a point of its "
                 "GPUs' use and its queues (not durable: a new leader starts anew)");
  app.add_option("--cluster-series-keep", f.cluster_series_keep,
                 "how far back the cluster's points go (at most 100000 points)");
  app.add_option("--inactive-limit", f.inactive_limit,
                 "an interactive session (corral run, srun --pty, salloc) whose client has not "
                 "been heard from this long is ended; batch jobs never are (0s: never)");
}

void AddHeadJobFlags(CLI::App& app, HeadFlags& f) {
  app.add_option("--checkpoint-root", f.checkpoint_root, "root of CORRAL_CHECKPOINT_DIR");
  app.add_option("--min-runtime-before-preempt", f.min_runtime,
                 "a run is not preempted before it ran this long (anti-thrashing)");
  app.add_option("--fair-share-half-life", f.half_life, "half-life of the usage behind fair share");
  app.add_option("--max-array-size", f.max_array_size,
                 "elements of one array submission at most, for users other than admins (0: no "
                 "limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-pending-per-user", f.max_pending_per_user,
                 "a user's jobs pending at once, over all queues, for users other than admins (0: "
                 "no limit); queues may set a lower one of their own")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-user-priority", f.max_user_priority,
                 "the highest job priority a plain user may set (more takes an admin or an admin "
                 "of the job's queue)");
  app.add_option("--retain-finished", f.retain_finished,
                 "jobs that ended longer ago than this leave the head's memory; the store "
                 "answers for them (corral show, corral jobs --all) (0s: keep all)");
  app.add_option("--rdzv-host", f.rdzv_host,
                 "the address replicas reach this host at: elastic jobs' torchrun rendezvous "
                 "stores run here, one per job (docs/elastic.md); none without it");
  app.add_option("--rdzv-ports", f.rdzv_ports, "LO-HI: the ports the rendezvous stores listen on");
  app.add_option("--rdzv-python", f.rdzv_python, "the Python with torch that runs the stores");
  app.add_option("--webhook", f.webhooks,
                 "[user:NAME=|queue:NAME=]URL: POST a JSON notice there when a job (of that user "
                 "or queue) begins, ends, fails, is requeued or preempted (repeatable)");
  app.add_option("--sendmail", f.sendmail,
                 "the program jobs' --mail-type mail goes through; auto: /usr/sbin/sendmail "
                 "where it exists; none: no mail");
  app.add_option("--mail-domain", f.mail_domain,
                 "appended as @DOMAIN to a mail address without one (a job's owner)");
}

}  // namespace

void AddHeadFlags(CLI::App& app, HeadFlags& flags) {
  AddHeadServingFlags(app, flags);
  AddHeadStoreFlags(app, flags);
  AddHeadNodeFlags(app, flags);
  AddHeadJobFlags(app, flags);
}

}  // namespace corral::cmd
