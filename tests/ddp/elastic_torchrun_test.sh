#!/usr/bin/env bash
# Elastic training with real torchrun across hosts (ctest label ddp; needs root, iproute2,
# util-linux's unshare and python3-torch): the head and three one-GPU hosts of network
# namespaces (elastic_lib.sh). The job is the one-line torchrun launch of docs/elastic.md
# running tests/ddp/elastic_train.py (gloo, CPU), which logs per step its world size, the loss
# and a checksum of its parameters:
#   1. a 1:3 job starts on the one free host while two jobs hold the others, and grows to three
#      replicas when they end: the world of three resumes from the checkpoint, its ranks agree;
#   2. a job of a higher priority takes one host: the elastic job shrinks to two and goes on
#      training (the loss keeps falling, both ranks hold the same parameters at every step);
#   each resize is an event of the job, and the run is the same all along (no restart).
set -euo pipefail
# shellcheck source=elastic_lib.sh
. "$(dirname "$0")/elastic_lib.sh"
elastic_cluster 3

# ---- 1. starts alone on the free host, grows to three when the others free
busy1=$(corral submit --parsable --name busy1 --gpus 1 -- sleep 600)
busy2=$(corral submit --parsable --name busy2 --gpus 1 -- sleep 600)
wait_until 60 "the busy jobs run" is_running "$busy1" "$busy2"
job=$(corral submit --parsable --name elastic --replicas 1:3 --spread --gpus 1 --cpus 1 \
  --grace-period 10s -- sh -c "$LAUNCH")
wait_until 60 "the elastic job starts with one replica" replicas_are "$job" 1
wait_until 90 "a world of one trains" steps "$W/out" has 1 3
corral cancel "$busy1" "$busy2" >/dev/null
wait_until 60 "the elastic job grows to three replicas" replicas_are "$job" 3
wait_until 120 "a world of three trains" steps "$W/out" has 3 5
echo "PASS 1: started with 1 replica, grew to 3 ($((SECONDS - START)) s)"

# ---- 2. a job of a higher priority takes one host: the elastic job shrinks to two
urgent=$(corral submit --parsable --name urgent --priority 10 --gpus 1 -- sleep 600)
wait_until 60 "the elastic job shrinks to two replicas" replicas_are "$job" 2
wait_until 60 "the urgent job runs" is_running "$urgent"
wait_until 120 "a world of two trains on" steps "$W/out" has 2 8
worlds=$(steps "$W/out" check 1 3 2) || fail "the training's step logs: $worlds"
echo "$worlds"
[[ "$worlds" == "world of 1 from step 1: "* ]] || fail "the job did not start alone at step 1"
is_running "$job" || fail "the elastic job is not running"
[ "$(job_field "$job" 'len(j["runs"])')" = 1 ] || fail "the elastic job was restarted"
events=$(job_field "$job" '"\n".join(e["what"] + ": " + e["reason"] for e in j["events"])')
echo "$events" | grep -Eq '^grown: 2 -> 3 replicas|^grown: 1 -> 3 replicas' || fail "no grow to 3 in: $events"
echo "$events" | grep -q '^shrunk: 3 -> 2 replicas' || fail "no shrink to 2 in: $events"
echo "PASS 2: shrank to 2 replicas for a job of a higher priority, training went on ($((SECONDS - START)) s)"
corral cancel "$job" "$urgent" >/dev/null
echo "all passed in $((SECONDS - START)) s"
