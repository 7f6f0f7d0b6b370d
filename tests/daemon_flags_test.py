"""`corral agent` and `corral head` refuse bad flags before they start anything.

Each bad flag: exit status 2, one line naming the flag and why, and nothing made on the node
(no state directory, no socket). A good set of flags then starts each daemon, so the refusals
are the flags' doing, not a broken command line.
"""
import os
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

CORRAL = os.environ["CORRAL"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaemonFlags(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.token = os.path.join(self.tmp.name, "join.token")
        with open(self.token, "w") as f:
            f.write("some-token\n")

    def refused(self, args, flag, why):
        state = os.path.join(self.tmp.name, "state")
        out = subprocess.run([CORRAL] + args + ["--state-dir", state], capture_output=True,
                             text=True, timeout=30, env={**os.environ, "NOTIFY_SOCKET": ""})
        self.assertEqual(out.returncode, 2, f"{args}: {out.stderr}")
        self.assertIn(f"'{flag}'", out.stderr, args)  # "flag '--x'" or "field '--x'"
        self.assertIn(why, out.stderr, args)
        self.assertFalse(os.path.exists(state), f"{args} made the state directory")

    def agent(self, *extra):
        return ["agent", "--head", "http://127.0.0.1:9", "--name", "n1", "--join-token-file",
                self.token, "--simulate-gpus", "2", "--unix-socket", "none", *extra]

    def test_the_agent_names_each_bad_flag_and_makes_nothing(self):
        self.refused(self.agent("--port-range", "80-90"), "--port-range", "within 1024-65535")
        self.refused(self.agent("--port-range", "30000-29000"), "--port-range", "want LO-HI")
        self.refused(self.agent("--label", "=v"), "--label", "want KEY=VALUE")
        self.refused(self.agent("--cpus", "-1"), "--cpus", "must be >= 0")
        self.refused(self.agent("--memory", "lots"), "--memory", "lots")
        self.refused(self.agent("--dataset-cache-size", "big"), "--dataset-cache-size", "big")
        self.refused(self.agent("--image-cache-size", "x1"), "--image-cache-size", "x1")
        self.refused(self.agent("--dataset-source-rate", "fast"), "--dataset-source-rate",
                     "want bytes per second")
        self.refused(self.agent("--dataset-source-rate", "999999999999G"),
                     "--dataset-source-rate", "want bytes per second")
        self.refused(self.agent("--dataset-fetches-per-source", "-1"),
                     "--dataset-fetches-per-source", "want 0 or more")
        self.refused(self.agent("--mps-control", "mps"), "--mps-control",
                     "not an executable absolute path")
        self.refused(self.agent("--ca", "/etc/hostname"), "--ca", "http://, not https://")
        self.refused(self.agent("--listen", "nowhere"), "--listen", "nowhere")
        args = self.agent()
        args[args.index("--unix-socket") + 1] = "relative.sock"
        self.refused(args, "--unix-socket", "want an absolute path or none")
        args = self.agent()
        args[args.index("--head") + 1] = "ftp://h"
        self.refused(args, "--head", "ftp://h")
        args = self.agent()
        args[args.index("--join-token-file") + 1] = os.path.join(self.tmp.name, "absent")
        self.refused(args, "--join-token-file", "cannot read a token")

    def head(self, *extra):
        return ["head", "--listen", "127.0.0.1:0", "--unix-socket", "none", *extra]

    def test_the_head_names_each_bad_flag_and_makes_nothing(self):
        self.refused(self.head("--rdzv-ports", "10-5"), "--rdzv-ports", "want LO-HI ports")
        self.refused(self.head("--idle-threshold", "101"), "--idle-threshold",
                     "want a percent from 0 to 100")
        self.refused(self.head("--header-timeout", "0s"), "--header-timeout",
                     "want a duration > 0")
        self.refused(self.head("--relay-idle-timeout", "0s"), "--relay-idle-timeout",
                     "want a duration > 0")
        self.refused(self.head("--idle-after", "soon"), "--idle-after", "soon")
        self.refused(self.head("--cluster-series-step", "0s"), "--cluster-series-step",
                     "want a duration of 1s or more")
        self.refused(self.head("--cluster-series-step", "1s", "--cluster-series-keep", "1000h"),
                     "--cluster-series-keep", "at most 100000")
        self.refused(self.head("--store-synchronous-commit", "off"),
                     "--store-synchronous-commit", "off")
        self.refused(self.head("--allow-async-store", "--require-sync-standby"),
                     "--allow-async-store", "contradict")
        self.refused(self.head("--sendmail", "/nonexistent/sendmail"), "--sendmail",
                     "want an executable program")
        self.refused(self.head("--unix-group-role", "wheel"), "--unix-group-role", "wheel")
        args = self.head()
        args[args.index("--listen") + 1] = "127.0.0.1"
        self.refused(args, "--listen", "127.0.0.1")
        args = self.head()
        args[args.index("--unix-socket") + 1] = "relative.sock"
        self.refused(args, "--unix-socket", "want an absolute path or none")

    def test_good_flags_start_the_head_and_an_agent_that_registers(self):
        port = free_port()
        state = os.path.join(self.tmp.name, "head")
        head = subprocess.Popen([CORRAL] + self.head("--state-dir", state)[:1] +
                                ["--state-dir", state, "--listen", f"127.0.0.1:{port}",
                                 "--unix-socket", "none", "--rdzv-ports", "29400-29410",
                                 "--idle-threshold", "5"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.addCleanup(lambda: (head.kill(), head.communicate()))
        token = os.path.join(state, "join.token")
        for _ in range(200):
            if os.path.exists(token):
                break
            time.sleep(0.05)
        agent = subprocess.Popen([CORRAL, "agent", "--head", f"http://127.0.0.1:{port}",
                                  "--name", "n1", "--join-token-file", token, "--state-dir",
                                  os.path.join(self.tmp.name, "agent"), "--simulate-gpus", "2",
                                  "--unix-socket", "none", "--run-as", "agent",
                                  "--port-range", "30000-30100", "--label", "rack=r1"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.addCleanup(lambda: (agent.kill(), agent.communicate()))
        with open(os.path.join(state, "admin.token")) as f:
            admin = f.read().strip()
        nodes = ""
        for _ in range(200):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/nodes",
                                         headers={"Authorization": f"Bearer {admin}"})
            try:
                nodes = urllib.request.urlopen(req, timeout=5).read().decode()
            except OSError:
                nodes = ""
            if '"n1"' in nodes and "rack" in nodes:
                break
            time.sleep(0.1)
        self.assertIn('"n1"', nodes)
        self.assertIn('"rack"', nodes)
        self.assertIsNone(agent.poll())
        self.assertIsNone(head.poll())


if __name__ == "__main__":
    unittest.main()
