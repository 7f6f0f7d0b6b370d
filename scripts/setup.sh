#!/usr/bin/env bash
# Installs what building and running Corral's binaries need (Debian 12 packages only): what
# demo.sh needs on a new machine. Nodes that run jobs in images need the container tools too
# (--containers; the corral-agent package recommends them); the test suites' own dependencies are
# in setup-tests.sh. No ccache here: on a new machine every compile misses, and a miss costs more
# than no cache (docs/benchmarks.md, "First run"); setup-tests.sh installs it for CI and developers.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/apt-install.sh \
  cmake ninja-build g++ pkg-config \
  libboost-dev libboost-system-dev libssl-dev \
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev \
  libsqlite3-dev libpq-dev libncurses-dev libarchive-dev libcurl4-openssl-dev
if [ "${1:-}" = --containers ]; then
  ./scripts/apt-install.sh crun skopeo umoci  # the runtime, pulls, unpacking (docs/containers.md)
fi
