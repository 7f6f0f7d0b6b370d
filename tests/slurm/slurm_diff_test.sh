#!/bin/bash
# Differential test: the same batch scripts through a real Slurm (Debian's slurm-wlm, started
# here on private ports) and through Corral's shims (`corral up`, 2 agents), then compare what
# the scripts saw (SLURM_* variables, ids and host names normalised), their output files, and
# each job's JobState and ExitCode from `scontrol show job`. Then what `sacct`, `squeue`,
# `sinfo` (default, -N -l, -o, -O, -N, -s) and `scontrol show job` print for the same jobs (a
# running and a held one added), on each side, captured now: headers, column sets, state names
# and time formats must agree (compare_outputs.py normalises ids, users, partitions, node names
# and time values); and with an account (a queue on Corral) and a job waiting for GPUs, what
# sacctmgr, sshare and sprio print (the same headers; rows where the state is the same). Slurm's
# accounting is a slurmdbd on a MariaDB server the test starts (priority/multifactor).
# Needs root and slurm-wlm, slurmdbd, munge and mariadb-server: without them it exits 77
# (skipped), or fails under CI=true. A Slurm that does not start is a failure, always.
# Env: CORRAL (the binary); BREAK_SLURM=1 starts slurmctld with a broken configuration (to see
# that failure); KEEP=1 keeps the work directory.
set -u
CORRAL=${CORRAL:?set CORRAL to the corral binary}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/skip.sh
. "$HERE/../lib/skip.sh"
[ "$(id -u)" = 0 ] || skip "needs root (munge and slurmd run as root)"
for tool in slurmctld slurmd slurmdbd munged mariadbd mariadb-install-db; do
  command -v "$tool" >/dev/null ||
    skip "$tool is not installed (apt-get install slurm-wlm slurmdbd munge mariadb-server)"
done

T=$(mktemp -d /tmp/corral-slurm-diff.XXXXXX)
S=$T/slurm
mkdir -p "$S"/{state,log,spool/node1,spool/node2,fakedev} "$T/corral" "$T/shims" "$T/work-slurm" \
  "$T/work-corral"
PIDS=()
cleanup() {
  for f in "$S"/slurmd-*.pid "$S"/slurmctld.pid "$S"/slurmdbd.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  if [ -f "$S/munged.ours" ] && [ -f /run/munge/munged.pid ]; then kill "$(cat /run/munge/munged.pid)"; fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ "${KEEP:-0}" = 1 ] || rm -rf "$T"
}
trap cleanup EXIT
# Slurm that does not start fails the test: a differential test that compared nothing passed.
cannot_start() { echo "FAIL: $*"; exit 1; }
fail=0
check() {  # check NAME WANT GOT: both non-empty, and equal
  if [ -z "$2" ] || [ -z "$3" ]; then
    echo "EMPTY: $1 (slurm ${#2} bytes, corral ${#3} bytes)"; fail=1
  elif [ "$2" != "$3" ]; then
    echo "DIFFERS: $1"; echo "  slurm:  $2" | head -40; echo "  corral: $3" | head -40; fail=1
  else
    echo "same: $1"
  fi
}

