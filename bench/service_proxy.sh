#!/usr/bin/env bash
# A service's requests three ways, alternated in one run (docs/benchmarks.md, "Services through
# the head"): a `corral up` cluster (one agent), an N-replica service of Python's
# ThreadingHTTPServer answering a small JSON body, then closed-loop load at a fixed number of
# connections for D seconds on each path, R rounds with the order rotated each round:
#
#   direct  the load generator's threads spread over the replicas' own addresses
#   head    the head's /v/NAME/ (the caller's token checked, least outstanding requests)
#   nginx   Debian's nginx as a reverse proxy to the same replicas (least_conn, one worker
#           per core, a new upstream connection per request as the head makes)
#
# Requests/s, p50 and p99 per path (the median of its rounds) and their ratios. The load
# generator is wrk (Debian's `wrk`) where installed, else bench/service_proxy.py (Python
# threads, a new connection per request).
#
#   bench/service_proxy.sh [-n REPLICAS] [-c CONNECTIONS] [-d SECONDS] [-r ROUNDS] [-g wrk|python]
set -euo pipefail
N=2
C=16
D=10
R=3
G=$(command -v wrk >/dev/null && echo wrk || echo python)
while getopts "n:c:d:r:g:" o; do
  case $o in
    n) N=$OPTARG ;;
    c) C=$OPTARG ;;
    d) D=$OPTARG ;;
    r) R=$OPTARG ;;
    g) G=$OPTARG ;;
    *) exit 2 ;;
  esac
done
command -v nginx >/dev/null || { echo "nginx is not installed (apt-get install nginx-light)"; exit 1; }
# shellcheck source=bench/lib/up_cluster.sh
. "$(dirname "$0")/lib/up_cluster.sh"
start_up_cluster corral-svc-bench
nginx_pid=
trap '[ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null; cleanup_up_cluster' EXIT
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
# A listen backlog of 128, not socketserver's 5: else connections dropped at saturation (and
# retried by the kernel after 1 s) would be what p99 measures, on every path.
http.server.ThreadingHTTPServer.request_queue_size = 128
http.server.ThreadingHTTPServer(("", int(os.environ["PORT"])), H).serve_forever()
PY
chmod 644 "$work/server.py"
"$bin/corral" serve bench --replicas "$N" --port 0 --cpus 0.5 -- /usr/bin/python3 "$work/server.py" >/dev/null
# Ready when N distinct replicas are running and the head answers through them.
addresses=
for _ in $(seq 120); do
  addresses=$("$bin/corral" services show bench -o json | /usr/bin/python3 -c '
import json, sys
rs = [r for r in json.load(sys.stdin)["service"]["replicas"] if r.get("running") and r.get("ready")]
print(",".join(r["address"] for r in rs))')
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $CORRAL_TOKEN" \
    "$CORRAL_ADDR/v/bench/" || true)
  [ "$code" = 200 ] && [ "$(tr ',' '\n' <<<"$addresses" | grep -c .)" = "$N" ] && break
  sleep 0.5
done
[ "$code" = 200 ] || { echo "the service never answered 200 (last $code)"; exit 1; }

# nginx in front of the same replicas, on a port of its own, all its files under $work.
nginx_port=$((20000 + RANDOM % 20000))
{
  echo "worker_processes auto; daemon off; pid $work/nginx.pid; error_log $work/nginx.err;"
  echo "events { worker_connections 4096; }"
  echo "http { access_log off;"
  for t in client_body proxy fastcgi uwsgi scgi; do echo "  ${t}_temp_path $work/nginx-$t;"; done
  echo "  upstream replicas { least_conn;"
  tr ',' '\n' <<<"$addresses" | sed 's/.*/    server &;/'
  echo "  }"
  echo "  server { listen 127.0.0.1:$nginx_port; location /v/bench/ { proxy_pass http://replicas/; } }"
  echo "}"
} >"$work/nginx.conf"
nginx -p "$work" -e "$work/nginx.err" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 40); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$nginx_port/v/bench/" || true)" = 200 ] && break
  sleep 0.25
done

# wrk's threads, one per replica for the direct path (its setup gives each thread an address).
cat >"$work/spread.lua" <<'LUA'
local addrs, n = {}, 0
function setup(thread)
  if #addrs == 0 then
    for a in string.gmatch(os.getenv("REPLICAS"), "[^,]+") do
      local host, port = a:match("^(.*):(%d+)$")
      for _, x in ipairs(wrk.lookup(host, port)) do table.insert(addrs, x) end
    end
  end
  n = n + 1
  thread.addr = addrs[(n - 1) % #addrs + 1]
end
LUA

# One measurement of PATH as a JSON line {"rps", "p50_ms", "p99_ms", "errors"}.
measure() {
  local url token=- lua=
  case $1 in
    direct) url="http://${addresses%%,*}/" lua="$work/spread.lua" ;;
    head) url="$CORRAL_ADDR/v/bench/" token=$CORRAL_TOKEN ;;
    nginx) url="http://127.0.0.1:$nginx_port/v/bench/" ;;
  esac
  if [ "$G" = wrk ]; then
    local threads=$N
    REPLICAS=$addresses wrk -t "$threads" -c "$C" -d "${D}s" --latency ${lua:+-s "$lua"} \
      -H "Authorization: Bearer $token" "$url" | /usr/bin/python3 "$here/bench/service_proxy.py" --wrk
  else
    local urls=$url
    [ "$1" = direct ] && urls=$(tr ',' '\n' <<<"$addresses" | sed 's|.*|http://&/|' | paste -sd,)
    /usr/bin/python3 "$here/bench/service_proxy.py" "$urls" "$token" "$C" "$D"
  fi
}

echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $N replicas, $C connections, $D s each, $R rounds, $G"
paths=(direct head nginx)
results="$work/results"
: >"$results"
for ((round = 0; round < R; round++)); do
  for ((k = 0; k < 3; k++)); do
    p=${paths[$(((round + k) % 3))]}
    line=$(measure "$p")
    echo "round $((round + 1)) $p: $line"
    echo "$p $line" >>"$results"
  done
done
/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    path, data = line.split(" ", 1)
    runs.setdefault(path, []).append(json.loads(data))
med = {p: {k: statistics.median(r[k] for r in rs) for k in ("rps", "p50_ms", "p99_ms")}
       for p, rs in runs.items()}
errors = {p: sum(r["errors"] for r in rs) for p, rs in runs.items()}
for p in ("direct", "head", "nginx"):
    m = med[p]
    print("%-7s %8.0f req/s  p50 %7.2f ms  p99 %7.2f ms  errors %d (median of %d)" %
          (p, m["rps"], m["p50_ms"], m["p99_ms"], errors[p], len(runs[p])))
for a, b in (("head", "direct"), ("nginx", "direct"), ("head", "nginx")):
    print("%s / %s: rps %.2f, p50 %.2f, p99 %.2f" % (a, b, med[a]["rps"] / med[b]["rps"],
          med[a]["p50_ms"] / med[b]["p50_ms"], med[a]["p99_ms"] / med[b]["p99_ms"]))
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
