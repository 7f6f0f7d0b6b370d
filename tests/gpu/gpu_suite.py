#!/usr/bin/env python3
"""Corral's GPU suite: a head and one agent from a bundle (scripts/bundle.sh) on this machine's
GPUs, checked against what NVML, nvidia-smi and CUDA programs see. It prints one table
(check | result | figure) and writes it to a file.

Modes:
  real   the machine's NVIDIA driver (nvidia-smi and libnvidia-ml.so.1); PyTorch where
         `import torch` works, else only the driver-API probe (corral-gpushare-probe);
  fake   --fake: the fake NVML (FAKE_NVML), a stub libcuda (STUB_CUDA_DIR) and a fake
         nvidia-smi (tests/gpu/fake), so that CI runs the same checks and the same table.
Without a driver (and not --fake) it prints why and exits 77 (skipped).
Needs only python3 (stdlib), bash and the bundle. Exit 0: no check failed.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SKIPPED = 77


class Suite:
    def __init__(self, args):
        self.args = args
        self.bundle = os.path.abspath(args.bundle)
        self.corral = os.path.join(self.bundle, "bin", "corral")
        self.probe = os.path.join(self.bundle, "libexec", "corral-gpushare-probe")
        self.fake = args.fake
        self.work = tempfile.mkdtemp(prefix="corral-gpu-suite.")
        self.rows = []
        self.procs = []
        self.env = dict(os.environ)
        self.env.pop("LD_LIBRARY_PATH", None)
        self.job_env = []  # --env flags every job gets
        self.torch = False
        self.started = time.monotonic()
        self.table_path = args.table or os.path.join(os.environ.get("OUT") or self.work,
                                                     "gpu_table.txt")

    # ---- the table -------------------------------------------------------------------------
    def row(self, check, result, figure):
        self.rows.append((check, result, figure))
        print(f"  {check}: {result} ({figure})", flush=True)
        with open(self.table_path, "w") as f:  # so far: a run cut short still leaves its rows
            f.write(self.table())

    def table(self):
        head = ("check", "result", "figure")
        widths = [max(len(str(r[i])) for r in self.rows + [head]) for i in range(3)]
        line = lambda r: " | ".join(str(r[i]).ljust(widths[i]) for i in range(3)).rstrip()
        out = [line(head), "-+-".join("-" * w for w in widths)]
        out += [line(r) for r in self.rows]
        mode = "fake NVML + stub libcuda" if self.fake else "real driver"
        out.append(f"({mode}; {len(self.rows)} checks in {time.monotonic() - self.started:.0f} s)")
        return "\n".join(out) + "\n"

    # ---- processes -------------------------------------------------------------------------
    def run(self, argv, timeout=60, env=None, check=False):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           env=env or self.env)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
        return p

    def cli(self, *argv, timeout=60):
        return self.run([self.corral, *argv], timeout=timeout, check=True).stdout

    def start(self, argv, log, env=None):
        f = open(os.path.join(self.work, log), "w")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=env or self.env)
        self.procs.append(p)
        return p

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()

    def wait_for(self, seconds, what, probe):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                got = probe()
                if got:
                    return got
            except Exception:  # the daemon is not up yet
                pass
            time.sleep(0.25)
        raise RuntimeError(f"{what} (after {seconds} s)")

    # ---- the cluster -----------------------------------------------------------------------
    def agent_flags(self):
        flags = ["--gpu-check-interval", "1", "--cpus", "8", "--memory", "16G",
                 "--run-as", "agent"]
        if self.fake:
            flags += ["--nvml-library", self.env["FAKE_NVML"], "--cgroups", "off"]
        return flags

    def start_cluster(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        head = os.path.join(self.work, "head")
        self.start([self.corral, "head", "--state-dir", head, "--listen", f"127.0.0.1:{port}"],
                   "head.log")
        self.addr = f"http://127.0.0.1:{port}"
        self.wait_for(20, "the head did not start",
                      lambda: os.path.getsize(os.path.join(head, "admin.token")) > 0)
        self.token = open(os.path.join(head, "admin.token")).read().strip()
        self.join_file = os.path.join(head, "join.token")
        self.join = open(self.join_file).read().strip()
        self.env.update(CORRAL_ADDR=self.addr, CORRAL_TOKEN=self.token,
                        CORRAL_CONFIG=os.path.join(self.work, "no-config.json"))
        self.start([self.corral, "agent", "--head", self.addr, "--join-token-file",
                    self.join_file, "--name", "gpu1", "--state-dir",
                    os.path.join(self.work, "agent"), *self.agent_flags()], "agent.log")
        self.node = self.wait_for(30, "the agent did not register", self.ready_node)

    def ready_node(self):
        nodes = json.loads(self.cli("nodes", "-o", "json"))
        if isinstance(nodes, dict):
            nodes = nodes.get("nodes", [])
        for n in nodes:
            if n.get("name") == "gpu1" and n.get("state") == "ready":
                return n
        return None

    def submit(self, *flags):
        return self.cli("submit", "--parsable", *self.job_env, *flags).strip()

    def show(self, job):
        return json.loads(self.cli("show", job, "-o", "json"))

    def wait_done(self, job, seconds=120):
        return self.wait_for(seconds, f"job {job} did not end",
                             lambda: (lambda d: d if d["state"] in
                                      ("succeeded", "failed", "cancelled") else None)(
                                          self.show(job)))

    def logs(self, job):
        return self.run([self.corral, "logs", job]).stdout

    def agent_metrics(self):
        addr = self.ready_node()["address"]
        req = urllib.request.Request(f"http://{addr}/metrics",
                                     headers={"Authorization": f"Bearer {self.join}"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.read().decode()

    # ---- what the driver says --------------------------------------------------------------
    def smi(self, *fields):
        out = self.run(["nvidia-smi", "--query-gpu=" + ",".join(fields),
                        "--format=csv,noheader,nounits"], check=True).stdout
        return [[v.strip() for v in line.split(",")] for line in out.strip().splitlines()]


def metric(text, name, **labels):
    """The value of `name` with every label in `labels`, or None."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


