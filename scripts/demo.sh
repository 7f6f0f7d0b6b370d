#!/usr/bin/env bash
# Installs, builds, and runs Corral's main job: a local cluster (head + 2 agents x 4 simulated
# GPUs, SQLite store) that runs sample jobs, one of them multi-GPU, and prints their outcome.
# Only what building and running need: no test dependencies, only the two binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== install the build's dependencies (at ${SECONDS}s)"
./scripts/setup.sh
echo "== build corral and corral-monitor (at ${SECONDS}s)"
# -Og without debug info: a newcomer waits for the compiler, not for the sample jobs, and -Og
# costs about two thirds of -O2's compile time (docs/benchmarks.md, "First run"). Packages and
# scripts/build.sh build -O2 (a cluster that serves real jobs).
# A unity build (batches of 16 sources as one translation unit) parses the heavy headers once a
# batch instead of once a file: about half the CPU of a file-by-file build from nothing.
export BUILD_DIR="${BUILD_DIR:-build}"
UNITY_BUILD=ON BUILD_TARGETS="corral corral-monitor" BUILD_TYPE=RelWithDebInfo ./scripts/build.sh \
  -DCORRAL_TESTS=OFF -DCORRAL_BENCH=OFF -DCORRAL_SYSTEM_TESTS=OFF \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -DNDEBUG"
echo "== run a local cluster and its sample jobs (at ${SECONDS}s)"
STATE_DIR="${STATE_DIR:-$(mktemp -d /tmp/corral-demo.XXXXXX)}"
exec "./$BUILD_DIR/corral" up --agents 2 --gpus-per-agent 4 --state-dir "$STATE_DIR" \
  --listen "${CORRAL_LISTEN:-127.0.0.1:7070}" --demo "$@"
