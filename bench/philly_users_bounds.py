#!/usr/bin/env python3
"""How well each run-time predictor of philly-users ranks a job's true run time: the Spearman
correlation of its median (the point `--predict-rule quantile` orders a fresh job by) with the
run time, and the standard deviation of log(median / run time), per half.

    bench/philly_users_bounds.py [TRACE] [--sigmas 0.5,1,1.5] [--windows 4,64]

Predictors: the oracle bounds of `corral simulate --predict` (src/sim/oracle_bounds.cc, built
again here over the jobs the half simulates: the train half is the first half alone, the test
half the whole trace), oracle-noisy:SIGMA (the same per-job factor), and a history proxy: the
median of the last 16 run times of the job's (user, GPU count) among jobs that had ended by
its submission had they started at once (the estimator's fallbacks: the user's, with fewer
than 4), and "past 16": the last 16 submitted before it, ended or not (a perfectly recent
one-sided window); jobs without either are left out of it.
"""
import argparse
import bisect
import math
import os
from collections import defaultdict

MASK = (1 << 64) - 1
POINTS = 16
MIN_OTHERS = 4
WINDOW = 16
TRAIN_END_S = 4473032


def read(path):
    jobs, submit = [], 0.0
    with open(path) as f:
        next(f)
        for line in f:
            u = line.rstrip("\n").split(",")
            submit += float(u[5])
            jobs.append((submit, "u" + u[1], int(u[2]), int(float(u[6]))))
    return jobs  # (submit s, user, gpus, run time s) in submission order


def points(sorted_v):
    n = len(sorted_v)
    if n == 0:
        return None
    return [max(1, sorted_v[min(max(-(-n * (2 * i + 1) // (2 * POINTS)), 1), n) - 1])
            for i in range(POINTS)]


def median(p):
    return p[POINTS // 2 - 1]  # ConditionalRemainingMs at 0 with q 0.5: point ceil(8) - 1


def groups(jobs):
    ug, u = defaultdict(list), defaultdict(list)
    for r, (_, user, gpus, _) in enumerate(jobs):
        ug[(user, gpus)].append(r)
        u[user].append(r)
    return ug, u


def group_of(jobs, ug, u, r):
    _, user, gpus, _ = jobs[r]
    for g in (ug[(user, gpus)], u[user]):
        if len(g) > MIN_OTHERS:
            return g
    return list(range(len(jobs)))


def user_gpus(jobs):
    ug, u = groups(jobs)
    out = []
    for r in range(len(jobs)):
        g = group_of(jobs, ug, u, r)
        out.append(points(sorted(jobs[k][3] for k in g if k != r)))
    return out


def window(jobs, size=WINDOW):
    ug, u = groups(jobs)
    out = []
    for r in range(len(jobs)):
        g = group_of(jobs, ug, u, r)
        p = g.index(r) if len(g) < len(jobs) else r
        v, before, after = [], p, p + 1
        while len(v) < size and (before > 0 or after < len(g)):
            if before > 0:
                before -= 1
                v.append(jobs[g[before]][3])
            if len(v) < size and after < len(g):
                v.append(jobs[g[after]][3])
                after += 1
        out.append(points(sorted(v)))
    return out


def history(jobs):
    # Ended by submission if started at once: replay the ends in time order.
    ends = sorted((s + d, r) for r, (s, _, _, d) in enumerate(jobs))
    recent_ug, recent_u = defaultdict(list), defaultdict(list)
    seen_ug, seen_u = defaultdict(int), defaultdict(int)
    out, e = [], 0
    for r, (s, user, gpus, _) in enumerate(jobs):
        while e < len(ends) and ends[e][0] <= s:
            k = ends[e][1]
            _, ku, kg, kd = jobs[k]
            for rec, seen, key in ((recent_ug, seen_ug, (ku, kg)), (recent_u, seen_u, ku)):
                rec[key] = (rec[key] + [kd])[-WINDOW:]
                seen[key] += 1
            e += 1
        keys = [(recent_ug, seen_ug, (user, gpus)), (recent_u, seen_u, user)]
        use = next((rec[k] for rec, seen, k in keys if seen[k] >= MIN_OTHERS), None)
        if use is None:
            use = next((rec[k] for rec, _, k in keys if rec[k]), None)
        out.append(points(sorted(use)) if use else None)
    return out


def past(jobs):
    # The last 16 submitted before it, ended or not: the most recent past a window can hold.
    ug, u = groups(jobs)
    out = []
    for r in range(len(jobs)):
        _, user, gpus, _ = jobs[r]
        g = next((g for g in (ug[(user, gpus)], u[user]) if bisect.bisect_left(g, r) >= MIN_OTHERS),
                 None)
        if g is None:
            g = next((g for g in (ug[(user, gpus)], u[user]) if bisect.bisect_left(g, r) > 0), None)
        k = bisect.bisect_left(g, r) if g else 0
        out.append(points(sorted(jobs[i][3] for i in g[max(0, k - WINDOW):k])) if k else None)
    return out


def normal_of_row(row):
    def mix(z):
        z = (z + 0x9E3779B97F4A7C15) & MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    a = mix(2 * row + 1)
    b = mix(a)
    u1 = ((a >> 11) + 0.5) / 9007199254740992.0
    u2 = (b >> 11) / 9007199254740992.0
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def pearson(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def judge(pred, truth):
    pairs = [(p, t) for p, t in zip(pred, truth) if p is not None]
    p, t = [a for a, _ in pairs], [b for _, b in pairs]
    logs = [math.log(max(a, 1) / max(b, 1)) for a, b in pairs]
    m = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (len(logs) - 1))
    return pearson(ranks(p), ranks(t)), sd, len(pairs)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", default=os.path.join(
        here, "../../shared/traces/philly-users/philly_data_training.csv"))
    ap.add_argument("--sigmas", default="0.5,0.7,0.8,1,1.5,2")
    ap.add_argument("--windows", default="4,64", help="oracle-window:N besides 16")
    a = ap.parse_args()
    every = read(a.trace)
    halves = {
        # --end 4473032s: the first half's jobs alone are simulated and reported.
        "train": ([j for j in every if j[0] - every[0][0] < TRAIN_END_S], None),
        # --report-from 50%: the whole trace simulated, jobs from the middle one's submission.
        "test": (every, every[len(every) // 2][0]),
    }
    for half, (jobs, start) in halves.items():
        rows = [r for r, j in enumerate(jobs) if start is None or j[0] >= start]
        truth = [jobs[r][3] for r in rows]
        preds = {"history proxy": history(jobs), "past 16": past(jobs),
                 "oracle-user-gpus": user_gpus(jobs),
                 "oracle-window": window(jobs)}
        for w in a.windows.split(","):
            preds[f"oracle-window:{w}"] = window(jobs, int(w))
        for name, dists in preds.items():
            pred = [median(dists[r]) if dists[r] else None for r in rows]
            rho, sd, n = judge(pred, truth)
            print(f"{half} {name}: spearman {rho:.3f}, log-ratio sd {sd:.2f} ({n} jobs)")
        for s in a.sigmas.split(","):
            pred = [max(1, round(jobs[r][3] * 1000 * math.exp(float(s) * normal_of_row(r))))
                    for r in rows]
            rho, sd, n = judge(pred, [t * 1000 for t in truth])
            print(f"{half} oracle-noisy:{s}: spearman {rho:.3f}, log-ratio sd {sd:.2f}")


if __name__ == "__main__":
    main()
