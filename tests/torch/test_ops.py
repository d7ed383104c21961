"""Every torch.distributed operation on CPU tensors x every dtype x (for
reductions) every ReduceOp, on backend "cc", at world sizes 1 to 4, each
against the same call on gloo (a gloo group over the same ranks, in the same
job) where gloo does it, and always against a reference computed here from
every rank's inputs (each rank can make every rank's inputs: they come from
seeded generators). Tensors are also passed non-contiguous (a column of a
matrix: the other column must stay as it was); gloo is then given the same
values contiguous, as it gets non-contiguous tensors wrong (torch 1.13:
all_reduce of a column returns wrong values and writes into the next column). Combinations that torch or cc
refuse (bitwise ops on floats, AVG on integers, any reduction of int16, MIN
on complex ...) must raise RuntimeError on every rank, and the group must go
on working afterwards.

    PYTHONPATH=build/python python3 tests/torch/test_ops.py [WORLD_SIZES]

Prints one PASS/FAIL line per world size and operation (with how many cases
matched gloo and how many the reference), and a FAIL line per failing case.
"""
import os
import sys
import warnings
import zlib

import torch
import torch.distributed as dist

import harness

R = dist.ReduceOp
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG", "PREMUL_SUM"]
DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64, torch.complex64, torch.complex128, torch.bool, torch.int16]
INTS = (torch.int8, torch.uint8, torch.int32, torch.int64, torch.int16)
CPLX = (torch.complex64, torch.complex128)
NC_DTYPES = (torch.float32, torch.int64, torch.bfloat16, torch.complex64)  # also tried non-contiguous
N = 6  # elements per rank block


def dname(dt):
    return str(dt).replace("torch.", "")


def gen(key, shape, dt, op=None):
    """Deterministic small values (so that sums and products are exact)."""
    g = torch.Generator().manual_seed(zlib.crc32(key.encode()))
    if dt == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if op == "PRODUCT":
        lo, hi = (1, 3) if dt == torch.uint8 else (-2, 3)
    elif op in ("BAND", "BOR", "BXOR"):
        lo, hi = 0, 64
    else:
        lo, hi = (0, 40) if dt == torch.uint8 else (-20, 21)
    if dt in CPLX:
        re = torch.randint(lo, hi, shape, generator=g).double()
        im = torch.randint(lo, hi, shape, generator=g).double()
        return torch.complex(re, im).to(dt)
    return torch.randint(lo, hi, shape, generator=g).to(dt)


def wide(t):
    if t.dtype == torch.bool:
        return t
    if t.dtype in CPLX:
        return t.to(torch.complex128)
    if t.dtype.is_floating_point:
        return t.to(torch.float64)
    return t.to(torch.int64)


def factor(r, dt):
    return float(r + 1) if dt in INTS else 0.5 * (r + 1)


def ref_reduce(xs, op, dt):
    if dt == torch.bool:
        s = torch.stack(xs)
        if op in ("SUM", "MAX", "BOR"):
            return s.any(0)
        if op in ("PRODUCT", "MIN", "BAND"):
            return s.all(0)
        out = xs[0].clone()
        for x in xs[1:]:
            out = out ^ x
        return out
    w = [wide(x) for x in xs]
    if op == "SUM":
        out = sum(w[1:], w[0].clone())
    elif op == "AVG":
        out = sum(w[1:], w[0].clone()) / len(w)
    elif op == "PREMUL_SUM":
        out = sum(factor(r, dt) * x for r, x in enumerate(w))
    elif op == "PRODUCT":
        out = w[0].clone()
        for x in w[1:]:
            out = out * x
    elif op == "MIN":
        out = torch.stack(w).amin(0)
    elif op == "MAX":
        out = torch.stack(w).amax(0)
    else:
        out = w[0].clone()
        for x in w[1:]:
            out = out & x if op == "BAND" else out | x if op == "BOR" else out ^ x
    return out.to(dt)


def valid(op, dt, entry):
    if dt == torch.int16:
        return False
    if dt == torch.bool:
        return op not in ("AVG", "PREMUL_SUM")
    if op in ("BAND", "BOR", "BXOR"):
        return dt in INTS
    if op == "AVG":
        return dt not in INTS
    if dt in CPLX and op in ("MIN", "MAX"):
        return False
    if dt in CPLX and op == "PRODUCT" and entry in ("all_reduce", "all_reduce_coalesced"):
        return False  # torch's all_reduce refuses it for every backend
    return True


