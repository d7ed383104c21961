#!/usr/bin/env python3
"""bench/torch_compare.py - torch.distributed on backend "cc" against "gloo",
side by side, on CPU tensors on this machine, in nccl-tests' columns.

    make torch
    PYTHONPATH=build/python python3 bench/torch_compare.py            # 2 and 4 ranks
    PYTHONPATH=build/python python3 bench/torch_compare.py -n 2 -k all_reduce -b 8 -e 1M

Every rank of one job holds both process groups (cc the default one, gloo a
group over the same ranks), so both run on the same processes; for each
collective and size they are measured in turn, the order alternating from
size to size and pass to pass (--passes, default 2), and the best pass of each
kept: the machine's noise (other work, where the hypervisor puts the vCPUs)
falls on both alike. bench/peers/c2c_latency, the core-to-core round trip of
one cache line, is printed before and after as the fingerprint of the vCPU
placement (it moves within seconds on a small VM; results follow it).

The calls are torch's: dist.all_reduce (float32 sum), dist.all_gather (the
output list is the chunks of one tensor), dist.broadcast (root 0),
dist.reduce_scatter_tensor (torch 1.13's gloo: none on CPU), dist.all_to_all_single. Each
timed loop runs about --time seconds (calibrated on rank 0) after warm-up
calls; the time of a size is the slowest rank's average per call, as
nccl-tests' -a 3. size is nccl-tests' too: the whole buffer (all_gather: the
output; reduce_scatter: the input; all_to_all: one rank's input). algbw is
size / time; busbw scales it as nccl-tests does (all_reduce 2(n-1)/n,
all_gather, reduce_scatter and all_to_all (n-1)/n, broadcast 1). After the
timing, one call per size is checked against its expected result.

Also printed, per job: a bare cc_all_reduce of 8 bytes in the same processes
(torch_cc's _bare_all_reduce_seconds, no torch around it) against
dist.all_reduce of 8 bytes on cc, in alternating turns, the best turn of
each: torch's per-call overhead.
"""
import argparse
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import warnings

import torch
import torch.distributed as dist

import torch_cc  # noqa: F401  (registers "cc")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OPS = ["all_reduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all"]


def parse_size(s):
    s = s.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(float(s[:-1] if s[-1:] in "KMG" else s) * mult)


def human(n):
    for unit, m in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= m and n % m == 0:
            return f"{n // m}{unit}"
    return str(n)


def busbw_factor(op, n):
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op == "broadcast":
        return 1.0
    return (n - 1) / n


