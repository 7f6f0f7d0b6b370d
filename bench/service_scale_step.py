"""One load step for bench/service_scale_step.sh: waits for the service's one replica to be
ready, starts CLIENTS closed-loop clients on /v/NAME/slow, and polls `corral services show`
every 0.1 s until every replica the autoscaler wants is ready (at most 120 s). Writes
{"raised_s", "first_ready_s", "all_ready_s", "desired", "ok", "failed"} to OUT, times counted
from the step.

    service_scale_step.py CORRAL ADDR TOKEN NAME CLIENTS OUT
"""
import http.client
import json
import subprocess
import sys
import threading
import time
import urllib.parse

corral, addr, token, name, clients, out = sys.argv[1:7]
clients = int(clients)
u = urllib.parse.urlparse(addr)


def show():
    r = subprocess.run([corral, "services", "show", name, "-o", "json"],
                       capture_output=True, text=True, check=False)
    s = json.loads(r.stdout)["service"] if r.returncode == 0 else {}
    ready = sum(1 for x in s.get("replicas", [])
                if x.get("running") and x.get("ready") and not x.get("draining"))
    return s.get("desired", 0), ready


while show()[1] < 1:
    time.sleep(0.2)

stop = threading.Event()
counts = {"ok": 0, "failed": 0}
lock = threading.Lock()


def client():
    while not stop.is_set():
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
            c.request("GET", "/v/%s/slow" % name, headers={"Authorization": "Bearer " + token})
            ok = c.getresponse().status == 200
            c.close()
        except OSError:
            ok = False
        with lock:
            counts["ok" if ok else "failed"] += 1


threads = [threading.Thread(target=client) for _ in range(clients)]
step = time.monotonic()
for t in threads:
    t.start()
raised = first = None
desired = 1
while time.monotonic() - step < 120:
    desired, ready = show()
    now = time.monotonic() - step
    if raised is None and desired > 1:
        raised = now
    if first is None and ready > 1:
        first = now
    if raised is not None and ready >= desired:
        break
    time.sleep(0.1)
all_ready = time.monotonic() - step
stop.set()
for t in threads:
    t.join()
with open(out, "w") as f:
    json.dump({"raised_s": round(raised or -1, 2), "first_ready_s": round(first or -1, 2),
               "all_ready_s": round(all_ready, 2), "desired": desired, **counts}, f)
