#!/usr/bin/env bash
# A service's requests through the head's /v/NAME/ against the same replica directly
# (docs/services.md): a `corral up` cluster (one agent), a one-replica service of Python's
# ThreadingHTTPServer answering a small JSON body, then closed-loop load (C clients, each a new
# connection per request) for D seconds on each path: requests/s, p50, p99 and their ratios.
#
#   bench/service_proxy.sh [-c CLIENTS] [-d SECONDS]
set -euo pipefail
C=8
D=10
while getopts "c:d:" o; do
  case $o in
    c) C=$OPTARG ;;
    d) D=$OPTARG ;;
    *) exit 2 ;;
  esac
done
# shellcheck source=bench/lib/up_cluster.sh
. "$(dirname "$0")/lib/up_cluster.sh"
start_up_cluster corral-svc-bench
cat >"$work/server.py" <<'PY'
import http.server, os
body = b'{"ok": true}'
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("", int(os.environ["PORT"])), H).serve_forever()
PY
chmod 644 "$work/server.py"
"$bin/corral" serve bench --replicas 1 --port 0 --cpus 0.5 -- /usr/bin/python3 "$work/server.py" >/dev/null
for _ in $(seq 120); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $CORRAL_TOKEN" \
    "$CORRAL_ADDR/v/bench/" || true)
  [ "$code" = 200 ] && break
  sleep 0.5
done
[ "$code" = 200 ] || { echo "the service never answered 200 (last $code)"; exit 1; }
address=$("$bin/corral" services show bench -o json |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["service"]["replicas"][0]["address"])')
echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $C clients, $D s each"
direct=$(/usr/bin/python3 "$here/bench/service_proxy.py" "http://$address/" - "$C" "$D")
echo "direct to the replica:   $direct"
proxied=$(/usr/bin/python3 "$here/bench/service_proxy.py" "$CORRAL_ADDR/v/bench/" "$CORRAL_TOKEN" "$C" "$D")
echo "through the head /v/:    $proxied"
/usr/bin/python3 - "$direct" "$proxied" <<'PY'
import json, sys
d, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("ratios (head / direct): rps %.2f, p50 %.2f, p99 %.2f" %
      (p["rps"] / d["rps"], p["p50_ms"] / d["p50_ms"], p["p99_ms"] / d["p99_ms"]))
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
