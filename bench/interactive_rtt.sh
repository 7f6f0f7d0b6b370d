#!/usr/bin/env bash
# The keystroke round trip of `corral run --pty` (docs/interactive.md): a key typed on a real
# terminal to its echo back, through the head and the agent, on a plain HTTP `corral up` and a
# --tls one; and the same on a local pseudo-terminal (`script`'s floor: no network at all).
#
#   bench/interactive_rtt.sh [-n KEYSTROKES]
set -euo pipefail
N=200
while getopts "n:" o; do
  case $o in
    n) N=$OPTARG ;;
    *) exit 2 ;;
  esac
done
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${BIN:-$here/build}"
work=$(mktemp -d /tmp/corral-rtt-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
"$bin/corral" up --no-user-config --agents 1 --gpus-per-agent 2 --state-dir "$work/plain" \
  --listen "127.0.0.1:$port" >"$work/plain.log" 2>&1 &
pids+=($!)
"$bin/corral" up --no-user-config --agents 1 --gpus-per-agent 2 --state-dir "$work/tls" \
  --listen "127.0.0.1:$((port + 1))" --tls >"$work/tls.log" 2>&1 &
pids+=($!)
for i in $(seq 120); do
  grep -q "corral up: head on" "$work/plain.log" && grep -q "corral up: head on" "$work/tls.log" &&
    break
  sleep 0.5
done
grep -q "corral up: head on" "$work/tls.log" || { cat "$work"/*.log; exit 1; }
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$here/bench/interactive_rtt.py" "$N" env
CORRAL_CONFIG=/nonexistent CORRAL_ADDR="http://127.0.0.1:$port" \
  CORRAL_TOKEN="$(cat "$work/plain/admin.token")" \
  /usr/bin/python3 "$here/bench/interactive_rtt.py" "$N" "$bin/corral" run --pty --
CORRAL_CONFIG=/nonexistent CORRAL_ADDR="https://127.0.0.1:$((port + 1))" \
  CORRAL_TOKEN="$(cat "$work/tls/admin.token")" CORRAL_CA="$work/tls/tls/ca.pem" \
  /usr/bin/python3 "$here/bench/interactive_rtt.py" "$N" "$bin/corral" run --pty --
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
