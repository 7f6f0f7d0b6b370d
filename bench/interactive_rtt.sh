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
WORK_PREFIX=rtt-bench AGENTS=1 GPUS=2 . "$(dirname "$0")/lib/plain_and_tls_clusters.sh"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$here/bench/interactive_rtt.py" "$N" env
CORRAL_CONFIG=/nonexistent CORRAL_ADDR="http://127.0.0.1:$port" \
  CORRAL_TOKEN="$(cat "$work/plain/admin.token")" \
  /usr/bin/python3 "$here/bench/interactive_rtt.py" "$N" "$bin/corral" run --pty --
CORRAL_CONFIG=/nonexistent CORRAL_ADDR="https://127.0.0.1:$((port + 1))" \
  CORRAL_TOKEN="$(cat "$work/tls/admin.token")" CORRAL_CA="$work/tls/tls/ca.pem" \
  /usr/bin/python3 "$here/bench/interactive_rtt.py" "$N" "$bin/corral" run --pty --
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
