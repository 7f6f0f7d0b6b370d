#!/usr/bin/env bash
# Installs, builds, and runs Corral's main job: a local cluster (head + 2 agents x 4 simulated
# GPUs, SQLite store) that runs sample jobs, one of them multi-GPU, and prints their outcome.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
STATE_DIR="${STATE_DIR:-$(mktemp -d /tmp/corral-demo.XXXXXX)}"
exec ./build/corral up --agents 2 --gpus-per-agent 4 --state-dir "$STATE_DIR" \
  --listen "${CORRAL_LISTEN:-127.0.0.1:7070}" --demo "$@"
