#!/usr/bin/env bash
# A SIGKILLed agent is a membership change of an elastic job (ctest label ddp; needs root,
# iproute2, util-linux's unshare and python3-torch): the head and two one-GPU hosts of network
# namespaces (elastic_lib.sh), the one-line torchrun launch of docs/elastic.md training
# tests/ddp/elastic_train.py (gloo, CPU).
#   A 1:2 job trains on both hosts; the agent of one host is SIGKILLed, its host and link stay
#   up. Its replica's monitor, seeing the agent's lease unrenewed (--lease 6), ends the replica
#   (a replica left running would rejoin the rendezvous behind the head's back); the head
#   declares the node lost (--down-after 12) and drops the replica, and the world of one left
#   resumes from the checkpoint and trains on (the loss keeps falling). The run is the same all
#   along (no requeue, no restart), and the drop is an event of the job.
set -euo pipefail
# shellcheck source=elastic_lib.sh
. "$(dirname "$0")/elastic_lib.sh"
elastic_cluster 2 --unreachable-after 4 --down-after 12 -- --lease 6

job=$(corral submit --parsable --name elastic --replicas 1:2 --spread --gpus 1 --cpus 1 \
  -- sh -c "$LAUNCH")
wait_until 60 "the elastic job runs with two replicas" replicas_are "$job" 2
wait_until 120 "a world of two trains" steps "$W/out" has 2 5
lost=$(job_field "$job" 'j["runs"][-1]["placement"][1]["node"]')
lost_i=$((${lost#node0} - 1))
kill -9 "${AGENTS[$lost_i]}"
killed_at=$SECONDS

# The killed agent's torchrun and workers, still in its host's network namespace.
torchrun_left() {
  local pid
  for pid in $(ip netns pids "${HOSTS[$lost_i]}"); do
    grep -qa elastic_train.py "/proc/$pid/cmdline" 2>/dev/null && return 0
  done
  return 1
}
wait_until 60 "the head drops the killed agent's replica" replicas_are "$job" 1
replica_ended() { ! torchrun_left; }
wait_until 30 "the killed agent's replica ends (its monitor's lease)" replica_ended
wait_until 120 "a world of one trains on" steps "$W/out" has 1 8
echo "world of 1 trains $((SECONDS - killed_at)) s after the kill"
worlds=$(steps "$W/out" check 2 1) || fail "the training's step logs: $worlds"
echo "$worlds"
is_running "$job" || fail "the elastic job is not running"
[ "$(job_field "$job" 'len(j["runs"])')" = 1 ] || fail "the elastic job was requeued"
events=$(job_field "$job" '"\n".join(e["what"] + ": " + e["reason"] for e in j["events"])')
echo "$events" | grep -q "^shrunk: 2 -> 1 replicas (1:2): node $lost lost" ||
  fail "no shrink for the lost node in: $events"
echo "PASS: a killed agent's replica dropped, the survivor trains on ($((SECONDS - START)) s)"
corral cancel "$job" >/dev/null
