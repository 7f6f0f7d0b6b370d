#!/bin/bash
# vs_slurm.sh -- Corral against a real Slurm 22.05 on this machine, one command, same workload
# on both: 4 nodes x 8 (simulated / fake) GPUs, trivial one-GPU jobs. Prints each figure for
# both and their ratio, and this machine's ceiling measured in the same run:
#
#   array     N x `true` as ONE array (sbatch --array / corral submit --array): first submit to
#             last completion; for Corral also the CPU its processes spent per job (the head's;
#             the agents', with the monitors and jobs they reaped)
#   one by one  N x `true` from the CLI, one process per job (sbatch / corral submit): same clock
#   idle      submit-to-start on an idle cluster, LAT_JOBS jobs one at a time, by the job's own
#             clock (`date +%s.%N` in the job minus the time just before the CLI call), after a
#             random 0-1 s pause (Slurm schedules on a 1 s tick: the phase matters); for Corral
#             also the head's own records (started_at - submitted_at)
#   foreground  RUN_JOBS x a one-GPU `true` in the foreground, one at a time: `srun --gres=gpu:1
#             true` against `corral run --gpus 1 -- true`, each from the CLI call to its exit (queue,
#             allocate, start, run, exit code back to the client)
#   ceiling   corral_spawn_ceiling: fork, exec and reap N `true` with 32 alive at once (the GPU
#             slots), each in its own session; Corral's array rate as a fraction of it
#
# Targets: Corral's array >= 0.7 of the ceiling; idle p50 <= 0.1x Slurm's by the
# job's clock, and <= 5 ms in the head's records. Results: docs/benchmarks.md, "Whole system".
#
# Manual benchmark, NOT run by tests or CI (Slurm needs root; about 3 minutes).
# Usage: bench/vs_slurm.sh [N]          (default 1000)
# Env:   BUILD (default build: has corral and corral_spawn_ceiling), PORT (17470), LAT_JOBS (20),
#        RUN_JOBS (20),
#        SLURM_SH (default /work/shared/tools/slurm-local.sh or shared/tools/ beside the repo),
#        SKIP_SLURM=1, SKIP_CORRAL=1, OUT (raw results file).
# Needs: apt-get install -y slurm-wlm munge bc (Debian 12: Slurm 22.05.8), curl, python3.
set -u
cd "$(dirname "$0")/.."
N=${1:-1000}
BUILD=${BUILD:-build}
PORT=${PORT:-17470}
LAT_JOBS=${LAT_JOBS:-20}
RUN_JOBS=${RUN_JOBS:-20}
SLURM_SH=${SLURM_SH:-}
if [ -z "$SLURM_SH" ]; then
  for c in /work/shared/tools/slurm-local.sh ../shared/tools/slurm-local.sh shared/tools/slurm-local.sh; do
    [ -x "$c" ] && { SLURM_SH=$c; break; }
  done
fi
OUT=${OUT:-/tmp/vs-slurm-$(date +%Y%m%d-%H%M%S).txt}
: > "$OUT"
now() { date +%s.%N; }
rec() { echo "$1 $2" >> "$OUT"; }  # raw figure: key value
pause() { sleep "0.$(printf '%03d' $((RANDOM % 1000)))"; }

# --- the machine's ceiling ---
ceiling() {
  local line
  line=$("$BUILD/corral_spawn_ceiling" --jobs "$N" --parallel 32) || { echo "$line"; exit 1; }
  echo "$line"
  rec ceiling_s "$(echo "$line" | sed -E 's/.* in ([0-9.]+) s.*/\1/')"
}

# --- Slurm ---
slurm_done_count() { wc -l < "$SLURM_LOCAL_DIR/jobcomp.txt"; }
# The waits for a batch to finish poll every 50 ms from ONE process for the whole wait: a shell
# loop of `sleep`, `curl` and `jq` would start ~40 processes a second on the cores both systems
# need (on a machine whose ceiling is ~250 procs/s, a sixth of it).
slurm_wait_done() {  # $1: jobcomp lines before, $2: jobs; returns when all completed
  python3 - "$SLURM_LOCAL_DIR/jobcomp.txt" "$(($1 + $2))" <<'PY'
import sys, time
path, want = sys.argv[1], int(sys.argv[2])
while sum(1 for _ in open(path)) < want:
    time.sleep(0.05)
PY
}
slurm_drained() { while [ -n "$(squeue -h -o %i 2>/dev/null | head -1)" ]; do sleep 0.05; done; }

