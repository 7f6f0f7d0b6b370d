#!/usr/bin/env bash
# One setting of `corral simulate` on philly-users, judged over the noise: the half's average
# and p99 JCT at 512 and 640 GPUs, each run with the periodic pass every 58, 59, 60, 61 and 62
# seconds. The tick changes no rule, only when passes fall, yet it moves a single run's
# average by as much as a neighbouring setting does (docs/simulation.md, "Predictions from
# users' history"): compare settings by the mean over the ticks, not by one run.
#
#   bench/philly_users_ticks.sh [-H train|test] [-t "58 59 60 61 62"] [-j 2] [-G] CORRAL_BIN [FLAGS...]
#
# -H train: the first half (--end 4473032s, what choices are made on; default); test: the
# second half after the first (--report-from 50%). FLAGS go to every run (e.g.
# --predict-levels none). Prints, per size, the mean (sample standard deviation) and range
# of the average JCT and the mean p99 JCT, in hours. -G also runs `--predict none` and
# `--predict oracle` (without FLAGS) at the same ticks and prints the share of the gap between
# their means that the setting's mean recovers.
set -euo pipefail
HALF=train
TICKS="58 59 60 61 62"
JOBS=2
GAP=0
while getopts "H:t:j:G" o; do
  case $o in
    H) HALF=$OPTARG ;;
    t) TICKS=$OPTARG ;;
    j) JOBS=$OPTARG ;;
    G) GAP=1 ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '8p' "$0" | sed 's/^# *//' >&2; exit 2; }
[ "$JOBS" -ge 1 ] 2>/dev/null || { echo "-j must be a positive number, not '$JOBS'" >&2; exit 2; }
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
# run NAME [FLAGS...]: one setting at every tick and size, at most JOBS at a time.
run() {
  local name=$1
  shift
  for tick in $TICKS; do
    for gpus in 512 640; do
      "$BIN" simulate --trace "$TRACE" --gpus "$gpus" "${RANGE[@]}" --policy corral \
        --no-timing -o json --tick "${tick}s" "$@" >"$out/$name.$gpus.$tick.json" &
      running=$((running + 1))
      if [ "$running" -ge "$JOBS" ]; then
        wait -n
        running=$((running - 1))
      fi
    done
  done
}
run setting "$@"
if [ "$GAP" = 1 ]; then
  run none --predict none
  run oracle --predict oracle
fi
wait
python3 - "$out" "$HALF" "$TICKS" "$GAP" <<'PY'
import json, statistics, sys
out, half, ticks, gap = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4] == "1"
def hours(name, gpus, key):
    return [json.load(open(f"{out}/{name}.{gpus}.{t}.json"))[key] / 3600 for t in ticks]
cols = []
for gpus in (512, 640):
    avg = hours("setting", gpus, "avg_jct")
    p99 = hours("setting", gpus, "p99_jct")
    sd = statistics.stdev(avg) if len(avg) > 1 else 0.0
    col = (f"{gpus} GPUs {statistics.mean(avg):.2f} ({sd:.2f}) "
           f"[{min(avg):.2f}-{max(avg):.2f}] p99 {statistics.mean(p99):.0f}")
    if gap:
        none = statistics.mean(hours("none", gpus, "avg_jct"))
        oracle = statistics.mean(hours("oracle", gpus, "avg_jct"))
        share = (none - statistics.mean(avg)) / (none - oracle) if none != oracle else 0.0
        col += f" gap {100 * share:.1f}% (none {none:.2f}, oracle {oracle:.2f})"
    cols.append(col)
print(f"{half}: " + " | ".join(cols))
PY
