#!/usr/bin/env python3
"""Data-parallel training with PyTorch DDP, as Corral (or torchrun, or Slurm's srun) starts it.

Every process reads its place in the job from the environment torch.distributed expects
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), which Corral sets for each task of
each replica; under torchrun, torchrun sets them. It checkpoints to CORRAL_CHECKPOINT_DIR (the
same path for every task of every run of the job) and resumes from there after a restart.

    corral submit --replicas 2 --tasks-per-replica 2 --gpus 2 -- python3 train.py --steps 200

Copy it and replace the model and the data: the rest is what a restartable DDP job needs.
"""
import argparse
import datetime
import hashlib
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=100)
parser.add_argument("--checkpoint-every", type=int, default=10)
parser.add_argument("--step-sleep", type=float, default=0.0, help="seconds per step (demos)")
parser.add_argument("--out", default="", help="directory for per-rank result files (tests)")
args = parser.parse_args()

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
use_cuda = torch.cuda.is_available() and os.environ.get("CUDA_VISIBLE_DEVICES", "") != ""
backend = "nccl" if use_cuda else "gloo"
if use_cuda:
    torch.cuda.set_device(local_rank % torch.cuda.device_count())
device = torch.device("cuda" if use_cuda else "cpu")
dist.init_process_group(backend, init_method="env://", timeout=datetime.timedelta(seconds=120))

ckpt_dir = os.environ.get("CORRAL_CHECKPOINT_DIR", "")
ckpt_path = os.path.join(ckpt_dir, "checkpoint.pt") if ckpt_dir else ""
attempt = os.environ.get("CORRAL_RUN", "0.1").split(".")[-1]
if args.out:
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"pid.{attempt}.{rank}"), "w") as f:
        f.write(str(os.getpid()))

# A fixed regression problem: every rank trains on its own shard, all share the weights.
torch.manual_seed(0)
true_w = torch.randn(32, 1)
data_x = torch.randn(4096, 32)
data_y = data_x @ true_w + 0.01 * torch.randn(4096, 1)
shard_x, shard_y = data_x[rank::world].to(device), data_y[rank::world].to(device)

torch.manual_seed(1)  # the same initial weights on every rank
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.02)
start_step = 0
if ckpt_path and os.path.exists(ckpt_path):
    state = torch.load(ckpt_path, map_location=device)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start_step = state["step"]
ddp = DDP(model)


def full_loss():
    with torch.no_grad():
        return nn.functional.mse_loss(model(data_x.to(device)), data_y.to(device)).item()


loss_first = full_loss()
print(f"rank {rank}/{world} local {local_rank} node {os.environ.get('NODE_RANK', '?')} "
      f"starts at step {start_step}, loss {loss_first:.4f}", flush=True)
g = torch.Generator().manual_seed(100 + rank)
for step in range(start_step, args.steps):
    idx = torch.randint(0, shard_x.shape[0], (64,), generator=g)
    opt.zero_grad()
    loss = nn.functional.mse_loss(ddp(shard_x[idx]), shard_y[idx])
    loss.backward()  # DDP all-reduces the gradients here
    opt.step()
    if rank == 0 and ckpt_path and (step + 1) % args.checkpoint_every == 0:
        os.makedirs(ckpt_dir, exist_ok=True)
        tmp = ckpt_path + ".tmp"
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}, tmp)
        os.replace(tmp, ckpt_path)  # a checkpoint is whole or absent
    if args.step_sleep:
        time.sleep(args.step_sleep)
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)

loss_last = full_loss()
params = torch.cat([p.detach().cpu().flatten() for p in model.parameters()])
digest = hashlib.sha256(params.numpy().tobytes()).hexdigest()
print(f"rank {rank} done: loss {loss_first:.4f} -> {loss_last:.4f}, params {digest[:12]}",
      flush=True)
if args.out:
    keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "NNODES",
            "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "SLURM_PROCID", "SLURM_LOCALID",
            "SLURM_NODEID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE", "SLURM_JOB_NODELIST",
            "SLURM_NNODES", "TF_CONFIG", "CORRAL_NODE"]
    with open(os.path.join(args.out, f"result.{rank}.json"), "w") as f:
        json.dump({"rank": rank, "world": world, "first_step": start_step,
                   "loss_first": loss_first, "loss_last": loss_last, "params": digest,
                   "env": {k: os.environ.get(k) for k in keys}}, f)
dist.destroy_process_group()
