"""corral.Executor (submitit's interface) and the client's calls for queues, usage, events,
reservations, exec and notebooks, against a live local cluster (a real head and two agents)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import unittest

import corral
from corral import JobState

from .cluster import LocalCluster, wait_until


def scaled_sum(values, factor=1):
    """Importable by name: the job finds it through the submitter's sys.path."""
    return sum(values) * factor


def where_am_i():
    return os.environ.get("CORRAL_NODE", ""), os.getpid()


class NotPositive(ValueError):
    pass


def must_be_positive(x):
    if x <= 0:
        raise NotPositive(f"got {x}")
    return x


class ExecutorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = LocalCluster(agents=2, gpus=2)
        cls.client = corral.Client(cls.cluster.addr, cls.cluster.token)
        cls.folder = tempfile.mkdtemp(prefix="corral-calls-")

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def executor(self, **params):
        return corral.Executor(self.folder, client=self.client, **params)

    def test_a_function_by_name_and_a_closure_by_value_return_their_results(self):
        ex = self.executor(gpus=1)
        by_name = ex.submit(scaled_sum, [1, 2, 3], factor=10)
        offset = 7
        by_value = ex.submit(lambda x: x + offset, 5)  # a closure: cloudpickle carries it
        node_pid = ex.submit(where_am_i)
        self.assertEqual(by_name.result(timeout=60), 60)
        self.assertEqual(by_value.result(timeout=60), 12)
        node, pid = node_pid.result(timeout=60)
        self.assertIn(node, {n["name"] for n in self.client.nodes()})
        self.assertNotEqual(pid, os.getpid())  # it ran in the job, not here
        self.assertEqual(by_name.state, JobState.SUCCEEDED)
        self.assertEqual(by_name.job.name, "scaled_sum")
        self.assertTrue(by_name.done())

    def test_map_array_runs_one_job_per_element(self):
        futures = self.executor().map_array(must_be_positive, [3, 1, 2])
        self.assertEqual(len({f.job_id for f in futures}), 3)
        self.assertEqual([f.result(timeout=60) for f in futures], [3, 1, 2])

    def test_the_functions_exception_is_raised_here_with_the_jobs_traceback(self):
        future = self.executor().submit(must_be_positive, -4)
        with self.assertRaises(NotPositive) as caught:
            future.result(timeout=60)
        self.assertEqual(str(caught.exception), "got -4")
        notes = "\n".join(getattr(caught.exception, "__notes__", []))
        self.assertIn(f"raised in job {future.job_id}", notes)
        self.assertIn("must_be_positive", notes)
        self.assertIsInstance(future.exception(), NotPositive)
        self.assertEqual(future.state, JobState.FAILED)  # the job says so too
        self.assertIn("NotPositive: got -4", future.stderr())

    def test_a_job_that_ends_without_a_result_is_a_failed_job_error(self):
        future = self.executor().submit(time.sleep, 300)
        self.assertTrue(wait_until(lambda: future.state == JobState.RUNNING, 30))
        self.assertTrue(future.cancel())
        with self.assertRaises(corral.FailedJobError) as caught:
            future.result(timeout=60)
        self.assertIn(f"job {future.job_id} cancelled", str(caught.exception))
        self.assertFalse(future.cancel())  # over already: nothing to cancel

    def test_command_is_the_executors_own(self):
        with self.assertRaisesRegex(ValueError, "'command'"):
            self.executor(command=["true"])

    def test_queues_usage_and_events(self):
        queue = self.client.set_queue("py-team", quota_gpus=2, weight=2)
        self.assertEqual(queue["quota_gpus"], 2)
        self.assertIn("py-team", {q["name"] for q in self.client.queues()})
        before = self.client.events(since=0, max=1)["revision"]
        job = self.client.submit("true", queue="py-team", name="py-usage")
        self.assertEqual(job.wait(timeout=60), JobState.SUCCEEDED)
        seen = []
        deadline = time.monotonic() + 30
        for change in self.client.follow_events(since=before, wait=2):
            seen.append(change)
            if change.get("type") == "run_ended" and change.get("key") == job.id:
                break
            self.assertLess(time.monotonic(), deadline, f"no run_ended for job {job.id}: {seen}")
        self.assertEqual(seen[0]["type"], "job_submitted")
        self.assertEqual(seen[-1]["cause"], "completed")
        usage = self.client.usage(by="queue", since=3600)
        self.assertEqual(usage["by"], "queue")
        self.assertIn("py-team", {r["key"] for r in usage["rows"]})
        with self.assertRaises(corral.InvalidArgument):
            self.client.usage(by="colour")

    def test_reservations_are_created_listed_and_deleted(self):
        node = self.client.nodes()[0]["name"]
        start = int(time.time() * 1000) + 3_600_000
        made = self.client.create_reservation("py-maint", [node], start_ms=start, duration="1h",
                                              maintenance=True)
        self.assertEqual(made["nodes"], [node])
        self.assertIn("py-maint", {r["name"] for r in self.client.reservations()})
        self.assertEqual(self.client.delete_reservation("py-maint")["name"], "py-maint")
        self.assertNotIn("py-maint", {r["name"] for r in self.client.reservations()})
        with self.assertRaises(corral.NotFound):
            self.client.delete_reservation("py-maint")

    def test_exec_runs_a_command_inside_a_running_job(self):
        job = self.client.submit("sleep 300", name="py-exec")
        try:
            self.assertTrue(wait_until(lambda: job.status() == JobState.RUNNING, 30))
            got = self.client.exec(job.id, ["sh", "-c", "echo in $CORRAL_JOB_ID; echo e >&2; "
                                                        "exit 3"])
            self.assertEqual(got.exit_code, 3)
            self.assertEqual(got.stdout.strip(), f"in {job.id}")
            self.assertEqual(got.stderr.strip(), "e")
            with self.assertRaises(corral.NotFound):  # not a notebook
                self.client.notebook_url(job.id)
        finally:
            job.cancel()


if __name__ == "__main__":
    unittest.main()
