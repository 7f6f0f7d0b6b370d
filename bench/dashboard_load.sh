#!/usr/bin/env bash
# The head's CPU with dashboard clients connected while jobs flow, against none, side by side
# in one run: a head and one agent (simulated GPUs); each round submits JOBS jobs with
# corral_load and reads the head's CPU time (utime + stime, /proc/PID/stat) over it, once with
# no clients, once with CLIENTS corral_dashboard_clients following the event stream (and once
# more with those clients also re-reading what the cluster view reads, the active jobs and the
# nodes, at most every MS after changes: -p MS).
#
#   bench/dashboard_load.sh [-c CLIENTS] [-n JOBS] [-r ROUNDS] [-g GPUS] [-p MS]
set -euo pipefail
CLIENTS=100
JOBS=1000
ROUNDS=2
GPUS=8
PAGES=0
while getopts "c:n:r:g:p:" o; do
  case $o in
    c) CLIENTS=$OPTARG ;;
    n) JOBS=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    g) GPUS=$OPTARG ;;
    p) PAGES=$OPTARG ;;
    *) exit 2 ;;
  esac
done
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-$here/build}"
work=$(mktemp -d /tmp/corral-dash.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
addr="http://127.0.0.1:$port"
# No rate limit: the clients share the admin token here, where real dashboards have one each,
# and one address, where real ones have many.
"$build/corral" head --state-dir "$work/head" --listen "127.0.0.1:$port" --rate-limit 0 \
  --rate-limit-unauthenticated 0 --max-connections-per-address 0 \
  >"$work/head.log" 2>&1 &
head_pid=$!
pids+=("$head_pid")
until [ -s "$work/head/admin.token" ] && curl -sf -o /dev/null "$addr/healthz"; do sleep 0.05; done
token=$(cat "$work/head/admin.token")
"$build/corral" agent --head "$addr" --join-token-file "$work/head/join.token" --name n1 \
  --state-dir "$work/n1" --simulate-gpus "$GPUS" --cpus 64 --memory 256G --run-as agent \
  >"$work/agent.log" 2>&1 &
pids+=("$!")
until CORRAL_ADDR=$addr CORRAL_TOKEN=$token "$build/corral" nodes 2>/dev/null | grep -q ready; do
  sleep 0.1
done

ticks() { awk '{print $14 + $15}' "/proc/$head_pid/stat"; }
hz=$(getconf CLK_TCK)

# One measurement: prints "MODE CPU_S WALL_S".
measure() {
  local mode=$1 clients_pid=""
  case $mode in
    none) ;;
    stream) "$build/corral_dashboard_clients" --addr "$addr" --token "$token" --clients "$CLIENTS" \
              >"$work/clients.out" 2>&1 & clients_pid=$! ;;
    pages) "$build/corral_dashboard_clients" --addr "$addr" --token "$token" --clients "$CLIENTS" \
              --refetch-ms "$PAGES" >"$work/clients.out" 2>&1 & clients_pid=$! ;;
  esac
  [ -n "$clients_pid" ] && sleep 2  # connected and waiting
  local t0 w0 t1 w1
  t0=$(ticks)
  w0=$(date +%s%N)
  "$build/corral_load" --addr "$addr" --token "$token" --jobs "$JOBS" --concurrency 8 --gpus 1 \
    >"$work/load.out" 2>&1
  t1=$(ticks)
  w1=$(date +%s%N)
  if [ -n "$clients_pid" ]; then
    kill -INT "$clients_pid"
    wait "$clients_pid" || true
    sed 's/^/    clients: /' "$work/clients.out" >&2
  fi
  grep -E "^(submitted|first failure|all [0-9]+ jobs done)" "$work/load.out" | sed 's/^/    load: /' >&2
  awk -v m="$mode" -v a="$t0" -v b="$t1" -v hz="$hz" -v w0="$w0" -v w1="$w1" \
    'BEGIN { printf "%s %.2f %.2f\n", m, (b - a) / hz, (w1 - w0) / 1e9 }'
}

modes=(none stream)
[ "$PAGES" != 0 ] && modes+=(pages)
echo "head CPU over $JOBS jobs (1 agent, $GPUS simulated GPUs, corral_load --concurrency 8), $CLIENTS clients"
results="$work/results"
: >"$results"
for round in $(seq "$ROUNDS"); do
  for mode in "${modes[@]}"; do
    line=$(measure "$mode")
    echo "round $round: $line" >&2
    echo "$line" >>"$results"
  done
done
awk '{ cpu[$1] += $2; wall[$1] += $3; n[$1]++ }
  END {
    printf "%-8s %12s %10s %16s %10s\n", "clients", "head CPU s", "wall s", "CPU ms per job", "vs none"
    for (m in cpu) base = (m == "none") ? cpu[m] / n[m] : base
    for (m in cpu) printf "%-8s %12.2f %10.2f %16.2f %9.2fx\n", m, cpu[m] / n[m], wall[m] / n[m],
      1000 * cpu[m] / n[m] / '"$JOBS"', (cpu[m] / n[m]) / base
  }' "$results"
