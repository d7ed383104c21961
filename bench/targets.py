#!/usr/bin/env python3
"""targets.py - cc against Open MPI, MPICH and Gloo, and cc's performance
targets against Open MPI, from bench/compare.sh runs.

    python3 bench/targets.py [RESULTS...]     # default build/compare/latest
    python3 bench/targets.py bench/results/shm bench/results/tcp      # docs/performance.md's tables

Each RESULTS is a compare.sh folder (its results.tsv). compare.sh interleaves
the configurations, so the runs of one pass share one placement of the
vCPUs: every figure here is a ratio of cc against another library measured
in the same pass, then the median of those ratios over the passes. A row
takes its figures from the first RESULTS (in the order given) that holds
both configurations it compares; below the tables, which folder gave what.

The first table, "cc against each library": cc's own figure (median over the
passes), then how many times faster cc is than each library (time: theirs /
cc's; busbw: cc's / theirs; below 1: cc is slower). Gloo runs over TCP even
on one host, so the shared-memory rows compare cc with Gloo's TCP.

The second table, the targets against Open MPI: every pass's ratio, the
median, and the verdict on the median (met or not met), with how many
passes meet it alone. The TCP target asks for every pass and is judged so.
For "at every size" the median is taken per size, and the row gives each
pass's least ratio over the sizes, the least median, and how many sizes'
medians reach the target. Rows whose configurations no run holds are left
out. The out-of-place column is read (in-place where a library has only
that, as Gloo's all_reduce).

The targets:
  - all_reduce, 2 ranks: 8 B latency at most 0.6x Open MPI's; busbw at least
    2.5x at 16 MiB and 4x at 64 MiB.
  - broadcast, 2 and 4 ranks: 8 B latency no worse than Open MPI's.
  - all_gather, all_to_all, reduce_scatter, gather, scatter, 2 and 4 ranks:
    busbw at least 1.2x Open MPI's at every size from 64 KiB to 64 MiB.
  - 4 ranks on 2 CPUs: every collective's 8 B latency 1.5x better.
  - TCP, 2 ranks: all_reduce busbw at 16 MiB at least Open MPI's in every
    pass (cc with and without a token).
  - cc_mem_alloc buffers: 2-rank all_reduce busbw at 64 MiB at least 1.5x
    cc's on plain buffers.
"""
import csv
import os
import sys

MOVERS = ["all_gather", "all_to_all", "reduce_scatter", "gather", "scatter"]
LATENCY = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "gather", "scatter", "barrier"]
KIB, MIB = 1024, 1024 * 1024
PEERS = [("openmpi", "Open MPI"), ("mpich", "MPICH"), ("gloo", "Gloo")]

