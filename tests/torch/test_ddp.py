"""DistributedDataParallel on backend "cc" against gloo: the same small model
(same initial weights), the same per-rank batches, a few SGD steps; the
parameters must come out equal to gloo's (bitwise at 2 ranks, where a sum of
two gradients has one order; within 1e-6 relative at 3 and 4, where gloo adds
in another order than cc's rank order) and bitwise equal on every rank. The
gradient buckets are kept small so that several all_reduce futures are in
flight at once, and rank 0 starts from other weights than the rest, which the
broadcast in DDP's constructor must overwrite.

    PYTHONPATH=build/python /usr/bin/python3 tests/torch/test_ddp.py
"""
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import harness

STEPS = 5


def make_model(rank):
    torch.manual_seed(1234 if rank == 0 else 99)  # DDP broadcasts rank 0's weights
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))


def train(rank, pg):
    model = DDP(make_model(rank), process_group=pg, bucket_cap_mb=0.002)  # ~500 floats a bucket
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for _ in range(STEPS):
        x = torch.randn(8, 16, generator=g)
        y = torch.randn(8, 4, generator=g)
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def job(rank, ws):
    dist.init_process_group("cc", rank=rank, world_size=ws)
    gloo = dist.new_group(backend="gloo")
    p_cc = train(rank, dist.group.WORLD)
    p_gloo = train(rank, gloo)
    # every rank's cc parameters, to compare across ranks
    allp = [torch.zeros_like(p_cc) for _ in range(ws)]
    dist.all_gather(allp, p_cc, group=gloo)
    same_ranks = all(torch.equal(allp[0], q) for q in allp)
    bitwise = torch.equal(p_cc, p_gloo)
    diff = (p_cc - p_gloo).abs().max().item()
    rel = diff / max(p_gloo.abs().max().item(), 1e-30)
    moved = (p_cc - torch.cat([p.detach().reshape(-1) for p in make_model(0).parameters()])).abs().max().item()
    print(f"DDP bitwise={bitwise} maxdiff={diff:.3g} rel={rel:.3g} ranks_equal={same_ranks} moved={moved:.3g} "
          f"n={p_cc.numel()}", flush=True)
    dist.destroy_process_group()


def main():
    for ws in (2, 3, 4):
        res = harness.run_job(job, ws, timeout=120)
        lines = [line for out in res.outputs for line in out.splitlines() if line.startswith("DDP ")]
        if not res.ok or len(lines) != ws:
            harness.report(False, f"torch DDP world {ws}: the job failed: {res.why()}")
            continue
        f = [dict(kv.split("=") for kv in line.split()[1:]) for line in lines]
        bitwise = all(d["bitwise"] == "True" for d in f)
        rel = max(float(d["rel"]) for d in f)
        equal_ranks = all(d["ranks_equal"] == "True" for d in f)
        moved = min(float(d["moved"]) for d in f)
        ok = equal_ranks and moved > 1e-3 and (bitwise if ws == 2 else rel < 1e-6)
        harness.report(ok, f"torch DDP world {ws}: {STEPS} SGD steps of a 3-layer model ({f[0]['n']} parameters, "
                           f"small buckets): parameters {'bitwise equal to' if bitwise else 'within %.2g of' % rel} "
                           f"gloo's, bitwise equal on every rank ({res.seconds:.1f} s)"
                           + ("" if ok else f": {lines}"))
    return 1 if harness.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
