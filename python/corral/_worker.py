"""The job side of corral.Executor: ``python -m corral._worker PREFIX`` loads the call in
PREFIX.call.pkl, runs it, and writes PREFIX.result.pkl whole (``("ok", value)`` or
``("error", exception, traceback)``). Exits 0 when the function returned, 1 when it raised, so
the job's state says which."""

from __future__ import annotations

import pickle
import sys
import traceback

from .executor import CALL_SUFFIX, RESULT_SUFFIX, _dumps, write_atomically


def run_call(prefix: str) -> int:
    with open(prefix + CALL_SUFFIX, "rb") as f:
        fn, args, kwargs = pickle.load(f)
    try:
        outcome: tuple = ("ok", fn(*args, **kwargs))
    except BaseException as e:  # noqa: B902 - the caller gets whatever the function raised
        outcome = ("error", e, traceback.format_exc())
    try:
        data = _dumps(outcome)
    except Exception:  # an unpicklable value or exception: the caller still learns what happened
        if outcome[0] == "ok":
            outcome = ("error", None, "the result could not be pickled:\n" + traceback.format_exc())
        else:
            outcome = ("error", None, outcome[2])
        data = _dumps(outcome)
    write_atomically(prefix + RESULT_SUFFIX, data)
    if outcome[0] != "ok":
        sys.stderr.write(outcome[2])
    return 0 if outcome[0] == "ok" else 1


def main(argv: list) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m corral._worker PREFIX\n")
        return 2
    return run_call(argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