# --- Slurm: munge, one slurmctld, two slurmd on private ports ---------------------------------
if ! { [ -f /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; }; then
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  [ -f /etc/munge/munge.key ] || { /usr/sbin/mungekey -c -f; chown munge:munge /etc/munge/munge.key; }
  runuser -u munge -- /usr/sbin/munged && touch "$S/munged.ours"
  sleep 0.3
fi
export SLURM_CONF=$S/slurm.conf
CTLD_PORT=$((7800 + RANDOM % 100)); D1=$((18100 + RANDOM % 400)); D2=$((D1 + 1))
DB_PORT=$((18600 + RANDOM % 200)); DBD_PORT=$((DB_PORT + 1))
# Accounting (sacct): MariaDB on a private socket and port, slurmdbd over it.
mariadb-install-db --no-defaults --user=root --datadir="$S/db" --auth-root-authentication-method=normal \
  --skip-test-db > "$S/log/db-install.log" 2>&1 ||
  cannot_start "mariadb-install-db: $(tail -5 "$S/log/db-install.log")"
mariadbd --no-defaults --user=root --datadir="$S/db" --port="$DB_PORT" --bind-address=127.0.0.1 \
  --socket="$S/db.sock" --pid-file="$S/db.pid" --skip-grant-tables --log-error="$S/log/db.log" \
  --innodb-buffer-pool-size=16M >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do [ -S "$S/db.sock" ] && break; sleep 0.1; done
[ -S "$S/db.sock" ] || cannot_start "mariadbd did not start: $(tail -5 "$S/log/db.log")"
cat > "$S/slurmdbd.conf" <<DBD
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$S/slurmdbd.pid
LogFile=$S/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=root
StorageLoc=slurm_acct_diff
DBD
chmod 600 "$S/slurmdbd.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=diff
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
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=300
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
JobAcctGatherType=jobacct_gather/none
KillWait=5
NodeName=node[1-2] NodeHostname=localhost NodeAddr=127.0.0.1 Port=$D1,$D2 CPUs=16 RealMemory=16000 Gres=gpu:8 State=UNKNOWN
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=1000
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
: > "$S/gres.conf"
for i in 1 2; do
  mkdir -p "$S/fakedev/node$i"
  for g in 0 1 2 3 4 5 6 7; do mknod "$S/fakedev/node$i/nvidia$g" c 1 3; done
  echo "NodeName=node$i Name=gpu File=$S/fakedev/node$i/nvidia[0-7]" >> "$S/gres.conf"
done
echo "CgroupPlugin=cgroup/v1" > "$S/cgroup.conf"
[ "${BREAK_SLURM:-0}" = 1 ] && echo "NoSuchParameter=1" >> "$SLURM_CONF"
(cd "$S" && slurmdbd) || cannot_start "slurmdbd did not start: $(tail -5 "$S/log/slurmdbd.log")"
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$DBD_PORT) 2>/dev/null && break; sleep 0.1; done
(cd "$S" && slurmctld -i 2>"$S/log/slurmctld.stderr") ||
  cannot_start "slurmctld did not start: $(tail -q -n 5 "$S"/log/slurmctld.{stderr,log} 2>/dev/null)"
for i in 1 2; do
  (cd "$S" && slurmd -N "node$i") ||
    cannot_start "slurmd node$i did not start: $(tail -5 "$S/log/slurmd-node$i.log")"
done
SLURM_BIN=$(dirname "$(command -v sbatch)")
for _ in $(seq 1 100); do
  [ "$(PATH=$SLURM_BIN:$PATH sinfo -h -N -o '%T' 2>/dev/null | grep -c idle)" = 2 ] && break
  sleep 0.2
done
[ "$(PATH=$SLURM_BIN:$PATH sinfo -h -N -o '%T' 2>/dev/null | grep -c idle)" = 2 ] ||
  cannot_start "Slurm's two nodes are not idle: $(PATH=$SLURM_BIN:$PATH sinfo -N 2>&1 | head -5)"

# --- Corral: a head and two agents with 8 simulated GPUs each, shims in $T/shims ----------------
CPORT=$((7900 + RANDOM % 100))
"$CORRAL" up --agents 2 --gpus-per-agent 8 --state-dir "$T/corral" --listen "127.0.0.1:$CPORT" \
  --no-user-config > "$T/corral-up.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$T/corral/admin.token" ] && grep -q "head on" "$T/corral-up.log" && break; sleep 0.2; done
export CORRAL_ADDR=http://127.0.0.1:$CPORT CORRAL_TOKEN=$(cat "$T/corral/admin.token") \
  CORRAL_CONFIG=$T/no-config.json
"$CORRAL" slurm install-shims "$T/shims" >/dev/null || { echo "install-shims failed"; exit 1; }

