#!/usr/bin/env bash
# A lost node is a membership change of an elastic job (ctest label ddp; needs root, iproute2,
# util-linux's unshare and python3-torch): the head and two one-GPU hosts of network namespaces
# (elastic_lib.sh), the one-line torchrun launch of docs/elastic.md training
# tests/ddp/elastic_train.py (gloo, CPU), whose collectives wait 300 s for a vanished peer.
#   A 1:2 job trains on both hosts; one host's link is cut (no connection reset reaches the
#   other). The head declares the node lost (--down-after 12), drops its replica and tells the
#   surviving replica's agent at once, which kills its torchrun workers: torchrun re-rendezvouses
#   with the one replica left, which resumes from the checkpoint and trains on (the loss keeps
#   falling) long before the 300 s a worker would otherwise sit in its collective. The run is the
#   same all along (no requeue, no restart) and the shrink is an event of the job.
set -euo pipefail
# shellcheck source=elastic_lib.sh
. "$(dirname "$0")/elastic_lib.sh"
elastic_cluster 2 --unreachable-after 4 --down-after 12 -- --lease 8

job=$(corral submit --parsable --name elastic --replicas 1:2 --spread --gpus 1 --cpus 1 \
  -- sh -c "$LAUNCH")
wait_until 60 "the elastic job runs with two replicas" replicas_are "$job" 2
wait_until 120 "a world of two trains" steps "$W/out" has 2 5
# The host of the replica that is not replica 0, and the other one.
lost=$(job_field "$job" 'j["runs"][-1]["placement"][1]["node"]')
survivor=$(job_field "$job" 'j["runs"][-1]["placement"][0]["node"]')
lost_i=$((${lost#node0} - 1)) survivor_i=$((${survivor#node0} - 1))
netns_cut "${HOSTS[$lost_i]}"
cut_at=$SECONDS
wait_until 60 "the head drops the lost node's replica" replicas_are "$job" 1
wait_until 120 "a world of one trains on" steps "$W/out" has 1 8
echo "world of 1 trains $((SECONDS - cut_at)) s after the cut"
grep -q "a peer replica was lost with its node; 1 torchrun worker(s) killed" "$W/node$survivor_i.log" ||
  fail "the surviving agent killed no worker: $(tail -5 "$W/node$survivor_i.log")"
worlds=$(steps "$W/out" check 2 1) || fail "the training's step logs: $worlds"
echo "$worlds"
is_running "$job" || fail "the elastic job is not running"
[ "$(job_field "$job" 'len(j["runs"])')" = 1 ] || fail "the elastic job was requeued"
events=$(job_field "$job" '"\n".join(e["what"] + ": " + e["reason"] for e in j["events"])')
echo "$events" | grep -q "^shrunk: 2 -> 1 replicas (1:2): node $lost lost" ||
  fail "no shrink for the lost node in: $events"
echo "PASS: a lost node's replica dropped, the survivor re-rendezvoused and trains on ($((SECONDS - START)) s)"
corral cancel "$job" >/dev/null
