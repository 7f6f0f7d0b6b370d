#!/usr/bin/env bash
# Head restart at scale: time from `corral head` start to its first answered API call, and
# its RSS then, over a store filled with N jobs by corral_fill_store (most of them finished).
# Give it several corral binaries to compare them side by side, in alternation (each run gets a
# fresh copy of its store). On SQLite, each binary's store is filled by the corral_fill_store
# beside it where there is one (each tree writes the job documents its own way), else by this
# tree's ($FILL).
#
#   bench/head_restart.sh [-n JOBS] [-r RUNS] [-s postgres://...] [-R] CORRAL_BIN [CORRAL_BIN...]
#
# -s: the store is that (empty) PostgreSQL database, filled once; every run uses it as it is.
# -R: the finished jobs were retired (out of memory, --retain-finished) before the restart.
set -euo pipefail
JOBS=100000
RUNS=3
STORE=""
RETIRE=0
while getopts "n:r:s:R" o; do
  case $o in
    n) JOBS=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    s) STORE=$OPTARG ;;
    R) RETIRE=1 ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-n JOBS] [-r RUNS] CORRAL_BIN..." >&2; exit 2; }
here="$(cd "$(dirname "$0")/.." && pwd)"
fill="${FILL:-$here/build/corral_fill_store}"
work=$(mktemp -d /tmp/corral-restart.XXXXXX)
trap 'rm -rf "$work"' EXIT
declare -A seed  # binary -> its SQLite seed, one per distinct corral_fill_store
if [ -n "$STORE" ]; then
  "$fill" --db "$STORE" --jobs "$JOBS" --retire "$RETIRE"
else
  for bin in "$@"; do
    filler="$(dirname "$bin")/corral_fill_store"
    [ -x "$filler" ] || filler="$fill"
    seed[$bin]="$work/seed-$(realpath "$filler" | md5sum | cut -c1-8).db"
    [ -s "${seed[$bin]}" ] || "$filler" --db "${seed[$bin]}" --jobs "$JOBS" --retire "$RETIRE"
  done
fi
port=$((20000 + RANDOM % 20000))
for run in $(seq "$RUNS"); do
  for bin in "$@"; do
    dir="$work/state"
    # On PostgreSQL the state dir stays: its admin.token is the one the store knows.
    [ -n "$STORE" ] || rm -rf "$dir"
    mkdir -p "$dir"
    [ -n "$STORE" ] || cp "${seed[$bin]}" "$dir/corral.db"
    start=$(date +%s%N)
    "$bin" head --state-dir "$dir" --listen "127.0.0.1:$port" ${STORE:+--store "$STORE"} \
      >"$work/head.log" 2>&1 &
    pid=$!
    until [ -s "$dir/admin.token" ] &&
      curl -sf -o /dev/null -H "Authorization: Bearer $(cat "$dir/admin.token")" \
        "http://127.0.0.1:$port/v1/jobs?limit=1"; do
      sleep 0.01
      kill -0 $pid 2>/dev/null || { cat "$work/head.log"; exit 1; }
    done
    end=$(date +%s%N)
    rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
    kill -9 $pid
    wait $pid 2>/dev/null || true
    printf '%s run %d: %d jobs, serving after %d ms, RSS %d MB\n' "$bin" "$run" "$JOBS" \
      $(((end - start) / 1000000)) $((rss / 1024))
  done
done
