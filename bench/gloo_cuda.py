#!/usr/bin/env python3
"""gloo_cuda.py - torch.distributed's "gloo" backend on CUDA tensors, timed,
checked and printed the way bench/cc_bench.c prints (nccl-tests' flags, header
and rows, the same size rules), so that its output and cc_bench's GPU mode can
be diffed side by side and read by one parser (bench/cuda_compare.sh's):

    python3 bench/gloo_cuda.py -N 2 -k all_reduce -b 8 -e 64M -f 4
    build/ccrun -n 2 build/cuda/cc_bench_cuda -g 1 -k all_reduce -b 8 -e 64M -f 4

Ranks: -N processes started with torch.multiprocessing.spawn, meeting over TCP
on 127.0.0.1 at a free port (or --port), gloo pinned to the loopback device
(GLOO_SOCKET_IFNAME=lo unless set). Rank r uses CUDA device r % device_count
(as cc_bench: CUDA_VISIBLE_DEVICES=0 puts every rank on GPU 0), or --device D;
--device cpu times CPU tensors instead (a check of this script where there is
no GPU, not a GPU figure).

Flags, cc_bench's (nccl-tests' names; sizes take K, M, G suffixes, powers of
1024; a value may follow the flag or its long name):
  -N, --nranks N             ranks (this script's own: cc_bench's ranks come
                             from ccrun -n, and its -N is nccl-tests' run_cycles)
  -k, --coll COLL[,COLL]|all all_reduce (default), all_gather, reduce_scatter,
                             broadcast, all_to_all, barrier
  -b, --minbytes N           smallest size (default 8)
  -e, --maxbytes N           largest size, always measured (default 64M)
  -f, --stepfactor F | -i, --stepbytes N   multiply (default 2) or add; the
                             last of the two wins
  -s, --extra_sizes N,N      sizes measured beside the sweep
  -n, --iters N              timed iterations (default 20); with -l the least
  -w, --warmup_iters N       untimed iterations first (default 5)
  -c, --check N              checked iterations (default 1; 0: #wrong reads N/A)
  -l, --time_per_size S      calibrate the iterations to about S seconds per
                             size and column; 0: -n as given
  -r, --root R               broadcast's root (default 0)
  -o, --op sum               the only op (gloo's sum; cc_bench's default)
  -d, --datatype float       the only type (float32)

Timing (cc_bench's GPU rule, as nccl-tests): warm-up calls, then a batch of
iterations timed on the host from dist.barrier() (the device idle) to
torch.cuda.synchronize() after the batch's last call, divided by the batch; the
time is the maximum over the ranks (cc_bench's -a 3, its default). algbw =
size / time (GB = 1e9 bytes), busbw = algbw * nccl-tests' factor (2(n-1)/n
all_reduce; (n-1)/n all_gather, reduce_scatter, all_to_all; 1 broadcast). Each
call includes torch's dispatch and gloo's own device-host traffic (gloo moves
CUDA tensors through host memory): that is what a torch user of gloo pays.

Output: cc_bench's. Per collective a "# Collective test: NAME (CALL) - what the
columns hold" line and the column headings, then one row per size:

    size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong | iters
                                (out of place)            (in place)

size: the largest buffer, in bytes; count: the elements of the call (one
rank's block for all_gather, reduce_scatter and all_to_all, size/n, at least
1); redop "none" and root -1 where the collective has none; time in us.
torch's collectives have fewer forms than cc's, so the columns that a form
does not exist for read N/A:
  all_reduce      dist.all_reduce is in place only: in-place column only
  broadcast       one buffer: both columns time the same call (as cc_bench)
  all_gather      dist.all_gather_into_tensor (or the list form, where gloo
                  lacks it): out-of-place column only
  reduce_scatter  dist.reduce_scatter_tensor: out-of-place column only
  all_to_all      dist.all_to_all_single: out-of-place column only
  barrier         size 0; both columns time dist.barrier()
A collective that gloo refuses on these tensors is reported as "NOT SUPPORTED"
and skipped. The check (-c N) runs after the timing: N calls on fresh patterned
inputs (small integers, exact in float32), counting the wrong elements, summed
over the ranks. The footer's "Out of bounds values" sums #wrong; "Avg bus
bandwidth" is the mean busbw of the measured columns (barrier's aside).
Exit status: 0, 1 when a result was wrong, 2 bad flags or no device.
"""
import argparse
import math
import os
import socket
import sys
import time