def rop(op, rank, dt):
    if op == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(factor(rank, dt))
    return getattr(R, op)


def exact(op, dt):
    return op not in ("AVG", "PREMUL_SUM") or dt in INTS


def same(a, b, is_exact):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if is_exact or a.dtype == torch.bool:
        return torch.equal(a, b)
    tol = 2e-2 if a.dtype in (torch.float16, torch.bfloat16) else 1e-6
    return torch.allclose(wide(a), wide(b), rtol=tol, atol=tol)


def place(t, nc):
    """t itself, or a non-contiguous tensor holding t's values (column 0 of an
    (n, 2) matrix whose column 1 is a sentinel), and that matrix."""
    if not nc:
        return t, None
    m = torch.empty((t.numel(), 2), dtype=t.dtype)
    m[:, 1] = torch.ones((), dtype=t.dtype) if t.dtype == torch.bool else 7
    m[:, 0] = t.reshape(-1)
    return m[:, 0].view(t.shape) if t.dim() == 1 else m[:, 0], m


def sentinel_ok(m):
    if m is None:
        return True
    v = torch.ones((), dtype=m.dtype) if m.dtype == torch.bool else 7
    return bool((m[:, 1] == v).all())


# ----------------------------------------------------------------------- cases
# Each case: fn(pg, rank, ws, dt, op, nc, key) -> (outputs: list of tensors,
# expected: list of tensors, sentinel matrices). `pg` is the cc or gloo group.

def c_all_reduce(pg, rank, ws, dt, op, nc, key):
    x = gen(f"{key}/{rank}", (N,), dt, op)
    t, m = place(x.clone(), nc)
    dist.all_reduce(t, op=rop(op, rank, dt), group=pg)
    return [t], [ref_reduce([gen(f"{key}/{r}", (N,), dt, op) for r in range(ws)], op, dt)], [m]


def c_all_reduce_coalesced(pg, rank, ws, dt, op, nc, key):
    xs = [gen(f"{key}/{rank}/{i}", (N + i,), dt, op) for i in range(2)]
    ts = [x.clone() for x in xs]
    dist.all_reduce_coalesced(ts, op=rop(op, rank, dt), group=pg)
    exp = [ref_reduce([gen(f"{key}/{r}/{i}", (N + i,), dt, op) for r in range(ws)], op, dt) for i in range(2)]
    return ts, exp, []


def c_reduce(pg, rank, ws, dt, op, nc, key):
    root = ws - 1
    x = gen(f"{key}/{rank}", (N,), dt, op)
    t, m = place(x.clone(), nc)
    dist.reduce(t, dst=root, op=rop(op, rank, dt), group=pg)
    if rank != root:
        return [], [], [m]  # torch leaves non-root tensors undefined
    return [t], [ref_reduce([gen(f"{key}/{r}", (N,), dt, op) for r in range(ws)], op, dt)], [m]


def c_reduce_scatter(pg, rank, ws, dt, op, nc, key):
    ins = [gen(f"{key}/{rank}/{j}", (N,), dt, op) for j in range(ws)]
    out, m = place(torch.zeros(N, dtype=dt), nc)
    dist.reduce_scatter(out, ins, op=rop(op, rank, dt), group=pg)
    return [out], [ref_reduce([gen(f"{key}/{r}/{rank}", (N,), dt, op) for r in range(ws)], op, dt)], [m]


def c_reduce_scatter_tensor(pg, rank, ws, dt, op, nc, key):
    x = torch.cat([gen(f"{key}/{rank}/{j}", (N,), dt, op) for j in range(ws)])
    x, mi = place(x, nc)
    out, m = place(torch.zeros(N, dtype=dt), nc)
    dist.reduce_scatter_tensor(out, x, op=rop(op, rank, dt), group=pg)
    return [out], [ref_reduce([gen(f"{key}/{r}/{rank}", (N,), dt, op) for r in range(ws)], op, dt)], [m, mi]


def c_broadcast(pg, rank, ws, dt, op, nc, key):
    outs, exps, ms = [], [], []
    for root in range(ws):
        t, m = place(gen(f"{key}/{rank}/{root}", (N,), dt), nc)
        dist.broadcast(t, src=root, group=pg)
        outs.append(t)
        exps.append(gen(f"{key}/{root}/{root}", (N,), dt))
        ms.append(m)
    return outs, exps, ms


