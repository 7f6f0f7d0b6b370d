#!/usr/bin/env bash
# Installs those of the named Debian packages that are not installed yet (as root, or with
# sudo); with all of them present it touches neither apt's lists nor the network.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # --force-unsafe-io (which Docker's Debian images set for every install): dpkg fsyncs every
  # file it unpacks, Boost's headers alone are some 15,000, and a new machine's setup waited on
  # those syncs more than on the network (docs/benchmarks.md, "First run"). The price: a power
  # loss mid-install may leave files empty (`apt-get install --reinstall` repairs them).
  $SUDO apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-unsafe-io \
    "${missing[@]}"
fi
