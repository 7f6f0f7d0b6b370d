"""A real local cluster for the client's tests: `corral head` and `corral agent` processes on
loopback (the binary in $CORRAL), each in its own state dir under a fresh temp dir."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Callable, Dict, List

from corral import Client, CorralError

CORRAL = os.environ.get("CORRAL", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                               "corral"))


def _read(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def wait_until(probe: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if probe():
                return True
        except Exception:  # a daemon still starting
            pass
        time.sleep(0.1)
    return False


class LocalCluster:
    def __init__(self, agents: int = 2, gpus: int = 2, head_args: List[str] = (),
                 head_env: Dict[str, str] | None = None, agent_args: List[str] = ()):
        self.head_args = list(head_args)
        self.agent_args = list(agent_args)
        self.head_env = dict(os.environ, **(head_env or {}))
        self.dir = tempfile.mkdtemp(prefix="corral-py-")
        os.makedirs(os.path.join(self.dir, "agents"))
        self.addr = ""
        self.head: subprocess.Popen | None = None
        self.agents: Dict[int, subprocess.Popen] = {}
        self.gpus = gpus
        self.start_head()
        for i in range(1, agents + 1):
            self.start_agent(i)
        self.token = _read(os.path.join(self.dir, "admin.token")).strip()
        client = Client(self.addr, self.token)
        if not wait_until(lambda: sum(n["state"] == "ready" for n in client.nodes()) >= agents):
            raise RuntimeError(f"agents did not register; see {self.dir}")

    def _spawn(self, argv: List[str], log: str,
                env: Dict[str, str] | None = None) -> subprocess.Popen:
        with open(os.path.join(self.dir, log), "ab") as out:
            return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, env=env)

    def start_head(self) -> None:
        log = os.path.join(self.dir, "head.log")
        seen = _read(log).count("listening on") if os.path.exists(log) else 0
        listen = self.addr.split("://")[1] if self.addr else "127.0.0.1:0"
        self.head = self._spawn([CORRAL, "head", "--state-dir", self.dir, "--listen", listen,
                                 "--unreachable-after", "3", "--down-after", "6", *self.head_args],
                                "head.log", self.head_env)
        found: List[str] = []

        def listening() -> bool:
            text = _read(log)
            urls = re.findall(r"listening on (https?://[0-9.:]+)", text)
            if len(urls) <= seen:
                return False
            found.append(urls[-1])
            return True

        if not wait_until(listening):
            raise RuntimeError("head did not start: " + _read(log))
        self.addr = found[-1]

    def stop_head(self, sig: int = signal.SIGTERM) -> None:
        if self.head is not None:
            os.killpg(self.head.pid, sig)
            self.head.wait()
            self.head = None

    def start_agent(self, i: int) -> None:
        name = f"node{i}"
        self.agents[i] = self._spawn(
            [CORRAL, "agent", "--head", self.addr, "--join-token-file",
             os.path.join(self.dir, "join.token"), "--name", name, "--state-dir",
             os.path.join(self.dir, "agents", name), "--simulate-gpus", str(self.gpus),
             "--cpus", "16", "--memory", "64G", "--run-as", "agent", *self.agent_args],
            f"agents/{name}.log")

    def close(self, keep: bool = False) -> None:
        # Jobs outlive their agents by design: cancel what still runs first.
        if self.head is not None:
            client = Client(self.addr, self.token)
            try:
                for job in client.jobs(state=["pending", "scheduled", "running"]):
                    job.cancel()
                wait_until(lambda: not any(client.jobs(state=["scheduled", "running"])), 10)
            except CorralError:
                pass
        for p in list(self.agents.values()) + ([self.head] if self.head else []):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)