COLLS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "barrier"]
ALIAS = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
         "bcast": "broadcast", "alltoall": "all_to_all"}
NOTES = {
    "all_reduce": "in place only (torch has no out-of-place form): in-place column",
    "all_gather": "out of place (into one tensor, or a list where gloo lacks that): out-of-place column",
    "reduce_scatter": "out of place (reduce_scatter_tensor): out-of-place column",
    "broadcast": "one buffer: both columns time the same call (on two buffers)",
    "all_to_all": "out of place (all_to_all_single): out-of-place column",
    "barrier": "size 0; both columns time dist.barrier",
}
CALL = {"all_reduce": "dist.all_reduce", "all_gather": "dist.all_gather_into_tensor",
        "reduce_scatter": "dist.reduce_scatter_tensor", "broadcast": "dist.broadcast",
        "all_to_all": "dist.all_to_all_single", "barrier": "dist.barrier"}
BLOCK = ("all_gather", "reduce_scatter", "all_to_all")   # count column: one rank's block
REDUCING = ("all_reduce", "reduce_scatter")              # redop column: sum
ROOTED = ("broadcast",)                                  # root column: -r
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


class Step(argparse.Action):
    """-f and -i: the last one given wins, as in cc_bench."""

    def __call__(self, parser, ns, values, option_string=None):
        ns.step = (self.dest, values)


def parse():
    p = argparse.ArgumentParser(description="torch.distributed gloo on CUDA tensors, in cc_bench's format")
    p.add_argument("-N", "--nranks", type=int, default=2)
    p.add_argument("-k", "--coll", default="all_reduce")
    p.add_argument("-o", "--op", default="sum")
    p.add_argument("-d", "--datatype", default="float")
    p.add_argument("-b", "--minbytes", default="8")
    p.add_argument("-e", "--maxbytes", default="64M")
    p.add_argument("-f", "--stepfactor", dest="f", action=Step)
    p.add_argument("-i", "--stepbytes", dest="i", action=Step)
    p.add_argument("-s", "--extra_sizes", default=None)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-l", "--time_per_size", type=float, default=0.0)
    p.add_argument("-r", "--root", type=int, default=0)
    p.add_argument("--device", default="rank",
                   help="'rank' (rank %% device_count), a device number, or 'cpu' (CPU tensors: a check of the script)")
    p.add_argument("--port", type=int, default=0)
    p.set_defaults(step=("f", "2"))
    a = p.parse_args()
    try:
        a.minb, a.maxb = parse_size(a.minbytes), parse_size(a.maxbytes)
        a.extra = [parse_size(x) for x in a.extra_sizes.split(",") if x.strip()] if a.extra_sizes else []
        if a.step[0] == "i":
            a.factor, a.incr = 0, parse_size(a.step[1])
        else:
            a.factor, a.incr = int(a.step[1]), 0
    except (ValueError, IndexError) as ex:
        usage("bad size: %s" % ex)
    if a.step[0] == "f" and a.factor < 2:
        usage("bad -f (an integer >= 2)")
    if a.step[0] == "i" and a.incr == 0:
        usage("bad -i (a size above 0)")
    if a.nranks < 1 or a.iters < 1 or a.warmup_iters < 0 or a.check < 0 or a.time_per_size < 0 \
            or not 0 <= a.root < a.nranks:
        usage("bad -N, -n, -w, -c, -l or -r")
    if a.op != "sum":
        usage("-o: '%s': gloo_cuda.py times sum only" % a.op)
    if a.datatype not in ("float", "float32"):
        usage("-d: '%s': gloo_cuda.py times float (float32) only" % a.datatype)
    if a.device not in ("rank", "cpu") and not a.device.isdigit():
        usage("bad --device (rank, a number or cpu)")
    sel = []
    for tok in (COLLS if a.coll == "all" else a.coll.split(",")):
        c = ALIAS.get(tok, tok)
        if c not in COLLS:
            usage("-k: '%s' is not a collective of this script (%s, or all)" % (tok, ", ".join(COLLS)))
        if c not in sel:
            sel.append(c)
    a.colls = [c for c in COLLS if c in sel]  # cc_bench's order
    if a.minb > a.maxb:
        usage("-b %d is above -e %d" % (a.minb, a.maxb))
    a.sizes = sizes_of(a)
    return a


