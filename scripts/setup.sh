#!/usr/bin/env bash
# Installs Corral's build and test dependencies (Debian 12 packages only).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PACKAGES=(
  cmake ninja-build g++ pkg-config clang-format ccache
  libboost-dev libboost-system-dev libssl-dev
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev sqlite3
  libpq-dev postgresql
  libgtest-dev libgmock-dev libbenchmark-dev
  procps iproute2 curl
  libncurses-dev
  prometheus
  python3-torch
  chromium nodejs
  slurm-wlm munge  # the differential test against a real Slurm (tests/slurm)
  clang            # libFuzzer targets (scripts/fuzz.sh)
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# npm: Debian's package, unless the nodejs installed already carries its own (NodeSource's).
if ! command -v npm >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq --no-install-recommends npm
fi
# The browser test's driver, pinned by tests/browser/package-lock.json, into a directory git
# ignores (tests/browser/node_modules).
browser_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/browser"
if [ ! -d "$browser_dir/node_modules/puppeteer-core" ]; then
  (cd "$browser_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
