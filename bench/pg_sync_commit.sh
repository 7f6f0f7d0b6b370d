#!/usr/bin/env bash
# Commit latency of a store-shaped transaction on PostgreSQL with synchronous replication
# against without: a primary and a pg_basebackup -R standby ("s1") on loopback, fsync on (the
# servers' defaults), and pgbench running, on one connection as a head's commit thread does,
# the statements of one of the head's commits (the term check that renews the lease, a job row,
# a change row). Each mode sets the session's synchronous_commit as the head does.
#
#   bench/pg_sync_commit.sh [-t SECONDS] [-r ROUNDS]   (root: the servers run as postgres)
#
# Modes: "alone" (synchronous_standby_names empty: the commit is flushed on the primary only,
# the standby streams asynchronously), then with synchronous_standby_names = 'ANY 1 (s1)':
# on (flushed on the standby too), remote_write, remote_apply. Each round runs every mode for
# SECONDS, in turn, so that a machine's changing load falls on all of them alike; the figures
# are over all rounds.
set -euo pipefail
SECONDS_PER_MODE=10
ROUNDS=3
while getopts "t:r:" o; do
  case $o in
    t) SECONDS_PER_MODE=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    *) exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "$0: run as root (the servers run as postgres via runuser)" >&2; exit 2; }
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
work=$(mktemp -d /tmp/corral-pgsync.XXXXXX)
chown postgres "$work"
as_pg() { runuser -u postgres -- "$@"; }
cleanup() {
  for d in standby primary; do
    [ -f "$work/$d/postmaster.pid" ] && as_pg "$bin/pg_ctl" -D "$work/$d" -m immediate -w stop >/dev/null 2>&1
  done
  rm -rf "$work"
}
trap cleanup EXIT
P1=55461 P2=55462
opts="-k $work -c listen_addresses=127.0.0.1"
as_pg "$bin/initdb" -D "$work/primary" -U postgres -A trust >/dev/null
as_pg "$bin/pg_ctl" -D "$work/primary" -l "$work/primary.log" -w -o "-p $P1 $opts" start >/dev/null
as_pg "$bin/pg_basebackup" -D "$work/standby" -R -X stream -h 127.0.0.1 -p $P1 -U postgres \
  --checkpoint=fast
as_pg "$bin/pg_ctl" -D "$work/standby" -l "$work/standby.log" -w \
  -o "-p $P2 $opts -c cluster_name=s1" start >/dev/null
psql_p() { psql -X -q -At -h 127.0.0.1 -p $P1 -U postgres "$@"; }
psql_p -c "CREATE DATABASE corral"
psql_p -d corral -c "
  CREATE TABLE leadership (id INTEGER PRIMARY KEY, term BIGINT NOT NULL, renewed_at TIMESTAMPTZ);
  INSERT INTO leadership VALUES (1, 1, now());
  CREATE TABLE jobs (id BIGINT PRIMARY KEY, state TEXT NOT NULL, doc TEXT NOT NULL);
  CREATE TABLE changes (revision BIGINT PRIMARY KEY, doc TEXT NOT NULL);"
cat >"$work/commit.sql" <<'EOF'
\set id random(1, 1000000000)
BEGIN;
UPDATE leadership SET renewed_at = now() WHERE id = 1 AND term = 1;
INSERT INTO jobs (id, state, doc) VALUES (:id, 'pending', repeat('j', 1500)) ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, doc = EXCLUDED.doc;
INSERT INTO changes (revision, doc) VALUES (:id, repeat('c', 800)) ON CONFLICT (revision) DO NOTHING;
COMMIT;
EOF
set_standbys() {
  psql_p -c "ALTER SYSTEM SET synchronous_standby_names = '$1'" -c "SELECT pg_reload_conf()" >/dev/null
  sleep 1
}
# One mode for SECONDS on one connection; its per-commit latencies go to $work/NAME.lat.
run_mode() {
  local name=$1 commit=$2
  rm -f "$work"/log.*
  (cd "$work" && PGOPTIONS="-c synchronous_commit=$commit" "$bin/pgbench" -n -c 1 \
    -T "$SECONDS_PER_MODE" -f "$work/commit.sql" -l --log-prefix="$work/log" \
    -h 127.0.0.1 -p $P1 -U postgres corral >/dev/null 2>&1)
  cat "$work"/log.* | awk '{print $3 / 1000.0}' >>"$work/$name.lat"
}
# count, mean, p50, p99 (ms) of one mode over all rounds.
report() {
  local name=$1 label=$2
  sort -n "$work/$name.lat" | awk -v label="$label" '
    { v[NR] = $1; s += $1 }
    END { printf "%-30s %6d commits  mean %6.2f ms  p50 %6.2f ms  p99 %7.2f ms\n", label, NR,
          s / NR, v[int(NR * 0.5) + 1], v[int(NR * 0.99) + 1] }'
}
echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}'), $ROUNDS rounds of $SECONDS_PER_MODE s per mode, load before $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  set_standbys ""
  run_mode alone on
  set_standbys "ANY 1 (s1)"
  [ "$(psql_p -c "SELECT sync_state FROM pg_stat_replication")" = quorum ] ||
    { echo "$0: s1 is not a quorum standby" >&2; exit 1; }
  run_mode sync_on on
  run_mode sync_write remote_write
  run_mode sync_apply remote_apply
done
report alone "alone (no sync standby), on"
report sync_on "ANY 1 (s1), on"
report sync_write "ANY 1 (s1), remote_write"
report sync_apply "ANY 1 (s1), remote_apply"
echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
