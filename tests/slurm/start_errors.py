#!/usr/bin/env python3
"""The errors of `squeue --start` on a real Slurm and on Corral's shim, for the same workload
(tests/slurm/squeue_start_test.sh). Usage:

  start_errors.py [--strict 1] [--tol-max S] [--tol-median S] [--out FILE] DIR

DIR holds, per side (slurm, corral): start-SIDE (the first `squeue --start` listing in which
every pending job had a start time), told-SIDE (the epoch it was read at), ids-SIDE ("burstK ID"
lines) and started-SIDE ("ID StartTime" lines, StartTime as `scontrol show job` prints it).

Both listings are read by one parser, Slurm's columns by their header: Corral's header must be
Slurm's with CONFIDENCE before NODELIST(REASON), every row as many fields as the header, ST PD,
START_TIME in Slurm's format (YYYY-MM-DDTHH:MM:SS) and CONFIDENCE high, medium or low.
Error = estimate - real start in seconds (> 0: the job started earlier than told); late: started
more than a second after its estimate (the listings' resolution). Prints one line per side.
With --strict 1 exits 1 where a listing does not parse, a side judged fewer than two jobs, or
Corral's largest absolute error exceeds --tol-max or its median --tol-median.
"""
import argparse
import calendar
import json
import os
import re
import statistics
import sys
import time

TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")
SLURM_COLUMNS = ["JOBID", "PARTITION", "NAME", "USER", "ST", "START_TIME", "NODES", "SCHEDNODES",
                 "NODELIST(REASON)"]
CONFIDENCES = {"high", "medium", "low"}


def epoch(text):
    """Seconds since the epoch of a Slurm time printed in UTC (the test sets TZ=UTC)."""
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def parse_listing(path, side, problems):
    """{job id: row as {column: value}} of a `squeue --start` listing."""
    lines = [line for line in open(path).read().splitlines() if line.strip()]
    if not lines:
        problems.append(f"{side}: the listing is empty")
        return {}
    header = lines[0].split()
    want = list(SLURM_COLUMNS)
    if side == "corral":
        want.insert(want.index("NODELIST(REASON)"), "CONFIDENCE")
    if header != want:
        problems.append(f"{side}: header {header}, want {want}")
        return {}
    rows = {}
    for line in lines[1:]:
        fields = line.split()
        if len(fields) != len(header):
            problems.append(f"{side}: row {line!r} has {len(fields)} fields, the header {len(header)}")
            continue
        row = dict(zip(header, fields))
        if row["ST"] != "PD":
            problems.append(f"{side}: row {line!r} is not pending")
        if not TIME_RE.match(row["START_TIME"]):
            problems.append(f"{side}: START_TIME {row['START_TIME']!r} is not Slurm's format")
            continue
        if side == "corral" and row["CONFIDENCE"] not in CONFIDENCES:
            problems.append(f"{side}: CONFIDENCE {row['CONFIDENCE']!r} is not one of {CONFIDENCES}")
        rows[row["JOBID"]] = row
    return rows


def side_errors(d, side, problems):
    rows = parse_listing(os.path.join(d, f"start-{side}"), side, problems)
    told = float(open(os.path.join(d, f"told-{side}")).read().strip())
    ids = [line.split()[1] for line in open(os.path.join(d, f"ids-{side}")) if line.strip()]
    started = {}
    for line in open(os.path.join(d, f"started-{side}")):
        fields = line.split()
        if len(fields) == 2 and TIME_RE.match(fields[1]):
            started[fields[0]] = epoch(fields[1])
    jobs = []
    for job_id, row in rows.items():
        if job_id not in ids:
            problems.append(f"{side}: job {job_id} of the listing is not the workload's")
            continue
        if job_id not in started:
            problems.append(f"{side}: job {job_id} has no real start")
            continue
        est = epoch(row["START_TIME"])
        jobs.append({"job": job_id, "estimate": est, "start": started[job_id],
                     "error_s": est - started[job_id], "told_ahead_s": round(est - told, 1),
                     "confidence": row.get("CONFIDENCE", "")})
    return jobs


def summary(side, jobs):
    errors = [j["error_s"] for j in jobs]
    absolute = [abs(e) for e in errors]
    return {
        "side": side,
        "judged": len(jobs),
        "abs_error_median_s": statistics.median(absolute) if jobs else None,
        "abs_error_max_s": max(absolute) if jobs else None,
        "error_median_s": statistics.median(errors) if jobs else None,
        "late": sum(1 for e in errors if e < -1),
        "errors_s": errors,
        "confidence": [j["confidence"] for j in jobs],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--strict", type=int, default=1)
    ap.add_argument("--tol-max", type=float, default=5)
    ap.add_argument("--tol-median", type=float, default=3)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    problems = []
    sums = {}
    for side in ("slurm", "corral"):
        sums[side] = summary(side, side_errors(args.dir, side, problems))
        s = sums[side]
        print(f"squeue --start {side}: judged {s['judged']} abs error median "
              f"{s['abs_error_median_s']} s max {s['abs_error_max_s']} s, error median "
              f"{s['error_median_s']} s, late {s['late']}/{s['judged']}; errors (estimate - start, s) "
              f"{s['errors_s']} {' '.join(c for c in s['confidence'] if c)}")
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(sums) + "\n")
    for side, s in sums.items():
        if s["judged"] < 2:
            problems.append(f"{side}: {s['judged']} jobs judged, want at least 2 (more than fit)")
    c = sums["corral"]
    if c["judged"] >= 2:
        if c["abs_error_max_s"] > args.tol_max:
            problems.append(f"corral: largest error {c['abs_error_max_s']} s > {args.tol_max} s")
        if c["abs_error_median_s"] > args.tol_median:
            problems.append(f"corral: median error {c['abs_error_median_s']} s > {args.tol_median} s")
    for p in problems:
        print(("FAIL: " if args.strict else "note: ") + p)
    if problems and args.strict:
        return 1
    print("PASS" if not problems else "done (not strict)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
