"""A client of Corral's HTTP API (docs/api.md) on the standard library alone."""

from __future__ import annotations

import codecs
import enum
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import (Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple,
                    Union)

from . import config as _config
from .errors import CorralError, ServerError, Unavailable, Conflict, error_for


class JobState(str, enum.Enum):
    PENDING = "pending"
    SCHEDULED = "scheduled"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # A standby answers 307 to the leader; the client follows it itself, for POSTs too.
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D102
        return None


class Client:
    """A connection to a Corral head.

    With no arguments it finds the head as the ``corral`` CLI does (``CORRAL_ADDR``,
    ``CORRAL_TOKEN``, ``CORRAL_CA``, then ``~/.config/corral/config.json``); ``url`` may list
    several heads separated by commas. Thread-safe: it keeps no connection between calls.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None,
                 ca: Optional[str] = None, timeout: float = 30.0):
        if url is None:
            found = _config.load()
            url = found.addr
            token = found.token if token is None else token
            ca = found.ca if ca is None else ca
        self._heads = [u.strip().rstrip("/") for u in url.split(",") if u.strip()]
        if not self._heads:
            raise ValueError(f"url: got {url!r}, want http(s)://HOST:PORT")
        self._token = token or ""
        self._timeout = timeout
        handlers: List[Any] = [_NoRedirect()]
        if ca:
            handlers.append(urllib.request.HTTPSHandler(
                context=ssl.create_default_context(cafile=ca)))
        self._opener = urllib.request.build_opener(*handlers)

    # ---- jobs ----

    def submit(self, command: Union[str, Sequence[str]], *, name: str = "", gpus: int = 0,
               cpus: Optional[float] = None, memory: Union[str, int, None] = None,
               replicas: int = 1, queue: Optional[str] = None,
               env: Optional[Mapping[str, str]] = None, workdir: Optional[str] = None,
               time_limit: Optional[str] = None, request_id: Optional[str] = None,
               **spec: Any) -> "Job":
        """Submits a job and returns it. ``command`` is an argv list, or a string run by
        ``/bin/sh -c``; ``spec`` takes any other field of the job spec (docs/api.md).

        Every submission carries a request id (a new one unless given), so retrying it, on
        this head or another, never runs the job twice.
        """
        body: Dict[str, Any] = {"command": command if isinstance(command, str) else list(command),
                                "gpus": gpus, "replicas": replicas}
        optional = {"name": name or None, "cpus": cpus, "memory": memory, "queue": queue,
                    "env": dict(env) if env is not None else None, "workdir": workdir,
                    "time_limit": time_limit}
        body.update({k: v for k, v in optional.items() if v is not None})
        body.update(spec)
        answer = self._json("POST", "/v1/jobs", {"spec": body,
                                                 "request_id": request_id or uuid.uuid4().hex})
        first = answer["job"][0] if isinstance(answer["job"], list) else answer["job"]
        return Job(self, first)

    def job(self, job_id: int) -> "Job":
        return Job(self, self._json("GET", f"/v1/jobs/{int(job_id)}")["job"])

    def jobs(self, *, state: Union[str, Sequence[str], None] = None, queue: Optional[str] = None,
             user: Optional[str] = None, page_size: int = 500) -> Iterator["Job"]:
        """Every matching job, oldest first, fetched a page at a time as the caller iterates."""
        query: Dict[str, str] = {"limit": str(page_size)}
        if state:
            query["state"] = state if isinstance(state, str) else ",".join(state)
        if queue:
            query["queue"] = queue
        if user:
            query["user"] = user
        after: Optional[int] = None
        while True:
            if after is not None:
                query["after"] = str(after)
            page = self._json("GET", "/v1/jobs?" + urllib.parse.urlencode(query))
            for j in page.get("jobs", []):
                yield Job(self, j)
            after = page.get("next_after")
            if after is None:
                return

    list_jobs = jobs

    def cancel(self, job_id: int) -> "Job":
        return self.job(job_id).cancel()

    def wait(self, job_id: int, timeout: Optional[float] = None) -> "Job":
        job = self.job(job_id)
        job.wait(timeout)
        return job

    def logs(self, job_id: int, **kwargs: Any) -> Iterator[str]:
        return self.job(job_id).logs(**kwargs)

    # ---- cluster ----

    def nodes(self) -> List[Dict[str, Any]]:
        return self._json("GET", "/v1/nodes")["nodes"]

    def version(self) -> str:
        """The head's version (``corral --version`` on its host)."""
        return self._json("GET", "/v1/version")["version"]

    # ---- queues, usage, events, reservations ----

    def queues(self) -> List[Dict[str, Any]]:
        """Every queue with its quota, limits and what it holds now (docs/api.md, Queues)."""
        return self._json("GET", "/v1/queues")["queues"]

    def set_queue(self, name: str, **fields: Any) -> Dict[str, Any]:
        """Creates or changes queue ``name`` (admins): ``quota_gpus``, ``limit_gpus``,
        ``weight``, ``max_grace_ms`` and the other fields of ``PUT /v1/queues/NAME``."""
        path = "/v1/queues/" + urllib.parse.quote(name, safe="")
        return self._json("PUT", path, fields)["queue"]

    def usage(self, by: str = "user", since: float = 7 * 86400) -> Dict[str, Any]:
        """GPU-hours, jobs, waits and preemptions per user or queue over the last ``since``
        seconds: ``{"by", "from", "to", "rows": [...], "total": {...}}``."""
        query = urllib.parse.urlencode({"by": by, "since": int(since)})
        return self._json("GET", "/v1/usage?" + query)

    def events(self, since: int = 0, max: int = 1000, wait: float = 0.0) -> Dict[str, Any]:
        """The durable changes after revision ``since``, as this caller may see them:
        ``{"events": [...], "revision": LAST, "reset": bool}``; ``wait`` (seconds) holds the
        answer until there is one."""
        query = urllib.parse.urlencode({"since": since, "max": max, "wait": int(wait * 1000)})
        return self._json("GET", "/v1/events?" + query)

    def follow_events(self, since: int = 0, wait: float = 25.0) -> Iterator[Dict[str, Any]]:
        """Every change after ``since`` as it happens, without end; after a ``reset`` (the head
        no longer keeps what came after ``since``) it goes on from the head's revision."""
        while True:
            page = self.events(since, wait=wait)
            yield from page.get("events", [])
            since = page.get("revision", since)

    def reservations(self) -> List[Dict[str, Any]]:
        return self._json("GET", "/v1/reservations")["reservations"]

    # ---- use over time (docs/efficiency.md, docs/dashboard.md) ----

    def efficiency(self, job_id: int) -> Dict[str, Any]:
        """A job's use of what it holds, from its runs' usage series, as ``corral eff -o json``
        figures it: ``{"job", "state", "samples", "gpu_util", "gpu_memory_bytes",
        "cpu_milli", "memory_bytes"}``, each figure ``{"mean", "peak"}`` (means weighted by
        the samples each point merges; zero with no sample yet). The verdict is the CLI's."""
        return self.job(job_id).efficiency()

    def cluster_series(self, since: float = 0) -> Dict[str, Any]:
        """The cluster's recent use as the head samples it for the dashboard's plots: ``{"step_ms",
        "capacity", "points": [ClusterPoint, ...]}``, the last ``since`` seconds (0: every
        point the head keeps; it keeps none across a restart)."""
        page = self._json("GET", "/v1/cluster/series?" +
                          urllib.parse.urlencode({"since": int(since)}))
        page["points"] = [ClusterPoint(*p) for p in page.get("points", [])]
        return page

    def create_reservation(self, name: str, nodes: Sequence[str], *, start_ms: int,
                           duration: Optional[str] = None, end_ms: Optional[int] = None,
                           maintenance: bool = False, users: Sequence[str] = (),
                           queues: Sequence[str] = ()) -> Dict[str, Any]:
        """Keeps ``nodes`` from ``start_ms`` for ``duration`` (or to ``end_ms``) for the users
        and queues named, or for nobody with ``maintenance`` (admins)."""
        body: Dict[str, Any] = {"name": name, "nodes": list(nodes), "start_ms": start_ms,
                                "maintenance": maintenance, "users": list(users),
                                "queues": list(queues)}
        if duration is not None:
            body["duration"] = duration
        if end_ms is not None:
            body["end_ms"] = end_ms
        return self._json("POST", "/v1/reservations", body)["reservation"]

    def delete_reservation(self, name: str) -> Dict[str, Any]:
        path = "/v1/reservations/" + urllib.parse.quote(name, safe="")
        return self._json("DELETE", path)["reservation"]

    # ---- inside running jobs ----

    def exec(self, job_id: int, command: Sequence[str], replica: int = 0,
             timeout: float = 300.0) -> "ExecResult":
        """Runs ``command`` inside the running job's replica (its cgroup, user and
        environment), without a terminal, and returns its exit code and output."""
        opened = self._json("POST", f"/v1/jobs/{int(job_id)}/exec",
                            {"command": list(command), "replica": replica, "pty": False})
        session = "/v1/exec/" + urllib.parse.quote(str(opened["session"]), safe="")
        try:
            self._call("POST", session + "/input?offset=0&eof=1", b"")
            deadline = time.monotonic() + timeout
            out = self._exec_stream(session, "stdout", deadline)
            err = self._exec_stream(session, "stderr", deadline)
            return ExecResult(out[1] if out[1] is not None else err[1], out[0], err[0])
        finally:
            try:
                self._call("DELETE", session)
            except CorralError:
                pass

    def _exec_stream(self, session: str, stream: str,
                     deadline: float) -> Tuple[str, Optional[int]]:
        """One stream of an exec session to its end: its text and the command's exit code."""
        chunks: List[bytes] = []
        offset = 0
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{session}: {stream} still open")
            query = urllib.parse.urlencode({"stream": stream, "offset": offset,
                                            "wait_ms": 5000})
            _, headers, body = self._call("GET", f"{session}/output?{query}")
            chunks.append(body)
            offset = int(headers.get("X-Corral-Next-Offset") or offset + len(body))
            code = headers.get("X-Corral-Exit-Code")
            if code is not None:
                return b"".join(chunks).decode("utf-8", "replace"), int(code)

    def notebook_url(self, job_id: int) -> str:
        """A URL that opens the running notebook job once, as this caller, within two
        minutes: it carries a one-time ticket, never this client's token."""
        answer = self._json("POST", f"/v1/jobs/{int(job_id)}/notebook-ticket")
        return self._heads[0] + answer["path"]

    # ---- transport ----

    def _json(self, method: str, path: str, body: Any = None) -> Dict[str, Any]:
        _, _, data = self._call(method, path, body)
        try:
            return json.loads(data)
        except ValueError as e:
            raise ServerError(200, "", f"{method} {path}: not JSON: {data[:200]!r}") from e

    def _call(self, method: str, path: str, body: Any = None) -> Tuple[int, Mapping[str, str], bytes]:
        """One request, tried on each head in turn while none answers; a standby's 307 is
        followed to its leader. Raises the CorralError the answer names."""
        if isinstance(body, bytes):
            data: Optional[bytes] = body
        else:
            data = None if body is None else json.dumps(body).encode()
        last: Optional[CorralError] = None
        heads = list(self._heads)
        i = 0
        while i < len(heads):
            url = heads[i] + path
            i += 1
            req = urllib.request.Request(url, data=data, method=method)
            if self._token:
                req.add_header("Authorization", "Bearer " + self._token)
            if data is not None:
                req.add_header("Content-Type", "application/json")
            try:
                with self._opener.open(req, timeout=self._timeout) as r:
                    return r.status, r.headers, r.read()
            except urllib.error.HTTPError as e:
                text = e.read()
                if e.code == 307 and e.headers.get("Location") and len(heads) < 8:
                    leader = urllib.parse.urlsplit(e.headers["Location"])
                    heads.insert(i, f"{leader.scheme}://{leader.netloc}")
                    continue
                code, message = "", text.decode("utf-8", "replace")
                try:
                    err = json.loads(text)["error"]
                    code, message = err.get("code", ""), err.get("message", message)
                except (ValueError, KeyError, TypeError):
                    pass
                last = error_for(e.code, code, message)
                if e.code != 503:
                    raise last from None
            except (urllib.error.URLError, OSError) as e:
                reason = getattr(e, "reason", e)
                last = Unavailable(0, "unavailable", f"{method} {url}: {reason}")
        assert last is not None
        raise last


