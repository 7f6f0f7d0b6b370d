#!/usr/bin/env bash
# A network partition (ctest label chaos; needs root and iproute2). Three hosts made of network
# namespaces: the head on .1, agents node01 on .2 and node02 on .3, 2 simulated GPUs each. A
# 2-GPU job with --max-restarts 0 runs on one node; that node's link is cut past the agent's
# lease, then restored. It must go as DESIGN §7 says:
#   - the cut-off agent stops the run itself once its lease expires (self-fencing), before the
#     head declares the node down and requeues the job;
#   - the requeued job starts on the other node only after the first copy stopped (never in
#     two places) and succeeds: a lost run is not the job's failure, nor one of its restarts;
#   - after the link is back the agent rejoins and its node is ready again;
#   - the agent whose link stayed up never fences;
#   - while the node is cut off, the head and the other agent are SIGKILLed and restarted, and
#     1-GPU jobs submitted around the kills: each acknowledged one succeeds, started once.
# TIMINGS=short (default: lease 6 s, unreachable 3 s, down 12 s, cut 25 s) or TIMINGS=default
# (the daemons' defaults: lease 40 s, unreachable 15 s, down 60 s; cut 75 s; bench/chaos).
set -euo pipefail
CORRAL=${CORRAL:?path of the corral binary}
# shellcheck source=../lib/skip.sh
. "$(dirname "$0")/../lib/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
# shellcheck source=../lib/netns_hosts.sh
. "$(dirname "$0")/../lib/netns_hosts.sh"

case "${TIMINGS:-short}" in
  short) AGENT_T=(--lease 6); HEAD_T=(--unreachable-after 3 --down-after 12); LEASE=6; DOWN=12; CUT=25 ;;
  default) AGENT_T=(); HEAD_T=(); LEASE=40; DOWN=60; CUT=75 ;;
  *) echo "TIMINGS: want short or default"; exit 2 ;;
esac