def sizes_of(a):
    """cc_bench's make_sizes: -b, times -f (or plus -i) up to -e, -e itself, then -s; sorted."""
    s, v = [], a.minb
    while v <= a.maxb and len(s) < MAX_SIZES - 1:
        s.append(v)
        nxt = v + a.incr if a.incr else v * a.factor
        if nxt <= v:
            break
        v = nxt
    if s[-1] != a.maxb:
        s.append(a.maxb)
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


def fmt_group(col):
    """cc_bench's print_group: time algbw busbw #wrong; col: (t_us, algbw, busbw, wrong) or None (N/A)."""
    if col is None:
        return "  %7s  %6s  %6s  %5s" % ("N/A", "N/A", "N/A", "N/A")
    t_us, algbw, busbw, wrong = col
    if t_us >= 10000.0:
        t = "%7.0f" % t_us
    elif t_us >= 100.0:
        t = "%7.1f" % t_us
    else:
        t = "%7.2f" % t_us
    w = "%5d" % wrong if wrong is not None and wrong >= 0 else "%5s" % "N/A"
    return "  %7s  %6.2f  %6.2f  %5s" % (t, algbw, busbw, w)


def row(c, count, blk, sizeb, iters, root, oop, ip):
    """cc_bench's print_row: size count type redop root | out of place | in place | iters."""
    s = "%12d  %12d  %8s  %6s  %6d" % (sizeb, 0 if c == "barrier" else (blk if c in BLOCK else count),
                                       "none" if c == "barrier" else "float",
                                       "sum" if c in REDUCING else "none", root if c in ROOTED else -1)
    return s + fmt_group(oop) + fmt_group(ip) + "  %9d" % iters


def header_lines(c):
    """cc_bench's print_header."""
    return ["#",
            "# Collective test: %s (%s) - %s" % (c, CALL[c], NOTES[c]),
            "# %10s  %12s  %8s  %6s  %6s  %-32s  %-32s" % ("", "", "", "", "", "         out-of-place",
                                                         "           in-place"),
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s  %9s" % (
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                "time", "algbw", "busbw", "#wrong", "iters"),
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % (
                "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")]


def print_header(c):
    print("\n".join(header_lines(c)))
    sys.stdout.flush()


