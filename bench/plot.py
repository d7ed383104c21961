#!/usr/bin/python3
"""plot.py [-o OUT.png] [RESULTS...] - busbw against message size, one panel
per collective, for every configuration of bench/compare.sh runs (`make plot`).

    python3 bench/plot.py build/compare/latest                 # into build/perf.png
    python3 bench/plot.py -o docs/perf.png bench/results/shm bench/results/tcp

Each RESULTS is a run's folder (or its results.tsv); a configuration is drawn
from the first RESULTS that holds it, so runs of different configurations
combine into one plot. Default: build/compare/latest, the latest run. OUT
(-o, or a last argument ending in .png): default build/perf.png; the plot
the documentation shows, docs/perf.png, is written only when named. Needs
matplotlib (Debian's python3-matplotlib; bash bench/peers/install.sh plot
installs it).

Each line is one configuration: the colour says the library (cc, cc on
buffers from cc_mem_alloc, Open MPI, MPICH, Gloo), the line style the
transport and rank count (shared memory 2 ranks solid, 4 ranks dashed; TCP on
loopback 2 ranks dotted, 4 ranks dash-dotted). A point is the median over the
passes of busbw (GB/s, nccl-tests' factors) at that size, out of place; where
a library has no out-of-place form (torch's all_reduce) its in-place column,
marked "in place" in the panel. The shaded band spans the passes' least and
greatest. Both axes are logarithmic. The last panel shows the barrier's time
(µs, median over the passes). The title names the runs and their dates.
"""
import csv
import os
import statistics
import sys

COLLS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "gather", "scatter"]
LIBS = {"cc": ("cc", "#d62728"), "ccmem": ("cc, cc_mem_alloc buffers", "#9467bd"),
        "cccma": ("cc, CC_SHM_CMA=1", "#8c564b"), "ccarena": ("cc, CC_SHM_CMA=0", "#7f7f7f"), "ccopen": ("cc, no token", "#e377c2"), "openmpi": ("Open MPI", "#1f77b4"), "mpich": ("MPICH", "#2ca02c"),
        "gloo": ("Gloo", "#ff7f0e")}
STYLES = {("shm", 2): "-", ("shm", 4): "--", ("tcp", 2): ":", ("tcp", 4): "-."}


def split_config(c):
    """'openmpi_shm_np2' -> ('openmpi', 'shm', 2)"""
    parts = c.split("_")
    try:
        return parts[0], parts[1], int(parts[2][2:])
    except (IndexError, ValueError):
        return parts[0], "?", 0


def size_label(b, _pos=None):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift:
            v = b / (1 << shift)
            return ("%g" % v) + unit
    return "%d" % b


def read_runs(tsvs):
    """Every configuration from the first results.tsv that holds it: rows, the
    configurations in order, {configuration: its folder}, and the passes."""
    rows, configs, source, passes = [], [], {}, set()
    for tsv in tsvs:
        with open(tsv) as f:
            mine = list(csv.DictReader(f, delimiter="\t"))
        for row in mine:
            c = row.get("config")
            if c is None or source.get(c, tsv) != tsv:
                continue
            if c not in source:
                source[c] = tsv
                configs.append(c)
            passes.add(row["pass"])
            rows.append(row)
    return rows, configs, source, passes


def run_date(tsv):
    """The date compare.sh wrote first in the run's machine.txt, or ''."""
    mpath = os.path.join(os.path.dirname(tsv), "machine.txt")
    if os.path.exists(mpath):
        with open(mpath) as f:
            first = f.readline().strip().replace("# compare.sh ", "")
            return first[:10]
    return ""


