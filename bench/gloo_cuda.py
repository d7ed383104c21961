#!/usr/bin/env python3
"""gloo_cuda.py - torch.distributed's "gloo" backend on CUDA tensors, timed,
checked and printed the way bench/cc_bench.c prints (same header lines, same
columns, same size rules), so that its output and cc_bench's GPU mode can be
diffed side by side:

    python3 bench/gloo_cuda.py -N 2 -b 8 -e 64M -f 4
    build/ccrun -n 2 build/cc_bench_cuda -G 1 -b 8 -e 64M -f 4

Ranks: -N processes started with torch.multiprocessing.spawn, meeting over TCP
on 127.0.0.1 at a free port (or --port), gloo pinned to the loopback device
(GLOO_SOCKET_IFNAME=lo unless set). Rank r uses CUDA device r % device_count
(as cc_bench: CUDA_VISIBLE_DEVICES=0 puts every rank on GPU 0), or --device D.

Flags, as cc_bench's (sizes take K, M, G suffixes, powers of 1024):
  -b MINBYTES -e MAXBYTES -f FACTOR | -i INCREMENT -x SIZE,SIZE
  -n ITERS -w WARMUP -c CHECK(0/1) -t SECONDS (iterations calibrated to about
  this long per size, at least -n) -r ROOT (broadcast)
  -o COLL[,COLL] | all   all_reduce (default), all_gather, reduce_scatter,
                         broadcast, all_to_all, barrier
Always float32; all_reduce and reduce_scatter sum.

Timing (cc_bench's GPU rule, as nccl-tests): warm-up calls, then a batch of
iterations timed on the host from dist.barrier() (the device idle) to
torch.cuda.synchronize() after the batch's last call, divided by the batch; the
time is the maximum over the ranks. algbw = size / time (GB = 1e9 bytes),
busbw = algbw * nccl-tests' factor (2(n-1)/n all_reduce; (n-1)/n all_gather,
reduce_scatter, all_to_all; 1 broadcast). Each call includes torch's dispatch
and gloo's own device-host traffic (gloo moves CUDA tensors through host
memory): that is what a torch user of gloo pays.

Columns: torch's collectives have fewer forms than cc's, so the columns that a
form does not exist for read N/A:
  all_reduce      dist.all_reduce is in place only: right column only
  broadcast       one buffer: both columns time the same call (as cc_bench)
  all_gather      dist.all_gather_into_tensor (or the list form, where gloo
                  lacks it): left column only
  reduce_scatter  dist.reduce_scatter_tensor: left column only
  all_to_all      dist.all_to_all_single: left column only
  barrier         size 0; both columns time dist.barrier()
A collective that gloo refuses on CUDA tensors is reported as "NOT SUPPORTED"
and skipped. The check (-c 1) runs one call on fresh patterned inputs (small
integers, exact in float32) after the timing and counts the wrong elements,
summed over the ranks. Exit status: 0, 1 when a result was wrong, 2 bad flags.
"""
import argparse
import math
import os
import socket
import sys
import time

COLLS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "barrier"]
ROW = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reduce_scatter",
       "broadcast": "broadcast", "all_to_all": "alltoall", "barrier": "barrier"}
ALIAS = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
         "bcast": "broadcast", "alltoall": "all_to_all"}
NOTES = {
    "all_reduce": "in place only (torch has no out-of-place form): right column",
    "all_gather": "out of place (into one tensor, or a list where gloo lacks that): left column",
    "reduce_scatter": "out of place (reduce_scatter_tensor): left column",
    "broadcast": "one buffer: both columns time the same call (on two buffers)",
    "all_to_all": "out of place (all_to_all_single): left column",
    "barrier": "size 0; both columns time dist.barrier",
}
CALL = {"all_reduce": "dist.all_reduce", "all_gather": "dist.all_gather_into_tensor",
        "reduce_scatter": "dist.reduce_scatter_tensor", "broadcast": "dist.broadcast",
        "all_to_all": "dist.all_to_all_single", "barrier": "dist.barrier"}
TS = 4  # float32
MAX_SIZES = 1024


def usage(why):
    sys.stderr.write("gloo_cuda: %s\n" % why)
    sys.exit(2)


def parse_size(s):
    t = s.strip()
    mul = 1
    if t[-1:] in ("b", "B"):
        t = t[:-1]
    if t[-1:] in ("k", "K", "m", "M", "g", "G"):
        mul = 1 << {"k": 10, "m": 20, "g": 30}[t[-1].lower()]
        t = t[:-1]
    if not t.isdigit():
        raise ValueError(s)
    return int(t) * mul


