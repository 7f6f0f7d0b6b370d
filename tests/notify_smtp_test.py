"""Job mail over real SMTP: the head's --sendmail is Debian's msmtp (a sendmail-compatible SMTP
client, what the msmtp-mta package installs as /usr/sbin/sendmail), configured by the head's
~/.msmtprc to relay to a real SMTP server, Debian's aiosmtpd, on loopback; the test asserts on
what that server received: envelope sender and recipients, headers and body."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from tests.cluster import CORRAL, LocalCluster, wait_until  # noqa: E402

MSMTP = "/usr/bin/msmtp"

try:
    from aiosmtpd.controller import Controller
except ImportError:  # python3-aiosmtpd missing: reported by the test itself
    Controller = None


class _Sink:
    def __init__(self):
        self.lock = threading.Lock()
        self.received = []  # (mail_from, rcpt_tos, content as text)

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        with self.lock:
            self.received.append((envelope.mail_from, list(envelope.rcpt_tos),
                                  envelope.content.decode("utf-8", "replace")))
        return "250 OK"

    def mails(self, job_id):
        with self.lock:
            return [m for m in self.received if f"Job_id={job_id} " in m[2]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SmtpMailTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = [what for what, ok in (("python3-aiosmtpd", Controller is not None),
                                         ("msmtp", os.access(MSMTP, os.X_OK))) if not ok]
        if missing:
            why = "not installed: " + ", ".join(missing) + " (scripts/setup-tests.sh)"
            if os.environ.get("CI") == "true":
                raise RuntimeError("CI must run this; " + why)
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.mkdtemp(prefix="corral-smtp-")
        cls.sink = _Sink()
        port = _free_port()
        cls.smtp = Controller(cls.sink, hostname="127.0.0.1", port=port)
        cls.smtp.start()
        # msmtp reads its account from $HOME/.msmtprc, which must be the user's alone.
        home = os.path.join(cls.tmp, "home")
        os.makedirs(home)
        rc = os.path.join(home, ".msmtprc")
        with open(rc, "w") as f:
            f.write(f"account default\nhost 127.0.0.1\nport {port}\n"
                    "from corral@cluster.example.org\nauth off\ntls off\n")
        os.chmod(rc, 0o600)
        cls.cluster = LocalCluster(agents=1, gpus=1, head_args=[
            "--sendmail", MSMTP, "--mail-domain", "example.org"], head_env={"HOME": home})

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()
        cls.smtp.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def cli(self, *args):
        env = dict(os.environ, CORRAL_ADDR=self.cluster.addr, CORRAL_TOKEN=self.cluster.token)
        return subprocess.run([CORRAL, *args], capture_output=True, text=True, env=env)

    def submit(self, *args) -> int:
        sub = self.cli("submit", "--parsable", *args)
        self.assertEqual(sub.returncode, 0, sub.stderr)
        return int(sub.stdout.strip())

    def test_an_ended_job_is_mailed_to_its_owner_at_the_mail_domain(self):
        job = self.submit("--mail-type", "END", "--name", "smtp-end", "--", "true")
        self.assertTrue(wait_until(lambda: self.sink.mails(job), 30), self.sink.received)
        [(sender, rcpts, text)] = self.sink.mails(job)
        self.assertEqual(sender, "corral@cluster.example.org")
        self.assertEqual(rcpts, ["admin@example.org"])
        self.assertIn(f"Subject: Corral Job_id={job} Name=smtp-end Ended", text)
        self.assertIn("succeeded", text)

    def test_a_failure_and_its_begin_go_to_the_mail_user(self):
        job = self.submit("--mail-type", "BEGIN,FAIL", "--mail-user", "ana@lab.example.com",
                          "--name", "smtp-fail", "--", "sh", "-c", "exit 4")
        self.assertTrue(wait_until(lambda: len(self.sink.mails(job)) >= 2, 30),
                        self.sink.received)
        mails = self.sink.mails(job)
        self.assertEqual({tuple(r) for _, r, _ in mails}, {("ana@lab.example.com",)})
        subjects = [line for _, _, text in mails for line in text.splitlines()
                    if line.startswith("Subject: ")]
        self.assertTrue(any("Began" in s for s in subjects), subjects)
        self.assertTrue(any("Failed" in s and "ExitCode 4" in s for s in subjects), subjects)


if __name__ == "__main__":
    unittest.main(verbosity=2)
