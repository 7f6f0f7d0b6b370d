#!/usr/bin/env bash
# A hot spare replaces an elastic job's lost replica at once (ctest label ddp; needs root,
# iproute2, util-linux's unshare and python3-torch): the head and three one-GPU hosts of
# network namespaces (elastic_lib.sh), the one-line torchrun launch of docs/elastic.md training
# tests/ddp/elastic_train.py (gloo, CPU).
#   A 1:2 job with one hot spare trains on two hosts, and the scheduler holds the third for it
#   (`hot_spare_nodes` of `corral show -o json`). The agent of one of its hosts is SIGKILLed
#   (--lease 6, --down-after 12): in the pass where the head drops the lost replica it starts
#   the replacement on the spare (the grow event within 2 s of the shrink), no requeue, and a
#   new world of two resumes from the checkpoint and trains.
set -euo pipefail
# shellcheck source=elastic_lib.sh
. "$(dirname "$0")/elastic_lib.sh"
elastic_cluster 3 --unreachable-after 4 --down-after 12 -- --lease 6

job=$(corral submit --parsable --name elastic --replicas 1:2 --hot-spares 1 --spread --gpus 1 \
  --cpus 1 -- sh -c "$LAUNCH")
wait_until 60 "the elastic job runs with two replicas" replicas_are "$job" 2
wait_until 120 "a world of two trains" steps "$W/out" has 2 5
spare_is_held() { [ "$(job_field "$job" 'len(j.get("hot_spare_nodes", []))')" = 1 ]; }
wait_until 30 "the scheduler holds a hot spare" spare_is_held
spare=$(job_field "$job" 'j["hot_spare_nodes"][0]')
placed=$(job_field "$job" '" ".join(p["node"] for p in j["runs"][-1]["placement"])')
case " $placed " in *" $spare "*) fail "the spare $spare is on a node of the job ($placed)" ;; esac
corral show "$job" | grep -q "hot spares: *1/1 held on $spare" || fail "corral show lists no spare"
lost=$(job_field "$job" 'j["runs"][-1]["placement"][1]["node"]')
lost_i=$((${lost#node0} - 1))
kill -9 "${AGENTS[$lost_i]}"
killed_at=$SECONDS

on_spare() {
  job_field "$job" '[p["node"] for i, p in enumerate(j["runs"][-1]["placement"]) if i not in j["runs"][-1].get("departed", [])]' |
    grep -q "'$spare'"
}
wait_until 60 "the replacement replica is placed on the spare $spare" on_spare
echo "replacement on $spare $((SECONDS - killed_at)) s after the kill"
gap=$(job_field "$job" '
[e["at"] for e in j["events"] if e["what"] == "grown" and "hot spare" in e["reason"]][-1] -
[e["at"] for e in j["events"] if e["what"] == "shrunk" and "lost" in e["reason"]][-1]')
echo "the drop and the replacement: $gap ms apart"
[ "$gap" -ge 0 ] && [ "$gap" -le 2000 ] || fail "the replacement came $gap ms after the drop"
wait_until 120 "a new world of two trains" steps "$W/out" check 2 2
worlds=$(steps "$W/out" check 2 2) || fail "the training's step logs: $worlds"
echo "$worlds"
echo "world of 2 trains again $((SECONDS - killed_at)) s after the kill"
is_running "$job" || fail "the elastic job is not running"
[ "$(job_field "$job" 'len(j["runs"])')" = 1 ] || fail "the elastic job was requeued"
echo "PASS: a lost replica replaced on its hot spare ($((SECONDS - START)) s)"
corral cancel "$job" >/dev/null