class UsagePoint(NamedTuple):
    """One point of a replica's usage series (docs/efficiency.md): a raw sample
    (``samples == 1``) or several merged (means, with the peaks in ``*_max``)."""
    seq: int
    at: int
    samples: int
    gpu_util: int
    gpu_util_max: int
    gpu_mem: int
    gpu_mem_max: int
    cpu_milli: int
    cpu_milli_max: int
    mem: int
    mem_max: int


class ClusterPoint(NamedTuple):
    """One point of the cluster's series: when (epoch ms), the live nodes' GPUs, those held,
    their mean measured use (percent; None: none measured), jobs pending and running."""
    at: int
    gpus: int
    gpus_used: int
    gpu_util: Optional[int]
    pending: int
    running: int


class ExecResult(NamedTuple):
    """What ``Client.exec`` ran: its exit code (128+N when signal N ended it) and output."""
    exit_code: int
    stdout: str
    stderr: str


class Job:
    """A job as last read from the head (``data``, the API's JOB object); ``refresh()``,
    ``status()`` and ``wait()`` read it again."""

    def __init__(self, client: Client, data: Dict[str, Any]):
        self._client = client
        self.data = data

    def __repr__(self) -> str:
        return f"Job(id={self.id}, state={self.state.value})"

    @property
    def id(self) -> int:
        return int(self.data["id"])

    @property
    def state(self) -> JobState:
        return JobState(self.data["state"])

    @property
    def exit_code(self) -> int:
        return int(self.data.get("exit_code", 0))

    @property
    def name(self) -> str:
        return self.data.get("spec", {}).get("name", "")

    def usage(self) -> Dict[int, List[UsagePoint]]:
        """Each replica's usage series over every run, oldest first, by replica index."""
        out: Dict[int, List[UsagePoint]] = {}
        for run in self.data.get("runs", []):
            for series in run.get("usage", []):
                out.setdefault(int(series["replica"]), []).extend(
                    UsagePoint(*p) for p in series.get("points", []))
        return out

    def efficiency(self) -> Dict[str, Any]:
        """Means and peaks of the job's use as last read (``refresh()`` first for news); see
        ``Client.efficiency``."""
        points = [p for series in self.usage().values() for p in series]
        n = sum(p.samples for p in points)

        def figure(mean_field: str, peak_field: str) -> Dict[str, float]:
            total = sum(getattr(p, mean_field) * p.samples for p in points)
            return {"mean": total / n if n else 0.0,
                    "peak": max((getattr(p, peak_field) for p in points), default=0)}

        return {"job": self.id, "state": self.state.value, "samples": n,
                "gpu_util": figure("gpu_util", "gpu_util_max"),
                "gpu_memory_bytes": figure("gpu_mem", "gpu_mem_max"),
                "cpu_milli": figure("cpu_milli", "cpu_milli_max"),
                "memory_bytes": figure("mem", "mem_max")}

    def refresh(self) -> "Job":
        self.data = self._client._json("GET", f"/v1/jobs/{self.id}")["job"]
        return self

    def status(self) -> JobState:
        return self.refresh().state

    def done(self) -> bool:
        return self.status().terminal

    def wait(self, timeout: Optional[float] = None, poll: float = 0.1,
             max_poll: float = 2.0) -> JobState:
        """Waits until the job ends and returns its final state; polls with a growing interval
        (``poll`` doubling up to ``max_poll``), riding out a head that restarts. Raises
        TimeoutError after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                if self.status().terminal:
                    return self.state
            except Unavailable:
                pass
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {self.id} still {self.state.value} after {timeout} s")
            pause = poll if deadline is None else min(poll, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)
            poll = min(poll * 2, max_poll)

    def cancel(self) -> "Job":
        """Cancels the job; a job that already ended is left as it is (no error), so calling
        this twice is safe."""
        try:
            self.data = self._client._json("POST", f"/v1/jobs/{self.id}/cancel")["job"]
        except Conflict:
            self.refresh()
            if not self.state.terminal:
                raise
        return self

    def logs(self, stream: str = "stdout", replica: int = 0, task: int = 0,
             follow: bool = False, poll: float = 0.2, retry_for: float = 60.0) -> Iterator[str]:
        """The job's output as text chunks. With ``follow`` it keeps reading until the job
        ends; when the head or the node goes away it retries from where it was (nothing lost,
        nothing repeated) for up to ``retry_for`` seconds."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        offset = 0
        down_since: Optional[float] = None
        while True:
            query = urllib.parse.urlencode({"stream": stream, "replica": replica, "task": task,
                                            "offset": offset, "max": 65536})
            try:
                _, headers, body = self._client._call("GET", f"/v1/jobs/{self.id}/logs?{query}")
            except Unavailable:
                if not follow:
                    raise
                down_since = down_since or time.monotonic()
                if time.monotonic() - down_since > retry_for:
                    raise
                time.sleep(poll)
                continue
            down_since = None
            nxt = int(headers.get("X-Corral-Next-Offset") or offset + len(body))
            if body:
                text = decoder.decode(body)
                if text:
                    yield text
            state = headers.get("X-Corral-Job-State", "")
            over = state in {s.value for s in JobState if s.terminal}
            if nxt > offset:
                offset = nxt
                continue  # there may be more right away
            if not follow or over:
                tail = decoder.decode(b"", final=True)
                if tail:
                    yield tail
                return
            time.sleep(poll)