class Case:
    """Tensors and the call for one collective, size and rank."""

    def __init__(self, op, size, rank, n):
        self.op, self.rank, self.n = op, rank, n
        el = 4
        if op in ("all_gather", "reduce_scatter", "all_to_all"):
            self.count = max(1, size // (el * n))  # per-rank block
        else:
            self.count = max(1, size // el)
        c = self.count
        if op == "all_reduce":
            self.t = torch.ones(c)
        elif op == "broadcast":
            self.t = torch.full((c,), float(rank))
        elif op == "all_gather":
            self.out = torch.zeros(n * c)
            self.chunks = list(self.out.chunk(n))
            self.inp = torch.full((c,), float(rank))
        elif op == "reduce_scatter":
            self.inp = torch.ones(n * c)
            self.out = torch.zeros(c)
        else:
            self.inp = torch.full((n * c,), float(rank))
            self.out = torch.zeros(n * c)
        self.bytes = {"all_reduce": c, "broadcast": c}.get(op, n * c) * el

    def call(self, pg):
        op = self.op
        if op == "all_reduce":
            dist.all_reduce(self.t, group=pg)
        elif op == "broadcast":
            dist.broadcast(self.t, 0, group=pg)
        elif op == "all_gather":
            dist.all_gather(self.chunks, self.inp, group=pg)
        elif op == "reduce_scatter":
            dist.reduce_scatter_tensor(self.out, self.inp, group=pg)
        else:
            dist.all_to_all_single(self.out, self.inp, group=pg)

    def check(self, pg):
        """One fresh call; True when its result is right."""
        n, r, op = self.n, self.rank, self.op
        if op == "all_reduce":
            self.t.fill_(1.0)
            self.call(pg)
            return bool((self.t == n).all())
        if op == "broadcast":
            self.t.fill_(float(r))
            self.call(pg)
            return bool((self.t == 0).all())
        if op == "all_gather":
            self.out.fill_(-1)
            self.call(pg)
            return all(bool((ch == j).all()) for j, ch in enumerate(self.chunks))
        if op == "reduce_scatter":
            self.out.fill_(-1)
            self.call(pg)
            return bool((self.out == n).all())
        self.out.fill_(-1)
        self.call(pg)
        return all(bool((blk == j).all()) for j, blk in enumerate(self.out.chunk(n)))


def agree_max(x, pg):
    t = torch.tensor([float(x)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=pg)
    return t.item()


def timed(case, pg, target_s, ctl):
    """Average seconds per call, the slowest rank's; None if the backend cannot."""
    try:
        for _ in range(2):
            case.call(pg)
    except RuntimeError:
        dist.barrier(group=ctl)
        return None
    t0 = time.perf_counter()
    case.call(pg)
    one = agree_max(time.perf_counter() - t0, ctl)
    iters = int(agree_max(max(3, min(20000, target_s / max(one, 1e-7))), ctl))
    dist.barrier(group=ctl)
    case.call(pg)  # everyone leaves the barrier at its own pace: one more call lines them up
    t0 = time.perf_counter()
    for _ in range(iters):
        case.call(pg)
    return agree_max((time.perf_counter() - t0) / iters, ctl)


def job(rank, n, port, args, outq):
    # one OpenMP thread per rank, as torchrun sets for its workers (a thread per
    # core in every rank makes them spin against each other)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore", FutureWarning)   # torch 2: reduce_scatter_tensor "is deprecated"
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(n))
    dist.init_process_group("cc", rank=rank, world_size=n)
    cc = dist.group.WORLD
    gloo = dist.new_group(backend="gloo")
    ctl = cc
    rows = []
    # torch's per-call overhead: dist.all_reduce of 8 bytes against a bare
    # cc_all_reduce, in turns of 2000 calls each; the best turn of each
    t = torch.ones(2)
    for _ in range(500):
        dist.all_reduce(t)
    # torch 2 wraps the backend in a ProcessGroup: the method is the backend's
    be = cc._get_backend(torch.device("cpu")) if hasattr(cc, "_get_backend") else cc
    torch_s = bare_s = float("inf")
    for p in range(args.overhead_turns):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(2000):
            dist.all_reduce(t)
        torch_s = min(torch_s, agree_max((time.perf_counter() - t0) / 2000, ctl))
        bare_s = min(bare_s, agree_max(be._bare_all_reduce_seconds(2, 2000), ctl))
    over = [(torch_s, bare_s)]
    sizes = []
    s = args.minbytes
    while s < args.maxbytes:
        sizes.append(s)
        s *= args.stepfactor
    sizes = sorted(set(sizes + [args.maxbytes] + [x for x in args.extra if args.minbytes <= x <= args.maxbytes]))
    for op in args.ops:
        for i, size in enumerate(sizes):
            case = Case(op, size, rank, n)
            best = {"cc": None, "gloo": None}
            for p in range(args.passes):
                order = ("cc", "gloo") if (i + p) % 2 == 0 else ("gloo", "cc")
                for name in order:
                    sec = timed(case, cc if name == "cc" else gloo, args.time, ctl)
                    if sec is not None and (best[name] is None or sec < best[name]):
                        best[name] = sec
            ok = case.check(cc)
            wrong = int(agree_max(0 if ok else 1, ctl))
            rows.append((op, case.bytes, case.count, best["cc"], best["gloo"], wrong))
            if rank == 0 and args.verbose:
                print(f"  {op} {case.bytes} cc {best['cc']} gloo {best['gloo']}", file=sys.stderr, flush=True)
            del case
    if rank == 0:
        outq.put((rows, over))
    dist.destroy_process_group()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def c2c():
    exe = os.path.join(ROOT, "build", "peers", "c2c_latency")
    src = os.path.join(HERE, "peers", "c2c_latency.c")
    if not os.path.exists(exe) and os.path.exists(src) and shutil.which("cc"):
        tmp = tempfile.mkdtemp(prefix="cc-c2c-")
        exe = os.path.join(tmp, "c2c_latency")
        if subprocess.run(["cc", "-O2", "-pthread", "-o", exe, src]).returncode != 0:
            return "c2c_latency: could not build bench/peers/c2c_latency.c"
    if not os.path.exists(exe):
        return "c2c_latency: not available (bench/peers/c2c_latency.c missing)"
    p = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    return (p.stdout.strip() or p.stderr.strip())


def us(sec):
    return f"{sec * 1e6:10.2f}" if sec is not None else f"{'n/a':>10}"


def bw(size, sec, f=1.0):
    return f"{size / sec / 1e9 * f:7.2f}" if sec else f"{'n/a':>7}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--nranks", default="2,4", help="world sizes (default 2,4)")
    ap.add_argument("-k", "--ops", default=",".join(OPS), help="collectives (default all five)")
    ap.add_argument("-b", "--minbytes", default="8")
    ap.add_argument("-e", "--maxbytes", default="64M")
    ap.add_argument("-f", "--stepfactor", type=int, default=4)
    ap.add_argument("-s", "--extra", default="16M", help="sizes measured beside the sweep (default 16M)")
    ap.add_argument("-t", "--time", type=float, default=0.1, help="seconds per timed loop (default 0.1)")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--overhead-turns", type=int, default=20,
                    help="turns of 2000 calls for torch's overhead (default 20)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    args.minbytes, args.maxbytes = parse_size(args.minbytes), parse_size(args.maxbytes)
    args.extra = [parse_size(x) for x in args.extra.split(",") if x]
    args.ops = args.ops.split(",")
    for op in args.ops:
        if op not in OPS:
            sys.exit(f"torch_compare: unknown collective {op} (one of {', '.join(OPS)})")
    print(f"# torch {torch.__version__}, torch_cc (cc {torch_cc.cc_version}); {os.cpu_count()} CPUs; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(f"# before: {c2c()}")
    ctx = multiprocessing.get_context("fork")
    for n in [int(x) for x in args.nranks.split(",")]:
        q = ctx.Queue()
        port = free_port()
        procs = [ctx.Process(target=job, args=(r, n, port, args, q)) for r in range(n)]
        for p in procs:
            p.start()
        rows, over = q.get()
        for p in procs:
            p.join()
        print(f"#\n# {n} ranks, float32 (all_reduce, reduce_scatter: sum; broadcast: root 0); {c2c()}")
        torch_s, bare_s = min(over)
        print(f"# 8-byte all_reduce on cc: dist.all_reduce {torch_s * 1e6:.2f} us, bare cc_all_reduce in the same "
              f"processes {bare_s * 1e6:.2f} us: torch's overhead {(torch_s - bare_s) * 1e6:.2f} us per call "
              f"(the best of {args.overhead_turns} alternating turns of 2000 calls each)")
        hdr = (f"# {'collective':>14} {'size':>10} {'count':>10} | {'cc: time':>10} {'algbw':>7} {'busbw':>7} | "
               f"{'gloo: time':>10} {'algbw':>7} {'busbw':>7} | {'gloo/cc':>8} {'#wrong':>6}")
        print(hdr)
        print(f"# {'':>14} {'(B)':>10} {'(elts)':>10} | {'(us)':>10} {'(GB/s)':>7} {'(GB/s)':>7} | "
              f"{'(us)':>10} {'(GB/s)':>7} {'(GB/s)':>7} | {'(time)':>8}")
        for op, size, count, c, g, wrong in rows:
            f = busbw_factor(op, n)
            ratio = f"{g / c:8.1f}" if c and g else f"{'n/a':>8}"
            print(f"  {op:>14} {size:>10} {count:>10} | {us(c)} {bw(size, c)} {bw(size, c, f)} | "
                  f"{us(g)} {bw(size, g)} {bw(size, g, f)} | {ratio} {wrong:>6}", flush=True)
    print(f"# after: {c2c()}")


if __name__ == "__main__":
    main()
