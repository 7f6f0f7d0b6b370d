#!/usr/bin/env bash
# The time from a load step to a new ready replica (docs/services.md, "Autoscaling"): a
# `corral up` cluster (one agent), a service of Python's ThreadingHTTPServer whose /slow holds
# each request 0.5 s, autoscaled between 1 and 4 replicas at a target of 1 request in flight
# per replica with an up-delay of U seconds. Then a step from no load to C clients in a closed
# loop (C requests in flight), and, polling `corral services show` every 0.1 s: when the
# autoscaler raised `desired`, when the first new replica answered its health check, and when
# all of them did. Repeated R times (the service is removed and created again between).
#
#   bench/service_scale_step.sh [-c CLIENTS] [-u UP_DELAY_SECONDS] [-r REPEATS]
set -euo pipefail
C=4
U=5
R=3
while getopts "c:u:r:" o; do
  case $o in
    c) C=$OPTARG ;;
    u) U=$OPTARG ;;
    r) R=$OPTARG ;;
    *) exit 2 ;;
  esac
done
# shellcheck source=bench/lib/up_cluster.sh
. "$(dirname "$0")/lib/up_cluster.sh"
start_up_cluster corral-scale-bench
cat >"$work/server.py" <<'PY'
import http.server, os, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/slow"):
            time.sleep(0.5)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("", int(os.environ["PORT"])), H).serve_forever()
PY
chmod 644 "$work/server.py"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $C clients, up-delay ${U}s, $R repeats"
for i in $(seq "$R"); do
  "$bin/corral" serve step --min-replicas 1 --max-replicas 4 --port 0 --cpus 0.25 \
    --target-in-flight 1 --scale-up-delay "${U}s" --scale-down-delay 10m \
    -- /usr/bin/python3 "$work/server.py" >/dev/null
  /usr/bin/python3 "$here/bench/service_scale_step.py" "$bin/corral" "$CORRAL_ADDR" \
    "$CORRAL_TOKEN" step "$C" "$work/step-$i.json"
  cat "$work/step-$i.json"
  echo
  "$bin/corral" services rm step >/dev/null
  for _ in $(seq 100); do
    "$bin/corral" services show step >/dev/null 2>&1 || break
    sleep 0.3
  done
done
/usr/bin/python3 - "$work" "$R" "$U" <<'PY'
import json, statistics, sys
work, r, u = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
runs = [json.load(open("%s/step-%d.json" % (work, i))) for i in range(1, r + 1)]
def med(k):
    return statistics.median(x[k] for x in runs)
print("median over %d: desired raised after %.1f s (up-delay %.0f s), first new replica ready "
      "after %.1f s, all ready after %.1f s (%d replicas); a replica's start (ready - raised) "
      "%.1f s" % (r, med("raised_s"), u, med("first_ready_s"), med("all_ready_s"),
                  runs[0]["desired"], med("first_ready_s") - med("raised_s")))
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