# ---- the checks (each adds one or more rows) -------------------------------------------------
def check_node(s):
    p = s.run([s.corral, "agent", "--check", "--head", s.addr, "--join-token-file", s.join_file,
               *(["--nvml-library", s.env["FAKE_NVML"], "--cgroups", "off"] if s.fake else [])],
              timeout=60)
    with open(os.path.join(s.work, "agent-check.txt"), "w") as f:
        f.write(p.stdout + p.stderr)
    if p.returncode not in (0, 1):  # a usage error: a build without --check
        s.row("node check (agent --check)", "skip",
              f"exit {p.returncode}: {(p.stderr.strip().splitlines() or [''])[0][:100]}")
        return
    failed = [l.strip() for l in p.stdout.splitlines() if l.strip().startswith("FAIL")]
    parts = sum(1 for l in p.stdout.splitlines() if re.match(r"\s*(ok|FAIL|warn|skip)\b", l))
    s.row("node check (agent --check)", "pass" if p.returncode == 0 else "FAIL",
          f"{parts} parts, exit {p.returncode}" + (f": {failed[0]}" if failed else ""))


def check_discovery(s):
    agent = {g["index"]: g for g in s.node["gpus"]}
    smi = s.smi("index", "uuid", "memory.total", "name")
    ok = len(agent) == len(smi)
    diffs = []
    for idx, uuid, mem, name in smi:
        g = agent.get(int(idx))
        if g is None or g["uuid"] != uuid or g["memory_mb"] != int(mem):
            ok = False
            diffs.append(f"GPU {idx}: agent {g and (g['uuid'], g['memory_mb'])} "
                         f"nvidia-smi {(uuid, int(mem))}")
    listed = s.run(["nvidia-smi", "-L"]).stdout
    in_list = all(g["uuid"] in listed for g in agent.values())
    s.row("discovery: agent == nvidia-smi (UUID, MiB)", "pass" if ok and in_list else "FAIL",
          "; ".join(diffs) if diffs else
          f"{len(agent)} GPU(s): " + ", ".join(f"{g['model']} {g['memory_mb']} MiB"
                                                for g in agent.values()))
    s.gpus = agent


