"""TORCH_DISTRIBUTED_DEBUG=DETAIL on backend "cc": torch wraps the backend
(ProcessGroupWrapper) and, before each collective, checks over a gloo group
of its own that every rank calls the same collective with the same shapes.

  * the wrapper is there (torch 2: it wraps third-party backends; torch 1.13
    wraps gloo, nccl and ucc only, and the checks below then run unwrapped)
  * all_reduce, broadcast, all_gather, all_gather_into_tensor,
    reduce_scatter_tensor, all_to_all_single, barrier, send/recv and recv
    from any source give the right results through the wrapper
  * an all_reduce whose shapes differ between ranks (rank 1: 5 elements, the
    others 4) raises on every rank with torch's desync report, naming the
    shapes, before cc runs it

    PYTHONPATH=build/python python3 tests/torch/test_debug.py
"""
import os
import sys

import torch
import torch.distributed as dist

import harness

VER = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
WRAPS = VER >= (2, 0)


def job(rank, ws):
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    dist.set_debug_level_from_env()   # (torch read it at import, before this rank set it)
    dist.init_process_group("cc", rank=rank, world_size=ws)
    be = dist.group.WORLD._get_backend(torch.device("cpu")) if hasattr(dist.group.WORLD, "_get_backend") \
        else dist.group.WORLD
    print(f"WRAPPED {type(be).__name__}", flush=True)
    P = ws
    t = torch.full((4,), float(rank))
    dist.all_reduce(t)
    ok = torch.equal(t, torch.full((4,), float(sum(range(P)))))
    b = torch.arange(3.) if rank == 1 else torch.zeros(3)
    dist.broadcast(b, 1)
    ok &= torch.equal(b, torch.arange(3.))
    lst = [torch.zeros(2) for _ in range(P)]
    dist.all_gather(lst, torch.full((2,), float(rank)))
    ok &= all(torch.equal(lst[r], torch.full((2,), float(r))) for r in range(P))
    out = torch.zeros(2 * P)
    dist.all_gather_into_tensor(out, torch.full((2,), float(rank)))
    ok &= torch.equal(out, torch.repeat_interleave(torch.arange(float(P)), 2))
    rs = torch.zeros(2)
    dist.reduce_scatter_tensor(rs, torch.arange(2. * P))
    ok &= torch.equal(rs, torch.tensor([2. * rank, 2. * rank + 1]) * P)
    a2a = torch.zeros(P)
    dist.all_to_all_single(a2a, torch.arange(float(P)) + 10 * rank)
    ok &= torch.equal(a2a, torch.tensor([10. * j + rank for j in range(P)]))
    dist.barrier()
    if rank == 0:
        got = set()
        for _ in range(P - 1):
            x = torch.zeros(1)
            got.add((dist.recv(x), x.item()))
        ok &= got == {(r, float(r)) for r in range(1, P)}
    else:
        dist.send(torch.tensor([float(rank)]), 0)
    print(f"RESULTS {ok}", flush=True)
    # shapes that differ: torch's check (or, unwrapped, cc's own) stops it
    t = torch.ones(5 if rank == 1 else 4)
    try:
        dist.all_reduce(t)
        print("MISMATCH none: the all_reduce succeeded", flush=True)
    except RuntimeError as e:
        msg = " ".join(str(e).split())
        print(f"MISMATCH {msg[:400]}", flush=True)
    os._exit(0)


def main():
    for ws in (2, 3):
        res = harness.run_job(job, ws, timeout=90)
        outs = res.outputs
        wrapped = [next((ln.split()[1] for ln in o.splitlines() if ln.startswith("WRAPPED ")), "?") for o in outs]
        results = [next((ln for ln in o.splitlines() if ln.startswith("RESULTS ")), "RESULTS missing") for o in outs]
        mism = [next((ln[9:] for ln in o.splitlines() if ln.startswith("MISMATCH ")), "missing") for o in outs]
        if WRAPS:
            harness.report(all(w == "_ProcessGroupWrapper" or "Wrapper" in w for w in wrapped),
                           f"torch DETAIL world {ws}: the cc backend is wrapped ({wrapped[0]})")
        else:
            harness.skip(f"torch DETAIL world {ws}: torch {torch.__version__} wraps gloo, nccl and ucc only "
                         f"(the backend here: {wrapped[0]}); the collectives below run unwrapped")
        harness.report(all(r == "RESULTS True" for r in results),
                       f"torch DETAIL world {ws}: all_reduce, broadcast, all_gather(_into_tensor), "
                       f"reduce_scatter_tensor, all_to_all_single, barrier, send/recv from any source through the "
                       f"wrapper: right results" + ("" if all(r == "RESULTS True" for r in results) else
                                                    f" ({results}; {res.why()})"))
        if WRAPS:
            ok = all("Detected mismatch between collectives" in m and "CC_ERR" not in m for m in mism)
            harness.report(ok, f"torch DETAIL world {ws}: all_reduce of 5 elements on rank 1, 4 elsewhere: every rank "
                               f"raises torch's desync report ({mism[0][:200]})" + ("" if ok else f": {mism}"))
        else:
            ok = all("CC_ERR_MISMATCH" in m for m in mism)
            harness.report(ok, f"torch DETAIL world {ws} (unwrapped): the mismatched all_reduce raises cc's "
                               f"CC_ERR_MISMATCH on every rank" + ("" if ok else f": {mism}"))
    return 1 if harness.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
