"""The Python client against a live local cluster (a real head and two agents)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import tempfile
import threading
import time
import unittest
from unittest import mock

import corral
from corral import JobState

from .cluster import CORRAL, LocalCluster


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = LocalCluster(agents=2, gpus=2)
        cls.client = corral.Client(cls.cluster.addr, cls.cluster.token)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()

    def test_finds_the_head_as_the_cli_does(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "config.json")
            with open(path, "w") as f:
                json.dump({"addr": self.cluster.addr, "token": "wrong"}, f)
            env = {"CORRAL_CONFIG": path, "CORRAL_TOKEN": self.cluster.token}
            with mock.patch.dict(os.environ, env, clear=True):
                client = corral.Client()  # the file's address, the environment's token
            self.assertEqual(len(client.nodes()), 2)
            with mock.patch.dict(os.environ, {"CORRAL_CONFIG": path}, clear=True):
                with self.assertRaises(corral.AuthError):
                    corral.Client().nodes()
            with mock.patch.dict(os.environ, {"HOME": d}, clear=True):
                with self.assertRaisesRegex(ValueError, "no head address configured"):
                    corral.Client()
            # Inside a job, with no config of the user's: the job's own head and credential.
            job_env = {"HOME": d, "CORRAL_STEP_HEAD": "http://job-head:7070",
                       "CORRAL_STEP_TOKEN": "cstep_1_1_x"}
            with mock.patch.dict(os.environ, job_env, clear=True):
                got = corral.config.load()
            self.assertEqual((got.addr, got.token), ("http://job-head:7070", "cstep_1_1_x"))
        cli = subprocess.run([CORRAL, "--version"], capture_output=True, text=True, check=True)
        self.assertEqual(cli.stdout.strip(), "corral " + self.client.version())

    def test_submit_wait_and_read_both_streams(self):
        job = self.client.submit("echo hello from $CORRAL_NODE; echo oops >&2", gpus=1,
                                 name="py-hello")
        self.assertIsInstance(job, corral.Job)
        self.assertEqual(job.name, "py-hello")
        self.assertEqual(job.wait(timeout=30), JobState.SUCCEEDED)
        self.assertRegex("".join(job.logs()), r"^hello from node[12]\n$")
        self.assertEqual("".join(job.logs(stream="stderr")), "oops\n")
        self.assertEqual(self.client.job(job.id).state, JobState.SUCCEEDED)

    def test_a_failing_job_reports_its_exit_code(self):
        job = self.client.submit(["/bin/sh", "-c", "exit 3"])
        self.assertEqual(job.wait(timeout=30), JobState.FAILED)
        self.assertEqual(job.exit_code, 3)

    def test_wait_times_out_and_cancel_twice_is_fine(self):
        job = self.client.submit("sleep 60")
        with self.assertRaises(TimeoutError):
            job.wait(timeout=0.5)
        job.cancel()
        self.assertEqual(job.wait(timeout=30), JobState.CANCELLED)
        self.assertEqual(job.cancel().state, JobState.CANCELLED)  # again: no error

    def test_errors_are_typed_and_carry_the_heads_message(self):
        with self.assertRaises(corral.InvalidArgument) as e:
            self.client.submit("true", gpus=-1)
        self.assertEqual((e.exception.status, e.exception.code), (400, "invalid_argument"))
        self.assertIn("'gpus'", e.exception.message)
        with self.assertRaises(corral.NotFound) as e:
            self.client.job(987654321)
        self.assertEqual(e.exception.code, "not_found")
        with self.assertRaises(corral.AuthError) as e:
            corral.Client(self.cluster.addr, "not-a-token").nodes()
        self.assertEqual(e.exception.status, 401)
        # Nothing listens on port 1.
        with self.assertRaises(corral.Unavailable):
            corral.Client("http://127.0.0.1:1", "t").nodes()
        self.assertTrue(issubclass(corral.NotFound, corral.CorralError))

    def test_lists_a_thousand_jobs_a_page_at_a_time(self):
        first = self.client.submit("true", array="0-999", hold=True, name="py-many")
        try:
            calls = []
            real = self.client._call

            def counted(method, path, body=None):
                calls.append(path)
                return real(method, path, body)

            with mock.patch.object(self.client, "_call", counted):
                jobs = self.client.jobs(state="pending", page_size=100)
                head = list(itertools.islice(jobs, 5))
                self.assertEqual(len(calls), 1, "only the first page before it is needed")
                ids = [j.id for j in head] + [j.id for j in jobs]
            mine = [i for i in ids if first.id <= i < first.id + 1000]
            self.assertEqual(mine, list(range(first.id, first.id + 1000)))
            self.assertGreaterEqual(len(calls), 10)
        finally:
            first.cancel()

    def test_follows_logs_across_a_head_restart(self):
        job = self.client.submit("for i in $(seq 1 12); do echo line $i; sleep 0.25; done")
        logs = job.logs(follow=True, poll=0.1)
        text = next(logs)
        self.assertTrue(text.startswith("line 1\n"), text)
        self.cluster.stop_head()
        time.sleep(1)
        restarted = threading.Timer(0, self.cluster.start_head)
        restarted.start()
        text += "".join(logs)
        restarted.join()
        self.assertEqual(text, "".join(f"line {i}\n" for i in range(1, 13)))
        self.assertEqual(job.wait(timeout=30), JobState.SUCCEEDED)


if __name__ == "__main__":
    unittest.main()
