#!/usr/bin/env bash
# Installs everything the test suites, benchmarks and fuzzers need besides the build's own
# dependencies (setup.sh, which this runs first): what CI needs on a clean machine.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --containers
PACKAGES=(
  ccache           # scripts/build.sh keeps objects between builds and worktrees
  clang-format
  libgtest-dev libgmock-dev libbenchmark-dev
  sqlite3 postgresql
  postgresql-15-auto-failover pg-auto-failover-cli  # the failover test's formation (tests/pg_failover_test.cc)
  procps iproute2 curl
  nginx-light      # the dataset source served over a throttled link (tests/datasets/url_source_test.sh)
  systemd          # systemd-analyze verify, for the units (tests/units_test.py)
  prometheus
  python3 python3-torch
  python3-cloudpickle  # the Python client's executor (python/corral/executor.py)
  python3-aiosmtpd msmtp  # job mail through a real SMTP client into a real sink (tests/notify_smtp_test.py)
  chromium nodejs
  slurm-wlm munge  # the differential test against a real Slurm (tests/slurm), with sacct:
  slurmdbd mariadb-server  # its accounting (slurmdbd over a MariaDB the test starts)
  clang            # libFuzzer targets (scripts/fuzz.sh)
  lld              # CI's links (scripts/test.sh): a third of GNU ld's time on the tests' executables
  busybox-static docker-registry  # the container tests' image and registry
  jupyter-notebook python3-ipykernel python3-websocket  # corral notebook (interactive_test)
  patchelf         # scripts/bundle.sh: the portable bundle's run paths (tests/bundle_test.sh)
)
./scripts/apt-install.sh "${PACKAGES[@]}"
# npm: Debian's package, unless the nodejs installed already carries its own (NodeSource's).
if ! command -v npm >/dev/null; then ./scripts/apt-install.sh npm; fi
# The browser test's driver, pinned by tests/browser/package-lock.json, into a directory git
# ignores (tests/browser/node_modules).
if [ ! -d tests/browser/node_modules/puppeteer-core ]; then
  (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
fi
