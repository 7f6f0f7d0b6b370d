#!/usr/bin/env bash
# Installs what building and running Corral's binaries need (Debian 12 packages only): what
# demo.sh needs on a new machine. The test suites' own dependencies are in setup-tests.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/apt-install.sh \
  cmake ninja-build g++ pkg-config ccache \
  libboost-dev libboost-system-dev libssl-dev \
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev \
  libsqlite3-dev libpq-dev libncurses-dev \
  crun skopeo umoci  # containers: the runtime, pulls, unpacking (docs/containers.md)
