"""Python functions run as Corral jobs, with submitit's interface.

    import corral
    ex = corral.Executor("/shared/me/calls", gpus=1, time_limit="1h")
    future = ex.submit(train, lr=0.1)       # a job that calls train(lr=0.1)
    print(future.result())                  # its return value, or its exception raised here

The function, its arguments and then its result travel as files in ``folder``, which every node
that may run the job must see at the same path (shared storage, as with submitit). The job runs
``python -m corral._worker`` with the submitting interpreter and its ``sys.path``, so a function
from an importable module is found by name; functions defined in ``__main__``, lambdas and
closures travel by value (cloudpickle, Debian's ``python3-cloudpickle``).
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
import uuid
from typing import Any, Callable, Dict, Iterable, List, Optional

from .client import Client, Job, JobState

try:
    import cloudpickle as _cloudpickle
except ImportError:  # the client itself needs only the standard library
    _cloudpickle = None

CALL_SUFFIX = ".call.pkl"
RESULT_SUFFIX = ".result.pkl"


class FailedJobError(RuntimeError):
    """The job ended without a result: cancelled, killed, out of memory, or its interpreter
    failed before the function returned. ``stderr`` holds the end of its standard error."""

    def __init__(self, job: Job, stderr: str):
        self.job = job
        self.stderr = stderr
        tail = stderr.strip().splitlines()[-5:]
        super().__init__(f"job {job.id} {job.state.value} (exit code {job.exit_code}) without a "
                         "result" + (":\n" + "\n".join(tail) if tail else ""))


def write_atomically(path: str, data: bytes) -> None:
    """Writes ``path`` whole or not at all: a reader never sees half a file."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _dumps(value: Any) -> bytes:
    if _cloudpickle is None:
        raise ImportError("corral.Executor needs cloudpickle (Debian: apt install "
                          "python3-cloudpickle)")
    return _cloudpickle.dumps(value)


class CorralFuture:
    """A submitted call: its job (``job``, ``job_id``) and, once the job ends, its result."""

    def __init__(self, job: Job, prefix: str):
        self.job = job
        self._prefix = prefix

    def __repr__(self) -> str:
        return f"CorralFuture(job_id={self.job_id}, state={self.job.state.value})"

    @property
    def job_id(self) -> int:
        return self.job.id

    @property
    def state(self) -> JobState:
        return self.job.status()

    def done(self) -> bool:
        return self.job.done()

    def cancel(self) -> bool:
        """Cancels the job; True unless it had already ended."""
        was_over = self.job.status().terminal
        self.job.cancel()
        return not was_over

    def wait(self, timeout: Optional[float] = None) -> JobState:
        return self.job.wait(timeout)

    def outcome(self, timeout: Optional[float] = None) -> tuple:
        """Waits for the job, then reads what the call left: ``("ok", value)`` or
        ``("error", exception, traceback_text)``. Raises FailedJobError when it left nothing."""
        self.job.wait(timeout)
        try:
            with open(self._prefix + RESULT_SUFFIX, "rb") as f:
                return pickle.load(f)
        except FileNotFoundError:
            raise FailedJobError(self.job, self.stderr()) from None

    def result(self, timeout: Optional[float] = None) -> Any:
        """The function's return value. An exception it raised is raised here, with the
        job's traceback added as a note."""
        outcome = self.outcome(timeout)
        if outcome[0] == "ok":
            return outcome[1]
        _, error, remote_traceback = outcome
        if error is None:  # it could not be pickled
            raise RuntimeError(f"job {self.job_id} raised:\n{remote_traceback}")
        if hasattr(error, "add_note"):
            error.add_note(f"raised in job {self.job_id}:\n{remote_traceback}")
        raise error

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """The exception the function raised, or None if it returned."""
        try:
            self.result(timeout)
        except FailedJobError:
            raise
        except BaseException as e:  # noqa: B902 - the function's own exception, whatever it is
            return e
        return None

    def stdout(self) -> str:
        return "".join(self.job.logs(stream="stdout"))

    def stderr(self) -> str:
        return "".join(self.job.logs(stream="stderr"))


class Executor:
    """Submits Python calls as jobs. ``parameters`` are those of ``Client.submit`` (``gpus``,
    ``cpus``, ``memory``, ``queue``, ``time_limit``, ``env``, ``name``, and any field of the job
    spec); ``update_parameters`` changes them for later submissions."""

    def __init__(self, folder: str, client: Optional[Client] = None,
                 python: Optional[str] = None, **parameters: Any):
        self.folder = os.path.abspath(folder)
        os.makedirs(self.folder, exist_ok=True)
        self.client = client if client is not None else Client()
        self.python = python or sys.executable
        self.parameters: Dict[str, Any] = {}
        self.update_parameters(**parameters)

    def update_parameters(self, **parameters: Any) -> None:
        if "command" in parameters:
            raise ValueError("parameters: 'command' is the executor's own (the call it runs)")
        self.parameters.update(parameters)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> CorralFuture:
        """Runs ``fn(*args, **kwargs)`` in a job; returns at once with its future."""
        prefix = os.path.join(self.folder, uuid.uuid4().hex)
        write_atomically(prefix + CALL_SUFFIX, _dumps((fn, args, kwargs)))
        params = dict(self.parameters)
        env = dict(params.pop("env", None) or {})
        # The submitter's import path, so that the job finds fn's module (and corral) by name.
        path = [p for p in sys.path if p and os.path.isdir(p)]
        if env.get("PYTHONPATH"):
            path.insert(0, env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(path)
        params.setdefault("name", getattr(fn, "__name__", "call"))
        params.setdefault("workdir", os.getcwd())
        job = self.client.submit([self.python, "-m", "corral._worker", prefix], env=env,
                                 **params)
        return CorralFuture(job, prefix)

    def map_array(self, fn: Callable[..., Any], *iterables: Iterable[Any]) -> List[CorralFuture]:
        """One job per element: ``fn(a, b)`` for each ``(a, b)`` of ``zip(*iterables)``."""
        return [self.submit(fn, *args) for args in zip(*iterables)]
