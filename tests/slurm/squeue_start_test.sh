#!/bin/bash
# `squeue --start` side by side: the same small workload through a real Slurm (Debian's
# slurm-wlm, one node of 4 fake GPUs, started here on private ports, backfill every second) and
# through Corral's shims (`corral up`, one agent of 4 simulated GPUs). On each side: a warm-up of
# four 1-GPU jobs (the owner's history, which Corral predicts from and Slurm does not use), then
# a burst of jobs with one-minute time limits, more than fit at once. Each side's
# `squeue --start` is read as a user reads it right after submitting (the first listing in which
# every pending job has a start time), then each job's real start (`scontrol show job`,
# StartTime). start_errors.py compares the listings' formats and prints both sides' errors; the
# test asserts that Corral's estimates are within a tolerance of its real starts
# (TOL_MAX, TOL_MEDIAN seconds) and that its listing parses as Slurm's does.
#
# Needs root, slurm-wlm and munge: without them it exits 77 (skipped), or fails under CI=true.
# A Slurm that does not start is a failure, always.
# Env: CORRAL (the binary); WARM (the warm-up jobs' run time, s: 8); BURST (the burst, one
# GPUS:SECONDS per job: "2:8 2:8 2:10 2:6 4:8 2:8"); LIMIT (the jobs' --time: 1, a minute:
# Slurm keeps limits in minutes); STRICT=0 prints the figures without asserting (bench);
# TOL_MAX (5), TOL_MEDIAN (3); KEEP=1 keeps the work directory; OUT=FILE appends the figures;
# USERS=2: two users, each with its own warm-up, the burst's jobs alternating between them
# (Slurm: root and `nobody`, by `runuser`; Corral: two users' tokens), so that Corral's fair
# share orders the burst and each user's estimates rest on their own history.
set -u
CORRAL=${CORRAL:?set CORRAL to the corral binary}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/skip.sh
. "$HERE/../lib/skip.sh"
[ "$(id -u)" = 0 ] || skip "needs root (munge and slurmd run as root)"
for tool in slurmctld slurmd munged; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (apt-get install slurm-wlm munge)"
done
WARM=${WARM:-8}
BURST=${BURST:-"2:8 2:8 2:10 2:6 4:8 2:8"}
LIMIT=${LIMIT:-1}
USERS=${USERS:-1}
export TZ=UTC  # both sides print local times: the same zone for the parser

T=$(mktemp -d /tmp/corral-squeue-start.XXXXXX)
S=$T/slurm
mkdir -p "$S"/{state,log,spool,fakedev} "$T/corral" "$T/shims" "$T/work-slurm" "$T/work-corral"
PIDS=()
cleanup() {
  for f in "$S"/slurmd-*.pid "$S"/slurmctld.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  if [ -f "$S/munged.ours" ] && [ -f /run/munge/munged.pid ]; then kill "$(cat /run/munge/munged.pid)"; fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ "${KEEP:-0}" = 1 ] || rm -rf "$T"
}
trap cleanup EXIT
cannot_start() { echo "FAIL: $*"; exit 1; }