# The rows of "cc against each library": (label, cc's configuration, transport,
# ranks, collective, size in bytes or None for the time at the smallest size)
VERSUS = [
    ("shared memory, 2 ranks", None, None, None, None, None),
    ("all_reduce 8 B (µs)", "cc", "shm", 2, "all_reduce", None),
    ("all_reduce 1 MiB (GB/s)", "cc", "shm", 2, "all_reduce", MIB),
    ("all_reduce 16 MiB", "cc", "shm", 2, "all_reduce", 16 * MIB),
    ("all_reduce 64 MiB", "cc", "shm", 2, "all_reduce", 64 * MIB),
    ("all_reduce 16 MiB, `cc_mem_alloc` buffers", "ccmem", "shm", 2, "all_reduce", 16 * MIB),
    ("all_reduce 64 MiB, `cc_mem_alloc` buffers", "ccmem", "shm", 2, "all_reduce", 64 * MIB),
    ("broadcast 8 B (µs)", "cc", "shm", 2, "broadcast", None),
    ("broadcast 16 MiB", "cc", "shm", 2, "broadcast", 16 * MIB),
    ("all_gather 1 MiB", "cc", "shm", 2, "all_gather", MIB),
    ("all_gather 16 MiB", "cc", "shm", 2, "all_gather", 16 * MIB),
    ("reduce_scatter 16 MiB", "cc", "shm", 2, "reduce_scatter", 16 * MIB),
    ("all_to_all 1 MiB", "cc", "shm", 2, "all_to_all", MIB),
    ("all_to_all 16 MiB", "cc", "shm", 2, "all_to_all", 16 * MIB),
    ("gather 16 MiB", "cc", "shm", 2, "gather", 16 * MIB),
    ("scatter 16 MiB", "cc", "shm", 2, "scatter", 16 * MIB),
    ("barrier (µs)", "cc", "shm", 2, "barrier", None),
    ("shared memory, 4 ranks on 2 CPUs", None, None, None, None, None),
    ("all_reduce 8 B (µs)", "cc", "shm", 4, "all_reduce", None),
    ("all_reduce 16 MiB", "cc", "shm", 4, "all_reduce", 16 * MIB),
    ("broadcast 8 B (µs)", "cc", "shm", 4, "broadcast", None),
    ("all_gather 16 MiB", "cc", "shm", 4, "all_gather", 16 * MIB),
    ("all_to_all 16 MiB", "cc", "shm", 4, "all_to_all", 16 * MIB),
    ("barrier (µs)", "cc", "shm", 4, "barrier", None),
    ("TCP over loopback, 2 ranks, with a token", None, None, None, None, None),
    ("all_reduce 8 B (µs)", "cc", "tcp", 2, "all_reduce", None),
    ("all_reduce 1 MiB", "cc", "tcp", 2, "all_reduce", MIB),
    ("all_reduce 16 MiB", "cc", "tcp", 2, "all_reduce", 16 * MIB),
    ("all_reduce 64 MiB", "cc", "tcp", 2, "all_reduce", 64 * MIB),
    ("broadcast 16 MiB", "cc", "tcp", 2, "broadcast", 16 * MIB),
    ("all_gather 16 MiB", "cc", "tcp", 2, "all_gather", 16 * MIB),
    ("reduce_scatter 16 MiB", "cc", "tcp", 2, "reduce_scatter", 16 * MIB),
    ("all_to_all 16 MiB", "cc", "tcp", 2, "all_to_all", 16 * MIB),
    ("gather 16 MiB", "cc", "tcp", 2, "gather", 16 * MIB),
    ("TCP over loopback, 2 ranks, without a token", None, None, None, None, None),
    ("all_reduce 8 B (µs)", "ccopen", "tcp", 2, "all_reduce", None),
    ("all_reduce 16 MiB", "ccopen", "tcp", 2, "all_reduce", 16 * MIB),
    ("all_reduce 64 MiB", "ccopen", "tcp", 2, "all_reduce", 64 * MIB),
    ("broadcast 16 MiB", "ccopen", "tcp", 2, "broadcast", 16 * MIB),
    ("all_to_all 16 MiB", "ccopen", "tcp", 2, "all_to_all", 16 * MIB),
]


def load(path):
    """{(pass, config, collective, bytes): (time_us, busbw)}, out-of-place first."""
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            try:
                key = (int(r["pass"]), r["config"], r["collective"], int(r["bytes"]))
                val = (float(r["time_us"]), float(r["busbw"]))
            except (KeyError, ValueError):
                continue
            if r["inplace"] == "0" or key not in rows:
                rows[key] = val
    return rows


class Run:
    def __init__(self, name, rows):
        self.name = name
        self.rows = rows
        self.passes = sorted({k[0] for k in rows})
        self.configs = {k[1] for k in rows}

    def has(self, *configs):
        return all(c in self.configs for c in configs)

    def sizes(self, config, coll):
        return sorted({k[3] for k in self.rows if k[1] == config and k[2] == coll})

    def get(self, p, config, coll, size, what):
        v = self.rows.get((p, config, coll, size))
        return None if v is None else v[0 if what == "time" else 1]

    def smallest(self, config, coll):
        s = self.sizes(config, coll)
        return s[0] if s else None


def pick(runs, *configs):
    """The first run that holds every one of configs, or None."""
    for run in runs:
        if run.has(*configs):
            return run
    return None


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def fmt(x):
    return "-" if x is None else ("%.2f" % x)


def fmtx(x):
    """A ratio or figure of the first table: two decimals below 10, fewer above."""
    if x is None:
        return "-"
    return "%.0f" % x if x >= 100 else ("%.1f" % x if x >= 10 else "%.2f" % x)