run_slurm() {
  if [ -z "$SLURM_SH" ] || ! command -v slurmctld >/dev/null; then
    echo "## slurm: skipped (apt-get install -y slurm-wlm munge bc)"
    return
  fi
  export SLURM_LOCAL_DIR=${SLURM_LOCAL_DIR:-/tmp/slurm-local}
  "$SLURM_SH" start 4 | head -1
  eval "$("$SLURM_SH" env)"
  local d=$SLURM_LOCAL_DIR/out t0 t1 before k
  mkdir -p "$d"
  touch "$SLURM_LOCAL_DIR/jobcomp.txt"
  echo "## slurm: idle submit-to-start, $LAT_JOBS jobs"
  for k in $(seq 1 "$LAT_JOBS"); do
    rm -f "$d/lat.$k"
    pause
    t0=$(now)
    sbatch -Q -o /dev/null --gres=gpu:1 --wrap "date +%s.%N > $d/lat.$k" >/dev/null
    while [ ! -s "$d/lat.$k" ]; do sleep 0.005; done
    rec slurm_idle_ms "$(echo "($(cat "$d/lat.$k") - $t0) * 1000" | bc -l)"
    slurm_drained
  done
  echo "## slurm: $RUN_JOBS x srun true in the foreground"
  for k in $(seq 1 "$RUN_JOBS"); do
    pause
    t0=$(now)
    srun -Q --gres=gpu:1 true || echo "srun failed"
    rec slurm_run_ms "$(echo "($(now) - $t0) * 1000" | bc -l)"
  done
  slurm_drained
  echo "## slurm: $N x true as one array"
  before=$(slurm_done_count)
  t0=$(now)
  sbatch -Q -o /dev/null --gres=gpu:1 --array=0-$((N - 1)) --wrap true >/dev/null
  slurm_wait_done "$before" "$N"
  t1=$(now)
  rec slurm_array_s "$(echo "$t1 - $t0" | bc -l)"
  slurm_drained
  echo "## slurm: $N x sbatch true, one by one"
  before=$(slurm_done_count)
  t0=$(now)
  for _ in $(seq 1 "$N"); do sbatch -Q -o /dev/null --gres=gpu:1 --wrap true >/dev/null || echo "sbatch failed"; done
  rec slurm_cli_submit_s "$(echo "$(now) - $t0" | bc -l)"
  slurm_wait_done "$before" "$N"
  t1=$(now)
  rec slurm_cli_s "$(echo "$t1 - $t0" | bc -l)"
  "$SLURM_SH" stop >/dev/null 2>&1
}