def worker(rank, n, a, port):
    import torch
    import torch.distributed as dist

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    cuda = a.device != "cpu"
    ndev = torch.cuda.device_count() if cuda else 0
    if cuda and ndev < 1:
        if rank == 0:
            sys.stderr.write("gloo_cuda: no CUDA device: torch.cuda.device_count() is 0 (--device cpu times CPU"
                             " tensors)\n")
        sys.exit(2)
    if cuda:
        dev = rank % ndev if a.device == "rank" else int(a.device)
        torch.cuda.set_device(dev)
        device = torch.device("cuda", dev)
        sync = torch.cuda.synchronize
    else:
        dev, device = -1, torch.device("cpu")

        def sync():
            pass
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

    # ---- header: cc_bench's (nccl-tests')
    if cuda:
        props = torch.cuda.get_device_properties(dev)
        bus = "%04x:%02x:%02x" % (getattr(props, "pci_domain_id", 0), getattr(props, "pci_bus_id", 0),
                                  getattr(props, "pci_device_id", 0))
        descs = gather_str("device %2d [%s] %s" % (dev, bus, props.name))
    else:
        descs = gather_str("cpu")
    pids = gather_str(os.getpid())
    hosts = gather_str(socket.gethostname())
    if rank == 0:
        print("# gloo_cuda.py: torch %s, backend gloo (TCP, GLOO_SOCKET_IFNAME=%s), python %s, %d ranks, host %s"
              " (%d CPUs online)" % (torch.__version__, os.environ["GLOO_SOCKET_IFNAME"], sys.version.split()[0],
                                     n, socket.gethostname(), os.cpu_count()))
        if cuda:
            print("# cuda: device %d %s, torch.version.cuda %s, sm_%d%d, %d SMs, %.1f GiB, %d visible" % (
                dev, props.name, torch.version.cuda, props.major, props.minor, props.multi_processor_count,
                props.total_memory / float(1 << 30), ndev))
            print("# cuda: a batch is timed from dist.barrier() (device idle) to torch.cuda.synchronize()"
                  " after its last call")
        else:
            print("# device: cpu (--device cpu: CPU tensors, a check of this script, not a GPU figure)")
        print("# nThread 1 nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d"
              " agg iters: 1 validation: %d graph: 0" % (
                  1 if cuda else 0, a.minb, a.maxb, a.incr or a.factor, "bytes" if a.incr else "factor",
                  a.warmup_iters, a.iters, a.check))
        if a.extra_sizes:
            print("# extra sizes (-s): %s" % a.extra_sizes)
        if a.time_per_size > 0:
            print("# time per size (-l): %.3f s per column, iterations calibrated on the first column measured,"
                  " at least -n %d" % (a.time_per_size, a.iters))
        print("# time: the greatest over the ranks; GB = 1e9 bytes\n#\n# Using devices")
        for r in range(n):
            print("#  Rank %2d Group  0 Pid %6d on %10s %s" % (r, pids[r], hosts[r], descs[r]))
        sys.stdout.flush()

    def timed(op, iters):
        sync()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            op()
        sync()
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
                        dist.broadcast(buf, src=a.root)

                    def check():
                        i = f32(torch.arange(count, device=device) % 1000)
                        if rank == a.root:
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

            # ---- refused by gloo on these tensors? (every rank sees the same refusal)
            try:
                (left or right)[0]()
                sync()
            except Exception as ex:  # noqa: BLE001 - report whatever gloo raises
                if rank == 0:
                    print("# %s: NOT SUPPORTED by gloo on %s tensors: %s: %s" % (
                        c, "CUDA" if cuda else "CPU", type(ex).__name__,
                        str(ex).splitlines()[0][:160] if str(ex) else ""))
                    sys.stdout.flush()
                dist.barrier()
                break

            # ---- warm-up, calibration (-l), timing, check; per column
            iters = a.iters if a.time_per_size <= 0 else 0
            cols = []
            for form in (left, right):
                if form is None:
                    cols.append(None)
                    continue
                run, check = form
                for _ in range(a.warmup_iters):
                    run()
                if iters <= 0:   # batches growing 4x until one lasts 20 ms (or -l)
                    until, k = min(a.time_per_size, 0.02), 1
                    while True:
                        dt = timed(run, k)
                        if dt >= until or k >= 1000000:
                            break
                        k *= 4
                    per = dt / k
                    iters = max(a.iters, min(1000000, int(math.ceil(a.time_per_size / (per if per > 0 else 1e-9)))))
                dt = timed(run, iters)
                t_us = dt / iters * 1e6
                algbw = 0.0 if c == "barrier" or dt <= 0 else sizeb / 1e9 / (t_us * 1e-6)
                busbw = algbw * bus_factor(c, n)
                wrong = -1 if a.check == 0 else 0
                for _ in range(a.check):   # -c N: N checked calls, up to the first wrong one
                    wrong = tsum(check())
                    if wrong:
                        break
                total_wrong += max(wrong, 0)
                if c != "barrier":
                    bw_sum += busbw
                    bw_count += 1
                cols.append((t_us, algbw, busbw, wrong))
            if rank == 0:
                print(row(c, count, blk, sizeb, iters, a.root, cols[0], cols[1]))
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
