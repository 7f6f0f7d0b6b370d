#!/usr/bin/env bash
# Builds the libFuzzer targets (Debian's clang, ASan+UBSan) and runs each for FUZZ_SECONDS
# (default 60) on a scratch corpus seeded from its committed one, JOBS targets at a time, with
# a fixed seed (FUZZ_SEED, default 1; 0: random). Fails if any target finds a crash, a leak or
# a timeout; the input is left in build-fuzz/findings/.
#
# A fixed seed does not make two runs the same: the inputs libFuzzer derives from comparisons
# hold addresses (ASLR), and a faster machine gets further in the time. Before a submission,
# hunt longer with random seeds (FUZZ_SEED=0 FUZZ_SECONDS=300) so that CI's minute finds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${FUZZ_SECONDS:-60}"
SEED="${FUZZ_SEED:-1}"
JOBS="${JOBS:-$(nproc)}"
TARGETS=(job_spec_json job_spec_yaml http_target agent_protocol trace)

# Through build.sh: its ccache keeps the clang objects too, so a machine that fuzzed the tree
# before compiles only what changed.
CXX=clang++ CC=clang BUILD_DIR=build-fuzz BUILD_TYPE=RelWithDebInfo \
  BUILD_TARGETS="${TARGETS[*]/#/fuzz_}" ./scripts/build.sh -DCORRAL_FUZZ=ON -DCORRAL_WERROR=OFF \
  -DCORRAL_ONLY="core;sched;store;head;sim;slurm;cli" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1"

rm -rf build-fuzz/findings build-fuzz/corpus-run
mkdir -p build-fuzz/findings build-fuzz/corpus-run
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_one() {
  local t="$1" start=$SECONDS
  # The seeds as files: the committed corpus stays as it is; what the run adds goes to scratch.
  local seeds
  seeds=$(find "fuzz/corpus/$t" -type f | LC_ALL=C sort | paste -sd, -)
  mkdir -p "build-fuzz/corpus-run/$t"
  if "build-fuzz/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -seed="$SEED" -timeout=10 -print_final_stats=1 \
    -seed_inputs="$seeds" -artifact_prefix="build-fuzz/findings/$t-" "build-fuzz/corpus-run/$t" \
    >"build-fuzz/findings/$t.log" 2>&1; then
    echo "fuzz_$t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/findings/$t.log" |
      grep -o '[0-9]*$') inputs in $((SECONDS - start)) s, nothing found"
  else
    echo "fuzz_$t: FOUND A FAILURE (build-fuzz/findings/$t.log):"
    tail -40 "build-fuzz/findings/$t.log"
    return 1
  fi
}
export -f run_one
export SEED SECONDS_EACH
printf '%s\n' "${TARGETS[@]}" | xargs -P "$JOBS" -I{} bash -c "run_one {}"
