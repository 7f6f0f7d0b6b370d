#!/usr/bin/python3
"""Drives a notebook through the head's /s/JOB/ proxy as a browser would (interactive_test).

notebook_session.py URL OTHER_TOKEN [CA]
  URL: what `corral notebook` printed (http(s)://HEAD/s/JOB/tree?ticket=TICKET, good for one use).
  The cell it runs prints CUDA_VISIBLE_DEVICES, or runs $NOTEBOOK_CELL where set. With
  NOTEBOOK_NUDGE=1, once the cell runs it sends a kernel_info_request on the control channel (as
  Jupyter's server does on each new WebSocket, its "nudge"), then reads the kernel's
  execution_state from /api/kernels: Jupyter then says "idle" while the cell runs.
Prints one JSON object: what each step saw. Standard library plus python3-websocket.
"""
import http.client
import json
import os
import ssl
import sys
import urllib.parse
import uuid

import websocket


CELL = "import os\nprint('CVD=' + os.environ.get('CUDA_VISIBLE_DEVICES', '?'))"


def connect(u, ca):
    if u.scheme == "https":
        return http.client.HTTPSConnection(u.hostname, u.port, timeout=20,
                                           context=ssl.create_default_context(cafile=ca))
    return http.client.HTTPConnection(u.hostname, u.port, timeout=20)


def request(u, ca, method, target, body=None, headers=None):
    c = connect(u, ca)
    c.request(method, target, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    out = (r.status, r.getheaders(), data)
    c.close()
    return out


def main():
    url, other = sys.argv[1], sys.argv[2]
    ca = sys.argv[3] if len(sys.argv) > 3 else None
    u = urllib.parse.urlsplit(url)
    base = u.path[:u.path.index("/", 3) + 1]  # /s/JOB/
    seen = {}
    # First visit: the ticket is swapped for a session cookie, and the URL loses it.
    status, headers, _ = request(u, ca, "GET", u.path + "?" + u.query)
    seen["first_status"] = status
    cookie_header = [v for k, v in headers if k.lower() == "set-cookie"]
    seen["set_cookie"] = cookie_header[0] if cookie_header else ""
    seen["location"] = dict((k.lower(), v) for k, v in headers).get("location", "")
    cookie = seen["set_cookie"].split(";")[0]
    # The page itself, with the cookie: Jupyter's tree page.
    status, _, page = request(u, ca, "GET", seen["location"] or base + "tree",
                              headers={"Cookie": cookie})
    seen["page_status"] = status
    seen["page_is_jupyter"] = b"jupyter" in page.lower()
    # Without a cookie or token: refused.
    seen["anonymous_status"] = request(u, ca, "GET", base + "api/kernels")[0]
    # Another user's token: refused.
    seen["other_status"] = request(u, ca, "GET", base + "tree?token=" + other)[0]
    # A kernel, and a cell run over its WebSocket.
    status, _, body = request(u, ca, "POST", base + "api/kernels", body=b"{}",
                              headers={"Cookie": cookie, "Content-Type": "application/json"})
    seen["kernel_status"] = status
    kernel = json.loads(body)["id"]
    ws_scheme = "wss" if u.scheme == "https" else "ws"
    sslopt = {"ca_certs": ca} if ca else None
    ws = websocket.create_connection(
        "%s://%s%sapi/kernels/%s/channels" % (ws_scheme, u.netloc, base, kernel),
        header=["Cookie: " + cookie], origin="%s://%s" % (u.scheme, u.netloc),
        sslopt=sslopt, timeout=30)
    msg_id = uuid.uuid4().hex
    nudge_id = uuid.uuid4().hex
    nudge = os.environ.get("NOTEBOOK_NUDGE") == "1"
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex,
                   "msg_type": "execute_request", "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell",
        "content": {"code": os.environ.get("NOTEBOOK_CELL", CELL),
                    "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    # The reply comes on the shell channel and the output on iopub: Jupyter orders neither
    # against the other, so the cell is done only once both the reply and iopub's "idle" for
    # this request have come (what jupyter_client's execute_interactive waits for).
    output = ""
    replied = idle = False
    while not (replied and idle):
        m = json.loads(ws.recv())
        parent = m.get("parent_header", {}).get("msg_id")
        if nudge and parent == msg_id and m["msg_type"] == "execute_input":
            nudge = False  # the cell runs: the control request's status comes after its busy
            ws.send(json.dumps({
                "header": {"msg_id": nudge_id, "username": "test", "session": uuid.uuid4().hex,
                           "msg_type": "kernel_info_request", "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "control", "content": {}}))
        if (parent == nudge_id and m["msg_type"] == "status"
                and m["content"].get("execution_state") == "idle"):
            status, _, body = request(u, ca, "GET", base + "api/kernels",
                                      headers={"Cookie": cookie})
            states = [k.get("execution_state") for k in json.loads(body) if k.get("id") == kernel]
            seen["jupyter_state_during_cell"] = states[0] if states else "?"
        if parent != msg_id:
            continue
        if m["msg_type"] == "stream":
            output += m["content"]["text"]
        if m["msg_type"] == "status" and m["content"].get("execution_state") == "idle":
            idle = True
        if m["msg_type"] == "execute_reply":
            replied = True
            seen["reply"] = m["content"]["status"]
            if m["content"]["status"] == "error":  # what the kernel said, for the test's message
                seen["error"] = "%s: %s" % (m["content"].get("ename", ""),
                                            m["content"].get("evalue", ""))
    ws.close()
    seen["output"] = output
    seen["delete_status"] = request(u, ca, "DELETE", base + "api/kernels/" + kernel,
                                    headers={"Cookie": cookie})[0]
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