def median(vals):
    v = sorted(x for x in vals if x is not None)
    if not v:
        return None
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def verdict(ok_median, oks, every=False):
    """The verdict on the median (or, every=True, on every pass), with how many passes meet it."""
    n, m = sum(1 for o in oks if o), len(oks)
    if m == 0:
        return "no data"
    met = n == m if every else ok_median
    return "%s (%d of %d passes)" % ("**met**" if met else "**not met**", n, m)


def row(out, name, vals, test, detail="", every=False):
    """vals: one ratio per pass; test(x): does x meet the target. No row without a ratio."""
    if all(v is None for v in vals):
        return
    med = median(vals)
    oks = [x is not None and test(x) for x in vals]
    out.append("| %s | %s%s | %s | %s |" % (name, " / ".join(fmt(v) for v in vals), detail, fmt(med),
                                          verdict(med is not None and test(med), oks, every)))


def lat_ratio(run, p, cfg, ref, coll):
    """cc time / reference time at the smallest size (< 1: cc faster)."""
    s = run.smallest(cfg, coll)
    return ratio(run.get(p, cfg, coll, s, "time"), run.get(p, ref, coll, s, "time")) if s is not None else None


def bw_ratio(run, p, cfg, ref, coll, size):
    return ratio(run.get(p, cfg, coll, size, "bw"), run.get(p, ref, coll, size, "bw"))


def versus(runs, used):
    """The table "cc against each library"; used: {library: set of folder names}."""
    out = ["| | cc | " + " | ".join("× " + name for _, name in PEERS) + " |", "|---|---|" + "---|" * len(PEERS)]
    section = None
    for label, lib, tr, n, coll, size in VERSUS:
        if lib is None:
            section = "| **%s** |%s" % (label, " |" * (1 + len(PEERS)))
            continue
        cc = "%s_%s_np%d" % (lib, tr, n)
        own = pick(runs, cc)
        s = None if own is None else (own.smallest(cc, coll) if size is None else size)
        what = "time" if size is None else "bw"
        mine = None if s is None else median([own.get(p, cc, coll, s, what) for p in own.passes])
        if mine is None:   # rows of what no run measured are left out
            continue
        if section:
            out.append(section)
            section = None
        cells = [fmtx(mine)]
        for peer, name in PEERS:
            other = "%s_%s_np%d" % (peer, "tcp" if peer == "gloo" else tr, n)
            run = pick(runs, cc, other)
            x = None
            if run is not None:
                if size is None:
                    x = median([ratio(1.0, lat_ratio(run, p, cc, other, coll)) for p in run.passes])
                else:
                    x = median([bw_ratio(run, p, cc, other, coll, size) for p in run.passes])
            if x is not None:
                used.setdefault(name, set()).add(run.name)
            cells.append(fmtx(x))
        out.append("| %s | %s |" % (label, " | ".join(cells)))
    return out