# --- The scripts --------------------------------------------------------------------------------
cat > "$T/env.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=envdump
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=2
#SBATCH --output=%x-%j.out
echo "args: $*"
env | grep -E '^SLURM_(JOB_NAME|NNODES|JOB_NUM_NODES|NTASKS|NPROCS|NTASKS_PER_NODE|TASKS_PER_NODE|CPUS_PER_TASK|JOB_NODELIST|NODELIST|SUBMIT_DIR|PROCID|LOCALID|NODEID|JOB_ID|JOBID|JOB_CPUS_PER_NODE|CPUS_ON_NODE|JOB_PARTITION|ARRAY_JOB_ID|ARRAY_TASK_ID)=' | sort
srun -l sh -c 'echo task $SLURM_PROCID local $SLURM_LOCALID of $SLURM_NTASKS' | sort
EOF
# A step on both nodes (labelled output sorted: the tasks' order is a race on both sides),
# then a failing step; srun's own error lines go to /dev/null (their wording is Slurm's). One
# GPU per node: both nodes would fit one machine, and are still two machines on both sides.
cat > "$T/multi.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=multi
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --gres=gpu:1
#SBATCH --output=%x-%j.out
srun -l sh -c 'echo rank $SLURM_PROCID node $SLURM_NODEID local $SLURM_LOCALID of $SLURM_NTASKS step $SLURM_STEP_ID nodes $SLURM_STEP_NUM_NODES' | sort
srun -N 2 -n 3 sh -c 'exit $((SLURM_PROCID == 2 ? 3 : 0))' 2>/dev/null
echo "failing step: $?"
srun -N 1 -n 1 sh -c 'echo one task on node $SLURM_NODEID step $SLURM_STEP_ID'
EOF
cat > "$T/dep.sh" <<'EOF'
#!/bin/bash
#SBATCH -o dep-%j.out
echo "ran after its dependency"
EOF
cat > "$T/fail.sh" <<'EOF'
#!/bin/bash
#SBATCH -o fail-%j.out
echo before
exit 3
EOF
cat > "$T/array.sh" <<'EOF'
#!/bin/bash
#SBATCH --array=0-2
#SBATCH -o arr-%A_%a.out
echo "element $SLURM_ARRAY_TASK_ID of array"
[ "$SLURM_ARRAY_TASK_ID" = 1 ] && exit 7
exit 0
EOF

# run SIDE: submits the scripts with that side's commands; prints "name id" lines.
run() {
  local side=$1 bin=$2
  (
    cd "$T/work-$side" || exit 1
    export PATH=$bin:$PATH
    echo "env $(sbatch --parsable "$T/env.sh" a1 | cut -d';' -f1)"
    local fail_id; fail_id=$(sbatch --parsable "$T/fail.sh" | cut -d';' -f1)
    echo "fail $fail_id"
    echo "multi $(sbatch --parsable "$T/multi.sh" | cut -d';' -f1)"
    echo "dep $(sbatch --parsable --dependency=afterany:"$fail_id" "$T/dep.sh" | cut -d';' -f1)"
    echo "array $(sbatch --parsable "$T/array.sh" | cut -d';' -f1)"
    for _ in $(seq 1 300); do [ -z "$(squeue -h -o %i)" ] && break; sleep 0.2; done
  )
}
run slurm "$SLURM_BIN" > "$T/ids-slurm"
run corral "$T/shims" > "$T/ids-corral"

