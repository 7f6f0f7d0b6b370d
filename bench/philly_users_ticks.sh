#!/usr/bin/env bash
# One setting of `corral simulate` on philly-users, judged over the noise: the half's average
# and p99 JCT at 512 and 640 GPUs, each run with the periodic pass every 58, 59, 60, 61 and 62
# seconds. The tick changes no rule, only when passes fall, yet it moves a single run's
# average by as much as a neighbouring setting does (docs/simulation.md, "Predictions from
# users' history"): compare settings by the mean over the ticks, not by one run.
#
#   bench/philly_users_ticks.sh [-H train|test] [-t "58 59 60 61 62"] [-j 2] CORRAL_BIN [FLAGS...]
#
# -H train: the first half (--end 4473032s, what choices are made on; default); test: the
# second half after the first (--report-from 50%). FLAGS go to every run (e.g.
# --predict-levels none). Prints, per size, the mean (sample standard deviation) and range
# of the average JCT and the mean p99 JCT, in hours.
set -euo pipefail
HALF=train
TICKS="58 59 60 61 62"
JOBS=2
while getopts "H:t:j:" o; do
  case $o in
    H) HALF=$OPTARG ;;
    t) TICKS=$OPTARG ;;
    j) JOBS=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '8p' "$0" | sed 's/^# *//' >&2; exit 2; }
BIN=$1
shift
here="$(cd "$(dirname "$0")/.." && pwd)"
TRACE="${TRACE:-$here/../shared/traces/philly-users/philly_data_training.csv}"
case $HALF in
  train) RANGE=(--end 4473032s) ;;
  test) RANGE=(--report-from 50%) ;;
  *) echo "-H must be train or test, not '$HALF'" >&2; exit 2 ;;
esac
out=$(mktemp -d /tmp/philly-users-ticks.XXXXXX)
trap 'rm -rf "$out"' EXIT
running=0
for tick in $TICKS; do
  for gpus in 512 640; do
    "$BIN" simulate --trace "$TRACE" --gpus "$gpus" "${RANGE[@]}" --policy corral --no-timing \
      -o json --tick "${tick}s" "$@" >"$out/$gpus.$tick.json" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
      wait -n
      running=$((running - 1))
    fi
  done
done
wait
python3 - "$out" "$HALF" "$TICKS" <<'PY'
import json, statistics, sys
out, half, ticks = sys.argv[1], sys.argv[2], sys.argv[3].split()
cols = []
for gpus in (512, 640):
    runs = [json.load(open(f"{out}/{gpus}.{t}.json")) for t in ticks]
    avg = [r["avg_jct"] / 3600 for r in runs]
    p99 = [r["p99_jct"] / 3600 for r in runs]
    sd = statistics.stdev(avg) if len(avg) > 1 else 0.0
    cols.append(f"{gpus} GPUs {statistics.mean(avg):.2f} ({sd:.2f}) "
                f"[{min(avg):.2f}-{max(avg):.2f}] p99 {statistics.mean(p99):.0f}")
print(f"{half}: " + " | ".join(cols))
PY
