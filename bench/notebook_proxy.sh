#!/usr/bin/env bash
# A notebook's latency through the head (docs/interactive.md): `corral notebook`'s time to
# ready, then an HTTP request and a cell's round trip over the kernel's WebSocket, on a plain
# HTTP `corral up` and a --tls one, and against the Jupyter server directly on loopback (the
# floor: no head, no agent). Needs Debian's jupyter-notebook and python3-websocket, and root
# (to read the notebook's port and token from the agent's run directory).
#
#   bench/notebook_proxy.sh [-n REQUESTS]
set -euo pipefail
N=100
while getopts "n:" o; do
  case $o in
    n) N=$OPTARG ;;
    *) exit 2 ;;
  esac
done
WORK_PREFIX=nb-bench AGENTS=1 GPUS=2 . "$(dirname "$0")/lib/plain_and_tls_clusters.sh"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
for kind in plain tls; do
  if [ $kind = plain ]; then
    env=(CORRAL_ADDR="http://127.0.0.1:$port")
    ca=()
  else
    env=(CORRAL_ADDR="https://127.0.0.1:$((port + 1))" CORRAL_CA="$work/tls/tls/ca.pem")
    ca=("$work/tls/tls/ca.pem")
  fi
  t0=$(date +%s.%N)
  url=$(env CORRAL_CONFIG=/nonexistent CORRAL_TOKEN="$(cat "$work/$kind/admin.token")" "${env[@]}" \
    "$bin/corral" notebook --gpus 1 2>/dev/null)
  echo "$kind: corral notebook ready after $(echo "$(date +%s.%N) - $t0" | bc) s"
  echo "$kind, through the head:"
  /usr/bin/python3 "$here/bench/notebook_proxy.py" "$N" "$url" "${ca[@]}"
  if [ $kind = plain ]; then
    job=$(echo "$url" | sed -E 's|.*/s/([0-9]+)/.*|\1|')
    file=$(find "$work/plain" -path "*/runs/$job.*/notebook" | head -1)
    echo "plain, the Jupyter server directly on loopback:"
    /usr/bin/python3 "$here/bench/notebook_proxy.py" "$N" direct $(cat "$file") "/s/$job/"
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
