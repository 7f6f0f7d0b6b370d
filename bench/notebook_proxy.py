#!/usr/bin/python3
"""Latency of a notebook through the head (bench/notebook_proxy.sh).

notebook_proxy.py N URL [CA]          URL: what `corral notebook` printed
notebook_proxy.py N direct PORT TOKEN BASE  the Jupyter server itself on loopback (the floor)
Prints p50/p99 of an HTTP request (GET api/status) and of a cell's round trip over the
kernel's WebSocket (execute_request to execute_reply, code "pass").
"""
import http.client
import json
import ssl
import sys
import time
import urllib.parse
import uuid

import websocket


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000


def main():
    n = int(sys.argv[1])
    if sys.argv[2] == "direct":
        port, token = sys.argv[3], sys.argv[4]
        host, scheme, ca = "127.0.0.1:" + port, "http", None
        base = sys.argv[5]  # the server's base_url, /s/JOB/
        headers = {"Authorization": "token " + token}
    else:
        u = urllib.parse.urlsplit(sys.argv[2])
        ca = sys.argv[3] if len(sys.argv) > 3 else None
        host, scheme = u.netloc, u.scheme
        c = conn(scheme, host, ca)
        c.request("GET", u.path + "?" + u.query)
        r = c.getresponse()
        r.read()
        headers = {"Cookie": r.getheader("set-cookie").split(";")[0]}
        base = u.path[:u.path.index("/", 3) + 1]
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        c = conn(scheme, host, ca)
        c.request("GET", base + "api/status", headers=headers)
        r = c.getresponse()
        r.read()
        assert r.status == 200, r.status
        c.close()
        lat.append(time.perf_counter() - t)
    print("http GET api/status: p50 %.1f ms p99 %.1f ms" % (pct(lat, 50), pct(lat, 99)))
    c = conn(scheme, host, ca)
    c.request("POST", base + "api/kernels", body=b"{}",
              headers=dict(headers, **{"Content-Type": "application/json"}))
    r = c.getresponse()
    kernel = json.loads(r.read())["id"]
    ws = websocket.create_connection(
        "%s://%s%sapi/kernels/%s/channels" % ("wss" if scheme == "https" else "ws", host, base,
                                            kernel),
        header=["%s: %s" % kv for kv in headers.items()],
        origin="%s://%s" % (scheme, host), sslopt={"ca_certs": ca} if ca else None, timeout=30)
    session = uuid.uuid4().hex
    lat = []
    for i in range(n + 5):
        msg_id = uuid.uuid4().hex
        t = time.perf_counter()
        ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": "bench", "session": session,
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": "pass", "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        while True:
            m = json.loads(ws.recv())
            if m.get("parent_header", {}).get("msg_id") == msg_id and \
                    m["msg_type"] == "execute_reply":
                break
        if i >= 5:  # the kernel's first cells warm it up
            lat.append(time.perf_counter() - t)
    ws.close()
    c = conn(scheme, host, ca)
    c.request("DELETE", base + "api/kernels/" + kernel, headers=headers)
    c.getresponse().read()
    print("cell round trip (WebSocket): p50 %.1f ms p99 %.1f ms" % (pct(lat, 50), pct(lat, 99)))


def conn(scheme, host, ca):
    h, p = host.rsplit(":", 1)
    if scheme == "https":
        return http.client.HTTPSConnection(h, int(p), timeout=30,
                                           context=ssl.create_default_context(cafile=ca))
    return http.client.HTTPConnection(h, int(p), timeout=30)


if __name__ == "__main__":
    main()