# --- Slurm: munge, one slurmctld, one slurmd of 4 GPUs on private ports -----------------------
if ! { [ -f /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; }; then
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  [ -f /etc/munge/munge.key ] || { /usr/sbin/mungekey -c -f; chown munge:munge /etc/munge/munge.key; }
  runuser -u munge -- /usr/sbin/munged && touch "$S/munged.ours"
  sleep 0.3
fi
export SLURM_CONF=$S/slurm.conf
CTLD_PORT=$((7700 + RANDOM % 100)); D1=$((18500 + RANDOM % 400))
# Backfill every second at a one-second resolution: the estimates squeue --start shows are the
# backfill scheduler's (bf_interval defaults to 30 s, bf_resolution to 60 s).
cat > "$SLURM_CONF" <<EOF
ClusterName=start
SlurmctldHost=localhost
SlurmUser=root
SlurmctldPort=$CTLD_PORT
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd-%n.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,bf_interval=1,bf_resolution=1
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=5
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$D1 CPUs=16 RealMemory=16000 Gres=gpu:4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
# The second user (nobody) reads slurm.conf through the work directory.
[ "$USERS" = 2 ] && chmod a+rx "$T" "$S"
mkdir -p "$S/fakedev/node1"
for g in 0 1 2 3; do mknod "$S/fakedev/node1/nvidia$g" c 1 3; done
echo "NodeName=node1 Name=gpu File=$S/fakedev/node1/nvidia[0-3]" > "$S/gres.conf"
echo "CgroupPlugin=cgroup/v1" > "$S/cgroup.conf"
(cd "$S" && slurmctld -i 2>"$S/log/slurmctld.stderr") ||
  cannot_start "slurmctld did not start: $(tail -q -n 5 "$S"/log/slurmctld.{stderr,log} 2>/dev/null)"
(cd "$S" && slurmd -N node1) ||
  cannot_start "slurmd did not start: $(tail -5 "$S/log/slurmd-node1.log")"
SLURM_BIN=$(dirname "$(command -v sbatch)")
for _ in $(seq 1 100); do
  [ "$(PATH=$SLURM_BIN:$PATH sinfo -h -N -o '%T' 2>/dev/null)" = idle ] && break
  sleep 0.2
done
[ "$(PATH=$SLURM_BIN:$PATH sinfo -h -N -o '%T' 2>/dev/null)" = idle ] ||
  cannot_start "Slurm's node is not idle: $(PATH=$SLURM_BIN:$PATH sinfo -N 2>&1 | head -5)"

# --- Corral: a head and one agent of 4 simulated GPUs, shims in $T/shims -----------------------
CPORT=$((7600 + RANDOM % 100))
"$CORRAL" up --agents 1 --gpus-per-agent 4 --state-dir "$T/corral" --listen "127.0.0.1:$CPORT" \
  --no-user-config > "$T/corral-up.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 150); do [ -s "$T/corral/admin.token" ] && grep -q "head on" "$T/corral-up.log" && break; sleep 0.2; done
grep -q "head on" "$T/corral-up.log" || cannot_start "corral up: $(tail -5 "$T/corral-up.log")"
CORRAL_TOKEN=$(cat "$T/corral/admin.token")
export CORRAL_ADDR=http://127.0.0.1:$CPORT CORRAL_TOKEN CORRAL_CONFIG=$T/no-config.json
"$CORRAL" slurm install-shims "$T/shims" >/dev/null || cannot_start "install-shims failed"
if [ "$USERS" = 2 ]; then
  TOKEN1=$("$CORRAL" token create --user ana) || cannot_start "token create ana failed"
  TOKEN2=$("$CORRAL" token create --user ben) || cannot_start "token create ben failed"
fi
for _ in $(seq 1 100); do
  [ "$(PATH=$T/shims:$PATH sinfo -h -N -o '%T' 2>/dev/null)" = idle ] && break
  sleep 0.2
done

# --- The workload, on one side ------------------------------------------------------------------
# as_user SIDE U CMD...: CMD as user U (1 or 2) of SIDE; with one user, as the caller.
as_user() {
  local side=$1 u=$2
  shift 2
  if [ "$USERS" != 2 ]; then
    "$@"
  elif [ "$side" = corral ]; then
    if [ "$u" = 1 ]; then CORRAL_TOKEN=$TOKEN1 "$@"; else CORRAL_TOKEN=$TOKEN2 "$@"; fi
  elif [ "$u" = 1 ]; then
    "$@"
  else
    runuser -u nobody -- "$@" --chdir=/tmp
  fi
}

# side SIDE BIN: the warm-up, then the burst; writes ids-SIDE ("burstK ID"), the first full
# `squeue --start` listing (start-SIDE, taken at the epoch in told-SIDE) and real starts
# (started-SIDE: "ID StartTime").
side() {
  local side=$1 bin=$2 k=0 spec id u
  (
    cd "$T/work-$side" || exit 1
    export PATH=$bin:$PATH
    for u in $(seq 1 "$USERS"); do
      for _ in 1 2 3 4; do
        as_user "$side" "$u" sbatch --parsable -J train -t "$LIMIT" --gres=gpu:1 -o /dev/null \
          --wrap "sleep $WARM" >/dev/null
      done
    done
    for _ in $(seq 1 300); do [ -z "$(squeue -h -o %i)" ] && break; sleep 0.2; done
    : > "$T/ids-$side"
    for spec in $BURST; do
      k=$((k + 1))
      u=$(((k - 1) % USERS + 1))
      id=$(as_user "$side" "$u" sbatch --parsable -J train -t "$LIMIT" --gres=gpu:"${spec%%:*}" \
        -o /dev/null --wrap "sleep ${spec##*:}" | cut -d';' -f1)
      echo "burst$k $id" >> "$T/ids-$side"
    done
    # As a user reads it: the first listing in which every pending job has a start time.
    for _ in $(seq 1 200); do
      squeue --start > "$T/start-$side.tmp" 2>&1
      date +%s.%N > "$T/told-$side"
      if [ "$(wc -l < "$T/start-$side.tmp")" -gt 1 ] && ! grep -q ' N/A ' "$T/start-$side.tmp"; then
        mv "$T/start-$side.tmp" "$T/start-$side"
        break
      fi
      sleep 0.25
    done
    for _ in $(seq 1 600); do [ -z "$(squeue -h -o %i)" ] && break; sleep 0.2; done
    : > "$T/started-$side"
    while read -r _ id; do
      echo "$id $(scontrol show job "$id" | tr ' ' '\n' | sed -n 's/^StartTime=//p')" >> "$T/started-$side"
    done < "$T/ids-$side"
  )
}
side slurm "$SLURM_BIN" &
SIDE_SLURM=$!
side corral "$T/shims" &
SIDE_CORRAL=$!
wait "$SIDE_SLURM" "$SIDE_CORRAL"
[ -s "$T/start-slurm" ] || { echo "FAIL: Slurm's squeue --start never had every estimate:"; cat "$T/start-slurm.tmp"; exit 1; }
[ -s "$T/start-corral" ] || { echo "FAIL: Corral's squeue --start never had every estimate:"; cat "$T/start-corral.tmp"; exit 1; }
echo "--- slurm: squeue --start"; cat "$T/start-slurm"
echo "--- corral: squeue --start"; cat "$T/start-corral"
python3 "$HERE/start_errors.py" --strict "${STRICT:-1}" --tol-max "${TOL_MAX:-5}" \
  --tol-median "${TOL_MEDIAN:-3}" --out "${OUT:-}" "$T"
