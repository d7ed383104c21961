"""Backend "cc": asynchronous ops (async_op=True: wait, is_completed, futures
and their callbacks, wait with a time limit), an async op that nobody waits
for while its rank blocks elsewhere, subgroups (new_group, new_subgroups)
used between world ops, monitored_barrier, and the errors a caller can make
(a CUDA tensor where torch has CUDA, a negative tag).
World sizes 2 to 4.

    PYTHONPATH=build/python python3 tests/torch/test_async.py
"""
import datetime
import sys
import time

import torch
import torch.distributed as dist

import harness
import torch_cc


def check(name, ok, detail=""):
    print(f"CHECK {'ok' if ok else 'FAIL'} {name}{': ' + detail if detail and not ok else ''}", flush=True)


def raises(fn, *words):
    try:
        fn()
    except RuntimeError as e:
        msg = str(e)
        return all(w in msg for w in words), msg.splitlines()[0][:200]
    return False, "did not raise"


def job(rank, ws):
    dist.init_process_group("cc", rank=rank, world_size=ws)
    gloo = dist.new_group(backend="gloo")
    P = ws

    # --- several async ops in flight, then waited in order
    a = torch.full((1000,), float(rank + 1))
    b = torch.arange(8.) if rank == 0 else torch.zeros(8)
    c = torch.full((5,), float(rank))
    outs = [torch.zeros(5) for _ in range(P)]
    d = torch.cat([torch.full((3,), float(rank * 10 + j)) for j in range(P)])
    e = torch.zeros(3)
    f = torch.arange(P * 2.) + 100 * rank
    g = torch.zeros(P * 2)
    works = [dist.all_reduce(a, async_op=True), dist.broadcast(b, 0, async_op=True),
             dist.all_gather(outs, c, async_op=True), dist.reduce_scatter_tensor(e, d, async_op=True),
             dist.all_to_all_single(g, f, async_op=True)]
    for w in works:
        w.wait()
    ok = (bool((a == P * (P + 1) / 2).all()) and torch.equal(b, torch.arange(8.))
          and all(torch.equal(outs[r], torch.full((5,), float(r))) for r in range(P))
          and torch.equal(e, torch.full((3,), float(sum(r * 10 + rank for r in range(P)))))
          and torch.equal(g, torch.tensor([float(100 * j + 2 * rank + k) for j in range(P) for k in range(2)])))
    check("five async ops in flight (all_reduce, broadcast, all_gather, reduce_scatter_tensor, "
          "all_to_all_single), waited in order, give the right results", ok)
    check("a waited work is_completed() and is_success()",
          all(w.is_completed() for w in works) and all(w.is_success() for w in works))

    # --- polled, never waited: is_completed() turns true by itself
    t = torch.ones(4)
    w = dist.all_reduce(t, async_op=True)
    t0 = time.monotonic()
    while not w.is_completed() and time.monotonic() - t0 < 10:
        time.sleep(0.001)
    check("an async all_reduce polled with is_completed() completes without wait()",
          w.is_completed() and bool((t == P).all()), f"{t}")

    # --- futures: value, then() callbacks
    t = torch.full((3,), float(rank))
    fut = dist.all_reduce(t, async_op=True).get_future()
    doubled = fut.then(lambda fu: fu.value()[0] * 2)
    s = float(sum(range(P)))
    v = fut.wait()
    check("get_future(): wait() gives the output tensors", isinstance(v, list) and torch.equal(v[0], torch.full((3,), s)))
    check("get_future().then(): the callback sees the result", torch.equal(doubled.wait(), torch.full((3,), 2 * s)))
    # a future asked for after the op is over
    w = dist.all_reduce(torch.ones(2), async_op=True)
    w.wait()
    check("get_future() after wait(): already done", torch.equal(w.get_future().wait()[0], torch.full((2,), float(P))))

    # --- wait(timeout): rank 0 waits 100 ms for an op rank 1 joins 1 s later
    t = torch.ones(2)
    if rank == 1:
        time.sleep(1.0)
    w = dist.all_reduce(t, async_op=True)
    if rank == 0 and P > 1:
        ok, msg = raises(lambda: w.wait(timeout=datetime.timedelta(milliseconds=100)), "timed out")
        check("wait(timeout=100 ms) on an op a peer has not joined raises, naming the timeout", ok, msg)
    w.wait()
    check("... and a later wait() completes it", bool((t == P).all()), f"{t}")

    # --- an async op nobody waits for while its rank blocks in another group:
    # rank 0 starts it and enters a gloo barrier; rank 1 runs the same op
    # blocking before that barrier. cc must start rank 0's op on its own.
    t = torch.ones(3)
    if rank == 0:
        w = dist.all_reduce(t, async_op=True)
        dist.barrier(group=gloo)
        w.wait()
    else:
        dist.all_reduce(t)
        dist.barrier(group=gloo)
    check("an async op left unwaited while its rank blocks in a gloo barrier still runs (no deadlock)",
          bool((t == P).all()))

    # --- subgroups, interleaved with world ops
    evens = dist.new_group([r for r in range(P) if r % 2 == 0])
    odds = dist.new_group([r for r in range(P) if r % 2 == 1]) if P > 1 else None
    mine = evens if rank % 2 == 0 else odds
    members = [r for r in range(P) if r % 2 == rank % 2]
    for i in range(3):
        t = torch.full((4,), float(rank + i))
        dist.all_reduce(t, group=mine)
        u = torch.full((4,), float(rank))
        dist.all_reduce(u)
        lst = [torch.zeros(1) for _ in members]
        dist.all_gather(lst, torch.tensor([float(rank)]), group=mine)
        ok = (torch.equal(t, torch.full((4,), float(sum(r + i for r in members))))
              and torch.equal(u, torch.full((4,), float(sum(range(P)))))
              and [x.item() for x in lst] == [float(r) for r in members])
        if not ok:
            break
    check("new_group: even and odd ranks' subgroups between world ops (all_reduce, all_gather)", ok,
          f"{t} {u} {lst}")
    if P >= 3:
        other = dist.new_group([0, 2])
        if rank in (0, 2):
            t = torch.tensor([float(rank)])
            dist.broadcast(t, src=2, group=other)
            check("new_group([0, 2]): broadcast from global rank 2", t.item() == 2.0)
        else:
            check("new_group([0, 2]): a rank outside it gets NON_GROUP_MEMBER", other == dist.GroupMember.NON_GROUP_MEMBER)
    if P == 4:
        pairs = [dist.new_group([0, 1]), dist.new_group([2, 3])]  # (new_subgroups wants CUDA in 1.13)
        sub = pairs[rank // 2]
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=sub)
        want = 1.0 if rank < 2 else 5.0
        check("new_group([0, 1]) and new_group([2, 3]): all_reduce within each pair", t.item() == want, f"{t}")
        # p2p inside a subgroup: torch's API names peers by global rank
        peer = rank ^ 1
        x = torch.tensor([float(rank)])
        y = torch.zeros(1)
        reqs = [dist.isend(x, peer, group=sub), dist.irecv(y, peer, group=sub)]
        for q in reqs:
            q.wait()
        check("isend/irecv within a subgroup", y.item() == float(peer), f"{y}")

    # --- monitored_barrier (torch_cc's: torch 1.13's own is gloo only)
    torch_cc.monitored_barrier(timeout=datetime.timedelta(seconds=10))
    check("torch_cc.monitored_barrier: every rank arrives", True)
    if P > 1:
        if rank != 1:
            ok, msg = raises(lambda: torch_cc.monitored_barrier(timeout=datetime.timedelta(seconds=1),
                                                                wait_all_ranks=True), "rank 1")
            check("monitored_barrier with rank 1 absent: RuntimeError naming rank 1", ok, msg)
        dist.barrier(group=gloo)

    # --- caller errors: refused on the calling rank, the group still works
    if torch.cuda.is_available():
        ok, msg = raises(lambda: dist.all_reduce(torch.ones(2, device="cuda")), "CPU tensors only")
        check("a CUDA tensor: RuntimeError saying this build takes CPU tensors only", ok, msg)
    if P > 1:
        ok, msg = raises(lambda: dist.send(torch.zeros(1), (rank + 1) % P, tag=-1), "negative")
        check("send with a negative tag: RuntimeError", ok, msg)
    t = torch.ones(1)
    dist.all_reduce(t)
    check("the group works after the refused calls", t.item() == P)

    # --- destroyed while a future's Python callback still runs (the group's
    # completion thread needs the GIL that destroy_process_group holds)
    t = torch.ones(3)
    fut = dist.all_reduce(t, async_op=True).get_future()
    later = fut.then(lambda fu: (time.sleep(0.2), fu.value()[0] * 2)[1])
    dist.destroy_process_group()
    check("destroy_process_group while a future callback runs: no deadlock, the callback's result",
          torch.equal(later.wait(), torch.full((3,), 2.0 * P)))


def main():
    if not torch.cuda.is_available():
        harness.skip("torch async: a CUDA tensor's error (this torch has no CUDA; a CPU-only torch cannot "
                     "make one, and a meta tensor stops in torch's dispatcher before any backend)")
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
            harness.report(not bad, f"torch async/subgroups world {ws}: {name}" + (f" ({'; '.join(bad)})" if bad else ""))
        if not res.ok or not checks:
            harness.report(False, f"torch async/subgroups world {ws}: the job failed: {res.why()}")
    return 1 if harness.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
