"""Backend "cc": what torch 2 asks of a CPU backend, and receives from any
source (on torch 1.13 too, where torch has the call):

  * dist.recv(t) and dist.irecv(t) without src (cc_recv_any): the sender each
    reports is the one whose data arrived, every sender once, a sender's
    messages in its order; recv from any source in a subgroup reports the
    global rank
  * dist.get_backend() is "cc"; barrier(device_ids=[0]) (torch 2); the
    sequence number of the group counts collectives
  * torch 2: batch_isend_irecv through cc's coalescing (one Work for the
    batch); _coalescing_manager's fast paths: all_reduce
    (allreduce_coalesced), all_gather_into_tensor
    (allgather_into_tensor_coalesced), reduce_scatter_tensor
    (reduce_scatter_tensor_coalesced), against the same calls on gloo
  * torch 2.13: ProcessGroup.split_group (cc_comm_split): two halves each
    all_reduce among themselves; a rank in no half gets None
  * torch 2.13: abort: rank 0 aborts while rank 1 waits in an all_reduce
    rank 0 never joins: rank 1 raises at once (CC_ERR_ABORTED), and so does
    rank 0's next call
  * init_process_group(timeout=2 s) with CC_TIMEOUT unset: an all_reduce
    that a rank skips fails after about 2 s, naming the timeout

    PYTHONPATH=build/python python3 tests/torch/test_api.py
"""
import datetime
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist

import harness

VER = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
TORCH2 = VER >= (2, 1)
TORCH213 = VER >= (2, 13)


def check(name, ok, detail=""):
    print(f"CHECK {'ok' if ok else 'FAIL'} {name}{': ' + str(detail) if detail and not ok else ''}", flush=True)


def job(rank, ws):
    warnings.simplefilter("ignore", FutureWarning)
    dist.init_process_group("cc", rank=rank, world_size=ws)
    gloo = dist.new_group(backend="gloo")
    P = ws
    check("dist.get_backend() is \"cc\"", dist.get_backend() == "cc", dist.get_backend())

    # --- receives from any source: every other rank sends 3 messages to rank 0
    if rank == 0:
        seen = {}
        order_ok = True
        for i in range(3 * (P - 1)):
            t = torch.zeros(4)
            src = dist.recv(t, tag=5)
            k = seen.get(src, 0)
            order_ok &= torch.equal(t, torch.tensor([float(src), float(k), 7.0, -1.0]))
            seen[src] = k + 1
        check("dist.recv without src: each sender's 3 messages, in its order, the source the one that sent",
              order_ok and seen == {r: 3 for r in range(1, P)}, f"{seen}")
    else:
        for k in range(3):
            dist.send(torch.tensor([float(rank), float(k), 7.0, -1.0]), 0, tag=5)
    # irecv without src: the Work knows the sender once waited
    if rank == 0:
        works = [(dist.irecv(t := torch.zeros(2), tag=6), t) for _ in range(P - 1)]
        srcs = []
        for w, t in works:
            w.wait()
            srcs.append(w._source_rank())
            check("irecv without src: the payload is the sender's", t[0].item() == srcs[-1], f"{t} {srcs}")
        check("irecv without src: _source_rank() after wait, every sender once", sorted(srcs) == list(range(1, P)),
              f"{srcs}")
    else:
        dist.send(torch.tensor([float(rank), 1.0]), 0, tag=6)
    if P >= 3:   # in a subgroup: torch reports the global rank
        sub = dist.new_group([0, P - 1])
        if rank == 0:
            t = torch.zeros(1)
            src = dist.recv(t, group=sub)
            check("recv from any source in new_group([0, last]): the global rank of the sender",
                  src == P - 1 and t.item() == P - 1, f"{src} {t}")
        elif rank == P - 1:
            dist.send(torch.tensor([float(rank)]), 0, group=sub)
    dist.barrier(group=gloo)

    # --- barrier with device ids, sequence numbers
    if TORCH2:   # (torch 1.13 refuses device_ids for every backend but nccl)
        dist.barrier(device_ids=[0])
        check("barrier(device_ids=[0])", True)
    pg = dist.group.WORLD
    be = pg._get_backend(torch.device("cpu")) if hasattr(pg, "_get_backend") else pg
    n0 = be._get_sequence_number_for_group()
    dist.all_reduce(torch.ones(1))
    dist.broadcast(torch.ones(1), 0)
    n1 = be._get_sequence_number_for_group()
    check("the group's sequence number counts collectives", n1 - n0 == 2, f"{n0} -> {n1}")

    if TORCH2:
        # --- batch_isend_irecv through coalescing: one Work for the batch
        nxt, prv = (rank + 1) % P, (rank - 1) % P
        x, y = torch.full((3,), float(rank)), torch.zeros(3)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, x, nxt), dist.P2POp(dist.irecv, y, prv)])
        for q in reqs:
            q.wait()
        check("batch_isend_irecv: the batch as one cc group", torch.equal(y, torch.full((3,), float(prv))) and
              (len(reqs) == 1 or not TORCH213), f"{len(reqs)} works, {y}")

        # --- _coalescing_manager's fast paths, against gloo
        def coalesced(group):
            a = [torch.full((5,), float(rank + i)) for i in range(3)]
            ins = [torch.arange(4.) + 10 * rank + i for i in range(2)]
            outs = [torch.zeros(4 * P) for _ in range(2)]
            rs_in = [torch.arange(2. * P) * (rank + 1) + i for i in range(2)]
            rs_out = [torch.zeros(2) for _ in range(2)]
            with dist._coalescing_manager(group=group):
                for t in a:
                    dist.all_reduce(t, group=group)
            with dist._coalescing_manager(group=group):
                for o, i in zip(outs, ins):
                    dist.all_gather_into_tensor(o, i, group=group)
            with dist._coalescing_manager(group=group):
                for o, i in zip(rs_out, rs_in):
                    dist.reduce_scatter_tensor(o, i, group=group)
            return a + outs + rs_out
        got, want = coalesced(None), coalesced(gloo)
        check("_coalescing_manager: all_reduce, all_gather_into_tensor, reduce_scatter_tensor coalesced, as gloo",
              all(torch.equal(g, w) for g, w in zip(got, want)), f"{got} {want}")

    if TORCH213:
        # --- split_group: halves, by cc_comm_split
        half = [r for r in range(P) if (r < P // 2) == (rank < P // 2)]
        sub = pg.split_group(half)
        t = torch.tensor([float(rank)])
        sub.allreduce([t]).wait()
        check("ProcessGroup.split_group: each half all_reduces among itself", sub.size() == len(half) and
              t.item() == float(sum(half)) and sub.rank() == half.index(rank), f"{t} {sub.size()} {sub.rank()}")
        sub.shutdown()
        if P >= 3:   # ranks 0 and 2 together, rank 1 (and 3) in no group
            sub = pg.split_group([0, 2])
            if rank in (0, 2):
                t = torch.tensor([float(rank + 1)])
                sub.allreduce([t]).wait()
                check("split_group([0, 2]): its members all_reduce", t.item() == 4.0, f"{t}")
                sub.shutdown()
            else:
                check("split_group([0, 2]): a rank outside it gets None", sub is None, f"{sub}")
    dist.barrier(group=gloo)
    dist.destroy_process_group()


def abort_job(rank, ws):
    dist.init_process_group("cc", rank=rank, world_size=ws)
    gloo = dist.new_group(backend="gloo")
    t = torch.ones(2)
    if rank == 0:
        dist.barrier(group=gloo)
        time.sleep(0.3)
        dist.group.WORLD.abort()
        try:
            dist.all_reduce(torch.ones(1))
            print("AFTER none: an all_reduce after abort succeeded", flush=True)
        except RuntimeError as e:
            print(f"AFTER {str(e).splitlines()[0][:200]}", flush=True)
    else:
        w = dist.all_reduce(t, async_op=True)   # rank 0 never joins
        dist.barrier(group=gloo)
        t0 = time.monotonic()
        try:
            w.wait()
            print("ABORT none: the all_reduce succeeded", flush=True)
        except RuntimeError as e:
            print(f"ABORT {time.monotonic() - t0:.2f} {str(e).splitlines()[0][:200]}", flush=True)
    os._exit(0)


def timeout_job(rank, ws):
    os.environ.pop("CC_TIMEOUT", None)
    dist.init_process_group("cc", rank=rank, world_size=ws, timeout=datetime.timedelta(seconds=2))
    if rank == 1:
        time.sleep(6)
        os._exit(0)
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1))
        print("TIMEOUT none: the all_reduce succeeded", flush=True)
    except RuntimeError as e:
        print(f"TIMEOUT {time.monotonic() - t0:.2f} {str(e).splitlines()[0][:200]}", flush=True)
    os._exit(0)


