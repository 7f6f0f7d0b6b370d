#!/usr/bin/env bash
# The cost of TLS on the API: two `corral up` clusters on this machine, one plain HTTP and one
# --tls, loaded in alternation by corral_load (R rounds of N submissions each), with kept
# connections (as agents and long-lived clients use) and with a new connection per
# submission (as each `corral submit` process makes: a full TLS handshake every time).
# Prints acknowledged submissions/s and the POST round trip's p50 for each, side by side.
#
#   bench/tls_bench.sh [-n JOBS] [-r ROUNDS] [-c CONCURRENCY]
set -euo pipefail
JOBS=2000
ROUNDS=3
CONC=8
while getopts "n:r:c:" o; do
  case $o in
    n) JOBS=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    c) CONC=$OPTARG ;;
    *) exit 2 ;;
  esac
done
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${BIN:-$here/build}"
work=$(mktemp -d /tmp/corral-tls-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
# Enough GPUs that the jobs (`true`, 0 GPUs) never queue behind each other.
"$bin/corral" up --no-user-config --agents 2 --gpus-per-agent 8 --state-dir "$work/plain" \
  --listen "127.0.0.1:$port" >"$work/plain.log" 2>&1 &
pids+=($!)
"$bin/corral" up --no-user-config --agents 2 --gpus-per-agent 8 --state-dir "$work/tls" \
  --listen "127.0.0.1:$((port + 1))" --tls >"$work/tls.log" 2>&1 &
pids+=($!)
for i in $(seq 120); do
  grep -q "corral up: head on" "$work/plain.log" && grep -q "corral up: head on" "$work/tls.log" &&
    break
  sleep 0.5
done
grep -q "corral up: head on" "$work/tls.log" || { cat "$work"/*.log; exit 1; }

load() {  # name addr ca fresh
  local out
  out=$("$bin/corral_load" --addr "$2" --token "$(cat "$work/$1/admin.token")" --jobs "$JOBS" \
    --concurrency "$CONC" --gpus 0 --cmd true ${3:+--ca "$3"} --fresh-connections "$4")
  printf "%-6s %-5s %8s submits/s  ack p50 %6s ms\n" "$1" \
    "$([ "$4" = 1 ] && echo new || echo kept)" \
    "$(sed -n 's/.*s: \([0-9]*\) acknowledged jobs\/s/\1/p' <<<"$out")" \
    "$(sed -n 's/^ack (POST round trip): p50 \([0-9.]*\) ms.*/\1/p' <<<"$out")"
}
echo "corral_load: $JOBS jobs per run, concurrency $CONC, $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for fresh in 0 1; do
    load plain "http://127.0.0.1:$port" "" "$fresh"
    load tls "https://127.0.0.1:$((port + 1))" "$work/tls/tls/ca.pem" "$fresh"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
