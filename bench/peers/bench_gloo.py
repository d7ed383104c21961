#!/usr/bin/python3
"""bench_gloo.py - cc_bench's twin for torch.distributed with the gloo backend
on CPU tensors: float32, op sum, the same flags, sizes, timing rule, checks and
columns as cc_bench and bench_mpi, so that compare.sh reads them alike.

    GLOO_SOCKET_IFNAME=lo /usr/bin/python3 bench/peers/bench_gloo.py --nranks 2 -b 8 -e 64M -f 4 -l 0.2

Run it with Debian's python (/usr/bin/python3 and its python3-torch). The
ranks are started with torch.multiprocessing.spawn and meet over TCP at
127.0.0.1 on a free port; gloo's traffic goes over the interface that
GLOO_SOCKET_IFNAME names (default here: lo).

Collectives (-k, a comma list or all), with torch's calls:
  all_reduce      dist.all_reduce(t): in place only, so its times are in the
                  in-place columns and the out-of-place ones read N/A
  all_gather      dist.all_gather(list of n tensors, t)
  reduce_scatter  dist.reduce_scatter(t, list): gloo has none on CPU; the
                  bench tries it and prints "# reduce_scatter: not supported
                  by gloo: ..." with torch's error
  broadcast       dist.broadcast(t, src=root): one buffer, out-of-place columns
  all_to_all      dist.all_to_all_single(out, inp)
  gather          dist.gather(t, list on the root, dst=root)
  scatter         dist.scatter(t, list on the root, src=root)
  barrier         dist.barrier()

Flags as cc_bench's (bench/README.md): -b -e -f -i -s sizes (K, M, G
suffixes; -e is always measured), -n iterations (the least, with -l), -w
warmup, -c checked iterations, -l seconds per size (calibrated: batches
growing 4x up to 20 ms, then the rest), -a 0|1|2|3 whose time (rank 0, mean,
min, max; default 3), -r root, -o sum and -d float (the only ones), -k, -h;
and --nranks N (default 2). Anything else is refused, naming the flag (exit
status 2). The defaults are compare.sh's: -b 8 -e 64M -f 4 -s 1M,16M -l 0.2 -n 3
-w 5 -c 1 -a 3 -r 0 (8 B to 64 MiB by 4, and 1 MiB and 16 MiB, about 0.2 s per
size). Times include torch's per-call overhead, as a torch user pays it.

Inputs are whole numbers below 1024, so every sum is exact in float32; each
result is compared with a reference computed here by integer arithmetic
(#wrong: differing elements over all ranks). Exit status 1 when any was wrong.
"""
import math
import os
import socket
import sys
import time

COLLS = [  # name, alias, torch call, block, rooted, bus factor kind (0: 2(n-1)/n, 1: (n-1)/n, 2: 1)
    ("all_reduce", "allreduce", "dist.all_reduce", False, False, 0),
    ("all_gather", "allgather", "dist.all_gather", True, False, 1),
    ("reduce_scatter", "reducescatter", "dist.reduce_scatter", True, False, 1),
    ("broadcast", "bcast", "dist.broadcast", False, True, 2),
    ("all_to_all", "alltoall", "dist.all_to_all_single", True, False, 1),
    ("gather", "gather", "dist.gather", True, True, 1),
    ("scatter", "scatter", "dist.scatter", True, True, 1),
    ("barrier", "barrier", "dist.barrier", False, False, 2),
]
FLAGS = {"b": "minbytes", "e": "maxbytes", "f": "stepfactor", "i": "stepbytes", "s": "extra_sizes",
         "n": "iters", "w": "warmup_iters", "c": "check", "l": "time_per_size", "a": "average",
         "r": "root", "o": "op", "d": "datatype", "k": "coll"}
LONG = {v: k for k, v in FLAGS.items()}
LONG["nranks"] = "N"


class Bad(Exception):
    pass


def parse_size(flag, s):
    mul = 1
    t = s
    if t[-1:] in ("b", "B"):
        t = t[:-1]
    if t[-1:] in ("k", "K", "m", "M", "g", "G"):
        mul = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[t[-1].lower()]
        t = t[:-1]
    if not t.isdigit():
        raise Bad("%s: '%s' is not a size (bytes, with K, M or G)" % (flag, s))
    return int(t) * mul


def parse_int(flag, s, lo, hi, what):
    try:
        v = int(s, 10)
    except ValueError:
        v = None
    if v is None or v < lo or v > hi:
        raise Bad("%s: '%s' is not %s" % (flag, s, what))
    return v