# Normalises what differs by construction: ids, the submit dir, the partition name.
norm() {  # norm SIDE FILE
  local side=$1 id
  # A one-node job may land on either node, and Corral's queue is "default" where Slurm's
  # partition is "debug".
  sed -E -e "s#$T/work-$side#SUBMITDIR#g" -e 's/^(SLURM_(JOB_)?NODELIST)=node[0-9]+$/\1=NODE/' \
    -e 's/^SLURM_JOB_PARTITION=.*/SLURM_JOB_PARTITION=PARTITION/' "$2" | {
    local text; text=$(cat)
    while read -r name id; do text=${text//$id/ID_$name}; done < "$T/ids-$side"
    echo "$text"
  }
}
state() {  # state SIDE JOBREF -> "JobState=X ExitCode=Y"
  PATH=$2:$PATH scontrol show job "$3" | tr ' ' '\n' | grep -E '^(JobState|ExitCode)=' | tr '\n' ' '
}
sid() { awk -v n="$2" '$1==n {print $2}' "$T/ids-$1"; }

check "env.sh output" "$(norm slurm "$T/work-slurm/envdump-$(sid slurm env).out")" \
  "$(norm corral "$T/work-corral/envdump-$(sid corral env).out")"
check "fail.sh output" "$(cat "$T/work-slurm/fail-$(sid slurm fail).out")" \
  "$(cat "$T/work-corral/fail-$(sid corral fail).out")"
check "multi.sh output (steps on two nodes)" \
  "$(norm slurm "$T/work-slurm/multi-$(sid slurm multi).out")" \
  "$(norm corral "$T/work-corral/multi-$(sid corral multi).out")"
check "dep.sh output" "$(cat "$T/work-slurm/dep-$(sid slurm dep).out")" \
  "$(cat "$T/work-corral/dep-$(sid corral dep).out")"
for i in 0 1 2; do
  check "array element $i output" "$(cat "$T/work-slurm/arr-$(sid slurm array)_$i.out")" \
    "$(cat "$T/work-corral/arr-$(sid corral array)_$i.out")"
done
check "env.sh state" "$(state slurm "$SLURM_BIN" "$(sid slurm env)")" \
  "$(state corral "$T/shims" "$(sid corral env)")"
check "fail.sh state" "$(state slurm "$SLURM_BIN" "$(sid slurm fail)")" \
  "$(state corral "$T/shims" "$(sid corral fail)")"
for name in multi dep; do
  check "$name.sh state" "$(state slurm "$SLURM_BIN" "$(sid slurm $name)")" \
    "$(state corral "$T/shims" "$(sid corral $name)")"
done
for i in 0 1 2; do
  check "array element $i state" "$(state slurm "$SLURM_BIN" "$(sid slurm array)_$i")" \
    "$(state corral "$T/shims" "$(sid corral array)_$i")"
done

# --- What the query commands print for the same jobs -------------------------------------------
# Two more jobs on each side: one running (a GPU, so that a node is mixed), one held.
more() {  # more SIDE BIN: appends "run ID" and "held ID" to ids-SIDE once the first runs
  local side=$1 bin=$2
  (
    cd "$T/work-$side" || exit 1
    export PATH=$bin:$PATH
    local r h
    r=$(sbatch --parsable -J runner --gres=gpu:1 -o /dev/null --wrap "sleep 300" | cut -d';' -f1)
    h=$(sbatch --parsable -J waiter -H -o /dev/null --wrap "true" | cut -d';' -f1)
    echo "run $r" >> "$T/ids-$side"
    echo "held $h" >> "$T/ids-$side"
    for _ in $(seq 1 300); do [ "$(squeue -h -j "$r" -o %t)" = R ] && break; sleep 0.1; done
    [ "$(squeue -h -j "$r" -o %t)" = R ] || echo "the runner job $r of $side is not running"
  )
}
more slurm "$SLURM_BIN"
more corral "$T/shims"
jobs_of() { awk '{print $2}' "$T/ids-$1" | paste -sd, -; }
# Slurm's accounting is written behind the controller: wait until slurmdbd has every job, the
# running one as running.
for _ in $(seq 1 150); do
  PATH=$SLURM_BIN:$PATH sacct -X -P -n -j "$(sid slurm run)" -o JobName,State | grep -q '^runner|RUNNING$' &&
    [ "$(PATH=$SLURM_BIN:$PATH sacct -X -n -j "$(jobs_of slurm)" -o JobID | wc -l)" -ge 9 ] && break
  sleep 0.2
done
# capture SIDE BIN NAME COMMAND...: what COMMAND prints on SIDE, into out-SIDE/NAME
capture() {
  local side=$1 bin=$2 name=$3
  shift 3
  mkdir -p "$T/out-$side"
  (cd "$T/work-$side" && PATH=$bin:$PATH "$@") > "$T/out-$side/$name" 2>&1
}
for side in slurm corral; do
  bin=$SLURM_BIN; [ $side = corral ] && bin=$T/shims
  ids=$(jobs_of $side)
  capture $side "$bin" squeue squeue --jobs="$ids"
  capture $side "$bin" squeue-all squeue
  capture $side "$bin" squeue-o squeue --jobs="$ids" -o "%i %j %t %T %M %l %D %r %R"
  capture $side "$bin" sinfo sinfo
  capture $side "$bin" sinfo-Nl sinfo -N -l
  capture $side "$bin" sacct sacct -X -j "$ids"
  capture $side "$bin" sacct-P sacct -X -P -j "$ids" \
    -o JobID,JobName,State,ExitCode,Elapsed,Start,End,Submit,NNodes,Timelimit
  capture $side "$bin" scontrol-fail scontrol show job "$(sid $side fail)"
  capture $side "$bin" scontrol-run scontrol show job "$(sid $side run)"
done
# sinfo's formats, while each side has one partition (Corral's queues are its partitions).
for side in slurm corral; do
  bin=$SLURM_BIN; [ $side = corral ] && bin=$T/shims
  capture $side "$bin" sinfo-o sinfo -o "%P %a %l %D %t %G %c %m %N"
  capture $side "$bin" sinfo-O sinfo -O "partition:12 ,nodes:.5 ,statelong:12 ,gres:15 ,nodelist"
  capture $side "$bin" sinfo-N sinfo -N
  capture $side "$bin" sinfo-s sinfo -s
done
# Accounts, fair share and priorities. An account on Slurm (root in it) and a queue on Corral
# (a queue is an account), and on each side a job that waits for GPUs (sprio ranks only jobs
# that wait for resources: not held ones, nor those waiting on a dependency).
PATH=$SLURM_BIN:$PATH sacctmgr -i add account acctq >/dev/null &&
  PATH=$SLURM_BIN:$PATH sacctmgr -i add user root account=acctq >/dev/null ||
  cannot_start "sacctmgr could not add an account"
"$CORRAL" queues set acctq --weight 1 >/dev/null || { echo "corral queues set failed"; exit 1; }
for side in slurm corral; do
  bin=$SLURM_BIN; [ $side = corral ] && bin=$T/shims
  w=$(cd "$T/work-$side" && PATH=$bin:$PATH sbatch --parsable -J wide -N 2 --gres=gpu:8 \
    -o /dev/null --wrap true | cut -d';' -f1)
  echo "wide $w" >> "$T/ids-$side"
done
# Slurm ranks a pending job on its next priority pass: wait until sprio lists it.
for _ in $(seq 1 100); do
  PATH=$SLURM_BIN:$PATH sprio -h -o %i | grep -qx "$(sid slurm wide)" && break
  sleep 0.2
done
for side in slurm corral; do
  bin=$SLURM_BIN; [ $side = corral ] && bin=$T/shims
  capture $side "$bin" sacctmgr-user sacctmgr show user
  capture $side "$bin" sacctmgr-user-s sacctmgr -s show user
  capture $side "$bin" sacctmgr-account sacctmgr show account
  capture $side "$bin" sacctmgr-assoc-P sacctmgr -P show assoc
  capture $side "$bin" sshare sshare -a
  capture $side "$bin" sshare-l sshare -a -l
  capture $side "$bin" sprio sprio
  capture $side "$bin" sprio-l sprio -l
done
compare() {  # compare KIND NAME
  if python3 "$HERE/compare_outputs.py" "$1" "$T/out-slurm/$2" "$T/out-corral/$2" \
    "$T/ids-slurm" "$T/ids-corral"; then
    echo "same: $2"
  else
    echo "DIFFERS: $2 (above)"; fail=1
  fi
}
compare table squeue
compare table squeue-all
compare table squeue-o
compare table sinfo
compare table sinfo-Nl
compare fixed sacct
compare parsable sacct-P
compare scontrol scontrol-fail
compare scontrol scontrol-run
compare table sinfo-o
compare table sinfo-O
compare table sinfo-N
compare table sinfo-s
compare fixed sacctmgr-user
compare fixed sacctmgr-user-s
compare header sacctmgr-account
compare header sacctmgr-assoc-P
compare header sshare
compare header sshare-l
compare table sprio
compare header sprio-l
PATH=$SLURM_BIN:$PATH scancel "$(sid slurm run)" "$(sid slurm held)" "$(sid slurm wide)"
PATH=$T/shims:$PATH scancel "$(sid corral run)" "$(sid corral held)" "$(sid corral wide)"

[ "$fail" = 0 ] && echo "PASS: Slurm and Corral agree" || echo "FAIL: see DIFFERS above"
exit "$fail"
