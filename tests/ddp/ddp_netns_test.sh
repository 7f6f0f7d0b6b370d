#!/usr/bin/env bash
# Distributed training across hosts (ctest label ddp; needs root, iproute2 and python3-torch).
#
# Three hosts made of network namespaces joined by a bridge: the head on 10.77.N.1, an agent on
# each of .2 (node01, advertised address found from its route to the head) and .3 (node02,
# --advertise-addr). Real PyTorch DDP over gloo, CPU:
#   1. 2 replicas x 2 tasks: all 4 ranks end with identical parameters and a loss that fell,
#      and see the environment torch, Slurm and TensorFlow tools read;
#   2. the same training under torchrun, one launcher per replica;
#   3. a task SIGKILLed mid-training: the gang stops, a second run resumes from the checkpoint;
#   4. the same with no restarts left: the job fails naming the replica and task.
set -euo pipefail
CORRAL=${CORRAL:?path of the corral binary}
EXAMPLE=${EXAMPLE:?path of examples/ddp/train.py}
PY=/usr/bin/python3
# shellcheck source=../lib/skip.sh
. "$(dirname "$0")/../lib/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
"$PY" -c 'import torch' 2>/dev/null || skip "$PY has no torch (apt-get install python3-torch)"

# shellcheck source=../lib/netns_hosts.sh
. "$(dirname "$0")/../lib/netns_hosts.sh"
# shellcheck source=../lib/netns_cluster.sh
. "$(dirname "$0")/../lib/netns_cluster.sh"
ID=$(( $$ % 200 + 20 ))
NET=10.77.$ID
W=$(mktemp -d /tmp/corral-ddp.XXXXXX)
NS=(crl$ID-sw crl$ID-h crl$ID-a crl$ID-b)
SW=${NS[0]} H=${NS[1]} A=${NS[2]} B=${NS[3]}
PASS=0

cleanup() {
  local rc=$?
  netns_cleanup
  netns_finish "$rc" "$W"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }

# ---- hosts
netns_init "$SW"
netns_host "$H" "$NET.1"
netns_host "$A" "$NET.2"
netns_host "$B" "$NET.3"

# ---- the cluster
netns_head "$H" "$NET.1" "$W/head" "$W/checkpoints" "$W/head.log"
ip netns exec "$A" "$CORRAL" agent --head "$CORRAL_ADDR" --join-token-file "$W/head/join.token" \
  --name node01 --run-as agent --state-dir "$W/node01" --simulate-gpus 2 --cpus 8 --memory 8G >"$W/node01.log" 2>&1 &
ip netns exec "$B" "$CORRAL" agent --head "$CORRAL_ADDR" --join-token-file "$W/head/join.token" \
  --name node02 --run-as agent --advertise-addr "$NET.3" --state-dir "$W/node02" --simulate-gpus 2 --cpus 8 \
  --memory 8G >"$W/node02.log" 2>&1 &
netns_wait_ready 2
nodes=$(corral nodes -o json)
echo "$nodes" | grep -q "\"$NET.2:" || fail "node01 did not advertise $NET.2: $nodes"
echo "$NET.3" | grep -q . && echo "$nodes" | grep -q "\"$NET.3:" || fail "node02 not at $NET.3: $nodes"

