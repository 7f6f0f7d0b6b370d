#!/usr/bin/env bash
# Installs, builds and runs every test: the multi-process suites on an -O2 build (warnings are
# errors), the unit tests under ASan+UBSan, then each libFuzzer target for 60 s. Prints each
# stage's time, and a table of them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"
stages=()
stage_start=$SECONDS
stage() {  # ends the stage under way (if any) and starts the next one, named $1
  if [ -n "${stage_name:-}" ]; then stages+=("$(printf '%-44s %5d s' "$stage_name" $((SECONDS - stage_start)))"); fi
  stage_name="$1"
  stage_start=$SECONDS
  [ -n "$stage_name" ] && echo "== $stage_name (at ${SECONDS}s)"
  return 0
}

stage "setup (apt-get, npm)"
./scripts/setup-tests.sh

# -O2 without debug info, and -g1 under ASan: CI builds twice on two cores, and full debug info
# costs more compile time than anything else here. (Not -O3: GCC 12 reports a false
# -Werror=restrict inside std::string there.) The unit tests are built and run once, under
# ASan+UBSan; the benchmarks are built here (with -Werror), and the emulated agents' test runs.
stage "build (-O2, -Werror, no unit tests)"
# Tests and system suites on explicitly: demo.sh configures the same build/ without.
BUILD_DIR=build BUILD_TYPE=RelWithDebInfo ./scripts/build.sh -DCORRAL_WERROR=ON \
  -DCORRAL_TESTS=ON -DCORRAL_UNIT_TESTS=OFF -DCORRAL_SYSTEM_TESTS=ON -DCORRAL_BENCH=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG"
stage "multi-process suites"
# integration and the suites that need root or third-party servers (they skip with a message
# where they cannot run, and fail under CI=true: pg starts its own PostgreSQL as root);
# browser: the dashboard in headless Chromium; package: builds the Debian packages twice (an
# upgrade), installs, upgrades and purges them (root).
(cd build && ctest --output-on-failure -j "$JOBS" \
  -L 'integration|observability|ddp|security|pg|slurm|chaos|browser|package|bench|interactive' --timeout 900)

stage "build (ASan+UBSan, unit tests)"
BUILD_DIR=build-asan BUILD_TYPE=Debug ./scripts/build.sh -DCORRAL_WERROR=ON -DCORRAL_SANITIZE=ON \
  -DCORRAL_TESTS=ON -DCORRAL_UNIT_TESTS=ON -DCORRAL_BENCH=OFF -DCORRAL_SYSTEM_TESTS=OFF \
  -DCMAKE_CXX_FLAGS_DEBUG=-g1
stage "unit tests under ASan+UBSan"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j "$JOBS" -L unit --timeout 900)
# clang builds only what the five targets link; a finding fails CI (scripts/fuzz.sh).
stage "fuzzing, 60 s per target under ASan+UBSan"
./scripts/fuzz.sh
stage ""
echo "== stage times"
printf '%s\n' "${stages[@]}"
echo "== all tests passed (${SECONDS}s)"
