"""The client's calls for a job's use over time and the cluster's series, against a live local
cluster whose agent samples every second and whose head takes a cluster point every second:
the client's figures equal ``corral eff -o json``'s for the same job."""

from __future__ import annotations

import json
import os
import subprocess
import unittest

import corral
from corral import JobState

from .cluster import CORRAL, LocalCluster, wait_until


class EfficiencyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = LocalCluster(agents=1, gpus=2, head_args=["--cluster-series-step", "1s"],
                                   agent_args=["--usage-interval", "1"])
        cls.client = corral.Client(cls.cluster.addr, cls.cluster.token)
        path = os.path.join(cls.cluster.dir, "agents", "node1", "simulated-gpu-use")
        with open(path + ".tmp", "w") as f:
            f.write("0 60 4096\n1 40 1024\n")
        os.rename(path + ".tmp", path)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()

    def corral_json(self, *args):
        env = dict(os.environ, CORRAL_ADDR=self.cluster.addr, CORRAL_TOKEN=self.cluster.token,
                   CORRAL_CONFIG=os.path.join(self.cluster.dir, "no-config.json"))
        out = subprocess.run([CORRAL, *args, "-o", "json"], capture_output=True, text=True,
                             env=env, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_a_jobs_series_and_efficiency_agree_with_corral_eff(self):
        job = self.client.submit("sleep 5", gpus=2, name="py-eff")
        self.assertEqual(job.wait(timeout=60), JobState.SUCCEEDED)
        self.assertTrue(wait_until(lambda: self.client.efficiency(job.id)["samples"] >= 3),
                        job.refresh().data)
        series = job.refresh().usage()
        self.assertEqual(list(series), [0])
        points = series[0]
        self.assertEqual([p.seq for p in points], list(range(1, len(points) + 1)))
        self.assertTrue(all(p.gpu_util == 50 and p.gpu_mem == 5120 << 20 for p in points),
                        points)
        mine = job.efficiency()
        cli = self.corral_json("eff", str(job.id))
        self.assertEqual(mine["samples"], cli["samples"])
        self.assertEqual(mine["gpu_util"], cli["gpu_util"])
        self.assertEqual(mine["gpu_memory_bytes"], cli["gpu_memory_bytes"])
        self.assertAlmostEqual(mine["cpu_milli"]["mean"], cli["cpu_milli"]["mean"])
        self.assertEqual(mine["cpu_milli"]["peak"], cli["cpu_milli"]["peak"])
        self.assertAlmostEqual(mine["memory_bytes"]["mean"], cli["memory_bytes"]["mean"])
        with self.assertRaises(corral.NotFound):
            self.client.efficiency(999999)

    def test_the_cluster_series_follows_the_load(self):
        job = self.client.submit("sleep 30", gpus=1, name="py-series")
        try:
            def held():
                pts = self.client.cluster_series()["points"]
                return pts and pts[-1].gpus_used == 1 and pts[-1].running == 1
            self.assertTrue(wait_until(held), self.client.cluster_series())
            page = self.client.cluster_series()
            self.assertEqual(page["step_ms"], 1000)
            last = page["points"][-1]
            self.assertIsInstance(last, corral.ClusterPoint)
            self.assertEqual(last.gpus, 2)
            self.assertIsNotNone(last.gpu_util)
            ats = [p.at for p in page["points"]]
            self.assertEqual(ats, sorted(set(ats)), "one point a step, in order")
            recent = self.client.cluster_series(since=2)["points"]
            self.assertLessEqual(len(recent), 4, recent)
            self.assertTrue(all(p.at >= last.at - 3000 for p in recent), recent)
            with self.assertRaises(corral.InvalidArgument):
                self.client.cluster_series(since=-1)
        finally:
            job.cancel()


if __name__ == "__main__":
    unittest.main()