ID=$(( $$ % 200 + 20 ))
NET=10.78.$ID
W=$(mktemp -d /tmp/corral-partition.XXXXXX)
SW=cpt$ID-sw H=cpt$ID-h A=cpt$ID-a B=cpt$ID-b
cleanup() {
  local rc=$?
  netns_cleanup
  if [ "$rc" -ne 0 ]; then echo "---- logs ($W)"; tail -n 25 "$W"/*.log 2>/dev/null || true; else rm -rf "$W"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

netns_init "$SW"
netns_host "$H" "$NET.1"
netns_host "$A" "$NET.2"
netns_host "$B" "$NET.3"

start_head() {
  ip netns exec "$H" "$CORRAL" head --state-dir "$W/head" --listen "$NET.1:7070" "${HEAD_T[@]}" \
    >>"$W/head.log" 2>&1 &
  head_pid=$!
}
start_agent() {  # start_agent N
  local n=$1 ns
  ns=$([ "$n" = 1 ] && echo "$A" || echo "$B")
  ip netns exec "$ns" "$CORRAL" agent --head "$CORRAL_ADDR" --join-token-file "$W/head/join.token" \
    --name "node0$n" --run-as agent --state-dir "$W/node0$n" --simulate-gpus 2 --cpus 8 --memory 8G \
    "${AGENT_T[@]}" >>"$W/node0$n.log" 2>&1 &
  agent_pid[$n]=$!
}
declare -a agent_pid
start_head
for _ in $(seq 100); do [ -s "$W/head/admin.token" ] && break; sleep 0.1; done
# The head serves HTTPS off loopback; the CLI and the agents trust its CA (CORRAL_CA).
for _ in $(seq 100); do [ -s "$W/head/tls/ca.pem" ] && break; sleep 0.1; done
export CORRAL_ADDR="https://$NET.1:7070" CORRAL_TOKEN="$(cat "$W/head/admin.token")"
export CORRAL_CA="$W/head/tls/ca.pem"
export CORRAL_CONFIG="$W/no-config.json"
for n in 1 2; do start_agent $n; done
corral() { ip netns exec "$H" "$CORRAL" "$@"; }
small=()
submit_small() {  # a 1-GPU job that notes its start in $W/small; acknowledged ids in small[]
  local id
  if id=$(corral submit --parsable --gpus 1 -- /bin/sh -c "echo \$CORRAL_JOB_ID >> $W/small; sleep 1" 2>&1); then
    small+=("$id")
  else
    echo "submission refused (the head is down): $id"
  fi
}
for _ in $(seq 150); do
  [ "$(corral nodes -o json 2>/dev/null | grep -o '"ready"' | wc -l)" -ge 2 ] && break
  sleep 0.2
done
[ "$(corral nodes -o json | grep -o '"ready"' | wc -l)" -ge 2 ] || fail "agents did not join"

# Each run of the job appends "start|stop|end NODE TIME" to $W/runs.
# The first run outlasts the cut (it must be running when the agent fences); the requeued
# one takes 15 s.
first_sleep=$((CUT + 30))
cat >"$W/job.sh" <<JOB
#!/bin/sh
t=15
grep -q start $W/runs 2>/dev/null || t=$first_sleep
echo "start \$CORRAL_NODE \$(date +%s.%N)" >> $W/runs
trap 'echo "stop \$CORRAL_NODE \$(date +%s.%N)" >> $W/runs; exit 143' TERM
sleep \$t &
wait
echo "end \$CORRAL_NODE \$(date +%s.%N)" >> $W/runs
JOB
chmod +x "$W/job.sh"
job=$(corral submit --parsable --gpus 2 --max-restarts 0 -- "$W/job.sh")
for _ in $(seq 100); do grep -q '^start' "$W/runs" 2>/dev/null && break; sleep 0.1; done
first=$(awk '/^start/ { print $2; exit }' "$W/runs")
[ -n "$first" ] || fail "job $job did not start"
if [ "$first" = node01 ]; then cut=$A other=node02; else cut=$B other=node01; fi

echo "cutting $first off for $CUT s (lease $LEASE s, down after $DOWN s)"
t0=$(now)
netns_cut "$cut"
# Meanwhile the head and the agent still connected die by SIGKILL and come back.
if [ "$first" = node01 ]; then other_n=2; else other_n=1; fi
submit_small
sleep 1
# (Back well within the agents' lease: the other agent must not fence.)
kill -KILL "$head_pid"
wait "$head_pid" 2>/dev/null || true
echo "head SIGKILLed $(elapsed "$t0") s into the cut"
start_head
for _ in $(seq 100); do corral nodes >/dev/null 2>&1 && break; sleep 0.1; done
echo "head back $(elapsed "$t0") s into the cut"
submit_small
kill -KILL "${agent_pid[$other_n]}"
wait "${agent_pid[$other_n]}" 2>/dev/null || true
submit_small
sleep 0.5
start_agent "$other_n"
submit_small
echo "SIGKILLed the head and $other, both restarted, $(elapsed "$t0") s into the cut"
fenced_at=""
for _ in $(seq $((CUT * 10))); do
  if [ -z "$fenced_at" ] && grep -q fencing "$W/$first.log"; then fenced_at=$(elapsed "$t0"); fi
  sleep 0.1
done
netns_heal "$cut"
echo "healed after $(elapsed "$t0") s; $first fenced after ${fenced_at:-never} s"
[ -n "$fenced_at" ] || fail "$first never fenced itself"

corral wait "$job" --timeout $((DOWN + 120))s >/dev/null 2>&1 || true
state=$(corral show "$job" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
[ "$state" = succeeded ] || { corral show "$job"; cat "$W/runs"; fail "job $job is $state, want succeeded"; }
cat "$W/runs"
# The first copy stopped before the second started, and the second ran on the other node.
python3 - "$W/runs" "$first" "$other" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
first, other = sys.argv[2], sys.argv[3]
starts = [l for l in lines if l[0] == "start"]
assert len(starts) == 2, f"want 2 starts, got {lines}"
stop = [l for l in lines if l[0] == "stop" and l[1] == first]
assert stop, f"the fenced copy on {first} never stopped: {lines}"
assert starts[1][1] == other, f"the requeued run is on {starts[1][1]}, want {other}"
assert float(stop[0][2]) < float(starts[1][2]), f"two copies ran at once: {lines}"
assert any(l[0] == "end" and l[1] == other for l in lines), lines
print("ok: one copy at a time, the requeued run finished on", other)
PY
reason=$(corral show "$job" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["reason"])')
echo "first run's reason: $reason"
grep -q fencing "$W/$other.log" && fail "$other fenced although its link stayed up"
for _ in $(seq 100); do
  [ "$(corral nodes -o json | grep -o '"ready"' | wc -l)" -ge 2 ] && break
  sleep 0.2
done
[ "$(corral nodes -o json | grep -o '"ready"' | wc -l)" -ge 2 ] || fail "$first did not rejoin: $(corral nodes)"
# The small jobs: every acknowledged one succeeded and started once.
for id in "${small[@]}"; do
  corral wait "$id" --timeout 60s >/dev/null 2>&1 || true
  st=$(corral show "$id" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [ "$st" = succeeded ] || fail "small job $id is $st, want succeeded (lost)"
  n=$(grep -cx "$id" "$W/small" || true)
  [ "$n" = 1 ] || fail "small job $id started $n times"
done
[ "${#small[@]}" -ge 3 ] || fail "only ${#small[@]} small jobs acknowledged"
echo "ok: ${#small[@]} jobs submitted around the SIGKILLs: 0 lost, 0 started twice"
echo "PASS: partition of $first with ${TIMINGS:-short} timings"
