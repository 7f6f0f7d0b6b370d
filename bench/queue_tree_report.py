#!/usr/bin/env python3
"""Per-queue figures of a `corral simulate --queue-tree TREE --out-runs RUNS` run on the
Philly trace (docs/simulation.md, "Maintenance windows and queue trees"): jobs, mean and p99
JCT and wait, by the tree's queues.

usage: queue_tree_report.py PHILLY_CSV TREE_CSV RUNS_CSV
"""
import calendar
import csv
import time
import sys


def main(trace_path, tree_path, runs_path):
    takes, rest = {}, None
    for row in csv.reader(open(tree_path)):
        if len(row) < 2 or not row[1].strip().isdigit():
            continue
        for q in (row[2].split() if len(row) > 2 else []):
            if q == "*":
                rest = row[0]
            else:
                takes[q] = row[0]
    submit, queue = {}, {}
    first = None
    with open(trace_path) as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            t = calendar.timegm(time.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S"))
            first = t if first is None else min(first, t)
            jid = str(line)  # the simulator's id of a Philly job: its line
            submit[jid] = t
            queue[jid] = takes.get(row["cluster"], rest or row["cluster"])
    start, end = {}, {}
    for row in csv.DictReader(open(runs_path)):
        j = row["job_id"]
        s, e = float(row["start"]), float(row["end"])
        start[j] = min(start.get(j, s), s)
        end[j] = max(end.get(j, e), e)
    by_q = {}
    for j in end:
        sub = submit[j] - first
        by_q.setdefault(queue[j], []).append(((end[j] - sub) / 3600, (start[j] - sub) / 3600))
    print("| queue | jobs | mean JCT h | p99 JCT h | mean wait h | p99 wait h |")
    print("|---|---|---|---|---|---|")
    for q in sorted(by_q):
        v = by_q[q]
        jct = sorted(x[0] for x in v)
        wait = sorted(x[1] for x in v)
        p99 = lambda xs: xs[min(len(xs) - 1, int(0.99 * len(xs)))]
        print("| %s | %d | %.2f | %.1f | %.2f | %.1f |" % (
            q, len(v), sum(jct) / len(v), p99(jct), sum(wait) / len(v), p99(wait)))


if __name__ == "__main__":
    main(*sys.argv[1:4])