def c_all_gather(pg, rank, ws, dt, op, nc, key):
    x, mi = place(gen(f"{key}/{rank}", (N,), dt), nc)
    outs = [place(torch.zeros(N, dtype=dt), nc) for _ in range(ws)]
    dist.all_gather([o for o, _ in outs], x, group=pg)
    return [o for o, _ in outs], [gen(f"{key}/{r}", (N,), dt) for r in range(ws)], [m for _, m in outs] + [mi]


def c_all_gather_chunks(pg, rank, ws, dt, op, nc, key):
    """all_gather into the chunks of one tensor, input in place (its own chunk)."""
    big = torch.zeros(ws * N, dtype=dt)
    chunks = list(big.chunk(ws))
    chunks[rank].copy_(gen(f"{key}/{rank}", (N,), dt))
    dist.all_gather(chunks, chunks[rank], group=pg)
    return [big], [torch.cat([gen(f"{key}/{r}", (N,), dt) for r in range(ws)])], []


def c_all_gather_into_tensor(pg, rank, ws, dt, op, nc, key):
    x, mi = place(gen(f"{key}/{rank}", (N,), dt), nc)
    out, m = place(torch.zeros(ws * N, dtype=dt), nc)
    dist.all_gather_into_tensor(out, x, group=pg)
    return [out], [torch.cat([gen(f"{key}/{r}", (N,), dt) for r in range(ws)])], [m, mi]