def parse():
    p = argparse.ArgumentParser(description="torch.distributed gloo on CUDA tensors, in cc_bench's format")
    p.add_argument("-N", "--nranks", type=int, default=2)
    p.add_argument("-o", default="all_reduce")
    p.add_argument("-b", default="8")
    p.add_argument("-e", default="64M")
    p.add_argument("-f", type=int, default=2)
    p.add_argument("-i", default=None)
    p.add_argument("-x", default=None)
    p.add_argument("-n", type=int, default=20)
    p.add_argument("-w", type=int, default=5)
    p.add_argument("-c", type=int, default=1, choices=(0, 1))
    p.add_argument("-t", type=float, default=0.0)
    p.add_argument("-r", type=int, default=0)
    p.add_argument("--device", default="rank", help="'rank' (rank %% device_count) or a device number")
    p.add_argument("--port", type=int, default=0)
    a = p.parse_args()
    try:
        a.minb, a.maxb = parse_size(a.b), parse_size(a.e)
        a.incr = parse_size(a.i) if a.i is not None else 0
        a.extra = [parse_size(x) for x in a.x.split(",") if x.strip()] if a.x else []
    except (ValueError, IndexError) as ex:
        usage("bad size: %s" % ex)
    if a.f < 2:
        usage("bad -f (an integer >= 2)")
    if a.i is not None and a.incr == 0:
        usage("bad -i")
    if a.nranks < 1 or a.n < 1 or a.w < 0 or a.t < 0 or not 0 <= a.r < a.nranks:
        usage("bad -N, -n, -w, -t or -r")
    if a.device != "rank" and not a.device.isdigit():
        usage("bad --device (rank or a number)")
    sel = []
    for tok in (COLLS if a.o == "all" else a.o.split(",")):
        c = ALIAS.get(tok, tok)
        if c not in COLLS:
            usage("bad -o: %s" % tok)
        if c not in sel:
            sel.append(c)
    a.colls = [c for c in COLLS if c in sel]  # cc_bench's order
    a.sizes = sizes_of(a)
    if not a.sizes:
        usage("no sizes: -b is above -e")
    return a


def sizes_of(a):
    s, v = [], a.minb
    while v <= a.maxb and len(s) < MAX_SIZES:
        s.append(v)
        nxt = v + a.incr if a.incr else v * a.f
        if nxt <= v:
            break
        v = nxt
    for x in a.extra:
        if x not in s and len(s) < MAX_SIZES:
            s.append(x)
    return sorted(s)


