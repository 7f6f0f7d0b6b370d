#!/usr/bin/env python3
"""The systemd units in packaging/, run as systemd would run them (no systemd here): each
ExecStart line with a fake NOTIFY_SOCKET and WATCHDOG_USEC. The head says READY=1 only once its
API answers, the agent only once the head lists its node; both feed the watchdog and say
STOPPING=1 on SIGTERM. And `systemd-analyze verify` finds nothing to say about the units."""

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

CORRAL = os.environ["CORRAL"]
UNITS = os.environ["UNITS"]


class FakeManager:
    """systemd's notify socket: an abstract datagram socket."""

    def __init__(self, name):
        self.name = "@" + name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + name)

    def next(self, timeout):
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(4096).decode()
        except socket.timeout:
            return None

    def wait_for(self, key, timeout):
        """The first message within `timeout` s that holds the line `key`; None if none came."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            m = self.next(left)
            if m is not None and key in m.split("\n"):
                return m
        return None


def exec_start(unit, root, env, hostname="unit-node"):
    """The unit's ExecStart as argv: $VARS split on whitespace as systemd does, %H the host,
    /usr/bin/corral the build's, /var/lib and /etc under `root`."""
    with open(os.path.join(UNITS, unit)) as f:
        line = next(l for l in f if l.startswith("ExecStart="))[len("ExecStart="):].strip()
    line = line.replace("%H", hostname)
    argv = []
    for word in shlex.split(line):
        if word.startswith("$"):
            argv += env.get(word[1:], "").split()
        else:
            argv.append(re.sub(r"^/(var|etc)/", root + r"/\1/", word))
    assert argv[0] == "/usr/bin/corral", argv
    return [CORRAL] + argv[1:]


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, token=None):
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


class UnitsTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="corral-units-")
        for d in ("var/lib/corral/head", "var/lib/corral/agent", "etc/corral"):
            os.makedirs(os.path.join(self.root, d))
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def start(self, argv, log, notify=None, watchdog_usec=None):
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC")}
        if notify:
            env["NOTIFY_SOCKET"] = notify.name
        if watchdog_usec:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        with open(os.path.join(self.root, log), "ab") as out:
            p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def head_argv(self, listen):
        return exec_start("corral-head.service", self.root,
                          {"CORRAL_HEAD_OPTS": f"--listen {listen}"})

    def head_url(self):
        text = read(os.path.join(self.root, "head.log"))
        urls = re.findall(r"listening on (http://[0-9.:]+)", text)
        return urls[-1] if urls else None

    def assert_watchdog_and_stopping(self, manager, proc):
        # WATCHDOG_USEC is 0.4 s: at least two keep-alives in a second.
        alive = [manager.wait_for("WATCHDOG=1", 1.0) for _ in range(2)]
        self.assertNotIn(None, alive, "WATCHDOG=1 twice within 2 s")
        proc.send_signal(signal.SIGTERM)
        self.assertIsNotNone(manager.wait_for("STOPPING=1", 10), "STOPPING=1 on SIGTERM")
        self.assertEqual(proc.wait(timeout=20), 0)

    def test_head_is_ready_once_its_api_answers(self):
        manager = FakeManager(f"corral-units-head-{os.getpid()}")
        self.addCleanup(manager.sock.close)
        head = self.start(self.head_argv("127.0.0.1:0"), "head.log", manager, 400000)
        ready = manager.wait_for("READY=1", 30)
        self.assertIsNotNone(ready, read(os.path.join(self.root, "head.log")))
        self.assertIn("STATUS=leading", ready)
        # At READY the API already answers.
        self.assertEqual(get(self.head_url() + "/healthz"), {"ok": True})
        self.assert_watchdog_and_stopping(manager, head)

    def test_agent_is_ready_once_registered(self):
        port = free_port()
        # A first start of the head writes the tokens; then the agent starts with no head.
        head = self.start(self.head_argv(f"127.0.0.1:{port}"), "head.log")
        self.assertTrue(self.wait(lambda: self.head_url() is not None), "head did not start")
        head.send_signal(signal.SIGTERM)
        head.wait(timeout=20)
        state = os.path.join(self.root, "var/lib/corral/head")
        shutil.copy(os.path.join(state, "join.token"), os.path.join(self.root, "etc/corral"))
        admin = read(os.path.join(state, "admin.token")).strip()
        manager = FakeManager(f"corral-units-agent-{os.getpid()}")
        self.addCleanup(manager.sock.close)
        opts = f"--head http://127.0.0.1:{port} --simulate-gpus 1 --run-as agent"
        agent = self.start(exec_start("corral-agent.service", self.root, {"CORRAL_AGENT_OPTS": opts}),
                           "agent.log", manager, 400000)
        self.assertIsNone(manager.wait_for("READY=1", 2), "READY=1 before any head answered")
        self.start(self.head_argv(f"127.0.0.1:{port}"), "head.log")
        self.assertIsNotNone(manager.wait_for("READY=1", 30),
                             read(os.path.join(self.root, "agent.log")))
        nodes = get(f"http://127.0.0.1:{port}/v1/nodes", admin)["nodes"]
        self.assertEqual([n["name"] for n in nodes], ["unit-node"])
        self.assert_watchdog_and_stopping(manager, agent)

    # Skipped only outside CI: under CI=true a missing tool is a failure (setup-tests.sh installs it).
    @unittest.skipUnless(shutil.which("systemd-analyze") or os.environ.get("CI") == "true",
                         "systemd-analyze not installed")
    def test_systemd_analyze_verify_is_silent(self):
        # verify wants ExecStart's binary to exist: point the copies at the build's.
        copies = []
        for unit in ("corral-head.service", "corral-agent.service"):
            with open(os.path.join(UNITS, unit)) as f:
                text = f.read().replace("/usr/bin/corral", CORRAL)
            copies.append(os.path.join(self.root, unit))
            with open(copies[-1], "w") as f:
                f.write(text)
        r = subprocess.run(["systemd-analyze", "verify"] + copies, capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    @staticmethod
    def wait(probe, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if probe():
                return True
            time.sleep(0.1)
        return False


if __name__ == "__main__":
    unittest.main()
