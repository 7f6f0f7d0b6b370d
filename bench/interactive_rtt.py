#!/usr/bin/python3
"""Keystroke round trip through an interactive session: the time from a key typed on the
client's terminal to its echo back on that terminal, through `corral run --pty` (head, agent,
the remote terminal's echo, and back). Drives a real terminal with Python's pty module.

usage: interactive_rtt.py N ARGV...   (e.g. 200 corral run --pty --)
Prints p50, p90, p99 and max in milliseconds over N keystrokes.
"""
import os
import pty
import select
import sys
import time


def read_until(fd, needle, timeout=30.0):
    seen = b""
    end = time.time() + timeout
    while needle not in seen:
        r, _, _ = select.select([fd], [], [], max(0.0, end - time.time()))
        if not r:
            raise SystemExit("timed out waiting for %r: %r" % (needle, seen[-200:]))
        seen += os.read(fd, 65536)
    return seen


def main():
    n, argv = int(sys.argv[1]), sys.argv[2:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv + ["cat"])
    time.sleep(0.2)
    os.write(fd, b"warm\r")
    read_until(fd, b"warm\r\nwarm")  # cat has started: its line came back
    samples = []
    for i in range(n):
        key = bytes([ord("a") + i % 26])
        t0 = time.perf_counter()
        os.write(fd, key)
        read_until(fd, key)  # the remote terminal's echo
        samples.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.01)
    os.write(fd, b"\r\x04")
    os.waitpid(pid, 0)
    samples.sort()
    q = lambda p: samples[min(len(samples) - 1, int(p * len(samples)))]
    print("%s: %d keystrokes: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms"
          % (" ".join(argv[:2]), n, q(0.5), q(0.9), q(0.99), samples[-1]))


if __name__ == "__main__":
    main()