def targets(runs):
    out = ["| target | per pass | median | |", "|---|---|---|---|"]
    run = pick(runs, "cc_shm_np2", "openmpi_shm_np2")
    if run:
        P = run.passes
        v = [lat_ratio(run, p, "cc_shm_np2", "openmpi_shm_np2", "all_reduce") for p in P]
        row(out, "all_reduce 2r 8 B, cc / Open MPI time <= 0.6", v, lambda x: x <= 0.6)
        for size, want in ((16 * MIB, 2.5), (64 * MIB, 4.0)):
            v = [bw_ratio(run, p, "cc_shm_np2", "openmpi_shm_np2", "all_reduce", size) for p in P]
            row(out, "all_reduce 2r busbw %d MiB, cc / Open MPI >= %.1f" % (size // MIB, want), v,
                lambda x, w=want: x >= w)
    for n in (2, 4):
        cc, om = "cc_shm_np%d" % n, "openmpi_shm_np%d" % n
        run = pick(runs, cc, om)
        if not run:
            continue
        P = run.passes
        v = [lat_ratio(run, p, cc, om, "broadcast") for p in P]
        row(out, "broadcast %dr 8 B, cc / Open MPI time <= 1" % n, v, lambda x: x <= 1.0)
        for coll in MOVERS:
            sizes = [s for s in run.sizes(cc, coll) if 64 * KIB <= s <= 64 * MIB]
            least = []
            for p in P:
                rs = [r for r in (bw_ratio(run, p, cc, om, coll, s) for s in sizes) if r is not None]
                least.append(min(rs) if rs else None)
            meds = [median([bw_ratio(run, p, cc, om, coll, s) for p in P]) for s in sizes]
            meds = [m for m in meds if m is not None]
            low = min(meds) if meds else None
            if low is None:
                continue
            oks = [x is not None and x >= 1.2 for x in least]
            out.append("| %s %dr busbw >= 1.2x at every size, 64 KiB-64 MiB (each pass's least ratio; the least "
                       "median, sizes whose median reaches 1.2) | %s | %s (%d of %d sizes) | %s |"
                       % (coll, n, " / ".join(fmt(x) for x in least), fmt(low), sum(1 for m in meds if m >= 1.2),
                          len(meds), verdict(low is not None and low >= 1.2, oks)))
    run = pick(runs, "cc_shm_np4", "openmpi_shm_np4")
    if run:
        for coll in LATENCY:
            v = [lat_ratio(run, p, "cc_shm_np4", "openmpi_shm_np4", coll) for p in run.passes]
            v = [None if x is None else 1.0 / x for x in v]
            row(out, "4r on 2 CPUs %s 8 B, Open MPI / cc time >= 1.5" % coll, v, lambda x: x >= 1.5)
    for cc in ("cc_tcp_np2", "ccopen_tcp_np2"):
        run = pick(runs, cc, "openmpi_tcp_np2")
        if run:
            v = [bw_ratio(run, p, cc, "openmpi_tcp_np2", "all_reduce", 16 * MIB) for p in run.passes]
            row(out, "TCP all_reduce 2r busbw 16 MiB, %s / Open MPI >= 1 in every pass" % ("token" if cc == "cc_tcp_np2" else "no token"),
                v, lambda x: x >= 1.0, every=True)
    run = pick(runs, "ccmem_shm_np2", "cc_shm_np2")
    if run:
        v = [bw_ratio(run, p, "ccmem_shm_np2", "cc_shm_np2", "all_reduce", 64 * MIB) for p in run.passes]
        row(out, "cc_mem_alloc all_reduce 2r busbw 64 MiB, / plain buffers >= 1.5", v, lambda x: x >= 1.5)
    run = pick(runs, "ccmem_shm_np2", "openmpi_shm_np2")
    if run:
        for size in (16 * MIB, 64 * MIB):
            v = [bw_ratio(run, p, "ccmem_shm_np2", "openmpi_shm_np2", "all_reduce", size) for p in run.passes]
            if all(x is None for x in v):
                continue
            out.append("| (for reference) cc_mem_alloc all_reduce 2r busbw %d MiB / Open MPI | %s | %s | |"
                       % (size // MIB, " / ".join(fmt(x) for x in v), fmt(median(v))))
    return out


def fingerprints(run, path):
    """The c2c fingerprint per pass and configuration (before>after, ns)."""
    seen = {}
    with open(path) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            seen[(int(r["pass"]), r["config"])] = "%s>%s" % (r["c2c_before"], r["c2c_after"])
    lines = ["", "c2c fingerprint of %s (median ns, before>after, per pass):" % run.name]
    for cfg in sorted(run.configs):
        lines.append("  %-18s %s" % (cfg, "   ".join(seen.get((p, cfg), "-") for p in run.passes)))
    return lines


def main():
    folders = sys.argv[1:] or [os.path.join(os.path.dirname(__file__), "..", "build", "compare", "latest")]
    runs, tails = [], []
    for folder in folders:
        path = folder if folder.endswith(".tsv") else os.path.join(folder, "results.tsv")
        if not os.path.exists(path):
            sys.stderr.write("targets.py: no %s (run bench/compare.sh first)\n" % path)
            return 2
        run = Run(os.path.normpath(folder), load(path))
        runs.append(run)
        tails += fingerprints(run, path)
    used = {}
    out = ["cc against each library (cc's figure; then how many times faster cc is, the median of the "
           "passes' ratios):", ""] + versus(runs, used)
    out += [""] + ["  %s: %s" % (name, ", ".join(sorted(used[name]))) for _, name in PEERS if name in used]
    out += ["", "Targets against Open MPI:", ""] + targets(runs)
    print("\n".join(out + tails))
    return 0


if __name__ == "__main__":
    sys.exit(main())