def parse(argv):
    # the defaults are compare.sh's: -b 8 -e 64M -f 4 -s 1M,16M -l 0.2 -n 3 -w 5 -c 1
    o = dict(minb=8, maxb=64 << 20, factor=4, incr=0, extra=[1 << 20, 16 << 20], iters=3, warmup=5, check=1, target=0.2,
             average=3, root=0, nranks=2, sel=[c[0] for c in COLLS], help=False)
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a in ("-h", "--help"):
            o["help"] = True
            continue
        if not a.startswith("-") or a in ("-", "--"):
            raise Bad("unexpected argument '%s'" % a)
        val = None
        if a.startswith("--"):
            name, eq, v = a[2:].partition("=")
            f, flag = LONG.get(name), "--" + name
            if eq:
                val = v
        else:
            f, flag = (a[1] if a[1] in FLAGS else None), a[:2]
            if len(a) > 2:
                val = a[2:]
        if f is None:
            raise Bad("unknown flag %s (-h lists the flags)" % flag)
        if val is None:
            if i >= len(argv):
                raise Bad("%s: needs a value" % flag)
            val = argv[i]
            i += 1
        if f == "b":
            o["minb"] = parse_size(flag, val)
        elif f == "e":
            o["maxb"] = parse_size(flag, val)
        elif f == "f":
            o["factor"], o["incr"] = parse_int(flag, val, 2, 1 << 20, "a step factor (an integer >= 2)"), 0
        elif f == "i":
            o["incr"] = parse_size(flag, val)
            if o["incr"] == 0:
                raise Bad("%s: '%s' is not a step (bytes > 0)" % (flag, val))
        elif f == "s":
            o["extra"] = [parse_size(flag, t) for t in val.split(",")]
        elif f == "n":
            o["iters"] = parse_int(flag, val, 1, 10 ** 9, "a count >= 1")
        elif f == "w":
            o["warmup"] = parse_int(flag, val, 0, 10 ** 6, "a count >= 0")
        elif f == "c":
            o["check"] = parse_int(flag, val, 0, 10 ** 6, "a count >= 0")
        elif f == "a":
            o["average"] = parse_int(flag, val, 0, 3, "0, 1, 2 or 3")
        elif f == "r":
            o["root"] = parse_int(flag, val, 0, 1 << 30, "a rank")
        elif f == "N":
            o["nranks"] = parse_int(flag, val, 1, 1024, "a number of ranks (1 .. 1024)")
        elif f == "l":
            try:
                o["target"] = float(val)
            except ValueError:
                o["target"] = -1.0
            if not 0.0 <= o["target"] <= 1e6:
                raise Bad("%s: '%s' is not a time in seconds" % (flag, val))
        elif f == "o":
            if val != "sum":
                raise Bad("%s: '%s': this bench measures op sum only" % (flag, val))
        elif f == "d":
            if val not in ("float", "float32"):
                raise Bad("%s: '%s': this bench measures float only" % (flag, val))
        elif f == "k":
            if val == "all":
                o["sel"] = [c[0] for c in COLLS]
            else:
                sel = []
                for t in val.split(","):
                    hit = [c[0] for c in COLLS if t in (c[0], c[1])]
                    if not hit:
                        raise Bad("%s: '%s' is not a collective of this bench (all_reduce all_gather reduce_scatter"
                                  " broadcast all_to_all gather scatter barrier, or all)" % (flag, t))
                    sel += hit
                o["sel"] = [c[0] for c in COLLS if c[0] in sel]
    if o["minb"] > o["maxb"]:
        raise Bad("-b %d is above -e %d" % (o["minb"], o["maxb"]))
    if o["root"] >= o["nranks"]:
        raise Bad("-r: '%d' is not a rank of this job" % o["root"])
    return o


def make_sizes(o):
    s, out = o["minb"], []
    while s <= o["maxb"]:
        out.append(s)
        nxt = s + o["incr"] if o["incr"] else s * o["factor"]
        if nxt <= s or len(out) > 1023:
            break
        s = nxt
    out.append(o["maxb"])   # the end is always measured
    return sorted(set(out + o["extra"]))


def fmt_time(us):
    return "%7.0f" % us if us >= 10000 else "%7.1f" % us if us >= 100 else "%7.2f" % us


