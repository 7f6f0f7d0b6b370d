#!/bin/bash
# compare_slurm.sh -- Corral vs a real Slurm 22.05 on this machine, side by side: submission
# throughput (acknowledged jobs/s), all-done end-to-end jobs/s, and idle submit-to-start.
# Same shape for both: 4 nodes x 8 (fake/simulated) GPUs, N x 1-GPU `true` jobs.
# Results and the exact numbers quoted: docs/benchmarks.md, "Whole system (corral_load)".
#
# Manual benchmark: NOT run by tests or CI (it needs root for Slurm and takes minutes).
#
# Usage: bench/compare_slurm.sh [N]        (default N=1000; RUNS=2 repetitions of everything)
# Env:   BUILD (default build-load: has corral and corral_load), RUNS (2), PORT (17470),
#        SLURM_SH (default /work/shared/tools/slurm-local.sh, or shared/tools/slurm-local.sh
#        beside the repo), SKIP_SLURM=1, SKIP_CORRAL=1, OUT (results file).
# Needs: `apt-get install -y slurm-wlm munge bc` for the Slurm half (Debian 12: 22.05.8).
set -u
cd "$(dirname "$0")/.."
N=${1:-1000}
RUNS=${RUNS:-2}
BUILD=${BUILD:-build-load}
PORT=${PORT:-17470}
SLURM_SH=${SLURM_SH:-}
if [ -z "$SLURM_SH" ]; then
  for c in /work/shared/tools/slurm-local.sh ../shared/tools/slurm-local.sh shared/tools/slurm-local.sh; do
    [ -x "$c" ] && { SLURM_SH=$c; break; }
  done
fi
OUT=${OUT:-/tmp/corral-vs-slurm-$(date +%Y%m%d-%H%M%S).txt}
now() { date +%s.%N; }

log() { echo "$@" | tee -a "$OUT"; }

run_slurm() {
  if [ -z "$SLURM_SH" ] || ! command -v slurmctld >/dev/null; then
    log "## slurm: skipped (slurm-local.sh or slurmctld not found; apt-get install -y slurm-wlm munge bc)"
    return
  fi
  "$SLURM_SH" start 4 2>&1 | tee -a "$OUT" | tail -1
  for r in $(seq 1 "$RUNS"); do
    log "## slurm run $r: sequential sbatch x $N (+ 10-job idle latency, + job array)"
    "$SLURM_SH" bench "$N" 2>&1 | tee -a "$OUT" | grep -E 'latency min|submit|completed'
    log "## slurm run $r: idle latency (10 more jobs)"
    "$SLURM_SH" latency 2>&1 | tee -a "$OUT" | grep -E 'latency min'
  done
  "$SLURM_SH" stop >/dev/null 2>&1
}

CORRAL_PID=""
corral_up() {
  local dir; dir=$(mktemp -d /tmp/corral-load.XXXXXX)
  setsid "$BUILD/corral" up --agents 4 --gpus-per-agent 8 --state-dir "$dir" \
    --listen "127.0.0.1:$PORT" --no-user-config > "$dir/up.log" 2>&1 &
  CORRAL_PID=$!
  for _ in $(seq 1 300); do
    grep -q 'press Ctrl-C' "$dir/up.log" 2>/dev/null && break
    kill -0 "$CORRAL_PID" 2>/dev/null || { cat "$dir/up.log"; exit 1; }
    sleep 0.1
  done
  export CORRAL_ADDR=http://127.0.0.1:$PORT CORRAL_TOKEN; CORRAL_TOKEN=$(cat "$dir/admin.token")
  CORRAL_DIR=$dir
}
corral_down() {
  [ -n "$CORRAL_PID" ] || return
  kill -TERM "$CORRAL_PID" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$CORRAL_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$CORRAL_PID" 2>/dev/null
  wait "$CORRAL_PID" 2>/dev/null
  CORRAL_PID=""
  rm -rf "$CORRAL_DIR"
}
trap corral_down EXIT

corral_active() {  # prints how many of the jobs are not over yet
  "$BUILD/corral" jobs --state pending,scheduled,running --limit 1 -o json 2>/dev/null |
    grep -c '"id"'
}

run_corral_cli() {  # N x `corral submit` one by one: a process per job, like sbatch
  local t0 t1 t2
  t0=$(now)
  for _ in $(seq 1 "$N"); do
    "$BUILD/corral" submit --parsable --gpus 1 -- true >/dev/null || echo "submit failed"
  done
  t1=$(now)
  while [ "$(corral_active)" != 0 ]; do sleep 0.2; done
  t2=$(now)
  printf 'cli submit %d jobs: %.2f s (%.1f jobs/s)\n' "$N" "$(echo "$t1 - $t0" | bc -l)" \
    "$(echo "$N / ($t1 - $t0)" | bc -l)" | tee -a "$OUT"
  printf 'cli all %d completed: %.2f s after first submit (%.1f jobs/s end-to-end)\n' "$N" \
    "$(echo "$t2 - $t0" | bc -l)" "$(echo "$N / ($t2 - $t0)" | bc -l)" | tee -a "$OUT"
}

run_corral() {
  for r in $(seq 1 "$RUNS"); do
    corral_up
    log "## corral run $r: idle latency, corral_load --idle 1 --jobs 50"
    "$BUILD/corral_load" --addr "$CORRAL_ADDR" --token "$CORRAL_TOKEN" --jobs 50 --gpus 1 --idle 1 | tee -a "$OUT"
    log "## corral run $r: CLI, $N x 'corral submit --parsable --gpus 1 -- true' one by one"
    run_corral_cli
    for c in 1 8; do
      log "## corral run $r: corral_load --jobs $N --concurrency $c --gpus 1"
      "$BUILD/corral_load" --addr "$CORRAL_ADDR" --token "$CORRAL_TOKEN" --jobs "$N" --concurrency "$c" --gpus 1 | tee -a "$OUT"
    done
    corral_down
  done
}

log "# corral vs slurm: N=$N RUNS=$RUNS, 4 nodes x 8 GPUs, 1-GPU 'true' jobs; $(nproc) cores; $(date -u +%FT%TZ)"
[ "${SKIP_SLURM:-0}" = 1 ] || run_slurm
if [ "${SKIP_CORRAL:-0}" != 1 ]; then
  [ -x "$BUILD/corral" ] && [ -x "$BUILD/corral_load" ] || {
    echo "build first: cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo && ninja -C $BUILD corral corral_load" >&2
    exit 1
  }
  run_corral
fi
echo "saved $OUT"
