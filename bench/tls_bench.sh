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
# Enough GPUs that the jobs (`true`, 0 GPUs) never queue behind each other.
WORK_PREFIX=tls-bench AGENTS=2 GPUS=8 . "$(dirname "$0")/lib/plain_and_tls_clusters.sh"

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
