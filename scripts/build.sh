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
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "${launcher[@]}" "$@" >/dev/null
ninja -C "$BUILD_DIR" ${BUILD_TARGETS:-}
