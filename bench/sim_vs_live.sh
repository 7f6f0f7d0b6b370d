#!/usr/bin/env bash
# `corral simulate` against a live cluster (a head and two agents of 4 simulated GPUs) on
# longer traces than CI's: runs tests/sim_live_test.cc's comparison for each JOBS and SEED and
# prints its figures (Spearman of the start order, average JCT live and simulated, mean and
# largest start difference, preempted jobs). Each trace runs in real time: about 2 s a job.
#   bench/sim_vs_live.sh [BUILD_DIR] [JOBS...]      e.g. bench/sim_vs_live.sh build 28 60 120
set -euo pipefail
BUILD="${1:-build}"
shift || true
SIZES=("${@:-28 60}")
SEEDS="${SEEDS:-1 2}"
test -x "$BUILD/tests/sim_live_test" || { echo "build $BUILD/tests/sim_live_test first" >&2; exit 2; }
for n in ${SIZES[@]}; do
  for seed in $SEEDS; do
    line=$(CORRAL_SIM_LIVE_JOBS=$n CORRAL_SIM_LIVE_SEED=$seed "$BUILD/tests/sim_live_test" \
      --gtest_filter='SimLive.*' 2>&1 | grep -E '^jobs [0-9]+ spearman' || true)
    echo "seed $seed ${line:-jobs $n: the run failed}"
  done
done
