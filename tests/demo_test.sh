#!/usr/bin/env bash
# `corral up --demo`, as scripts/demo.sh runs it: every sample job ends as expected (it exits 1
# otherwise), and the gang's two replicas ran on two different nodes.
set -euo pipefail
dir="$(mktemp -d /tmp/corral-demo-test.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
if ! "$CORRAL" up --agents 2 --gpus-per-agent 4 --state-dir "$dir" --listen "127.0.0.1:$port" \
    --no-user-config --demo >"$dir/out" 2>&1; then
  cat "$dir/out" "$dir/head.log"
  exit 1
fi
cat "$dir/out"
gang="$(grep 'ddp-2-nodes:' "$dir/out")"
[[ $gang == *succeeded* && $gang == *node1:* && $gang == *node2:* ]] || {
  echo "the gang did not end succeeded on node1 and node2: $gang"
  exit 1
}
