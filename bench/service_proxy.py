#!/usr/bin/env python3
"""Closed-loop HTTP load: C client threads each send GET URL (a new connection per request, as
the head's proxy opens one per request to the replica) for D seconds; prints requests/s, p50
and p99 latency and errors as one JSON line. With several URLs (comma-separated), thread i
sends to URL i modulo their number.

usage: service_proxy.py URL[,URL...] TOKEN CONCURRENCY SECONDS   (TOKEN "-": no Authorization)
       wrk --latency ... | service_proxy.py --wrk   (the same JSON line from wrk's report)
"""
import http.client
import json
import re
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


def wrk_report(text):
    """The JSON line from wrk's --latency report: requests/s, p50, p99, errors (socket errors
    and answers other than 2xx/3xx)."""
    unit = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    def latency(q):
        m = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s)\s*$" % q, text, re.M)
        return round(float(m.group(1)) * unit[m.group(2)], 2) if m else None
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    n = re.search(r"^\s+(\d+) requests in", text, re.M)
    errors = sum(int(x) for x in re.findall(
        r"(?:connect|read|write|timeout) (\d+)", " ".join(re.findall(r"Socket errors:.*", text))))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errors += int(non2xx.group(1)) if non2xx else 0
    return {"requests": int(n.group(1)) if n else 0, "rps": float(rps.group(1)) if rps else 0.0,
            "p50_ms": latency(50), "p99_ms": latency(99), "errors": errors}


def main():
    if sys.argv[1] == "--wrk":
        print(json.dumps(wrk_report(sys.stdin.read())))
        return
    urls, token, conc, secs = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    lats, errs = [[] for _ in range(conc)], [[] for _ in range(conc)]
    stop_at = time.monotonic() + secs
    threads = [threading.Thread(target=worker,
                                args=(urls[i % len(urls)], token, stop_at, lats[i], errs[i]))
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
