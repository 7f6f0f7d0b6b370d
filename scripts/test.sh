#!/usr/bin/env bash
# Installs, builds and runs every test: the multi-process suites on an -O2 build (warnings are
# errors), the unit tests under ASan+UBSan, then each libFuzzer target for 60 s. Prints each
# stage's time, and a table of them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"
stages=()
stage_start=$SECONDS
# CPU seconds (user + system) of every process this script has waited for: a stage's CPU time
# can be compared between a quiet and a loaded machine, where its wall time cannot.
cpu_file=$(mktemp)
children_cpu() {  # sets cpu_now; called in this shell (in $(...) a subshell has no children yet)
  times >"$cpu_file"
  cpu_now=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] }; printf "%d", t }' "$cpu_file")
}
children_cpu
stage_cpu=$cpu_now
stage() {  # ends the stage under way (if any) and starts the next one, named $1
  local cpu
  children_cpu
  cpu=$cpu_now
  if [ -n "${stage_name:-}" ]; then
    stages+=("$(printf '%-44s %5d s wall %6d s CPU' "$stage_name" $((SECONDS - stage_start)) $((cpu - stage_cpu)))")
  fi
  stage_name="$1"
  stage_start=$SECONDS
  stage_cpu=$cpu
  [ -n "$stage_name" ] && echo "== $stage_name (at ${SECONDS}s)"
  return 0
}

# ctest in DIR with the remaining arguments. Under CI=true a test that did not run (ctest's
# "Not Run": skipped by SKIP_RETURN_CODE 77, GTEST_SKIP, or a missing executable) fails CI,
# whatever the test itself made of it: CI installs everything the suites need.
run_ctest() {
  local dir=$1 log
  shift
  log=$(mktemp)
  (cd "$dir" && ctest "$@") 2>&1 | tee "$log"
  if [ "${CI:-}" = true ] && grep -qE '\*\*\*(Skipped|Not Run)|tests did not run' "$log"; then
    echo "== CI=true and the tests above did not run: a failure"
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

stage "setup (apt-get, npm)"
./scripts/setup-tests.sh

# -O2 without debug info, and -g1 under ASan: CI builds twice on two cores, and full debug info
# costs more compile time than anything else here. (Not -O3: GCC 12 reports a false
# -Werror=restrict inside std::string there.) The unit tests are built and run once, under
# ASan+UBSan; the benchmarks are built here (with -Werror), and the emulated agents' test runs.
# lld links the ~100 test executables in a third of GNU ld's time (docs/benchmarks.md); links
# are never cached, so this counts on a warm machine too.
linker=()
if command -v ld.lld >/dev/null; then
  linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld)
fi
stage "build (-O2, -Werror, no unit tests)"
# Tests and system suites on explicitly: demo.sh configures the same build/ without. File by
# file: this build is also the check that every source compiles on its own.
BUILD_DIR=build BUILD_TYPE=RelWithDebInfo ./scripts/build.sh -DCORRAL_WERROR=ON \
  -DCORRAL_TESTS=ON -DCORRAL_UNIT_TESTS=OFF -DCORRAL_SYSTEM_TESTS=ON -DCORRAL_BENCH=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" "${linker[@]}"
stage "multi-process suites"
# integration and the suites that need root or third-party servers (they skip with a message
# where they cannot run, and fail under CI=true: pg starts its own PostgreSQL as root);
# chaos: SIGKILLs of the head and agents for 15 s, a network partition (with SIGKILLs during
# it); browser: the dashboard in headless Chromium; package: builds the Debian packages twice
# (an upgrade), installs, upgrades and purges them (root); container: jobs in OCI images (crun,
# a loopback registry); gpu-sharing: the share shim under a stub libcuda, shares on a real
# cluster; interactive: corral run --pty through a real terminal, exec, salloc.
run_ctest build --output-on-failure -j "$JOBS" \
  -L 'integration|observability|ddp|security|pg|slurm|chaos|browser|package|bench|container|gpu-sharing|interactive' --timeout 900

stage "build (ASan+UBSan, unit tests)"
# Only the unit tests and what they run: not the binaries, which the -O2 stage built and ran.
# The libraries in batches (UNITY_BUILD: 16 sources a unit; the test executables stay file by
# file): under ASan a third of the CPU of compiling them one by one (docs/benchmarks.md).
BUILD_DIR=build-asan BUILD_TYPE=Debug BUILD_TARGETS=unit_tests UNITY_BUILD=ON ./scripts/build.sh \
  -DCORRAL_WERROR=ON -DCORRAL_SANITIZE=ON -DCORRAL_TESTS=ON -DCORRAL_UNIT_TESTS=ON \
  -DCORRAL_BENCH=OFF -DCORRAL_SYSTEM_TESTS=OFF -DCMAKE_CXX_FLAGS_DEBUG=-g1 "${linker[@]}"
stage "unit tests under ASan+UBSan"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_ctest build-asan --output-on-failure -j "$JOBS" -L unit --timeout 900
# clang builds only what the five targets link; a finding fails CI (scripts/fuzz.sh).
stage "fuzzing, 60 s per target under ASan+UBSan"
./scripts/fuzz.sh
stage ""
echo "== stage times"
printf '%s\n' "${stages[@]}"
echo "== all tests passed (${SECONDS}s)"
