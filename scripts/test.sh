#!/usr/bin/env bash
# Installs, builds and runs every test: the unit and integration tests (warnings are errors),
# then the unit tests again under ASan+UBSan, then each libFuzzer target for 60 s.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-tests.sh
JOBS="${JOBS:-$(nproc)}"

# -O2 without debug info, and -g1 under ASan: CI builds everything twice on two cores, and
# full debug info costs more compile time than anything else here. (Not -O3: GCC 12 reports a
# false -Werror=restrict inside std::string there.)
echo "== build (-O2, -Werror) (at ${SECONDS}s)"
# Tests, benchmarks and system suites on explicitly: demo.sh configures the same build/ without.
BUILD_DIR=build BUILD_TYPE=RelWithDebInfo ./scripts/build.sh -DCORRAL_WERROR=ON \
  -DCORRAL_TESTS=ON -DCORRAL_BENCH=ON -DCORRAL_SYSTEM_TESTS=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG"
echo "== tests (at ${SECONDS}s)"
# unit and integration, and the suites that need root or third-party servers (they skip with
# a message where they cannot run: pg starts its own PostgreSQL as root); the multi-process
# ones run once, not again under ASan. browser: the dashboard in headless Chromium. package:
# builds the Debian packages twice (an upgrade), installs, upgrades and purges them (root).
(cd build && ctest --output-on-failure -j "$JOBS" -L 'unit|integration|observability|ddp|security|pg|slurm|chaos|browser|package' --timeout 900)

echo "== build (ASan+UBSan) (at ${SECONDS}s)"
BUILD_DIR=build-asan BUILD_TYPE=Debug ./scripts/build.sh -DCORRAL_WERROR=ON -DCORRAL_SANITIZE=ON \
  -DCORRAL_TESTS=ON -DCORRAL_BENCH=OFF -DCORRAL_SYSTEM_TESTS=OFF -DCMAKE_CXX_FLAGS_DEBUG=-g1
echo "== tests under ASan+UBSan (at ${SECONDS}s)"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# unit only: the multi-process integration suites ran above and found nothing under ASan in
# earlier rounds; running them again cost CI five minutes.
(cd build-asan && ctest --output-on-failure -j "$JOBS" -L unit --timeout 900)
# clang builds only what the five targets link; a finding fails CI (scripts/fuzz.sh).
echo "== fuzzing, 60 s per target under ASan+UBSan (at ${SECONDS}s)"
./scripts/fuzz.sh
echo "== all tests passed (${SECONDS}s)"