TORCH_INFO = """
import torch, time
n = torch.cuda.device_count()
p = torch.cuda.get_device_properties(0)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = a @ a
torch.cuda.synchronize()
t = time.time()
for _ in range(50):
    b = a @ a
torch.cuda.synchronize()
dt = time.time() - t
print(f"torch devices={n} name={p.name} uuid=GPU-{getattr(p, 'uuid', '?')} "
      f"tflops={50 * 2 * 8192 ** 3 / dt / 1e12:.1f}")
"""


def check_isolation(s):
    script = os.path.join(s.work, "isolation.sh")
    with open(script, "w") as f:
        f.write("echo CVD=$CUDA_VISIBLE_DEVICES\n"
                "for d in /dev/nvidia[0-9]*; do [ -e \"$d\" ] || continue; "
                "if (exec 3<>\"$d\") 2>/dev/null; then echo open=$d; else echo denied=$d; fi; done\n"
                f"{s.probe} ctx info alloc gpa 1024\n")
        if s.torch:
            torch_script = os.path.join(s.work, "torch_info.py")
            with open(torch_script, "w") as t:
                t.write(TORCH_INFO)
            f.write(f"python3 {torch_script}\n")
    job = s.submit("--gpus", "1", "--", "bash", script)
    d = s.wait_done(job)
    out = s.logs(job)
    gpu = d["runs"][-1]["placement"][0]["gpus"][0]
    cvd = re.search(r"CVD=(\S*)", out)
    opened = re.findall(r"open=(\S+)", out)
    denied = re.findall(r"denied=(\S+)", out)
    ok = d["state"] == "succeeded" and cvd is not None and cvd.group(1) == str(gpu)
    s.row("isolation: CUDA_VISIBLE_DEVICES", "pass" if ok else "FAIL",
          f"GPU {gpu}, job saw {cvd.group(1) if cvd else 'none'}")
    if opened or denied:
        s.row("isolation: device nodes the job may open",
              "pass" if len(opened) == 1 else "FAIL",
              f"open {' '.join(opened) or 'none'}; denied {' '.join(denied) or 'none'}")
    else:
        s.row("isolation: device nodes the job may open", "skip", "no /dev/nvidiaN (fake NVML)")
    probe_ok = "ctx=0" in out and re.search(r"total=\d+", out) and "rc=0" in out
    s.row("isolation: driver-API program (probe)", "pass" if probe_ok else "FAIL",
          " ".join(re.findall(r"(?:ctx|total|rc)=\d+", out)) or out.strip()[-120:])
    if s.torch:
        t = re.search(r"torch devices=(\d+) name=(.*?) uuid=(\S+) tflops=([\d.]+)", out)
        uuid_ok = t and (t.group(3).endswith("?") or
                         t.group(3).replace("GPU-", "") in s.gpus[gpu]["uuid"])
        s.row("isolation: PyTorch sees exactly its GPU",
              "pass" if t and t.group(1) == "1" and uuid_ok else "FAIL",
              f"{t.group(1)} device(s), {t.group(2)}, fp16 matmul {t.group(4)} TFLOPS" if t
              else out.strip()[-160:])
        s.whole_tflops = float(t.group(4)) if t else None


