#!/usr/bin/env bash
# Side by side, in alternation: acknowledged submits/s (corral_load, 8 clients) and idle
# submit-to-start latency (corral_load --idle 1) for several corral binaries, each on a fresh
# `corral up` (4 agents x 8 simulated GPUs, its embedded SQLite store).
#
#   bench/compare_builds.sh [-n JOBS] [-r RUNS] CORRAL_BIN [CORRAL_BIN...]
set -euo pipefail
N=1000
RUNS=2
while getopts "n:r:" o; do
  case $o in
    n) N=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
here="$(cd "$(dirname "$0")/.." && pwd)"
LOAD="${LOAD:-$here/build/corral_load}"
port=$((20000 + RANDOM % 20000))
for run in $(seq "$RUNS"); do
  for bin in "$@"; do
    dir=$(mktemp -d /tmp/corral-cmp.XXXXXX)
    setsid "$bin" up --agents 4 --gpus-per-agent 8 --state-dir "$dir" \
      --listen "127.0.0.1:$port" --no-user-config >"$dir/up.log" 2>&1 &
    pid=$!
    until grep -q 'press Ctrl-C' "$dir/up.log" 2>/dev/null; do
      kill -0 $pid 2>/dev/null || { cat "$dir/up.log"; exit 1; }
      sleep 0.1
    done
    token=$(cat "$dir/admin.token")
    echo "== $bin run $run"
    "$LOAD" --addr "http://127.0.0.1:$port" --token "$token" --jobs "$N" --concurrency 8 --gpus 1 |
      grep -E 'acknowledged|all done|submit-to-start'
    "$LOAD" --addr "http://127.0.0.1:$port" --token "$token" --jobs 30 --concurrency 1 --gpus 1 \
      --idle 1 | grep -E 'client submit-to-start|submit-to-start'
    kill -TERM $pid
    wait $pid 2>/dev/null || true
    rm -rf "$dir"
  done
done