def worker(rank, n, o, port):
    import datetime
    import torch
    import torch.distributed as dist

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=n,
                            timeout=datetime.timedelta(seconds=600))
    root = o["root"]

    def inp(r, first, count):
        """Elements first .. first+count-1 of rank r's input: whole numbers below 1024 (int64)."""
        k = torch.arange(first, first + count, dtype=torch.int64)
        return ((k * 2654435761 + (r + 1) * 40503) >> 11) % 1024

    def combine(t, average):
        x = torch.tensor([t], dtype=torch.float64)
        if average == 0:
            dist.broadcast(x, src=0)
        else:
            dist.all_reduce(x, op=[None, dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX][average])
        return x.item() / (n if average == 1 else 1)

    def timed(op, iters, average):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            op()
        return combine(time.perf_counter() - t0, average)

    if rank == 0:
        avg = ["rank 0's", "the mean over the ranks", "the least over the ranks", "the greatest over the ranks"]
        print("# bench_gloo: torch %s, backend gloo (TCP, GLOO_SOCKET_IFNAME=%s), python %s, %d ranks, host %s"
              " (%d CPUs online)" % (torch.__version__, os.environ["GLOO_SOCKET_IFNAME"], sys.version.split()[0], n,
                                     socket.gethostname(), os.cpu_count() or 0))
        print("# nThread 1 nGpus 0 minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: 1"
              " validation: %d graph: 0" % (o["minb"], o["maxb"], o["incr"] or o["factor"],
                                            "bytes" if o["incr"] else "factor", o["warmup"], o["iters"], o["check"]))
        if o["extra"]:
            print("# extra sizes (-s): %s" % ",".join(str(x) for x in o["extra"]))
        if o["target"] > 0:
            print("# time per size (-l): %.3f s, iterations calibrated, at least -n %d" % (o["target"], o["iters"]))
        print("# time: %s (-a %d); GB = 1e9 bytes; torch's calls, its per-call overhead included"
              % (avg[o["average"]], o["average"]))
        sys.stdout.flush()

    total_wrong = 0
    sizes = make_sizes(o)
    for name, _, call, block, rooted, bus in COLLS:
        if name not in o["sel"]:
            continue
        if rank == 0:
            print("#\n# Collective test: %s (%s)%s" % (name, call, " - in place only: the in-place columns"
                                                       if name == "all_reduce" else ""))
            print("# %10s  %12s  %8s  %6s  %6s  %-32s  %-32s" % ("", "", "", "", "", "         out-of-place",
                                                                 "           in-place"))
            print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s  %9s" % (
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                "busbw", "#wrong", "iters"))
            print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % (
                "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
            sys.stdout.flush()
        if name == "reduce_scatter":   # gloo has none on CPU: say what torch says
            try:
                dist.reduce_scatter(torch.zeros(1), [torch.zeros(1) for _ in range(n)])
                supported = True
            except Exception as ex:  # noqa: BLE001 - torch raises RuntimeError or NotImplementedError
                supported = False
                if rank == 0:
                    print("# reduce_scatter: not supported by gloo: %s: %s"
                          % (type(ex).__name__, str(ex).splitlines()[0][:200]))
                    sys.stdout.flush()
            dist.barrier()
            if not supported:
                continue
        for nominal in ([0] if name == "barrier" else sizes):
            count = max(1, nominal // 4) if name != "barrier" else 0
            blk = max(1, count // n) if name != "barrier" else 0
            sizeb = (blk * n if block else count) * 4
            inplace = name == "all_reduce"
            if name == "all_reduce":
                buf = torch.zeros(count)
                op = lambda: dist.all_reduce(buf)  # noqa: E731

                def setup():
                    buf.copy_(inp(rank, 0, count).float())

                def wrong():
                    ref = sum(inp(r, 0, count) for r in range(n)).float()
                    return int((buf != ref).sum())
            elif name in ("all_gather", "reduce_scatter"):
                x = torch.zeros(blk)
                outs = [torch.zeros(blk) for _ in range(n)]
                if name == "all_gather":
                    op = lambda: dist.all_gather(outs, x)  # noqa: E731
                else:
                    op = lambda: dist.reduce_scatter(x, outs)  # noqa: E731

                def setup():
                    x.copy_(inp(rank, 0, blk).float())
                    for t in outs:
                        t.fill_(-1.0)

                def wrong():
                    return sum(int((outs[j] != inp(j, 0, blk).float()).sum()) for j in range(n))
            elif name == "broadcast":
                buf = torch.zeros(count)
                op = lambda: dist.broadcast(buf, src=root)  # noqa: E731

                def setup():
                    if rank == root:
                        buf.copy_(inp(root, 0, count).float())
                    else:
                        buf.fill_(-1.0)

                def wrong():
                    return int((buf != inp(root, 0, count).float()).sum())
            elif name == "all_to_all":
                x = torch.zeros(blk * n)
                out = torch.zeros(blk * n)
                op = lambda: dist.all_to_all_single(out, x)  # noqa: E731

                def setup():   # block j goes to rank j
                    for j in range(n):
                        x[j * blk:(j + 1) * blk] = inp(rank, (j * n + rank) * blk, blk).float()
                    out.fill_(-1.0)

                def wrong():
                    return sum(int((out[j * blk:(j + 1) * blk] != inp(j, (rank * n + j) * blk, blk).float()).sum())
                               for j in range(n))
            elif name == "gather":
                x = torch.zeros(blk)
                outs = [torch.zeros(blk) for _ in range(n)] if rank == root else None
                op = lambda: dist.gather(x, gather_list=outs, dst=root)  # noqa: E731

                def setup():
                    x.copy_(inp(rank, 0, blk).float())
                    for t in outs or []:
                        t.fill_(-1.0)

                def wrong():
                    if rank != root:
                        return 0
                    return sum(int((outs[j] != inp(j, 0, blk).float()).sum()) for j in range(n))
            elif name == "scatter":
                x = torch.zeros(blk)
                ins = [torch.zeros(blk) for _ in range(n)] if rank == root else None
                op = lambda: dist.scatter(x, scatter_list=ins, src=root)  # noqa: E731

                def setup():
                    for j, t in enumerate(ins or []):
                        t.copy_(inp(root, j * blk, blk).float())
                    x.fill_(-1.0)

                def wrong():
                    return int((x != inp(root, rank * blk, blk).float()).sum())
            else:
                op = dist.barrier

                def setup():
                    pass

                def wrong():
                    return 0
            setup()
            for _ in range(o["warmup"]):
                op()
            iters = o["iters"]
            if o["target"] > 0:   # batches growing 4x up to 20 ms (or the target), then the rest
                until, b = min(o["target"], 0.02), 1
                while True:
                    dt = timed(op, b, 3)
                    if dt >= until or b >= 1000000:
                        break
                    b *= 4
                per = dt / b
                iters = max(o["iters"], min(1000000, int(math.ceil(o["target"] / max(per, 1e-9)))))
            dt = timed(op, iters, o["average"])
            t_us = dt / iters * 1e6
            algbw = 0.0 if name == "barrier" else sizeb / 1e9 / (dt / iters)
            busbw = algbw * [2.0 * (n - 1) / n, (n - 1) / n, 1.0][bus]
            nwrong = 0
            for _ in range(o["check"] if name != "barrier" else 0):
                setup()
                op()
                t = torch.tensor([wrong()], dtype=torch.int64)
                dist.all_reduce(t)
                nwrong = int(t.item())
                if nwrong:
                    break
            total_wrong += nwrong
            if rank == 0:
                grp = "  %7s  %6.2f  %6.2f  %5s" % (fmt_time(t_us), algbw, busbw,
                                                    "%5d" % nwrong if o["check"] else "N/A")
                na = "  %7s  %6s  %6s  %5s" % ("N/A", "N/A", "N/A", "N/A")
                print("%12d  %12d  %8s  %6s  %6d%s%s  %9d" % (
                    sizeb, blk if block else count, "none" if name == "barrier" else "float",
                    "sum" if name in ("all_reduce", "reduce_scatter") else "none", root if rooted else -1,
                    na if inplace else grp, grp if inplace else na, iters))
                sys.stdout.flush()
    if rank == 0:
        print("# Out of bounds values : %d %s\n#" % (total_wrong, "FAILED" if total_wrong else "OK"))
        sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()
    if total_wrong:
        sys.exit(1)


def main():
    try:
        o = parse(sys.argv[1:])
    except Bad as ex:
        sys.stderr.write("bench_gloo: %s\n" % ex)
        return 2
    if o["help"]:
        print("usage: bench_gloo.py [--nranks N] [-k COLL,..|all] [-b N] [-e N] [-f F | -i N] [-s N,N] [-n ITERS]\n"
              "         [-w WARMUP] [-c CHECKS] [-l SECONDS] [-a 0|1|2|3] [-r ROOT] [-o sum] [-d float]")
        return 0
    import torch.multiprocessing as mp

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    try:
        mp.spawn(worker, args=(o["nranks"], o, port), nprocs=o["nranks"], join=True)
    except Exception as ex:  # noqa: BLE001 - a rank failed; its traceback is on stderr already
        sys.stderr.write("bench_gloo: %s\n" % str(ex).splitlines()[0] if str(ex) else "bench_gloo: a rank failed\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