def counts(c, nominal, n):
    """cc_bench's case_counts for a 4-byte type: (count, blk, sizeb)."""
    count = max(1, nominal // TS)
    blk = max(1, count // n)
    if c in ("all_reduce", "broadcast"):
        return count, blk, count * TS
    if c == "barrier":
        return 0, 0, 0
    return count, blk, blk * n * TS


def bus_factor(c, n):
    if c == "all_reduce":
        return 2.0 * (n - 1) / n
    if c in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def fmt_num(v, width, prec):
    return " %*.*f" % (width, prec, v) if v is not None else " %*s" % (width, "N/A")


def fmt_wrong(w):
    return " %8d" % w if w is not None and w >= 0 else " %8s" % "N/A"


def row(c, sizeb, iters, root, left, right):
    """cc_bench's print_row; left/right: (t_us, algbw, busbw, wrong) or None."""
    s = "  %-14s %12d %12d %6s %5s" % (ROW[c], sizeb, sizeb // TS if c != "barrier" else 0,
                                       "-" if c == "barrier" else "float",
                                       "sum" if c in ("all_reduce", "reduce_scatter") else "-")
    for col, tail in ((left, " %9d %5d" % (iters, root)), (right, "")):
        if col is None:
            s += fmt_num(None, 12, 2) + fmt_num(None, 11, 3) + fmt_num(None, 11, 3) + fmt_wrong(None)
        else:
            s += fmt_num(col[0], 12, 2) + fmt_num(col[1], 11, 3) + fmt_num(col[2], 11, 3) + fmt_wrong(col[3])
        s += tail
    return s


def print_header(c):
    print("#\n# Collective test: %s (%s) - %s" % (c, CALL[c], NOTES[c]))
    print("# %53s %-45s %15s %s" % ("", "|-------------- out-of-place ---------------|", "",
                                   "|---------------- in-place -----------------|"))
    print("# %-14s %12s %12s %6s %5s %12s %11s %11s %8s %9s %5s %12s %11s %11s %8s" % (
        "coll", "size_bytes", "count", "type", "op", "time_us", "algbw_GBps", "busbw_GBps",
        "#wrong", "iters", "root", "time_us", "algbw_GBps", "busbw_GBps", "#wrong"))
    sys.stdout.flush()


def worker(rank, n, a, port):
    import torch
    import torch.distributed as dist

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    ndev = torch.cuda.device_count()
    if ndev < 1:
        if rank == 0:
            sys.stderr.write("gloo_cuda: no CUDA device: torch.cuda.device_count() is 0\n")
        sys.exit(2)
    dev = rank % ndev if a.device == "rank" else int(a.device)
    torch.cuda.set_device(dev)
    device = torch.device("cuda", dev)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=n)

    def tmax(x):  # bookkeeping on CPU tensors, through the same group
        t = torch.tensor([x], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def tsum(x):
        t = torch.tensor([x], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return int(t.item())

    def gather_str(s):
        out = [None] * n
        dist.all_gather_object(out, s)
        return out

    # ---- header: cc_bench's
    props = torch.cuda.get_device_properties(dev)
    bus = "%04x:%02x:%02x" % (getattr(props, "pci_domain_id", 0), getattr(props, "pci_bus_id", 0),
                              getattr(props, "pci_device_id", 0))
    descs = gather_str("device %2d [%s] %s" % (dev, bus, props.name))
    pids = gather_str(os.getpid())
    hosts = gather_str(socket.gethostname())
    if rank == 0:
        print("# gloo_cuda nranks=%d host=%s nprocs_online=%d" % (n, socket.gethostname(), os.cpu_count()))
        print("# library: torch %s backend=gloo on CUDA tensors (TCP, GLOO_SOCKET_IFNAME=%s) python %s" % (
            torch.__version__, os.environ["GLOO_SOCKET_IFNAME"], sys.version.split()[0]))
        print("# cuda: device %d %s, torch.version.cuda %s, sm_%d%d, %d SMs, %.1f GiB, %d visible" % (
            dev, props.name, torch.version.cuda, props.major, props.minor, props.multi_processor_count,
            props.total_memory / float(1 << 30), ndev))
        print("# cuda: a batch is timed from dist.barrier() (device idle) to torch.cuda.synchronize()"
              " after its last call")
        print("# minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d%s validation: %d root: %d" % (
            a.minb, a.maxb, a.incr or a.f, "bytes" if a.incr else "factor", a.w, a.n,
            " (minimum)" if a.t > 0 else "", a.c, a.r))
        if a.t > 0:
            print("# target_s=%.3f per size and column (iterations calibrated on the first column measured)" % a.t)
        print("# GB=1e9 bytes; time_us = max over ranks of the average per iteration\n#\n# Using devices")
        for r in range(n):
            print("#  Rank %2d Pid %7d on %10s %s" % (r, pids[r], hosts[r], descs[r]))
        sys.stdout.flush()

    def timed(op, iters):
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            op()
        torch.cuda.synchronize()
        return tmax(time.perf_counter() - t0)

    def f32(x):
        return x.to(torch.float32)

    total_wrong, bw_sum, bw_count = 0, 0.0, 0
    ag_list = [False]   # all_gather: the list form (once all_gather_into_tensor was refused)
    for c in a.colls:
        if rank == 0:
            print_header(c)
        for nominal in ([0] if c == "barrier" else a.sizes):
            count, blk, sizeb = counts(c, nominal, n)
            # ---- the forms: (name, call, check) for the left and right columns, or None
            left = right = None
            if c == "all_reduce":
                buf = torch.zeros(count, dtype=torch.float32, device=device)

                def run_ar(buf=buf):
                    dist.all_reduce(buf, op=dist.ReduceOp.SUM)

                def check_ar(buf=buf):
                    i = torch.arange(count, device=device) % 97 + 1
                    buf.copy_(f32((rank + 1) * i))
                    run_ar()
                    return int((buf != f32(n * (n + 1) // 2 * i)).sum())
                right = (run_ar, check_ar)
            elif c == "broadcast":
                def make_bc(buf):
                    def run():
                        dist.broadcast(buf, src=a.r)

                    def check():
                        i = f32(torch.arange(count, device=device) % 1000)
                        if rank == a.r:
                            buf.copy_(i)
                        else:
                            buf.fill_(-1.0)
                        run()
                        return int((buf != i).sum())
                    return run, check
                left = make_bc(torch.zeros(count, dtype=torch.float32, device=device))
                right = make_bc(torch.zeros(count, dtype=torch.float32, device=device))
            elif c == "all_gather":
                inp = torch.zeros(blk, dtype=torch.float32, device=device)
                out = torch.zeros(blk * n, dtype=torch.float32, device=device)
                outs = list(out.chunk(n))

                def run_ag(inp=inp, out=out, outs=outs):
                    if ag_list[0]:
                        dist.all_gather(outs, inp)
                        return
                    try:
                        dist.all_gather_into_tensor(out, inp)
                    except RuntimeError as ex:   # gloo without it: the list form, from now on
                        ag_list[0] = True
                        if rank == 0:
                            print("# all_gather: gloo refused all_gather_into_tensor (%s); timing the list"
                                  " form dist.all_gather" % str(ex).splitlines()[0][:100])
                            sys.stdout.flush()
                        dist.all_gather(outs, inp)

                def check_ag(inp=inp, out=out):
                    i = torch.arange(blk, device=device) % 1000
                    inp.copy_(f32(rank * 1000 + i))
                    out.fill_(-1.0)
                    run_ag()
                    want = torch.cat([f32(j * 1000 + i) for j in range(n)])
                    return int((out != want).sum())
                left = (run_ag, check_ag)
            elif c == "reduce_scatter":
                inp = torch.zeros(blk * n, dtype=torch.float32, device=device)
                out = torch.zeros(blk, dtype=torch.float32, device=device)

                def run_rs(inp=inp, out=out):
                    dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.SUM)

                def check_rs(inp=inp, out=out):
                    i = torch.arange(blk * n, device=device) % 97 + 1
                    inp.copy_(f32((rank + 1) * i))
                    out.fill_(-1.0)
                    run_rs()
                    want = f32(n * (n + 1) // 2 * i[rank * blk:(rank + 1) * blk])
                    return int((out != want).sum())
                left = (run_rs, check_rs)
            elif c == "all_to_all":
                inp = torch.zeros(blk * n, dtype=torch.float32, device=device)
                out = torch.zeros(blk * n, dtype=torch.float32, device=device)

                def run_aa(inp=inp, out=out):
                    dist.all_to_all_single(out, inp)

                def check_aa(inp=inp, out=out):
                    i = torch.arange(blk, device=device) % 1000
                    inp.copy_(torch.cat([f32(rank * 100000 + d * 1000 + i) for d in range(n)]))
                    out.fill_(-1.0)
                    run_aa()
                    want = torch.cat([f32(j * 100000 + rank * 1000 + i) for j in range(n)])
                    return int((out != want).sum())
                left = (run_aa, check_aa)
            else:  # barrier
                left = right = (dist.barrier, lambda: 0)

            # ---- refused by gloo on CUDA tensors? (every rank sees the same refusal)
            try:
                (left or right)[0]()
                torch.cuda.synchronize()
            except Exception as ex:  # noqa: BLE001 - report whatever gloo raises
                if rank == 0:
                    print("# %s: NOT SUPPORTED by gloo on CUDA tensors: %s: %s" % (
                        c, type(ex).__name__, str(ex).splitlines()[0][:160] if str(ex) else ""))
                    sys.stdout.flush()
                dist.barrier()
                break

            # ---- warm-up, calibration (-t), timing, check; per column
            iters = a.n if a.t <= 0 else 0
            cols = []
            for form in (left, right):
                if form is None:
                    cols.append(None)
                    continue
                run, check = form
                for _ in range(a.w):
                    run()
                if iters <= 0:   # batches growing 4x until one lasts 20 ms (or -t)
                    until, k = min(a.t, 0.02), 1
                    while True:
                        dt = timed(run, k)
                        if dt >= until or k >= 1000000:
                            break
                        k *= 4
                    per = dt / k
                    iters = max(a.n, min(1000000, int(math.ceil(a.t / (per if per > 0 else 1e-9)))))
                dt = timed(run, iters)
                t_us = dt / iters * 1e6
                algbw = 0.0 if c == "barrier" or dt <= 0 else sizeb / 1e9 / (t_us * 1e-6)
                busbw = algbw * bus_factor(c, n)
                wrong = -1
                if a.c:
                    wrong = tsum(check())
                    total_wrong += wrong
                if c != "barrier":
                    bw_sum += busbw
                    bw_count += 1
                cols.append((t_us, algbw, busbw, wrong))
            if rank == 0:
                print(row(c, sizeb, iters, a.r if c == "broadcast" else -1, cols[0], cols[1]))
                sys.stdout.flush()
    if rank == 0:
        print("# %-20s : %d %s" % ("Out of bounds values", total_wrong, "FAILED" if total_wrong else "OK"))
        print("# %-20s : %g \n#" % ("Avg bus bandwidth", bw_sum / bw_count if bw_count else 0.0))
        sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()
    if total_wrong:
        sys.exit(1)


def main():
    a = parse()
    try:
        import torch.multiprocessing as mp
    except ImportError as ex:
        sys.stderr.write("gloo_cuda: needs PyTorch: %s\n" % ex)
        sys.exit(2)
    port = a.port
    if port == 0:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
    try:
        mp.spawn(worker, args=(a.nranks, a, port), nprocs=a.nranks, join=True)
    except mp.ProcessExitedException as ex:   # a rank's sys.exit(1 or 2), or a signal
        sys.stderr.write("gloo_cuda: %s\n" % ex)
        sys.exit(ex.exit_code if ex.exit_code and ex.exit_code > 0 else 1)
    except mp.ProcessRaisedException as ex:   # a rank's exception (its traceback is in ex)
        sys.stderr.write("gloo_cuda: %s\n" % ex)
        sys.exit(1)


if __name__ == "__main__":
    main()
