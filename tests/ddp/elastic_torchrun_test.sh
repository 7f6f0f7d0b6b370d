#!/usr/bin/env bash
# Elastic training with real torchrun across hosts (ctest label ddp; needs root, iproute2,
# util-linux's unshare and python3-torch).
#
# Four hosts made of network namespaces joined by a bridge: the head on 10.78.N.1 with its
# rendezvous stores (--rdzv-host), and an agent with one (simulated) GPU on each of .2, .3, .4,
# each in its own UTS namespace with its own hostname (torchrun's agents publish their host's
# name as the workers' MASTER_ADDR). The job is the one-line torchrun launch of docs/elastic.md
# running tests/ddp/elastic_train.py (gloo, CPU), which logs per step its world size, the loss
# and a checksum of its parameters:
#   1. a 1:3 job starts on the one free host while two jobs hold the others, and grows to three
#      replicas when they end: the world of three resumes from the checkpoint, its ranks agree;
#   2. a job of a higher priority takes one host: the elastic job shrinks to two and goes on
#      training (the loss keeps falling, both ranks hold the same parameters at every step);
#   each resize is an event of the job, and the run is the same all along (no restart).
set -euo pipefail
CORRAL=${CORRAL:?path of the corral binary}
TRAIN=${TRAIN:-$(dirname "$0")/elastic_train.py}
TORCHRUN="$(cd "$(dirname "$0")" && pwd)/torchrun_py311.py"
PY=/usr/bin/python3
# shellcheck source=../lib/skip.sh
. "$(dirname "$0")/../lib/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
"$PY" -c 'import torch' 2>/dev/null || skip "$PY has no torch (apt-get install python3-torch)"
command -v unshare >/dev/null || skip "no unshare (apt-get install util-linux)"

# shellcheck source=../lib/netns_hosts.sh
. "$(dirname "$0")/../lib/netns_hosts.sh"
# shellcheck source=../lib/netns_cluster.sh
. "$(dirname "$0")/../lib/netns_cluster.sh"
ID=$(( $$ % 200 + 20 ))
NET=10.78.$ID
W=$(mktemp -d /tmp/corral-elastic.XXXXXX)
TRAIN=$(cd "$(dirname "$TRAIN")" && pwd)/$(basename "$TRAIN")
SW=crl$ID-sw H=crl$ID-h
HOSTS=("crl$ID-a" "crl$ID-b" "crl$ID-c")
START=$SECONDS

cleanup() {
  local rc=$?
  netns_cleanup
  for ns in "${HOSTS[@]}"; do rm -rf "/etc/netns/$ns"; done
  netns_finish "$rc" "$W"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  if [ -n "${job:-}" ]; then corral show "$job" || true; fi
  exit 1
}

# ---- hosts: each agent's host has its own name, known to every host (ip netns exec mounts
# /etc/netns/NS/hosts over /etc/hosts)
netns_init "$SW"
netns_host "$H" "$NET.1"
hosts_file="127.0.0.1 localhost"$'\n'
for i in 0 1 2; do
  netns_host "${HOSTS[$i]}" "$NET.$((i + 2))"
  hosts_file+="$NET.$((i + 2)) ${HOSTS[$i]}"$'\n'
done
for ns in "${HOSTS[@]}"; do mkdir -p "/etc/netns/$ns" && printf '%s' "$hosts_file" >"/etc/netns/$ns/hosts"; done

# ---- the cluster: the head runs the rendezvous stores on its host
netns_head "$H" "$NET.1" "$W/head" "$W/checkpoints" "$W/head.log" --rdzv-host "$NET.1"
for i in 0 1 2; do
  ns=${HOSTS[$i]}
  ip netns exec "$ns" unshare --uts sh -c "hostname $ns && exec \"\$0\" \"\$@\"" "$CORRAL" agent \
    --head "$CORRAL_ADDR" --join-token-file "$W/head/join.token" --name "node0$((i + 1))" \
    --run-as agent --state-dir "$W/node$i" --simulate-gpus 1 --cpus 4 --memory 4G \
    >"$W/node$i.log" 2>&1 &
done
netns_wait_ready 3