# --- Corral ---
CORRAL_PID=""
CORRAL_DIR=""
corral_up() {
  CORRAL_DIR=$(mktemp -d /tmp/corral-vs-slurm.XXXXXX)
  setsid "$BUILD/corral" up --agents 4 --gpus-per-agent 8 --state-dir "$CORRAL_DIR" \
    --listen "127.0.0.1:$PORT" --no-user-config > "$CORRAL_DIR/up.log" 2>&1 &
  CORRAL_PID=$!
  for _ in $(seq 1 300); do
    grep -q 'press Ctrl-C' "$CORRAL_DIR/up.log" 2>/dev/null && break
    kill -0 "$CORRAL_PID" 2>/dev/null || { cat "$CORRAL_DIR/up.log"; exit 1; }
    sleep 0.1
  done
  export CORRAL_ADDR=http://127.0.0.1:$PORT CORRAL_TOKEN
  CORRAL_TOKEN=$(cat "$CORRAL_DIR/admin.token")
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
api() { curl -s -H "Authorization: Bearer $CORRAL_TOKEN" "$CORRAL_ADDR$1"; }
# CPU ticks used so far by the head, then by the agents with their reaped children (the monitors,
# and through them the jobs) and the monitors not reaped yet (a monitor outlives its replica, to
# take the next): "HEAD AGENTS".
corral_cpu_ticks() {
  local head=0 agents=0 p f
  local daemons
  daemons=$(pgrep -s "$CORRAL_PID" -f 'corral (head|agent)' | paste -sd,)
  for p in ${daemons//,/ } $(pgrep -P "$daemons" -x corral-monitor); do
    f=($(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null)) || continue
    local t=$((f[11] + f[12] + f[13] + f[14]))  # utime stime cutime cstime
    if tr '\0' ' ' < "/proc/$p/cmdline" | grep -q ' head '; then head=$((head + t)); else agents=$((agents + t)); fi
  done
  echo "$head $agents"
}
corral_wait_done() {
  python3 - "$CORRAL_ADDR" "$CORRAL_TOKEN" <<'PY'
import json, sys, time, urllib.request
req = urllib.request.Request(sys.argv[1] + "/v1/jobs?state=pending,scheduled,running&limit=1",
                             headers={"Authorization": "Bearer " + sys.argv[2]})
while json.load(urllib.request.urlopen(req))["jobs"]:
    time.sleep(0.05)
PY
}

run_corral() {
  corral_up
  local d=$CORRAL_DIR/out t0 t1 k id
  mkdir -p "$d"
  echo "## corral: idle submit-to-start, $LAT_JOBS jobs"
  for k in $(seq 1 "$LAT_JOBS"); do
    pause
    t0=$(now)
    id=$("$BUILD/corral" submit --parsable --gpus 1 -- /bin/sh -c "date +%s.%N > $d/lat.$k")
    while [ ! -s "$d/lat.$k" ]; do sleep 0.005; done
    rec corral_idle_ms "$(echo "($(cat "$d/lat.$k") - $t0) * 1000" | bc -l)"
    corral_wait_done
    rec corral_idle_head_ms "$(api "/v1/jobs/$id" | jq '.job.runs[0].started_at - .job.submitted_at')"
  done
  echo "## corral: $RUN_JOBS x corral run true in the foreground"
  for k in $(seq 1 "$RUN_JOBS"); do
    pause
    t0=$(now)
    "$BUILD/corral" run --gpus 1 -- true || echo "corral run failed"
    rec corral_run_ms "$(echo "($(now) - $t0) * 1000" | bc -l)"
  done
  corral_wait_done
  echo "## corral: ceiling (just before the array)"
  ceiling
  echo "## corral: $N x true as one array"
  local cpu0 cpu1
  cpu0=$(corral_cpu_ticks)
  t0=$(now)
  id=$("$BUILD/corral" submit --parsable --gpus 1 --array 0-$((N - 1)) -- true)
  corral_wait_done
  t1=$(now)
  cpu1=$(corral_cpu_ticks)
  rec corral_array_s "$(echo "$t1 - $t0" | bc -l)"
  rec corral_array_head_cpu_ms "$(echo "(${cpu1% *} - ${cpu0% *}) * 1000 / $(getconf CLK_TCK) / $N" | bc -l)"
  rec corral_array_agents_cpu_ms "$(echo "(${cpu1#* } - ${cpu0#* }) * 1000 / $(getconf CLK_TCK) / $N" | bc -l)"
  # The head's own clock: the last element's end, against the time before the CLI call.
  rec corral_array_records_s "$(api "/v1/jobs?array=${id%%_*}&limit=100000" |
    jq --arg t0 "$t0" '([.jobs[].ended_at] | max) / 1000 - ($t0 | tonumber)')"
  echo "## corral: $N x corral submit true, one by one"
  t0=$(now)
  for _ in $(seq 1 "$N"); do "$BUILD/corral" submit --parsable --gpus 1 -- true >/dev/null || echo "submit failed"; done
  rec corral_cli_submit_s "$(echo "$(now) - $t0" | bc -l)"
  corral_wait_done
  t1=$(now)
  rec corral_cli_s "$(echo "$t1 - $t0" | bc -l)"
  corral_down
}

echo "# corral vs slurm: N=$N, 4 nodes x 8 GPUs, 1-GPU 'true' jobs; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
[ -x "$BUILD/corral" ] && [ -x "$BUILD/corral_spawn_ceiling" ] || {
  echo "build first: ninja -C $BUILD corral corral_spawn_ceiling" >&2
  exit 1
}
[ "${SKIP_SLURM:-0}" = 1 ] || run_slurm
[ "${SKIP_CORRAL:-0}" = 1 ] || run_corral
[ -n "$(grep '^ceiling_s' "$OUT")" ] || { echo "## ceiling"; ceiling; }

python3 - "$OUT" "$N" <<'PY'
import math, sys
raw, n = {}, int(sys.argv[2])
for line in open(sys.argv[1]):
    k, v = line.split()
    raw.setdefault(k, []).append(float(v))
def one(k): return raw[k][-1] if k in raw else None
def pct(k, p):
    v = sorted(raw.get(k, []))
    return v[max(0, math.ceil(p * len(v)) - 1)] if v else None
def rate(k):
    s = one(k)
    return n / s if s else None
def fmt(x, unit):
    return "-" if x is None else f"{x:.{2 if x < 10 else 1}f} {unit}" if unit else f"{x:.2f}"
rows = [  # figure, slurm, corral, unit, higher is better
    (f"array of {n}: first submit to last done", rate("slurm_array_s"), rate("corral_array_s"), "jobs/s", True),
    (f"  (Corral, head records)", None, rate("corral_array_records_s"), "jobs/s", True),
    ("  CPU per job, head", None, one("corral_array_head_cpu_ms"), "ms", False),
    ("  CPU per job, agents + monitors + jobs", None, one("corral_array_agents_cpu_ms"), "ms", False),
    (f"{n} one by one (CLI): submitted", rate("slurm_cli_submit_s"), rate("corral_cli_submit_s"), "jobs/s", True),
    (f"{n} one by one (CLI): all done", rate("slurm_cli_s"), rate("corral_cli_s"), "jobs/s", True),
    ("idle submit-to-start p50 (job's clock)", pct("slurm_idle_ms", .5), pct("corral_idle_ms", .5), "ms", False),
    ("idle submit-to-start p99 (job's clock)", pct("slurm_idle_ms", .99), pct("corral_idle_ms", .99), "ms", False),
    ("foreground run of true p50 (srun / corral run)", pct("slurm_run_ms", .5), pct("corral_run_ms", .5), "ms", False),
    ("foreground run of true p99 (srun / corral run)", pct("slurm_run_ms", .99), pct("corral_run_ms", .99), "ms", False),
    ("idle submit-to-start p50 (head records)", None, pct("corral_idle_head_ms", .5), "ms", False),
    ("idle submit-to-start p99 (head records)", None, pct("corral_idle_head_ms", .99), "ms", False),
]
print(f"\n{'figure':44} {'Slurm':>14} {'Corral':>14} {'Corral/Slurm':>13}")
for name, s, c, unit, _ in rows:
    ratio = f"{c / s:.3g}x" if s and c else "-"
    print(f"{name:44} {fmt(s, unit):>14} {fmt(c, unit):>14} {ratio:>13}")
ceil_rate = rate("ceiling_s")
print(f"\nceiling (fork+exec+reap {n} x true, 32 at once): {fmt(ceil_rate, 'procs/s')}")
for who, k in (("Corral", "corral_array_s"), ("Slurm", "slurm_array_s")):
    if rate(k) and ceil_rate:
        print(f"{who} array as a fraction of the ceiling: {rate(k) / ceil_rate:.2f}"
              + ("   (target >= 0.7)" if who == "Corral" else ""))
s50, c50, h50 = pct("slurm_idle_ms", .5), pct("corral_idle_ms", .5), pct("corral_idle_head_ms", .5)
if s50 and c50:
    print(f"idle p50 Corral/Slurm by the job's clock: {c50 / s50:.3f}x   (target <= 0.1x)")
if h50 is not None:
    print(f"idle p50 in the head's records: {h50:.1f} ms   (target <= 5 ms)")
PY
echo "raw figures: $OUT"
