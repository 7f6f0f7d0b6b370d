"""Job notifications through a real head and agent: the head's --webhook receives a JSON notice
for each begin, end, failure, preemption and requeue, and a job's --mail-type mail goes through
--sendmail (a stand-in that writes each mail to a file) to its owner at --mail-domain or to its
--mail-user; a bad --mail-type is refused naming the field and submits nothing."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

import corral  # noqa: E402
from tests.cluster import CORRAL, LocalCluster, wait_until  # noqa: E402


class _Hook(http.server.BaseHTTPRequestHandler):
    received: list = []
    lock = threading.Lock()

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.lock:
            self.received.append((self.path, json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


class NotifyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="corral-notify-")
        cls.mail_dir = os.path.join(cls.tmp, "mail")
        os.makedirs(cls.mail_dir)
        cls.sendmail = os.path.join(cls.tmp, "sendmail")
        with open(cls.sendmail, "w") as f:
            f.write(f"#!/bin/sh\n# -oi -- TO, the message on stdin\n"
                    f"cat > {cls.mail_dir}/$(date +%s%N)-$3\n")
        os.chmod(cls.sendmail, 0o755)
        cls.hook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
        threading.Thread(target=cls.hook.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{cls.hook.server_address[1]}"
        cls.cluster = LocalCluster(agents=1, gpus=2, head_args=[
            "--webhook", url + "/all", "--webhook", "queue:train=" + url + "/train",
            "--sendmail", cls.sendmail, "--mail-domain", "example.org",
            "--min-runtime-before-preempt", "0s"])
        cls.client = corral.Client(cls.cluster.addr, cls.cluster.token)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()
        cls.hook.shutdown()

    def cli(self, *args):
        env = dict(os.environ, CORRAL_ADDR=self.cluster.addr, CORRAL_TOKEN=self.cluster.token)
        return subprocess.run([CORRAL, *args], capture_output=True, text=True, env=env)

    def notices(self, job_id, path="/all"):
        with _Hook.lock:
            return [n for p, n in _Hook.received if p == path and n["job"] == job_id]

    def mails(self, job_id):
        out = []
        for name in sorted(os.listdir(self.mail_dir)):
            with open(os.path.join(self.mail_dir, name)) as f:
                text = f.read()
            if f"Job_id={job_id} " in text:
                out.append((name.split("-", 1)[1], text))
        return out

    def test_a_failing_job_is_told_by_webhook_and_mail(self):
        sub = self.cli("submit", "--parsable", "--queue", "train", "--mail-type", "END,FAIL",
                       "--name", "fails", "--", "sh", "-c", "exit 3")
        self.assertEqual(sub.returncode, 0, sub.stderr)
        job = int(sub.stdout.strip())
        self.assertTrue(wait_until(lambda: len(self.notices(job)) >= 2, 30), self.notices(job))
        begin, fail = self.notices(job)[:2]
        self.assertEqual((begin["event"], begin["state"]), ("begin", "running"))
        self.assertEqual((fail["event"], fail["state"], fail["exit_code"]), ("fail", "failed", 3))
        self.assertEqual(fail["queue"], "train")
        self.assertLess(begin["revision"], fail["revision"])
        # The queue's own webhook too; nothing for jobs of other queues.
        self.assertEqual([n["event"] for n in self.notices(job, "/train")], ["begin", "fail"])
        self.assertTrue(wait_until(lambda: self.mails(job), 30))
        [(to, text)] = self.mails(job)  # END,FAIL: one mail, at the end, not at the begin
        self.assertEqual(to, "admin@example.org")
        self.assertIn("Subject: Corral Job_id=%d Name=fails Failed, failed, ExitCode 3" % job, text)

    def test_preemption_and_requeue_are_told_and_mailed_to_the_mail_user(self):
        low = self.client.submit("sleep 300", gpus=2, preemptible=True, name="low",
                                 mail_type="ALL", mail_user="ana@lab.example.com")
        self.assertTrue(wait_until(lambda: low.status() == corral.JobState.RUNNING, 30))
        high = self.client.submit("sleep 1", gpus=2, priority=10, name="high")
        try:
            want = ["begin", "preempt", "requeue"]
            self.assertTrue(wait_until(
                lambda: [n["event"] for n in self.notices(low.id)][:3] == want, 60),
                self.notices(low.id))
            preempt = self.notices(low.id)[1]
            self.assertIn(f"for job {high.id}", preempt["reason"])
            self.assertEqual(preempt["cause"], "preempted")
            self.assertTrue(wait_until(lambda: len(self.mails(low.id)) >= 3, 30))
            self.assertEqual({to for to, _ in self.mails(low.id)}, {"ana@lab.example.com"})
            self.assertNotIn("train", {p for p, n in _Hook.received if n["job"] == low.id})
        finally:
            low.cancel()
            high.cancel()

    def test_a_bad_mail_type_is_refused_naming_the_field(self):
        before = len(list(self.client.jobs()))
        bad = self.cli("submit", "--mail-type", "END,TIME_LIMIT_80", "--", "true")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("mail_type", bad.stderr)
        self.assertIn("time_limit_80", bad.stderr)
        inject = self.cli("submit", "--mail-type", "END", "--mail-user", "a@b\nBcc: c@d", "--",
                          "true")
        self.assertNotEqual(inject.returncode, 0)
        self.assertIn("mail_user", inject.stderr)
        self.assertEqual(len(list(self.client.jobs())), before)

    def test_the_head_counts_what_it_sent(self):
        self.assertTrue(wait_until(lambda: 'channel="webhook",outcome="sent"' in self.metrics(),
                                   30))
        self.assertIn('corral_notifications_total{channel="mail",outcome="sent"}', self.metrics())

    def metrics(self) -> str:
        return self.client._call("GET", "/metrics")[2].decode()


if __name__ == "__main__":
    unittest.main(verbosity=2)