SHARE_JOB = r"""
import os, re, subprocess, sys, time
work, probe, use_torch = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
limit = os.environ.get("CORRAL_GPU_MEMORY_LIMIT", "0m")
mib = int(limit[:-1]) * (1024 if limit.endswith("g") else 1)
print(f"GPU={os.environ.get('CUDA_VISIBLE_DEVICES')} LIMIT_MIB={mib} "
      f"ENFORCED={os.environ.get('CORRAL_GPU_SHARE_ENFORCED')}", flush=True)
me = os.environ["CORRAL_JOB_ID"]
open(f"{work}/started.{me}", "w").close()
deadline = time.time() + 90
while time.time() < deadline and len([f for f in os.listdir(work) if f.startswith("started.")]) < 2:
    time.sleep(0.1)
both = len([f for f in os.listdir(work) if f.startswith("started.")]) >= 2
print(f"BOTH_RUNNING={int(both)}", flush=True)
within, past = mib * 3 // 4, mib // 2
out = subprocess.run([probe, "ctx", "info", "alloc", "gpa", str(within), "alloc", "gpa", str(past)],
                     capture_output=True, text=True).stdout
print("PROBE " + out.replace("\n", " "), flush=True)
if use_torch:
    import torch
    free, total = torch.cuda.mem_get_info()
    x = torch.empty(within << 20, dtype=torch.uint8, device="cuda")
    try:
        y = torch.empty(past << 20, dtype=torch.uint8, device="cuda")
        print(f"TORCH total={total >> 20} within=ok past=allocated", flush=True)
    except torch.cuda.OutOfMemoryError:
        print(f"TORCH total={total >> 20} within=ok past=oom", flush=True)
    del x
open(f"{work}/done.{me}", "w").close()
while time.time() < deadline and len([f for f in os.listdir(work) if f.startswith("done.")]) < 2:
    time.sleep(0.1)
"""


def check_shares(s):
    work = os.path.join(s.work, "shares")
    os.makedirs(work)
    os.chmod(work, 0o777)
    script = os.path.join(s.work, "share_job.py")
    with open(script, "w") as f:
        f.write(SHARE_JOB)
    jobs = [s.submit("--gpus", "0.5", "--", "python3", script, work, s.probe,
                     "1" if s.torch else "0") for _ in range(2)]
    done = [s.wait_done(j, 180) for j in jobs]
    logs = [s.logs(j) for j in jobs]
    gpus = {d["runs"][-1]["placement"][0]["gpus"][0] for d in done}
    both = all("BOTH_RUNNING=1" in l for l in logs)
    s.row("shares: two 0.5 jobs at once on one GPU",
          "pass" if both and len(gpus) == 1 and all(d["state"] == "succeeded" for d in done)
          else "FAIL", f"GPU(s) {sorted(gpus)}, both running: {both}, "
                       f"states {[d['state'] for d in done]}")
    figures, ok = [], True
    for l in logs:
        lim = re.search(r"LIMIT_MIB=(\d+)", l)
        p = re.search(r"PROBE ctx=(\d+) total=(\d+) free=\d+ device_total=\d+ rc=(\d+) rc=(\d+)", l)
        if not lim or not p:
            ok = False
            figures.append(l.strip()[-160:])
            continue
        ok &= p.group(1) == "0" and p.group(2) == lim.group(1) and p.group(3) == "0" and \
            p.group(4) == "2"
        figures.append(f"limit {lim.group(1)} MiB, seen {p.group(2)}, within rc={p.group(3)}, "
                       f"past rc={p.group(4)}")
    s.row("shares: memory cap, driver API (rc 2 = OOM)", "pass" if ok else "FAIL", figures[0])
    if s.torch:
        t = [re.search(r"TORCH total=(\d+) within=(\w+) past=(\w+)", l) for l in logs]
        tok = all(x and x.group(3) == "oom" for x in t)
        s.row("shares: memory cap, PyTorch (OutOfMemoryError)", "pass" if tok else "FAIL",
              f"total seen {t[0].group(1)} MiB, past the share: {t[0].group(3)}" if t[0]
              else logs[0].strip()[-160:])


