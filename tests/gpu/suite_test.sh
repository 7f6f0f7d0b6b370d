#!/usr/bin/env bash
# ctest's entry to the GPU suite: a bundle of this build (scripts/bundle.sh), then
# tests/gpu/run_suite.sh on it.
#   suite_test.sh          label gpu: this machine's NVIDIA GPUs; exit 77 (skipped) without a
#                          driver. Never in CI's labels: CI machines have no GPU.
#   suite_test.sh --fake   label gpu-sharing: the fake NVML and stub libcuda (FAKE_NVML,
#                          STUB_CUDA_DIR), so that CI runs every check's path and the table's
#                          shape: every row the real run prints, none failed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
BUILD_DIR=${BUILD_DIR:?the build directory}
W="$(mktemp -d /tmp/corral-gpu-suite-test.XXXXXX)"
trap 'rm -rf "$W"' EXIT
out="$(BUNDLE_NO_BUILD=1 OUT_DIR="$W/dist" "$here/../../scripts/bundle.sh" "$BUILD_DIR")"
dir="${out%%$'\n'*}"
rc=0
"$here/run_suite.sh" "$dir" "$@" --table "$W/table" || rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "${1:-}" = --fake ] || exit "$rc"
# The fake run: the table has every check, in order, and the format the real run has.
table="$(cat "$W/table")"
for check in "node check (agent --check)" "discovery: agent == nvidia-smi" \
  "isolation: CUDA_VISIBLE_DEVICES" "isolation: driver-API program (probe)" \
  "shares: two 0.5 jobs at once on one GPU" "shares: memory cap, driver API (rc 2 = OOM)" \
  "shares: MPS compute cap" "health: ECC counts, agent == nvidia-smi" "health: GPU 0 temperature" \
  "containers: CDI devices in an image" "metrics: /metrics utilisation while a job computes"; do
  grep -qF "$check" <<<"$table" || { echo "FAIL: the table lacks '$check'"; exit 1; }
done
head -1 <<<"$table" | grep -qE '^check +\| result +\| figure$' || { echo "FAIL: header"; exit 1; }
if grep -E '^[^|]+\| FAIL' <<<"$table"; then echo "FAIL: a check failed on the fakes"; exit 1; fi
[ "$rc" -eq 0 ] || { echo "FAIL: run_suite.sh exited $rc"; exit 1; }
echo "PASS: the GPU suite's table on the fake NVML and stub libcuda"
