#!/usr/bin/env bash
# Builds Corral into build/ (or $BUILD_DIR). Extra arguments go to cmake.
# ccache (Debian's), where installed, keeps objects between builds: a machine that built the tree
# before rebuilds only what changed, whatever the build directory (CCACHE_BASEDIR makes paths
# relative, so worktrees and clean clones share the cache).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd .. && pwd)}"
  export CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# UNITY_BUILD=ON (scripts/demo.sh): batches of sources as one translation unit, for a build from
# nothing (CMakeLists.txt). Named on every run, so that a build/ that the demo configured
# compiles file by file again for a developer, whose edits then recompile one file, not a batch.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_UNITY_BUILD="${UNITY_BUILD:-OFF}" "${launcher[@]}" "$@" >/dev/null
# JOBS: at most that many compiles at a time (ninja's default: the cores + 2).
ninja -C "$BUILD_DIR" ${JOBS:+-j "$JOBS"} ${BUILD_TARGETS:-}
