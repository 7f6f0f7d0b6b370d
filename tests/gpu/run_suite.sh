#!/usr/bin/env bash
# Corral's GPU suite (docs/gpu-suite.md): a head and an agent from a bundle on this machine's
# GPUs, checked against nvidia-smi, NVML and CUDA programs; one table at the end, also written
# to $OUT/gpu_table.txt (or --table FILE). Needs only the bundle, bash and python3.
#   tests/gpu/run_suite.sh BUNDLE_DIR|BUNDLE.tar.gz [--fake] [--table FILE]
# Exit 0: every check passed or was skipped; 1: a check failed; 77: no NVIDIA driver here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bundle=${1:?usage: run_suite.sh BUNDLE_DIR|BUNDLE.tar.gz [--fake] [--table FILE]}
shift
if [ -f "$bundle" ]; then  # a tarball: unpack it beside a temporary work directory
  dir="$(mktemp -d /tmp/corral-bundle.XXXXXX)"
  tar -xzf "$bundle" -C "$dir"
  bundle="$(echo "$dir"/corral-bundle-*)"
fi
exec python3 "$here/gpu_suite.py" "$bundle" "$@"