# Result checks, in Python: every rank's result file.
check() {  # check OUT_DIR WANT_RANKS EXPR_ON_RESULTS...
  "$PY" - "$@" <<'PYEOF'
import json, os, sys
out, want = sys.argv[1], int(sys.argv[2])
rs = [json.load(open(os.path.join(out, f"result.{r}.json"))) for r in range(want)]
assert len({r["params"] for r in rs}) == 1, f"ranks disagree on parameters: {[r['params'][:12] for r in rs]}"
for r in rs:
    assert r["world"] == want, r
for expr in sys.argv[3:]:
    assert eval(expr), f"{expr}: {[{k: v for k, v in r.items() if k != 'env'} | r['env'] for r in rs]}"
print(f"ok: {want} ranks, params {rs[0]['params'][:12]}, loss {rs[0]['loss_first']:.3f} -> {rs[0]['loss_last']:.3f}")
PYEOF
}
wait_job() {  # wait_job ID WANT_STATE
  corral wait "$1" --timeout 300s >/dev/null 2>&1 || true
  local st
  st=$(corral show "$1" -o json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [ "$st" = "$2" ] || { corral show "$1"; corral logs "$1" --stderr | tail -20; fail "job $1 is $st, want $2"; }
}
ENV_OPTS=(--cpus 1)  # GLOO_SOCKET_IFNAME: the agent sets it to its advertised interface

# ---- 1. 2 replicas x 2 tasks
job=$(corral submit --parsable --name ddp --replicas 2 --tasks-per-replica 2 --gpus 2 "${ENV_OPTS[@]}" \
  -- "$PY" "$EXAMPLE" --steps 30 --out "$W/out1")
wait_job "$job" succeeded
check "$W/out1" 4 \
  'all(r["loss_last"] < r["loss_first"] / 4 for r in rs)' \
  'sorted(r["env"]["NODE_RANK"] for r in rs) == ["0", "0", "1", "1"]' \
  'all(r["env"]["LOCAL_RANK"] == str(r["rank"] % 2) and r["env"]["SLURM_LOCALID"] == r["env"]["LOCAL_RANK"] for r in rs)' \
  'all(r["env"]["SLURM_PROCID"] == str(r["rank"]) and r["env"]["SLURM_NTASKS"] == "4" for r in rs)' \
  'all(r["env"]["NNODES"] == "2" and r["env"]["LOCAL_WORLD_SIZE"] == "2" for r in rs)' \
  'all(r["env"]["SLURM_JOB_NODELIST"] == "node[01-02]" and r["env"]["SLURM_NTASKS_PER_NODE"] == "2(x2)" for r in rs)' \
  "len({r['env']['MASTER_ADDR'] for r in rs}) == 1 and rs[0]['env']['MASTER_ADDR'] in ('$NET.2', '$NET.3')" \
  'all(r["env"]["CUDA_VISIBLE_DEVICES"] == "0,1" for r in rs)' \
  'all(json.loads(r["env"]["TF_CONFIG"])["task"]["index"] == r["rank"] for r in rs)'
corral logs "$job" | grep -q '^\[r1\.t1\] rank 3 done' || fail "logs lack the [r1.t1] prefix: $(corral logs "$job" | head)"
corral logs "$job" --replica 1 --task 1 | grep -q '^rank 3 done' || fail "logs --replica 1 --task 1"
echo "PASS 1: DDP 2 replicas x 2 tasks"; PASS=$((PASS + 1))

# ---- 2. torchrun, one launcher per replica (through a shim for Debian 12's torch 1.13 on
# Python 3.11, whose torchrun fails on its own: see torchrun_py311.py)
TORCHRUN="$(dirname "$0")/torchrun_py311.py"
job=$(corral submit --parsable --name torchrun --replicas 2 --gpus 2 "${ENV_OPTS[@]}" -- sh -c \
  "exec $PY $TORCHRUN --nnodes \$NNODES --nproc_per_node 2 --node_rank \$NODE_RANK \
   --master_addr \$MASTER_ADDR --master_port \$MASTER_PORT $EXAMPLE --steps 20 --out $W/out2")
wait_job "$job" succeeded
check "$W/out2" 4 'all(r["loss_last"] < r["loss_first"] for r in rs)'
echo "PASS 2: torchrun"; PASS=$((PASS + 1))

# ---- 3. a task killed mid-training: the gang stops, the next run resumes from the checkpoint
start_killable() {  # start_killable MAX_RESTARTS OUT -> job id; waits for a checkpoint and rank 3
  local j
  j=$(corral submit --parsable --name resume --replicas 2 --tasks-per-replica 2 --gpus 2 \
    --max-restarts "$1" --grace-period 5s "${ENV_OPTS[@]}" \
    -- "$PY" "$EXAMPLE" --steps 60 --checkpoint-every 2 --step-sleep 0.15 --out "$2")
  for _ in $(seq 600); do
    [ -f "$W/checkpoints/job-$j/checkpoint.pt" ] && [ -f "$2/pid.1.3" ] && break
    sleep 0.1
  done
  [ -f "$W/checkpoints/job-$j/checkpoint.pt" ] || fail "job $j wrote no checkpoint"
  echo "$j"
}
job=$(start_killable 1 "$W/out3")
kill -9 "$(cat "$W/out3/pid.1.3")"
wait_job "$job" succeeded
check "$W/out3" 4 'all(r["first_step"] > 0 for r in rs)'
runs=$(corral show "$job" -o json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))')
[ "$runs" = 2 ] || fail "job $job has $runs runs, want 2"
echo "PASS 3: a killed task restarts the gang from its checkpoint"; PASS=$((PASS + 1))

# ---- 4. no restarts left: the job fails naming the task
job=$(start_killable 0 "$W/out4")
kill -9 "$(cat "$W/out4/pid.1.3")"
wait_job "$job" failed
corral show "$job" | grep -Eq 'replica [01] task [01] exited with code' ||
  fail "show does not name the failing task: $(corral show "$job")"
echo "PASS 4: a gang out of restarts fails naming the task"; PASS=$((PASS + 1))

# ---- 5. a Slurm batch script whose srun starts the training on both nodes (a job step
# through the head: 2 nodes x 2 tasks, Slurm's variables, output labelled by rank)
"$CORRAL" slurm install-shims "$W/shims" >/dev/null
cat > "$W/ddp.sbatch" <<SCRIPT
#!/bin/bash
#SBATCH --job-name=ddp-sbatch
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-node=2
#SBATCH --cpus-per-task=1
#SBATCH --output=$W/ddp-sbatch-%j.out
echo "batch on \$SLURM_JOB_NODELIST"
srun --label $PY $EXAMPLE --steps 30 --out $W/out5
echo "srun exited \$?"
SCRIPT
job=$(ip netns exec "$H" env PATH="$W/shims:$PATH" sbatch --parsable "$W/ddp.sbatch")
wait_job "$job" succeeded
out5=$(cat "$W/ddp-sbatch-$job.out")
echo "$out5" | grep -q '^batch on node\[01-02\]$' || fail "batch output: $out5"
echo "$out5" | grep -q '^srun exited 0$' || fail "srun did not exit 0: $out5"
echo "$out5" | grep -q '^3: rank 3/4' || fail "srun -l did not label rank 3: $out5"
check "$W/out5" 4 \
  'all(r["loss_last"] < r["loss_first"] / 4 for r in rs)' \
  'sorted(r["env"]["NODE_RANK"] for r in rs) == ["0", "0", "1", "1"]' \
  'all(r["env"]["SLURM_PROCID"] == str(r["rank"]) and r["env"]["SLURM_NTASKS"] == "4" for r in rs)' \
  "len({r['env']['MASTER_ADDR'] for r in rs}) == 1 and rs[0]['env']['MASTER_ADDR'] in ('$NET.2', '$NET.3')"
echo "PASS 5: sbatch + srun start DDP on two nodes"; PASS=$((PASS + 1))

echo "all $PASS passed"