def check_mps(s):
    control = shutil.which("nvidia-cuda-mps-control") or next(
        (p for p in ("/usr/bin/nvidia-cuda-mps-control", "/usr/local/cuda/bin/nvidia-cuda-mps-control")
         if os.access(p, os.X_OK)), None)
    if not control:
        s.row("shares: MPS compute cap", "skip", "no nvidia-cuda-mps-control")
        return
    if not s.torch or not getattr(s, "whole_tflops", None):
        s.row("shares: MPS compute cap", "skip", "no PyTorch to measure with")
        return
    script = os.path.join(s.work, "mps.py")
    with open(script, "w") as f:
        f.write(TORCH_INFO)
    job = s.submit("--gpus", "0.5", "--gpu-isolation", "mps", "--", "python3", script)
    d = s.wait_done(job, 120)
    out = s.logs(job)
    t = re.search(r"tflops=([\d.]+)", out)
    if d["state"] != "succeeded" or not t:
        s.row("shares: MPS compute cap", "FAIL", f"{d['state']}: {out.strip()[-160:]}")
        return
    ratio = float(t.group(1)) / s.whole_tflops
    s.row("shares: MPS compute cap (0.5)", "pass" if ratio <= 0.75 else "FAIL",
          f"{t.group(1)} of {s.whole_tflops:.1f} TFLOPS = {ratio:.2f} (want <= 0.75)")


def check_health(s):
    m = s.wait_for(20, "the agent's /metrics has no ECC counts",
                   lambda: (lambda t: t if "corral_gpu_ecc_errors{" in t or
                            "corral_gpu_health{" in t else None)(s.agent_metrics()))
    rows = s.smi("index", "temperature.gpu", "ecc.errors.corrected.volatile.total",
                 "ecc.errors.uncorrected.volatile.total", "ecc.errors.corrected.aggregate.total",
                 "ecc.errors.uncorrected.aggregate.total")
    ok, figs = True, []
    for idx, temp, *ecc in rows:
        names = [("sbe", "volatile"), ("dbe", "volatile"), ("sbe", "aggregate"),
                 ("dbe", "aggregate")]
        for (typ, counter), want in zip(names, ecc):
            got = metric(m, "corral_gpu_ecc_errors", gpu=idx, type=typ, counter=counter)
            want_n = None if not want.isdigit() else float(want)
            if got is not None and got < 0:
                got = None
            if got != want_n:
                ok = False
                figs.append(f"GPU {idx} {typ}/{counter}: agent {got} nvidia-smi {want}")
        if not figs:
            figs.append(f"GPU {idx} ECC sbe/dbe volatile {ecc[0]}/{ecc[1]}, "
                        f"aggregate {ecc[2]}/{ecc[3]}")
        got_t = metric(m, "corral_gpu_temperature_celsius", gpu=idx)
        if got_t is None:
            s.row(f"health: GPU {idx} temperature", "skip",
                  f"nvidia-smi {temp} C; the agent reads no temperature")
        else:
            close = temp.isdigit() and abs(got_t - float(temp)) <= 5
            s.row(f"health: GPU {idx} temperature", "pass" if close else "FAIL",
                  f"agent {got_t:.0f} C, nvidia-smi {temp} C")
    s.row("health: ECC counts, agent == nvidia-smi", "pass" if ok else "FAIL", "; ".join(figs))


def check_containers(s):
    crun = shutil.which("crun")
    image = os.environ.get("GPU_SUITE_IMAGE")
    if not crun:
        s.row("containers: CDI devices in an image", "skip", "no container runtime (crun)")
    elif not image:
        s.row("containers: CDI devices in an image", "skip",
              "crun present; no image given (GPU_SUITE_IMAGE)")
    else:
        job = s.submit("--gpus", "1", "--image", image, "--", "sh", "-c",
                       "ls /dev/nvidia[0-9]* && echo CVD=$CUDA_VISIBLE_DEVICES")
        d = s.wait_done(job, 120)
        out = s.logs(job)
        nodes = re.findall(r"/dev/nvidia\d+", out)
        s.row("containers: CDI devices in an image",
              "pass" if d["state"] == "succeeded" and len(nodes) == 1 else "FAIL",
              f"{d['state']}, device nodes {nodes}")


