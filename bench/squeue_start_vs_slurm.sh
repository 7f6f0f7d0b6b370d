#!/usr/bin/env bash
# `squeue --start` against a real Slurm's: tests/slurm/squeue_start_test.sh's workload (a warm-up
# of four 1-GPU jobs, then a burst of jobs with one-minute limits on one node of 4 GPUs, the
# same on both sides) ROUNDS times, with a longer burst than CI's, and both systems' errors over
# all the jobs judged (estimate read right after submitting, against the real start; > 0: started
# earlier than told). Root, slurm-wlm and munge; about 1.5 minutes a round.
#   bench/squeue_start_vs_slurm.sh [BUILD_DIR]        env: ROUNDS (3), BURST, WARM (8), USERS (1;
#   2: two users, the burst alternating between them, as squeue_start_test.sh's USERS)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUILD="${1:-build}"
ROUNDS=${ROUNDS:-3}
export BURST=${BURST:-"2:8 2:8 2:10 2:6 4:8 2:8 1:12 3:8 2:6 4:10 1:8 2:9"}
test -x "$BUILD/corral" || { echo "build $BUILD/corral first" >&2; exit 2; }
OUT=$(mktemp /tmp/squeue-start-bench.XXXXXX)
for r in $(seq 1 "$ROUNDS"); do
  CORRAL=$PWD/$BUILD/corral STRICT=0 OUT=$OUT tests/slurm/squeue_start_test.sh |
    grep -E '^squeue --start' | sed "s/^/round $r: /"
done
python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
for side in ("slurm", "corral"):
    errors = [e for r in rows for e in r[side]["errors_s"]]
    if not errors:
        print(f"{side}: nothing judged"); continue
    absolute = sorted(abs(e) for e in errors)
    p90 = absolute[min(len(absolute) - 1, int(0.9 * len(absolute) + 0.999) - 1)]
    late = sum(1 for e in errors if e < -1)
    print(f"{side}: {len(errors)} jobs judged in {len(rows)} rounds, abs error median "
          f"{statistics.median(absolute)} s, p90 {p90} s, max {absolute[-1]} s; error median "
          f"{statistics.median(errors)} s; late (> 1 s after the estimate) {late} "
          f"({100.0 * late / len(errors):.0f}%)")
PY
rm -f "$OUT"
