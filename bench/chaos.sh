#!/usr/bin/env bash
# Reliability under faults (not in CI; root): prints faults injected, jobs done, lost and
# duplicated (both must be 0) and recovery times, then the head's restart time and RSS at
# 100,000 stored jobs on SQLite and on PostgreSQL. Results go in docs/reliability.md.
#
#   bench/chaos.sh [-m MINUTES] [-s SEED] [-n JOBS]
#
#   1. SIGKILLs of the head and the agents on a random schedule for MINUTES while jobs flow
#      (tests/chaos_test.cc, run long);
#   2. a network partition past the agent's lease, with the daemons' default timings
#      (tests/chaos/partition_test.sh, TIMINGS=default) and with short ones;
#   3. three heads on PostgreSQL, the leader SIGKILLed while 300 submissions stream in
#      (tests/ha_test.cc): how long until a standby leads;
#   4. head restart with JOBS stored (bench/head_restart.sh), SQLite then PostgreSQL, with
#      every job in memory and with the finished ones retired (-R).
set -euo pipefail
MINUTES=5
SEED=$RANDOM
JOBS=100000
while getopts "m:s:n:" o; do
  case $o in
    m) MINUTES=$OPTARG ;;
    s) SEED=$OPTARG ;;
    n) JOBS=$OPTARG ;;
    *) exit 2 ;;
  esac
done
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-$here/build}"
[ "$(id -u)" -eq 0 ] || { echo "bench/chaos.sh: needs root (network namespaces, PostgreSQL)"; exit 2; }

echo "== 1. SIGKILLs for $MINUTES min (seed $SEED)"
CHAOS_SECONDS=$((MINUTES * 60)) CHAOS_SEED=$SEED "$build/tests/chaos_test" 2>&1 |
  grep -E '^\[chaos\]|FAILED|Failure' || true

for t in default short; do
  echo "== 2. partition, $t timings"
  TIMINGS=$t CORRAL="$build/corral" "$here/tests/chaos/partition_test.sh" 2>&1 |
    grep -E '^(cutting|healed|first run|ok:|PASS|FAIL)' || true
done

echo "== 3. leader SIGKILL among three heads on PostgreSQL"
"$build/tests/ha_test" 2>&1 | grep -E '^\[ha\]|OK|FAILED' || true

echo "== 4. head restart with $JOBS stored jobs"
"$here/bench/head_restart.sh" -n "$JOBS" -r 2 "$build/corral"
echo "-- finished jobs retired (--retain-finished)"
"$here/bench/head_restart.sh" -n "$JOBS" -r 2 -R "$build/corral"
export PG_DIR=/tmp/corral-chaos-pg PG_PORT=$((40000 + RANDOM % 10000))
PG="$here/../shared/tools/pg-local.sh"
[ -x "$PG" ] || PG=/work/shared/tools/pg-local.sh
"$PG" start >/dev/null
trap '"$PG" stop --rm >/dev/null 2>&1 || true' EXIT
psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "CREATE DATABASE corral_restart" >/dev/null
psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "CREATE DATABASE corral_retired" >/dev/null
echo "-- on PostgreSQL"
"$here/bench/head_restart.sh" -n "$JOBS" -r 2 -s "postgresql://postgres@127.0.0.1:$PG_PORT/corral_restart" \
  "$build/corral"
echo "-- on PostgreSQL, finished jobs retired"
"$here/bench/head_restart.sh" -n "$JOBS" -r 2 -R -s "postgresql://postgres@127.0.0.1:$PG_PORT/corral_retired" \
  "$build/corral"
