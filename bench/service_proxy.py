#!/usr/bin/env python3
"""Closed-loop HTTP load: C client threads each send GET URL (a new connection per request, as
the head's proxy opens one per request to the replica) for D seconds; prints requests/s, p50
and p99 latency and errors as one JSON line.

usage: service_proxy.py URL TOKEN CONCURRENCY SECONDS   (TOKEN "-": no Authorization header)
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse


def worker(url, token, stop_at, lat, errors):
    u = urllib.parse.urlsplit(url)
    path = u.path + ("?" + u.query if u.query else "")
    headers = {} if token == "-" else {"Authorization": "Bearer " + token}
    while time.monotonic() < stop_at:
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
            c.request("GET", path, headers=headers)
            r = c.getresponse()
            r.read()
            c.close()
            if r.status != 200:
                errors.append(r.status)
                continue
        except OSError as e:
            errors.append(str(e))
            continue
        lat.append(time.monotonic() - t0)


def main():
    url, token, conc, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    lats, errs = [[] for _ in range(conc)], [[] for _ in range(conc)]
    stop_at = time.monotonic() + secs
    threads = [threading.Thread(target=worker, args=(url, token, stop_at, lats[i], errs[i]))
               for i in range(conc)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    lat = sorted(x for l in lats for x in l)
    n = len(lat)
    pick = lambda q: round(lat[min(n - 1, int(q * n))] * 1000, 2) if n else None
    print(json.dumps({"requests": n, "rps": round(n / elapsed, 1), "p50_ms": pick(0.5),
                      "p99_ms": pick(0.99), "errors": sum(len(e) for e in errs)}))


if __name__ == "__main__":
    main()
