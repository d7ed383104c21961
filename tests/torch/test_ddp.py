"""DistributedDataParallel and sharded training on backend "cc" against gloo.

  * DDP, default reduction: the same small model (same initial weights), the
    same per-rank batches, a few SGD steps; the parameters must come out equal
    to gloo's (bitwise at 2 ranks, where a sum of two gradients has one order;
    within 1e-6 relative at 3 and 4, where gloo adds in another order than
    cc's rank order) and bitwise equal on every rank. The gradient buckets are
    kept small so that several all_reduce futures are in flight at once, and
    rank 0 starts from other weights than the rest, which the broadcast in
    DDP's constructor must overwrite. 2 and 4 ranks.
  * DDP with a comm hook (register_comm_hook), 4 ranks, 20 steps, small
    buckets: the hook all_gathers each bucket (async, its future chained with
    then()) and sums the ranks' gradients in rank order, so that the
    reduction no longer depends on the backend's order: every step's loss on
    every rank is bitwise equal to gloo's with the same hook. The hook must
    have run on two buckets or more, every step.
  * FSDP2 (fully_shard, torch >= 2.6 on CPU): each Linear and the model
    sharded, 5 steps at 4 ranks: the losses bitwise equal to gloo's (or
    within 1e-6 relative: a reduce_scatter may add in another order).

    PYTHONPATH=build/python python3 tests/torch/test_ddp.py
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import harness

# DDP's constructor imports torch._dynamo (and sympy with it) on torch 2: once,
# here, before the ranks are forked, instead of in every rank at once (20 s
# on two cores); fully_shard and DeviceMesh likewise
try:
    import torch._dynamo  # noqa: F401
    from torch.distributed.device_mesh import DeviceMesh  # noqa: F401
    from torch.distributed.fsdp import fully_shard  # noqa: F401
except ImportError:
    pass

STEPS = 5
HOOK_STEPS = 20
VER = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])


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
    if ws == 4:
        hooked(rank, ws, gloo, gather_sum_hook)
    dist.destroy_process_group()


def gather_sum_hook(state, bucket):
    """Reduce a bucket as all_gather, then a sum in rank order, / world size:
    the same bits whatever order the backend would add in."""
    pg, ws, calls = state
    t = bucket.buffer()
    calls.append(bucket.index())
    flat = torch.empty(ws * t.numel(), dtype=t.dtype)
    parts = list(flat.chunk(ws))
    fut = dist.all_gather(parts, t, group=pg, async_op=True).get_future()

    def total(f):
        g = f.value()
        s = g[0].clone()
        for r in range(1, ws):
            s += g[r]
        return s.div_(ws)
    return fut.then(total)


def train_hooked(rank, ws, pg, hook):
    # DDP's first bucket is 1 MiB whatever bucket_cap_mb says (torch 1.13:
    # before and after the buckets are rebuilt): small, for several buckets
    dist._DEFAULT_FIRST_BUCKET_BYTES = 2048
    model = DDP(make_model(rank), process_group=pg, bucket_cap_mb=0.002)
    calls = []
    model.register_comm_hook((pg, ws, calls), hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    losses = []
    for _ in range(HOOK_STEPS):
        x = torch.randn(8, 16, generator=g)
        y = torch.randn(8, 4, generator=g)
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, len(set(calls)), len(calls)


def hooked(rank, ws, gloo, hook):
    l_cc, buckets, calls = train_hooked(rank, ws, dist.group.WORLD, hook)
    l_gloo, _, _ = train_hooked(rank, ws, gloo, hook)
    same = l_cc == l_gloo
    print(f"HOOK bitwise={same} buckets={buckets} calls={calls} first={l_cc[0].hex()} last={l_cc[-1].hex()} "
          f"gloo_last={l_gloo[-1].hex()}", flush=True)


def fsdp_job(rank, ws):
    from torch.distributed.fsdp import fully_shard

    def run(backend_group):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
        for layer in m:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh[backend_group])
        fully_shard(m, mesh=mesh[backend_group])
        opt = torch.optim.SGD(m.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(rank)
        out = []
        for _ in range(STEPS):
            x = torch.randn(8, 16, generator=g)
            y = torch.randn(8, 4, generator=g)
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out
    from torch.distributed.device_mesh import DeviceMesh
    dist.init_process_group("cc", rank=rank, world_size=ws)
    gloo = dist.new_group(backend="gloo")
    mesh = {"cc": DeviceMesh.from_group(dist.group.WORLD, "cpu"), "gloo": DeviceMesh.from_group(gloo, "cpu")}
    l_cc = run("cc")
    l_gloo = run("gloo")
    rel = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(l_cc, l_gloo))
    print(f"FSDP bitwise={l_cc == l_gloo} rel={rel:.3g} moved={l_cc[0] != l_cc[-1]}", flush=True)
    dist.destroy_process_group()


def main():
    quick = os.environ.get("TORCH_TEST_QUICK")   # make torch-test on a second torch: 4 ranks only
    for ws in ((4,) if quick else (2, 4)):
        res = harness.run_job(job, ws, timeout=150)
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
        if ws != 4:
            continue
        lines = [line for out in res.outputs for line in out.splitlines() if line.startswith("HOOK ")]
        if len(lines) != ws:
            harness.report(False, f"torch DDP comm hook world {ws}: no result: {res.why()}")
            continue
        f = [dict(kv.split("=") for kv in line.split()[1:]) for line in lines]
        ok = all(d["bitwise"] == "True" for d in f) and all(int(d["buckets"]) > 1 for d in f) and \
            all(int(d["calls"]) > HOOK_STEPS for d in f) and f[0]["first"] != f[0]["last"]
        harness.report(ok, f"torch DDP comm hook (all_gather, sum in rank order) world {ws}: {HOOK_STEPS} steps, "
                           f"{f[0]['buckets']} buckets through the hook: every rank's loss at every step bitwise "
                           f"equal to gloo's with the same hook (last loss {float.fromhex(f[0]['last']):.6g})"
                           + ("" if ok else f": {lines}"))
    if VER < (2, 6):
        harness.skip(f"torch FSDP: fully_shard (FSDP2) is torch >= 2.6; torch {torch.__version__}'s FSDP wants CUDA")
        return 1 if harness.failures() else 0
    for ws in (4,):
        res = harness.run_job(fsdp_job, ws, timeout=120)
        lines = [line for out in res.outputs for line in out.splitlines() if line.startswith("FSDP ")]
        if not res.ok or len(lines) != ws:
            harness.report(False, f"torch FSDP (fully_shard) world {ws}: the job failed: {res.why()}")
            continue
        f = [dict(kv.split("=") for kv in line.split()[1:]) for line in lines]
        bitwise = all(d["bitwise"] == "True" for d in f)
        rel = max(float(d["rel"]) for d in f)
        ok = all(d["moved"] == "True" for d in f) and rel < 1e-6
        harness.report(ok, f"torch FSDP (fully_shard) world {ws}: every Linear and the model sharded, {STEPS} steps: "
                           f"losses {'bitwise equal to' if bitwise else 'within %.2g of' % rel} gloo's "
                           f"({res.seconds:.1f} s)" + ("" if ok else f": {lines}"))
    return 1 if harness.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
