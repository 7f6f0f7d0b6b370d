#!/usr/bin/env bash
# The head restarted in the middle of an elastic job's resize loses nothing (ctest label ddp;
# needs root, iproute2, util-linux's unshare and python3-torch): the head and two one-GPU hosts
# of network namespaces (elastic_lib.sh), the one-line torchrun launch of docs/elastic.md
# training tests/ddp/elastic_train.py (gloo, CPU).
#   1. A 1:2 job trains on one host while the other is drained. That host's agent is frozen
#      (SIGSTOP) and the host returned: the head grows the job onto it (the resize is committed,
#      the order waits for an agent that cannot take it) and is SIGKILLed there, then started
#      again on the same state. Its agent resumes: the job has its two replicas, one run, the
#      grow once in its events, and a world of two trains on from the checkpoint.
#   2. The head is SIGKILLed and started again while the world of two trains (the agents had
#      confirmed the resize): the job's rendezvous store is adopted by the new head, not
#      started again, and the same world goes on training, untouched.
set -euo pipefail
# shellcheck source=elastic_lib.sh
. "$(dirname "$0")/elastic_lib.sh"
elastic_cluster 2

corral nodes drain node02 --reason "held back" >/dev/null
job=$(corral submit --parsable --name elastic --replicas 1:2 --spread --gpus 1 --cpus 1 \
  -- sh -c "$LAUNCH")
wait_until 60 "the elastic job starts with one replica" replicas_are "$job" 1
wait_until 90 "a world of one trains" steps "$W/out" has 1 3
[ "$(job_field "$job" 'j["runs"][0]["placement"][0]["node"]')" = node01 ] ||
  fail "the elastic job did not start on node01"

# ---- 1. killed between the grow's commit and the new replica's start
grown() { job_field "$1" 'sum(e["what"] == "grown" for e in j["events"])'; }
kill -STOP "${AGENTS[1]}"
corral nodes undrain node02 >/dev/null
wait_until 30 "the head grows the job onto node02" replicas_are "$job" 2
events_before=$(job_field "$job" '"\n".join(e["what"] + ": " + e["reason"] for e in j["events"])')
restart_head
kill -CONT "${AGENTS[1]}"
replicas_are "$job" 2 || fail "the restarted head lost the grow"
[ "$(grown "$job")" = 1 ] || fail "the grow is not one event: $(grown "$job")"
events_after=$(job_field "$job" '"\n".join(e["what"] + ": " + e["reason"] for e in j["events"])')
[ "${events_after:0:${#events_before}}" = "$events_before" ] ||
  fail "the events changed across the restart: before: $events_before; after: $events_after"
wait_until 120 "a world of two trains after the restart" steps "$W/out" has 2 5
is_running "$job" || fail "the elastic job is not running"
[ "$(job_field "$job" 'len(j["runs"])')" = 1 ] || fail "the elastic job was requeued"
echo "PASS 1: the grow survived a head killed before the new replica started ($((SECONDS - START)) s)"

# ---- 2. killed while the world of two trains: the store is adopted, the world untouched
store_pid=$(cut -d' ' -f1 "$W/head/rdzv/$job.pid")
world=$(ls "$W/out")
logged() { cat "$W"/out/steps.*.jsonl | wc -l; }
more_than() { [ "$(logged)" -gt "$1" ]; }
restart_head
wait_until 30 "the restarted head adopts the store" grep -q "store for job $job .*adopted" "$W/head.log"
[ "$(cut -d' ' -f1 "$W/head/rdzv/$job.pid")" = "$store_pid" ] || fail "the store was started again"
kill -0 "$store_pid" || fail "the rendezvous store is gone"
# Ten more steps of both ranks once the new head runs.
wait_until 120 "the world of two trains on after the restart" more_than $(($(logged) + 20))
[ "$(ls "$W/out")" = "$world" ] || fail "the world restarted: $(ls "$W/out")"
replicas_are "$job" 2 || fail "the restarted head lost a replica"
[ "$(grown "$job")" = 1 ] || fail "a resize after the restart: $(grown "$job") grows"
[ "$(job_field "$job" 'len(j["runs"])')" = 1 ] || fail "the elastic job was requeued"
worlds=$(steps "$W/out" check 1 2) || fail "the training's step logs: $worlds"
echo "$worlds"
echo "PASS 2: a head restarted under a training world of two left it untouched ($((SECONDS - START)) s)"
corral cancel "$job" >/dev/null
