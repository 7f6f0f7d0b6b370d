#!/usr/bin/python3
"""Drives an interactive Corral session through a real terminal (Python's pty module).

usage: pty_session.py run|srun|exec-sh|hold CORRAL_OR_SRUN [ARGS...]

Starts the command on a new pseudo-terminal of 30x100, then, as a user would: types a command
and reads its echo, reads `stty size`, resizes the terminal to 40x120 and reads it again,
interrupts a `sleep` with Ctrl-C and checks that the shell survives, and leaves with `exit 7`.
The shell is bash, or with a mode ending in "-sh", `sh -i` (an image's busybox has no bash).
Prints what it checked; exits 0 when all held, 1 otherwise (with the terminal's output).

Mode "hold" is for fault tests: the shell starts a command that survives a hang-up (`nohup
sleep`), prints "holding" once it runs, then waits for the client to exit by itself (a fault
ends the session) and prints "client exited N" with the terminal's output; exits with N.
"""
import fcntl
import os
import re
import pty
import select
import struct
import sys
import termios
import time

TIMEOUT = 30.0


class Session:
    def __init__(self, argv, rows, cols):
        pid, fd = pty.fork()
        if pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execv(argv[0], argv)
        self.pid, self.fd, self.seen = pid, fd, b""

    def send(self, text):
        os.write(self.fd, text.encode() if isinstance(text, str) else text)

    def expect(self, needle, timeout=TIMEOUT):
        """Waits until `needle` appears in the output after what earlier expects consumed."""
        needle = needle.encode()
        end = time.time() + timeout
        while needle not in self.seen:
            left = end - time.time()
            if left <= 0:
                raise AssertionError("timed out waiting for %r; terminal so far:\n%s"
                                     % (needle, self.seen.decode(errors="replace")))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError("the terminal closed waiting for %r; output:\n%s"
                                         % (needle, self.seen.decode(errors="replace")))
                self.seen += chunk
        at = self.seen.index(needle) + len(needle)
        before, self.seen = self.seen[:at], self.seen[at:]
        return before.decode(errors="replace")

    def resize(self, rows, cols):
        # The kernel sends SIGWINCH to the terminal's foreground process group: the client.
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def wait(self, timeout=TIMEOUT):
        end = time.time() + timeout
        while time.time() < end:
            try:
                r, _, _ = select.select([self.fd], [], [], 0.1)
                if r:
                    self.seen += os.read(self.fd, 65536)
            except OSError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                return os.waitstatus_to_exitcode(status)
        raise AssertionError("the client did not exit; output:\n%s"
                             % self.seen.decode(errors="replace"))


def hold(argv):
    s = Session(argv + ["bash", "--norc", "--noprofile", "-i"], 30, 100)
    s.send("nohup sleep 600 >/dev/null 2>&1 & echo holding-$((40+2))\n")
    s.expect("holding-42")
    print("holding", flush=True)
    code = s.wait(timeout=120)
    print("client exited %d; terminal output:\n%s" % (code, s.seen.decode(errors="replace")),
          flush=True)
    return code


def main():
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode == "hold":
        return hold(argv)
    shell = ["sh", "-i"] if mode.endswith("-sh") else ["bash", "--norc", "--noprofile", "-i"]
    s = Session(argv + shell, 30, 100)
    checks = []

    def check(what, ok):
        checks.append((what, ok))
        print(("ok     " if ok else "FAILED ") + what, flush=True)

    # Arithmetic in the marker: its typed echo ("$((20+3))") differs from its output ("23").
    s.send("echo ready-$((20+3))\n")
    s.expect("ready-23")
    s.send("echo typed-input\n")
    typed = s.expect("typed-input")
    check("typed input is echoed by the remote terminal", "echo typed-input" in typed)
    s.expect("typed-input")  # and the command's own output
    s.send("echo size=$(stty size)@@$((100+2))\n")
    out = s.expect("@@102")
    check("stty size shows the client's window (30 100): " + out.strip()[-30:],
          "size=30 100@@102" in out)
    s.resize(40, 120)
    time.sleep(0.5)
    s.send("echo size=$(stty size)@@$((100+3))\n")
    out = s.expect("@@103")
    check("stty size shows the resized window (40 120): " + out.strip()[-30:],
          "size=40 120@@103" in out)
    s.send("echo tty=$(tty)@@$((100+4))\n")
    out = s.expect("@@104")
    check("the command has a terminal: " + out.strip()[-30:], "tty=/dev/pts/" in out)
    s.send("echo job=${CORRAL_JOB_ID:-none}@@$((100+5))\n")
    out = s.expect("@@105")
    check("the session runs inside its job: " + out.strip()[-20:],
          re.search(r"job=[0-9]+@@105", out) is not None)
    s.send("sleep 60; echo slept-$((1+5))\n")
    time.sleep(1.0)
    started = time.time()
    s.send(b"\x03")  # Ctrl-C: the remote terminal signals its foreground group
    s.send("echo alive-$((1+6))\n")
    out = s.expect("alive-7", timeout=10)
    check("Ctrl-C interrupts sleep and the shell survives (%.1fs)" % (time.time() - started),
          "slept-6" not in out)
    s.send("exit 7\n")
    code = s.wait()
    check("exit 7 exits 7 (got %s)" % code, code == 7)
    failed = [w for w, ok in checks if not ok]
    if failed:
        print("terminal output:\n" + s.seen.decode(errors="replace"))
    print("mode %s: %d checks, %d failed" % (mode, len(checks), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print("FAILED " + str(e))
        sys.exit(1)