def main():
    args, out = sys.argv[1:], os.path.join("build", "perf.png")
    if "-o" in args:
        i = args.index("-o")
        if i + 1 >= len(args):
            sys.stderr.write("plot.py: -o needs a file name\n")
            return 2
        out = args.pop(i + 1)
        args.pop(i)
    elif args and args[-1].endswith(".png"):
        out = args.pop()
    srcs = args or [os.path.join("build", "compare", "latest")]
    tsvs = [s if s.endswith(".tsv") else os.path.join(s, "results.tsv") for s in srcs]
    for tsv in tsvs:
        if not os.path.exists(tsv):
            sys.stderr.write("plot.py: no %s: run bash bench/compare.sh first (or give RESULTS=the run's folder)\n" % tsv)
            return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.ticker import FuncFormatter, LogLocator
    except ImportError:
        sys.stderr.write("plot.py: needs matplotlib in %s: bash bench/peers/install.sh plot"
                         " (Debian's python3-matplotlib)\n" % sys.executable)
        return 2

    # (config, coll, inplace) -> {bytes: [busbw per pass]}; barrier: config -> [time_us per pass]
    rows, configs, source, passes = read_runs(tsvs)
    series, barrier = {}, {}
    for row in rows:
        c, coll = row["config"], row["collective"]
        if coll == "barrier":
            if row["inplace"] == "0":
                barrier.setdefault(c, []).append(float(row["time_us"]))
            continue
        bw, b = float(row["busbw"]), int(row["bytes"])
        if bw > 0 and b > 0:
            series.setdefault((c, coll, int(row["inplace"])), {}).setdefault(b, []).append(bw)
    if not series:
        sys.stderr.write("plot.py: %s hold no bandwidth rows\n" % " ".join(tsvs))
        return 1
    order = {k: i for i, k in enumerate(LIBS)}
    configs.sort(key=lambda c: (order.get(split_config(c)[0], 9), split_config(c)[1], split_config(c)[2]))

    fig, axes = plt.subplots(2, 4, figsize=(17, 8.6))
    axes = axes.flatten()
    for ax, coll in zip(axes, COLLS):
        notes = []
        for c in configs:
            lib, tr, np_ = split_config(c)
            s = series.get((c, coll, 0))
            ip = False
            if not s:
                s = series.get((c, coll, 1))
                ip = s is not None
            if not s:
                continue
            if ip and "%s: in place" % LIBS.get(lib, (lib,))[0] not in notes:
                notes.append("%s: in place" % LIBS.get(lib, (lib,))[0])
            xs = sorted(s)
            med = [statistics.median(s[x]) for x in xs]
            color = LIBS.get(lib, (lib, "#7f7f7f"))[1]
            ax.plot(xs, med, STYLES.get((tr, np_), "-"), color=color, lw=1.6, marker=".", ms=4)
            if len(passes) > 1:
                ax.fill_between(xs, [min(s[x]) for x in xs], [max(s[x]) for x in xs], color=color, alpha=0.12, lw=0)
        ax.set_title(coll, fontsize=11)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=4))
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        ax.xaxis.set_minor_locator(LogLocator(base=4, subs=()))
        ax.tick_params(labelsize=8)
        ax.grid(True, which="major", alpha=0.3)
        ax.grid(True, which="minor", axis="y", alpha=0.1)
        if coll in ("all_reduce", "all_to_all"):
            ax.set_ylabel("busbw (GB/s)")
        if coll in ("all_to_all", "gather", "scatter"):
            ax.set_xlabel("message size (bytes)")
        if notes:
            ax.text(0.02, 0.97, "; ".join(notes), transform=ax.transAxes, va="top", fontsize=8, color="#555555")
        if not ax.lines:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center")
    if any(c.startswith("gloo") and not any(k[:2] == (c, "reduce_scatter") for k in series) for c in configs):
        axes[2].text(0.02, 0.03, "Gloo: no reduce_scatter on CPU", transform=axes[2].transAxes, fontsize=8,
                     color=LIBS["gloo"][1])

    ax = axes[7]   # the barrier's time per configuration
    names = [c for c in configs if c in barrier]
    vals = [statistics.median(barrier[c]) for c in names]
    ax.barh(range(len(names)), vals, color=[LIBS.get(split_config(c)[0], ("", "#7f7f7f"))[1] for c in names])
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("time (µs)")
    ax.set_title("barrier", fontsize=11)
    ax.tick_params(labelsize=8)
    ax.grid(True, axis="x", alpha=0.3)

    present = {split_config(c)[0] for c in configs}
    handles = [Line2D([], [], color=col, lw=2.5, label=lab) for k, (lab, col) in LIBS.items() if k in present]
    handles += [Line2D([], [], color="#444444", ls=ls, lw=1.6,
                       label="%s, %d ranks" % ("shared memory" if tr == "shm" else "TCP (loopback)", n))
                for (tr, n), ls in STYLES.items()]
    fig.legend(handles=handles, loc="lower center", ncol=8, fontsize=9, frameon=False)
    used = [t for t in tsvs if t in source.values()]
    runs = "; ".join("%s%s" % (os.path.basename(os.path.dirname(t)) or t,
                               " " + run_date(t) if run_date(t) else "") for t in used)
    fig.suptitle("cc, Open MPI, MPICH and Gloo: busbw against message size, float32 sum "
                 "(median of %d pass%s; %s)" % (len(passes), "" if len(passes) == 1 else "es", runs), fontsize=12)
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    fig.savefig(out, dpi=100)
    print("plot.py: wrote %s from %s (%d configurations, %d pass%s)" % (out, " ".join(used), len(configs), len(passes),
                                                                      "" if len(passes) == 1 else "es"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