def c_all_gather_coalesced(pg, rank, ws, dt, op, nc, key):
    # torch's layout: output_tensor_lists[r][i] receives rank r's input i
    xs = [gen(f"{key}/{rank}/{i}", (N + i,), dt) for i in range(2)]
    outs = [[torch.zeros(N + i, dtype=dt) for i in range(2)] for _ in range(ws)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch 2: "will be deprecated"
        dist.all_gather_coalesced(outs, xs, group=pg)
    return [t for lst in outs for t in lst], [gen(f"{key}/{r}/{i}", (N + i,), dt) for r in range(ws)
                                              for i in range(2)], []


def c_gather(pg, rank, ws, dt, op, nc, key):
    root = ws - 1
    x, mi = place(gen(f"{key}/{rank}", (N,), dt), nc)
    outs = [place(torch.zeros(N, dtype=dt), nc) for _ in range(ws)] if rank == root else []
    dist.gather(x, [o for o, _ in outs] if rank == root else None, dst=root, group=pg)
    if rank != root:
        return [], [], [mi]
    return [o for o, _ in outs], [gen(f"{key}/{r}", (N,), dt) for r in range(ws)], [m for _, m in outs] + [mi]


def c_scatter(pg, rank, ws, dt, op, nc, key):
    root = ws - 1
    out, m = place(torch.zeros(N, dtype=dt), nc)
    ins = [place(gen(f"{key}/{j}", (N,), dt), nc)[0] for j in range(ws)] if rank == root else None
    dist.scatter(out, ins, src=root, group=pg)
    return [out], [gen(f"{key}/{rank}", (N,), dt)], [m]


def c_all_to_all(pg, rank, ws, dt, op, nc, key):
    # rank r sends r + j + 1 elements to rank j: every pair its own size
    ins = [place(gen(f"{key}/{rank}/{j}", (rank + j + 1,), dt), nc)[0] for j in range(ws)]
    outs = [place(torch.zeros(j + rank + 1, dtype=dt), nc) for j in range(ws)]
    dist.all_to_all([o for o, _ in outs], ins, group=pg)
    return [o for o, _ in outs], [gen(f"{key}/{j}/{rank}", (j + rank + 1,), dt) for j in range(ws)], \
        [m for _, m in outs]


def c_all_to_all_single(pg, rank, ws, dt, op, nc, key):
    x = torch.cat([gen(f"{key}/{rank}/{j}", (N,), dt) for j in range(ws)])
    x, mi = place(x, nc)
    out, m = place(torch.zeros(ws * N, dtype=dt), nc)
    dist.all_to_all_single(out, x, group=pg)
    return [out], [torch.cat([gen(f"{key}/{j}/{rank}", (N,), dt) for j in range(ws)])], [m, mi]


def c_all_to_all_splits(pg, rank, ws, dt, op, nc, key):
    # rows of 3 elements; rank r sends (r + j) % 3 rows to rank j (some empty)
    def rows(s, d):
        return (s + d) % 3
    x = torch.cat([gen(f"{key}/{rank}/{j}", (rows(rank, j), 3), dt) for j in range(ws)])
    out = torch.zeros(sum(rows(j, rank) for j in range(ws)), 3, dtype=dt)
    dist.all_to_all_single(out, x, [rows(j, rank) for j in range(ws)], [rows(rank, j) for j in range(ws)],
                           group=pg)
    return [out], [torch.cat([gen(f"{key}/{j}/{rank}", (rows(j, rank), 3), dt) for j in range(ws)])], []


def c_send_recv(pg, rank, ws, dt, op, nc, key):
    if ws == 1:
        return [], [], []
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    x, mi = place(gen(f"{key}/{rank}", (N,), dt), nc)
    y, m = place(torch.zeros(N, dtype=dt), nc)
    if rank % 2 == 0:
        dist.send(x, nxt, group=pg, tag=3)
        dist.recv(y, prv, group=pg, tag=3)
    else:
        dist.recv(y, prv, group=pg, tag=3)
        dist.send(x, nxt, group=pg, tag=3)
    return [y], [gen(f"{key}/{prv}", (N,), dt)], [m, mi]


def c_isend_irecv(pg, rank, ws, dt, op, nc, key):
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    x, mi = place(gen(f"{key}/{rank}", (N,), dt), nc)
    y, m = place(torch.zeros(N, dtype=dt), nc)
    reqs = [dist.isend(x, nxt, group=pg), dist.irecv(y, prv, group=pg)]
    for q in reqs:
        q.wait()
    return [y], [gen(f"{key}/{prv}", (N,), dt)], [m, mi]


def c_batch_isend_irecv(pg, rank, ws, dt, op, nc, key):
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    x = gen(f"{key}/{rank}", (N,), dt)
    y, z = torch.zeros(N, dtype=dt), torch.zeros(N + 1, dtype=dt)
    x2 = gen(f"{key}/{rank}/b", (N + 1,), dt)
    ops = [dist.P2POp(dist.isend, x, nxt, pg), dist.P2POp(dist.irecv, y, prv, pg),
           dist.P2POp(dist.isend, x2, prv, pg), dist.P2POp(dist.irecv, z, nxt, pg)]
    for q in dist.batch_isend_irecv(ops):
        q.wait()
    return [y, z], [gen(f"{key}/{prv}", (N,), dt), gen(f"{key}/{nxt}/b", (N + 1,), dt)], []


def c_barrier(pg, rank, ws, dt, op, nc, key):
    dist.barrier(group=pg)
    return [], [], []


REDUCING = {"all_reduce": c_all_reduce, "all_reduce_coalesced": c_all_reduce_coalesced, "reduce": c_reduce,
            "reduce_scatter": c_reduce_scatter, "reduce_scatter_tensor": c_reduce_scatter_tensor}
MOVING = {"broadcast": c_broadcast, "all_gather": c_all_gather, "all_gather_chunks": c_all_gather_chunks,
          "all_gather_into_tensor": c_all_gather_into_tensor, "all_gather_coalesced": c_all_gather_coalesced,
          "gather": c_gather, "scatter": c_scatter, "all_to_all": c_all_to_all,
          "all_to_all_single": c_all_to_all_single, "all_to_all_single_splits": c_all_to_all_splits,
          "send_recv": c_send_recv, "isend_irecv": c_isend_irecv, "batch_isend_irecv": c_batch_isend_irecv,
          "barrier": c_barrier}


def cases():
    for entry, fn in REDUCING.items():
        for dt in DTYPES:
            for op in OPS:
                for nc in ((False, True) if dt in NC_DTYPES and entry != "all_reduce_coalesced" else (False,)):
                    yield entry, fn, dt, op, nc
    for entry, fn in MOVING.items():
        for dt in ([torch.float32] if entry == "barrier" else DTYPES):
            for nc in ((False, True) if dt in NC_DTYPES else (False,)):
                yield entry, fn, dt, None, nc


def attempt(fn, pg, rank, ws, dt, op, nc, key):
    try:
        return fn(pg, rank, ws, dt, op, nc, key), None
    except (RuntimeError, ValueError) as e:  # torch 2 refuses some combinations with ValueError
        return None, str(e).splitlines()[0] if str(e) else type(e).__name__


def job(rank, ws):
    dist.init_process_group("cc", rank=rank, world_size=ws)
    gloo = dist.new_group(backend="gloo")
    cc = dist.group.WORLD
    for entry, fn, dt, op, nc in cases():
        key = f"{ws}/{entry}/{dname(dt)}/{op}/{nc}"
        ok_expected = op is None or valid(op, dt, entry)
        if dt == torch.int16 and op is None:
            ok_expected = True
        got, err = attempt(fn, cc, rank, ws, dt, op, nc, key)
        label = f"{entry} {dname(dt)}{' ' + op if op else ''}{' non-contiguous' if nc else ''}"
        if not ok_expected:
            # refused on every rank alike; then the group still works
            ok = err is not None
            if ok:
                t = torch.ones(1)
                dist.all_reduce(t, group=cc)
                ok = t.item() == ws
            print(f"CASE {entry} {'ok' if ok else 'FAIL'} refused {label}: "
                  f"{'raised: ' + err if err else 'did not raise'}", flush=True)
            continue
        if err is not None:
            print(f"CASE {entry} FAIL - {label}: cc raised: {err}", flush=True)
            continue
        outs, exps, ms = got
        ex = op is None or exact(op, dt)
        bad = [i for i, (o, e) in enumerate(zip(outs, exps)) if not same(o, e, ex)]
        if len(outs) != len(exps):
            bad = ["count"]
        if not all(sentinel_ok(m) for m in ms):
            bad.append("a non-contiguous tensor's neighbours changed")
        if bad:
            print(f"CASE {entry} FAIL - {label}: differs from the reference at {bad}: got {outs} want {exps}",
                  flush=True)
            continue
        # the same call on gloo (same inputs: same key), with contiguous tensors:
        # gloo (torch 1.13) reduces and moves non-contiguous ones wrongly
        # (and not to itself at world size 1: gloo's isend/irecv to itself segfaults)
        if ws == 1 and entry in ("isend_irecv", "batch_isend_irecv"):
            print(f"CASE {entry} ok ref {label}", flush=True)
            continue
        g, gerr = attempt(fn, gloo, rank, ws, dt, op, False, key)
        if gerr is not None or g is None:
            print(f"CASE {entry} ok ref {label}", flush=True)
            continue
        gouts = g[0]
        gbad = [i for i, (o, e) in enumerate(zip(outs, gouts)) if not same(o, e, ex)]
        if gbad:
            print(f"CASE {entry} FAIL - {label}: differs from gloo at {gbad}: cc {outs} gloo {gouts}", flush=True)
        else:
            print(f"CASE {entry} ok gloo {label}", flush=True)
    dist.destroy_process_group()


def main():
    # TORCH_TEST_QUICK (make torch-test on a second torch): 1, 2 and 4 ranks
    sizes = [int(a) for a in sys.argv[1].split(",")] if len(sys.argv) > 1 else \
        ([1, 2, 4] if os.environ.get("TORCH_TEST_QUICK") else [1, 2, 3, 4])
    for ws in sizes:
        res = harness.run_job(job, ws, timeout=150)
        per = {}
        fails = []
        for r, out in enumerate(res.outputs):
            for line in out.splitlines():
                if not line.startswith("CASE "):
                    continue
                _, entry, status, how, rest = line.split(" ", 4)
                d = per.setdefault(entry, {"cases": 0, "gloo": 0, "ref": 0, "refused": 0, "bad": 0})
                if r == 0:
                    d["cases"] += 1
                    if status == "ok":
                        d[how] += 1
                if status != "ok":
                    d["bad"] += 1
                    fails.append(f"rank {r}: {entry} {rest}")
        for f in fails[:40]:
            harness.report(False, f"torch ops world {ws}: {f}")
        if len(fails) > 40:
            harness.report(False, f"torch ops world {ws}: ... and {len(fails) - 40} more failing cases")
        if not res.ok:
            harness.report(False, f"torch ops world {ws}: the job failed: {res.why()}")
        for entry in list(REDUCING) + list(MOVING):
            d = per.get(entry)
            if d is None:
                harness.report(False, f"torch ops world {ws} {entry}: no result")
                continue
            harness.report(d["bad"] == 0 and d["cases"] > 0,
                           f"torch ops world {ws} {entry}: {d['cases']} cases (dtype x op x layout): "
                           f"{d['gloo']} equal to gloo, {d['ref']} to the reference (gloo cannot), "
                           f"{d['refused']} refused as they must be")
        print(f"torch ops world {ws}: {res.seconds:.1f} s", flush=True)
    return 1 if harness.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