wait_until() {  # wait_until SECONDS WHAT COMMAND...: polls COMMAND until it succeeds
  local secs=$1 what=$2
  shift 2
  for _ in $(seq $((secs * 2))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  fail "not within ${secs}s: $what"
}

# The job's live replicas (placement less departed) and its resize events, from corral show.
job_field() {  # job_field ID EXPR (Python, on j: the job's JSON)
  corral show "$1" -o json | "$PY" -c "import json,sys; j=json.load(sys.stdin); print($2)"
}
live_replicas() {
  job_field "$1" 'len(j["runs"][-1]["placement"]) - len(j["runs"][-1].get("departed", [])) if j["runs"] else 0'
}
replicas_are() { [ "$(live_replicas "$1")" = "$2" ]; }
is_running() { for j in "$@"; do [ "$(job_field "$j" 'j["state"]')" = running ] || return 1; done; }

# The workers' step logs, grouped into worlds: the ranks of one world resumed at the same step.
# `steps OUT has N K`: a world of N ranks whose ranks all logged K steps, after the last world
# of another size; `steps OUT check`: prints each world, asserts what the test claims.
steps() {
  "$PY" - "$@" <<'PYEOF'
import glob, json, sys
out, mode = sys.argv[1], sys.argv[2]
worlds = {}  # (world size, first step) -> {rank: [lines]}
for path in glob.glob(f"{out}/steps.*.jsonl"):
    lines = [json.loads(l) for l in open(path) if l.endswith("\n")]
    if lines:
        w = worlds.setdefault((lines[0]["world"], lines[0]["step"]), {})
        w.setdefault(lines[0]["rank"], []).extend(lines)
order = sorted(worlds, key=lambda k: k[1])
def whole(k, n):  # every rank of the world logged n steps
    return len(worlds[k]) == k[0] and all(len(v) >= n for v in worlds[k].values())
if mode == "has":
    n, k = int(sys.argv[3]), int(sys.argv[4])
    last = [w for w in order if w[0] == n]
    sys.exit(0 if last and whole(last[-1], k) and order[-1][0] == n else 1)
for k in order:
    ranks = worlds[k]
    steps_of = {r: {l["step"]: l for l in v} for r, v in ranks.items()}
    common = set.intersection(*(set(s) for s in steps_of.values()))
    for s in common:
        sums = {steps_of[r][s]["params"] for r in ranks}
        assert len(sums) == 1, f"world {k}: ranks disagree at step {s}: {sums}"
    r0 = sorted(ranks[0], key=lambda l: l["step"]) if 0 in ranks else []
    if r0:
        print(f"world of {k[0]} from step {k[1]}: ranks {sorted(ranks)}, {len(r0)} steps, "
              f"{len(common)} compared, loss {r0[0]['loss']:.4f} -> {r0[-1]['loss']:.4f}")
def final(n):  # the last world of n ranks that every rank joined
    ks = [k for k in order if k[0] == n and whole(k, 1)]
    assert ks, f"no world of {n}: {order}"
    return ks[-1], sorted(worlds[ks[-1]][0], key=lambda l: l["step"])
first = sorted(worlds[order[0]][0], key=lambda l: l["step"])
(k3, three), (k2, two) = final(3), final(2)
assert order[0][0] == 1 and order[0][1] == 1, f"the job did not start alone at step 1: {order}"
assert k3[1] > first[0]["step"] and three[0]["loss"] < first[0]["loss"], \
    f"the world of 3 did not resume from the checkpoint: {k3}"
assert k2[1] > three[0]["step"], f"no world of 2 after the world of 3: {order}"
assert two[0]["loss"] < three[0]["loss"], "the world of 2 lost the progress of the world of 3"
assert len(two) >= 10 and all(b["loss"] < a["loss"] for a, b in zip(two, two[1:])), \
    f"the loss did not keep falling in the world of 2: {[l['loss'] for l in two]}"
print("ok")
PYEOF
}

# ---- 1. starts alone on the free host, grows to three when the others free
busy1=$(corral submit --parsable --name busy1 --gpus 1 -- sleep 600)
busy2=$(corral submit --parsable --name busy2 --gpus 1 -- sleep 600)
wait_until 60 "the busy jobs run" is_running "$busy1" "$busy2"
LAUNCH="exec $PY $TORCHRUN --nnodes=\$CORRAL_NNODES --nproc_per_node=1 --rdzv_backend=c10d \
  --rdzv_endpoint=\$CORRAL_RDZV_ENDPOINT --rdzv_id=\$CORRAL_RDZV_ID --rdzv_conf=\$CORRAL_RDZV_CONF \
  --max_restarts=100 --monitor_interval=1 $TRAIN --out $W/out"
job=$(corral submit --parsable --name elastic --replicas 1:3 --spread --gpus 1 --cpus 1 \
  --grace-period 10s -- sh -c "$LAUNCH")
wait_until 60 "the elastic job starts with one replica" replicas_are "$job" 1
wait_until 90 "a world of one trains" steps "$W/out" has 1 5
corral cancel "$busy1" "$busy2" >/dev/null
wait_until 60 "the elastic job grows to three replicas" replicas_are "$job" 3
wait_until 120 "a world of three trains" steps "$W/out" has 3 10
echo "PASS 1: started with 1 replica, grew to 3 ($((SECONDS - START)) s)"

# ---- 2. a job of a higher priority takes one host: the elastic job shrinks to two
urgent=$(corral submit --parsable --name urgent --priority 10 --gpus 1 -- sleep 600)
wait_until 60 "the elastic job shrinks to two replicas" replicas_are "$job" 2
wait_until 60 "the urgent job runs" is_running "$urgent"
wait_until 120 "a world of two trains on" steps "$W/out" has 2 12
steps "$W/out" check || fail "the training's step logs"
is_running "$job" || fail "the elastic job is not running"
[ "$(job_field "$job" 'len(j["runs"])')" = 1 ] || fail "the elastic job was restarted"
events=$(job_field "$job" '"\n".join(e["what"] + ": " + e["reason"] for e in j["events"])')
echo "$events" | grep -Eq '^grown: 2 -> 3 replicas|^grown: 1 -> 3 replicas' || fail "no grow to 3 in: $events"
echo "$events" | grep -q '^shrunk: 3 -> 2 replicas' || fail "no shrink to 2 in: $events"
echo "PASS 2: shrank to 2 replicas for a job of a higher priority, training went on ($((SECONDS - START)) s)"
corral cancel "$job" "$urgent" >/dev/null
echo "all passed in $((SECONDS - START)) s"