def main():
    for ws in (2, 3, 4):
        res = harness.run_job(job, ws, timeout=90)
        checks = {}
        for r, out in enumerate(res.outputs):
            for line in out.splitlines():
                if line.startswith("CHECK "):
                    _, st, rest = line.split(" ", 2)
                    name = rest.split(": ")[0] if st != "ok" else rest
                    c = checks.setdefault(name, [])
                    if st != "ok":
                        c.append(f"rank {r}: {rest}")
        for name, bad in checks.items():
            harness.report(not bad, f"torch api world {ws}: {name}" + (f" ({'; '.join(bad)})" if bad else ""))
        if not res.ok or not checks:
            harness.report(False, f"torch api world {ws}: the job failed: {res.why()}")
    if not TORCH213:
        harness.skip(f"torch api: split_group and abort (torch {torch.__version__}: cc implements them for "
                     "torch >= 2.13)")
    else:
        res = harness.run_job(abort_job, 2, timeout=60, kill=None)
        line = next((ln for ln in res.outputs[1].splitlines() if ln.startswith("ABORT ")), "ABORT none")
        after = next((ln for ln in res.outputs[0].splitlines() if ln.startswith("AFTER ")), "AFTER none")
        parts = line.split(" ", 2)
        ok = len(parts) == 3 and parts[1] != "none" and float(parts[1]) < 5 and "CC_ERR_ABORTED" in parts[2] \
            and "CC_ERR_ABORTED" in after
        harness.report(ok, f"torch api: ProcessGroup.abort() on rank 0 while rank 1 waits in an all_reduce: rank 1 "
                           f"raises ({line[6:]}); rank 0's next all_reduce raises too ({after[6:]})")
    res = harness.run_job(timeout_job, 2, timeout=60, kill=None)
    line = next((ln for ln in res.outputs[0].splitlines() if ln.startswith("TIMEOUT ")), "TIMEOUT none")
    parts = line.split(" ", 2)
    ok = len(parts) == 3 and parts[1] != "none" and 1.5 < float(parts[1]) < 10 and "CC_ERR_TIMEOUT" in parts[2]
    harness.report(ok, f"torch api: init_process_group(timeout=2 s): an all_reduce that rank 1 skips fails on rank 0 "
                       f"after {parts[1] if len(parts) > 1 else '?'} s ({line[8:]})")
    return 1 if harness.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
