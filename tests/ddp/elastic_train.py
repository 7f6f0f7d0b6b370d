#!/usr/bin/env python3
"""Elastic data-parallel training as torchrun (c10d rendezvous) runs it, for the elastic tests.

torchrun restarts every worker whenever a replica joins or leaves the job, each time with a new
WORLD_SIZE: the workers resume from the checkpoint rank 0 writes after every step (in
CORRAL_CHECKPOINT_DIR, shared by every host here), and DDP makes every rank start from rank 0's
parameters. Full-batch gradient descent on a fixed regression problem, so the loss falls at every
step whatever the world size.

Each worker appends one JSON line per step to OUT/steps.HOST.PID.jsonl: the step, the world size,
its rank, torchrun's restart count, the loss over the whole data set after the step, and a
checksum of its parameters (equal across the ranks of one world, step by step).
"""
import argparse
import datetime
import hashlib
import json
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=100000)
parser.add_argument("--step-sleep", type=float, default=0.1)
parser.add_argument("--out", required=True)
# How long a collective waits for a peer: a worker whose peer vanished with its node (no
# connection reset) sits in it that long unless killed. NCCL's default is 30 minutes.
parser.add_argument("--collective-timeout", type=float, default=300)
args = parser.parse_args()

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
dist.init_process_group("gloo", init_method="env://",
                        timeout=datetime.timedelta(seconds=args.collective_timeout))

torch.manual_seed(0)
true_w = torch.randn(32, 1)
data_x = torch.randn(4096, 32)
data_y = data_x @ true_w + 0.01 * torch.randn(4096, 1)
shard_x, shard_y = data_x[rank::world], data_y[rank::world]

torch.manual_seed(1)
model = nn.Linear(32, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.005)
ckpt_dir = os.environ["CORRAL_CHECKPOINT_DIR"]
ckpt_path = os.path.join(ckpt_dir, "elastic.pt")
step = torch.zeros(1, dtype=torch.int64)
if rank == 0 and os.path.exists(ckpt_path):
    state = torch.load(ckpt_path)
    model.load_state_dict(state["model"])
    step[0] = state["step"]
dist.broadcast(step, 0)
ddp = DDP(model)  # every rank takes rank 0's parameters here

os.makedirs(args.out, exist_ok=True)
log = open(os.path.join(args.out, f"steps.{socket.gethostname()}.{os.getpid()}.jsonl"), "a")
print(f"rank {rank}/{world} restart {restart} resumes at step {int(step)}", flush=True)
for s in range(int(step), args.steps):
    opt.zero_grad()
    nn.functional.mse_loss(ddp(shard_x), shard_y).backward()  # DDP averages the gradients
    opt.step()
    if rank == 0:
        tmp = ckpt_path + ".tmp"
        torch.save({"model": model.state_dict(), "step": s + 1}, tmp)
        os.replace(tmp, ckpt_path)  # whole or absent
    with torch.no_grad():
        loss = nn.functional.mse_loss(model(data_x), data_y).item()
        params = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = hashlib.sha256(params.numpy().tobytes()).hexdigest()[:16]
    log.write(json.dumps({"step": s + 1, "world": world, "rank": rank, "restart": restart,
                          "loss": loss, "params": digest, "at": time.time()}) + "\n")
    log.flush()
    time.sleep(args.step_sleep)
dist.destroy_process_group()
