#!/usr/bin/env bash
# GPU health end to end (ctest label integration): a head and two real agents whose GPUs come
# from the fake NVML (src/testing/fake_nvml.cc, loaded with --nvml-library), each agent's
# ECC counts and Xid events written by this test into its FAKE_NVML_HEALTH file:
#   1. Xid 79 on the GPU of a running job: the GPU is drained (source health), the job is
#      requeued without spending a restart, its events name the GPU and the Xid, and it runs
#      again on another GPU; `corral nodes` and the head's /metrics show it;
#   2. the drained GPU is returned after --gpu-clean-checks clean checks (one every
#      --gpu-check-interval);
#   3. Xid 13 (the application's fault) on a job's GPU: the job fails naming it, the GPU stays;
#   4. an operator's drain of a GPU (corral nodes drain NODE --gpu N) stays through clean checks.
set -euo pipefail
CORRAL=${CORRAL:?path of the corral binary}
FAKE_NVML=${FAKE_NVML:?path of the fake libnvidia-ml.so}
W=$(mktemp -d /tmp/corral-gpu-health.XXXXXX)
PORT=$((7600 + RANDOM % 300))
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then echo "---- logs ($W)"; tail -n 30 "$W"/*.log; else rm -rf "$W"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$CORRAL" head --state-dir "$W/head" --listen "127.0.0.1:$PORT" --gpu-clean-checks 5 \
  >"$W/head.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$W/head/admin.token" ] && break; sleep 0.1; done
export CORRAL_ADDR="http://127.0.0.1:$PORT" CORRAL_TOKEN="$(cat "$W/head/admin.token")"
export CORRAL_CONFIG="$W/no-config.json"
for n in 1 2; do
  : >"$W/health-node$n"
  FAKE_NVML_GPUS="A100:40960,A100:40960" FAKE_NVML_HEALTH="$W/health-node$n" \
    "$CORRAL" agent --head "$CORRAL_ADDR" --join-token-file "$W/head/join.token" \
    --name "node$n" --state-dir "$W/node$n" --nvml-library "$FAKE_NVML" --run-as agent \
    --cgroups off --lease 6 --gpu-check-interval 2 --cpus 4 --memory 4G >"$W/node$n.log" 2>&1 &
  pids+=($!)
done
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
wait_for() {  # wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds
  local t=$1 what=$2
  shift 2
  for _ in $(seq $((t * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  fail "$what (after $t s)"
}
ready() { [ "$("$CORRAL" nodes -o json | grep -o '"ready"' | wc -l)" -ge 2 ]; }
wait_for 20 "agents did not join" ready
# Where job $1's current run is: "NODE GPU".
where() {
  "$CORRAL" show "$1" -o json |
    json 'd["runs"][-1]["placement"][0]["node"] + " " + str(d["runs"][-1]["placement"][0]["gpus"][0])'
}
state() { "$CORRAL" show "$1" -o json | json 'd["state"]'; }
is_running() { [ "$(state "$1")" = running ]; }
gpu_field() {  # gpu_field NODE GPU EXPR(g)
  "$CORRAL" nodes -o json |
    json "[g for n in d if n['name']=='$1' for g in n['gpus'] if g['index']==$2][0].get($3)"
}
drain_source() { gpu_field "$1" "$2" "'drain', {}).get('source', 'none'"; }

# 1. A critical Xid on a running job's GPU.
job=$("$CORRAL" submit --parsable --gpus 1 --max-restarts 0 -- sleep 300)
wait_for 20 "job $job did not start" is_running "$job"
read -r node gpu <<<"$(where "$job")"
echo "job $job runs on $node GPU $gpu; Xid 79 there"
echo "$gpu xid 79" >>"$W/health-$node"
drained() { [ "$(drain_source "$node" "$gpu")" = health ]; }
wait_for 20 "$node GPU $gpu was not drained" drained
moved() { is_running "$job" && [ "$(where "$job")" != "$node $gpu" ]; }
wait_for 40 "job $job did not run again elsewhere" moved
echo "requeued to $(where "$job")"
"$CORRAL" show "$job" -o json | json 'd["runs"][0]["state"] + " | " + d["runs"][0]["reason"]' |
  tee "$W/first-run"
grep -q "^preempted | requeued: GPU $gpu of node $node is critical (Xid 79 (fallen off the bus))" \
  "$W/first-run" || fail "the first run's end does not name the GPU and the Xid"
"$CORRAL" nodes | tee "$W/nodes" | grep -q "drained:health" || fail "corral nodes shows no drain"
"$CORRAL" nodes show "$node" | tee "$W/show" | grep -q "Xid 79" || fail "nodes show lacks the Xid"
curl -sf -H "Authorization: Bearer $CORRAL_TOKEN" "$CORRAL_ADDR/metrics" >"$W/metrics"
grep -q "corral_gpu_drained{node=\"$node\",gpu=\"$gpu\",source=\"health\"} 1" "$W/metrics" ||
  fail "/metrics: no corral_gpu_drained for $node GPU $gpu"
grep -q "corral_gpu_xid_total{node=\"$node\",xid=\"79\"} 1" "$W/metrics" ||
  fail "/metrics: no Xid 79 count"
grep -q "corral_gpu_health{node=\"$node\",gpu=\"$gpu\"}" "$W/metrics" ||
  fail "/metrics: no corral_gpu_health"
"$CORRAL" events --since 0 >"$W/events" 2>&1 || true
grep -q "GPU $gpu drained (health)" "$W/events" || fail "no event for the drain: $(tail -5 "$W/events")"
"$CORRAL" cancel "$job" >/dev/null

# 2. Clean checks (one every 2 s: --gpu-check-interval) return it.
returned() { [ "$(drain_source "$node" "$gpu")" = none ]; }
wait_for 40 "$node GPU $gpu was not returned after 5 clean checks" returned
grep -q "GPU $gpu returned" <("$CORRAL" events --since 0 2>&1) || fail "no event for the return"
echo "returned after clean checks"

# 3. An application Xid: the job fails, the GPU stays.
job2=$("$CORRAL" submit --parsable --gpus 1 --max-restarts 0 -- sleep 300)
wait_for 20 "job $job2 did not start" is_running "$job2"
read -r node2 gpu2 <<<"$(where "$job2")"
echo "$gpu2 xid 13" >>"$W/health-$node2"
failed() { [ "$(state "$job2")" = failed ]; }
wait_for 30 "job $job2 did not fail" failed
"$CORRAL" show "$job2" -o json | json 'd["runs"][0]["reason"]' | tee "$W/app-reason"
grep -q "Xid 13 (graphics engine exception) on GPU $gpu2 of node $node2" "$W/app-reason" ||
  fail "the failure does not name the Xid"
[ "$(drain_source "$node2" "$gpu2")" = none ] || fail "an application Xid drained the GPU"

# 4. An operator's drain stays through clean checks, and only an operator returns the GPU.
"$CORRAL" nodes drain node1 --gpu 1 --reason "fan noise" >/dev/null
"$CORRAL" nodes drain node1 --gpu 9 2>"$W/bad" && fail "drained a GPU node1 lacks"
grep -q "field 'gpu'" "$W/bad" || fail "bad GPU: $(cat "$W/bad")"
sleep 12  # 5+ clean checks
[ "$(drain_source node1 1)" = admin ] || fail "the admin drain did not stay"
"$CORRAL" nodes undrain node1 --gpu 1 >/dev/null
[ "$(drain_source node1 1)" = none ] || fail "undrain did not return the GPU"
echo "PASS: GPU health end to end"
