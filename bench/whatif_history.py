#!/usr/bin/env python3
"""Writes a synthetic week of a head's history (the JSON of GET /v1/history) for timing
`corral whatif --history FILE`: JOBS jobs over 7 days from 40 users in 4 queues on NODES nodes
of 8 GPUs (about 75% load at the defaults), 1-8 GPUs each, log-normal run times (median 30 min).
The recorded runs are drawn, not scheduled: the file times the replay, its start-order
correlation means nothing. Seeded: the same arguments write the same file.

  bench/whatif_history.py --jobs 20000 --nodes 64 > /tmp/week.json
  time build/corral whatif --history /tmp/week.json --set-quota q0=256 -o json > /dev/null
"""
import argparse
import json
import math
import random
import sys

DAY_MS = 86400 * 1000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=20000)
    p.add_argument("--nodes", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    t0 = 1_763_000_000_000
    now = t0 + 7 * DAY_MS
    nodes = [{
        "name": "n%03d" % n,
        "address": "n%03d:7071" % n,
        "state": "ready",
        "cpu_milli": 64000,
        "memory_mb": 512 * 1024,
        "gpus": [{"index": g, "uuid": "n%03d-%d" % (n, g), "model": "A100", "memory_mb": 81920,
                  "group": g // 4, "healthy": True} for g in range(8)],
    } for n in range(a.nodes)]
    quota = a.nodes * 8 // 4
    queues = [{"name": "q%d" % q, "quota_gpus": quota} for q in range(4)]
    jobs = []
    for i in range(a.jobs):
        submit = t0 + int(rng.random() * 7 * DAY_MS)
        gpus = rng.choices([1, 2, 4, 8], weights=[60, 15, 15, 10])[0]
        duration = int(30 * 60_000 * math.exp(rng.gauss(0, 1.5)))
        start = submit + int(rng.expovariate(1 / 600_000))
        end = start + duration
        job = {"id": i + 1, "owner": "u%02d" % rng.randrange(40),
               "spec": {"queue": "q%d" % rng.randrange(4), "replicas": 1,
                        "gpu_milli": gpus * 1000, "cpu_milli": 1000, "memory_mb": 0},
               "submitted_at": submit, "state": "succeeded", "ended_at": end,
               "runs": [{"attempt": 1, "placement": [], "state": "succeeded",
                         "scheduled_at": start, "started_at": start, "ended_at": end}]}
        if end > now:  # still running at the history's end
            job["state"], job["ended_at"] = "running", 0
            job["runs"][0].update(state="running", ended_at=0)
        if start > now:  # still pending
            job["state"], job["runs"] = "pending", []
        jobs.append(job)
    jobs.sort(key=lambda j: j["id"])
    json.dump({"now": now, "from": t0, "scheduler": {
        "policy": "corral", "min_runtime_before_preempt_ms": 300000,
        "fair_share_half_life_ms": 7 * DAY_MS}, "jobs": jobs, "nodes": nodes,
        "queues": queues}, sys.stdout)


if __name__ == "__main__":
    main()