def check_metrics(s):
    if s.torch:
        code = ("import torch, time\na = torch.randn(8192, 8192, device='cuda')\n"
                "t = time.time()\nwhile time.time() - t < 12:\n    b = a @ a\n"
                "torch.cuda.synchronize()\n")
        script = os.path.join(s.work, "busy.py")
        with open(script, "w") as f:
            f.write(code)
        argv = ["python3", script]
    else:
        argv = ["bash", "-c", f"{s.probe} ctx info; sleep 15"]
    job = s.submit("--gpus", "1", "--", *argv)
    s.wait_for(60, f"job {job} did not start", lambda: s.show(job)["state"] == "running")
    gpu = s.show(job)["runs"][-1]["placement"][0]["gpus"][0]
    best, smi_best, deadline = 0.0, 0.0, time.monotonic() + 10
    while time.monotonic() < deadline and s.show(job)["state"] == "running":
        v = metric(s.agent_metrics(), "corral_gpu_utilization_ratio", gpu=gpu)
        best = max(best, v or 0.0)
        util = s.smi("index", "utilization.gpu")
        smi_best = max(smi_best, float(util[gpu][1]) if util[gpu][1].isdigit() else 0.0)
        time.sleep(1)
    s.wait_done(job)
    s.row("metrics: /metrics utilisation while a job computes",
          "pass" if best >= 0.5 else "FAIL",
          f"agent max {best:.2f}, nvidia-smi max {smi_best:.0f}%")


CHECKS = [check_node, check_discovery, check_isolation, check_shares, check_mps, check_health,
          check_containers, check_metrics]


def driver_missing():
    if not shutil.which("nvidia-smi"):
        return "nvidia-smi not found"
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    if p.returncode != 0 or "GPU " not in p.stdout:
        return f"nvidia-smi -L found no GPU ({(p.stdout + p.stderr).strip()[:200]})"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bundle", help="the bundle directory (scripts/bundle.sh)")
    ap.add_argument("--fake", action="store_true",
                    help="the fake NVML and stub libcuda (env FAKE_NVML, STUB_CUDA_DIR)")
    ap.add_argument("--table", help="where to write the table (default $OUT/gpu_table.txt, "
                                    "else WORK/gpu_table.txt)")
    args = ap.parse_args()
    s = Suite(args)
    if args.fake:
        s.env["PATH"] = os.path.join(HERE, "fake") + ":" + s.env["PATH"]
        # 16 GiB, as the stub libcuda's one device has.
        s.env.setdefault("FAKE_NVML_GPUS", "A4000:16384,A4000:16384")
        s.env.setdefault("FAKE_NVML_USE", "87:2048,87:2048")
        s.job_env = ["--env", "LD_LIBRARY_PATH=" + s.env["STUB_CUDA_DIR"]]
    else:
        why = driver_missing()
        if why:
            print(f"SKIP: no NVIDIA driver on this machine: {why}")
            return SKIPPED
        if os.environ.get("LD_LIBRARY_PATH"):  # jobs start with a clean environment
            s.job_env = ["--env", "LD_LIBRARY_PATH=" + os.environ["LD_LIBRARY_PATH"]]
        s.torch = subprocess.run(["python3", "-c", "import torch; assert torch.cuda.is_available()"],
                                 capture_output=True).returncode == 0
    print(f"corral GPU suite: bundle {s.bundle}, work {s.work}, "
          f"{'fake' if s.fake else 'real'} driver, torch {'yes' if s.torch else 'no'}", flush=True)
    try:
        s.start_cluster()
        for check in CHECKS:
            try:
                check(s)
            except Exception as e:  # one check's failure is its row; the rest still run
                s.row(check.__name__.replace("check_", ""), "FAIL", f"{type(e).__name__}: {e}")
    except Exception as e:
        s.row("cluster from the bundle", "FAIL", f"{e}")
    finally:
        s.stop()
    table = s.table()
    print("\n" + table)
    with open(s.table_path, "w") as f:
        f.write(table)
    print(f"table written to {s.table_path}; logs in {s.work}")
    return 1 if any(r[1] == "FAIL" for r in s.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
