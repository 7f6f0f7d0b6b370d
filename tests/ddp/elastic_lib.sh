# shellcheck shell=bash
# Elastic training with real torchrun on network-namespace hosts: what the elastic tests share
# (sourced by tests/ddp/elastic_*_test.sh; needs root, iproute2, util-linux's unshare and
# python3-torch). Usage:
#   elastic_cluster N [HEAD_FLAGS...] [-- AGENT_FLAGS...]
#       the head on $NET.1 with its rendezvous stores (--rdzv-host), and an agent with one
#       (simulated) GPU on each of N hosts .2, .3, ..., each in its own UTS namespace with its own
#       hostname known to the others (torchrun's agents publish their host's name as the
#       workers' MASTER_ADDR); HOSTS names their namespaces, AGENTS the agents' pids
#   restart_head                  SIGKILLs the head and starts it again on the same state
#   $LAUNCH                       the one-line torchrun launch of docs/elastic.md, training
#                                 tests/ddp/elastic_train.py with its step logs in $W/out
#   wait_until SECONDS WHAT CMD...  polls CMD, fails naming WHAT after SECONDS
#   live_replicas ID, replicas_are ID N, is_running ID..., job_field ID PYTHON_EXPR
#   steps OUT has|check ...       the workers' step logs (below)
CORRAL=${CORRAL:?path of the corral binary}
ELASTIC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TRAIN=$ELASTIC_DIR/elastic_train.py
TORCHRUN=$ELASTIC_DIR/torchrun_py311.py
PY=/usr/bin/python3
# shellcheck source=../lib/skip.sh
. "$ELASTIC_DIR/../lib/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
"$PY" -c 'import torch' 2>/dev/null || skip "$PY has no torch (apt-get install python3-torch)"
command -v unshare >/dev/null || skip "no unshare (apt-get install util-linux)"

# shellcheck source=../lib/netns_hosts.sh
. "$ELASTIC_DIR/../lib/netns_hosts.sh"
# shellcheck source=../lib/netns_cluster.sh
. "$ELASTIC_DIR/../lib/netns_cluster.sh"
ID=$(( ($$ + 101) % 200 + 20 ))
NET=10.79.$ID
W=$(mktemp -d /tmp/corral-elastic.XXXXXX)
HOSTS=()
AGENTS=()
# shellcheck disable=SC2034  # used by the tests that source this
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

elastic_cluster() {  # elastic_cluster N [HEAD_FLAGS...] [-- AGENT_FLAGS...]
  local n=$1 i ns hosts_file="127.0.0.1 localhost"$'\n' letters=(a b c d e)
  shift
  local head_flags=() agent_flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do head_flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  agent_flags=("$@")
  netns_init "cel$ID-sw"
  netns_host "cel$ID-h" "$NET.1"
  for ((i = 0; i < n; i++)); do
    ns=cel$ID-${letters[$i]}
    HOSTS+=("$ns")
    netns_host "$ns" "$NET.$((i + 2))"
    hosts_file+="$NET.$((i + 2)) $ns"$'\n'
  done
  # ip netns exec mounts /etc/netns/NS/hosts over /etc/hosts: every host knows the others' names
  for ns in "${HOSTS[@]}"; do
    mkdir -p "/etc/netns/$ns" && printf '%s' "$hosts_file" >"/etc/netns/$ns/hosts"
  done
  HEAD_ARGS=("cel$ID-h" "$NET.1" "$W/head" "$W/checkpoints" "$W/head.log" --rdzv-host "$NET.1"
    "${head_flags[@]}")
  netns_head "${HEAD_ARGS[@]}"
  HEAD_PID=$!  # ip netns exec execs the head
  for ((i = 0; i < n; i++)); do
    ns=${HOSTS[$i]}
    ip netns exec "$ns" unshare --uts sh -c "hostname $ns && exec \"\$0\" \"\$@\"" "$CORRAL" agent \
      --head "$CORRAL_ADDR" --join-token-file "$W/head/join.token" --name "node0$((i + 1))" \
      --run-as agent --state-dir "$W/node$i" --simulate-gpus 1 --cpus 4 --memory 4G \
      "${agent_flags[@]}" >"$W/node$i.log" 2>&1 &
    AGENTS+=($!)  # ip netns exec, unshare and sh exec the agent: the same pid
  done
  netns_wait_ready "$n"
}

restart_head() {  # SIGKILL, then the same head on the same state, until its API answers
  kill -9 "$HEAD_PID"
  wait "$HEAD_PID" 2>/dev/null || true
  cat "$W/head.log" >>"$W/head-before-restart.log"
  netns_head "${HEAD_ARGS[@]}"
  HEAD_PID=$!
  wait_until 60 "the restarted head answers" corral jobs
}

# The launch docs/elastic.md documents (through the shim Debian 12's torch needs), with a
# monitor interval of 1 s (torchrun's default 5 s only slows the tests' growth down).
# shellcheck disable=SC2034
LAUNCH="exec $PY $TORCHRUN --nnodes=\$CORRAL_NNODES --nproc_per_node=1 --rdzv_backend=c10d \
  --rdzv_endpoint=\$CORRAL_RDZV_ENDPOINT --rdzv_id=\$CORRAL_RDZV_ID --rdzv_conf=\$CORRAL_RDZV_CONF \
  --max_restarts=100 --monitor_interval=1 $TRAIN --out $W/out"

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
# `steps OUT has N K`: the latest world has N ranks, and each logged K steps in it;
# `steps OUT check N1 N2 ...`: prints each world, and asserts that the job went through worlds
# of N1, N2, ... ranks in that order, each resuming from the checkpoint the one before it left
# (a later step, a lower loss), every rank of a world holding the same parameters at every step,
# and the loss falling at every step of the last world (8 steps at least).
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
    sys.exit(0 if order and order[-1][0] == n and whole(order[-1], k) else 1)
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
sizes = [int(a) for a in sys.argv[3:]]
prev, prev_lines = None, None
for i, n in enumerate(sizes):
    ks = [k for k in order if k[0] == n and whole(k, 1) and (prev is None or k[1] > prev[1])]
    assert ks, f"no world of {n} after {prev}: {order}"
    k = ks[-1] if i == len(sizes) - 1 else ks[0]
    lines = sorted(worlds[k][0], key=lambda l: l["step"])
    if prev is not None:
        assert lines[0]["loss"] < prev_lines[0]["loss"], f"the world {k} lost the progress of {prev}"
    prev, prev_lines = k, lines
assert len(prev_lines) >= 8 and all(b["loss"] < a["loss"] for a, b in zip(prev_lines, prev_lines[1:])), \
    f"the loss did not keep falling in the last world: {[l['loss'] for l in prev_lines]}"
print("ok")
PYEOF
}

