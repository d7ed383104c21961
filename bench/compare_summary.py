#!/usr/bin/python3
"""compare_summary.py RESULTS [CONFIG...] - read the runs of one compare.sh run
(RESULTS/passN/CONFIG.txt) and write RESULTS/results.tsv and RESULTS/SUMMARY.txt.

Every bench of a comparison (cc_bench, bench/peers/bench_mpi.c,
bench/peers/bench_gloo.py) prints nccl-tests' columns under a line
"# Collective test: NAME": size count type redop root, then time algbw busbw
#wrong out of place, the same in place, then iters. A column group reads N/A
where it was not measured. A line "# NAME: not supported by ..." marks a
collective that the library lacks. compare.sh adds "# c2c before:", "# c2c
after:" and "# rc=" lines around each run.

results.tsv has one line per pass, configuration, collective, size and measured
column, tab-separated, with a header line:

    pass config collective bytes count inplace time_us algbw busbw wrong iters c2c_before c2c_after rc

bytes is the row's size; algbw (GB/s, 1e9 bytes) and busbw are computed here
from bytes and time_us with nccl-tests' factors (the benches print them with
two decimals only); c2c_* are the fingerprints' medians in ns; wrong is empty
where the column was not checked.

SUMMARY.txt: for every collective and configuration, the latency (time_us) at
the smallest size and busbw at 1, 16 and 64 MiB, one value per pass
(pass1/pass2/...), from the out-of-place column, else the in-place one
(marked "ip"); then the fingerprints and exit status of every run.

Exit status 1 when a run's status was not 0 or a result was wrong.
"""
import glob
import os
import re
import sys

COLLS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "gather", "scatter", "barrier"]
FIELDS = ["pass", "config", "collective", "bytes", "count", "inplace", "time_us", "algbw", "busbw", "wrong", "iters",
          "c2c_before", "c2c_after", "rc"]
MIB = 1 << 20


def bus_factor(coll, n):
    if coll == "all_reduce":
        return 2.0 * (n - 1) / n
    if coll in ("broadcast", "reduce", "sendrecv", "barrier"):
        return 1.0
    return (n - 1) / n


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


def parse_run(path):
    """-> (rows, meta): rows [(coll, bytes, count, inplace, time_us, wrong or None, iters)], meta dict."""
    rows, meta = [], {"unsupported": set()}
    coll = None
    with open(path, errors="replace") as f:
        for line in f:
            s = line.strip()
            if not s:
                continue
            if s.startswith("#"):
                m = re.match(r"#\s*Collective test:\s*(\S+)", s)
                if m:
                    coll = m.group(1)
                    continue
                m = re.match(r"#\s*(\S+): not supported", s)
                if m:
                    meta["unsupported"].add(m.group(1))
                    continue
                for key in ("c2c before", "c2c after"):
                    if s.startswith("# " + key + ":"):
                        m = re.search(r"median=([0-9.]+)", s)
                        meta[key] = m.group(1) if m else ""
                m = re.match(r"# rc=(-?\d+)", s)
                if m:
                    meta["rc"] = int(m.group(1))
                continue
            f_ = s.split()
            if coll is None or len(f_) < 13 or not f_[0].isdigit():
                continue
            iters = f_[13] if len(f_) > 13 else ""
            for inplace, g in ((0, f_[5:9]), (1, f_[9:13])):
                t = num(g[0])
                if t is None:
                    continue
                wrong = int(g[3]) if g[3].lstrip("-").isdigit() else None
                rows.append((coll, int(f_[0]), int(f_[1]), inplace, t, wrong, iters))
    return rows, meta


def fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return "%.0f" % v
    return "%.3g" % v


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: compare_summary.py RESULTS [CONFIG...]\n")
        return 2
    d = sys.argv[1]
    passes = sorted(int(m.group(1)) for m in (re.match(r"pass(\d+)$", os.path.basename(p))
                                               for p in glob.glob(os.path.join(d, "pass*"))) if m)
    configs = sys.argv[2:]
    if not configs:   # every configuration found, in order of first appearance
        for p in passes:
            for path in sorted(glob.glob(os.path.join(d, "pass%d" % p, "*.txt"))):
                name = os.path.basename(path)[:-4]
                if name not in configs:
                    configs.append(name)
    data = {}
    for p in passes:
        for c in configs:
            path = os.path.join(d, "pass%d" % p, c + ".txt")
            if os.path.exists(path):
                data[p, c] = parse_run(path)

    bad = []
    with open(os.path.join(d, "results.tsv"), "w") as out:
        out.write("\t".join(FIELDS) + "\n")
        for (p, c), (rows, meta) in sorted(data.items()):
            m = re.search(r"_np(\d+)$", c)
            n = int(m.group(1)) if m else 2
            rc = meta.get("rc", "")
            if rc != 0:
                bad.append("pass %d %s: exit status %s" % (p, c, rc if rc != "" else "unknown (no rc line)"))
            for coll, b, count, inplace, t, wrong, iters in rows:
                algbw = b / 1e9 / (t * 1e-6) if b > 0 and t > 0 else 0.0
                busbw = algbw * bus_factor(coll, n)
                if wrong:
                    bad.append("pass %d %s: %s %d B %s: %d wrong" % (p, c, coll, b, "in place" if inplace else
                                                                  "out of place", wrong))
                out.write("\t".join(str(x) for x in (
                    p, c, coll, b, count, inplace, "%.4g" % t, "%.6g" % algbw, "%.6g" % busbw,
                    "" if wrong is None else wrong, iters, meta.get("c2c before", ""), meta.get("c2c after", ""),
                    rc)) + "\n")

    def pick(rows, coll):
        """Rows of one collective: out of place if measured, else in place; (rows, 'ip' or '')."""
        r = [x for x in rows if x[0] == coll]
        oop = [x for x in r if x[3] == 0]
        return (oop, "") if oop else ([x for x in r if x[3] == 1], "ip")

    L = []
    L.append("# cc vs peers, %d pass(es), interleaved; each cell: pass1/pass2/...  (%s)" % (len(passes), d))
    L.append("# lat_us: time (us) at the smallest size (8 B; n*4 B where each rank needs a float of its own);")
    L.append("# bw@X: busbw GB/s (nccl-tests' factors) at X; out-of-place column, else in-place (marked ip);")
    L.append("# wrong: elements wrong, over sizes, columns and passes")
    L.append("")
    for coll in COLLS:
        L.append("== " + coll)
        if coll == "barrier":
            L.append("   %-17s %s" % ("config", "lat_us"))
        else:
            L.append("   %-17s %-26s %-20s %-20s %-20s %s" % ("config", "lat_us(size)", "bw@1MiB", "bw@16MiB",
                                                             "bw@64MiB", "wrong"))
        for c in configs:
            lat, bws, wrong, smallest, tag, unsupported = [], [[], [], []], 0, None, "", False
            for p in passes:
                rows, meta = data.get((p, c), ([], {"unsupported": set()}))
                unsupported |= coll in meta["unsupported"]
                r, t = pick(rows, coll)
                r.sort(key=lambda x: x[1])
                if r:
                    tag = tag or t
                if not r:
                    lat.append(None)
                    for b in bws:
                        b.append(None)
                    continue
                lat.append(r[0][4])
                smallest = r[0][1]
                m = re.search(r"_np(\d+)$", c)
                n = int(m.group(1)) if m else 2
                for i, s in enumerate((MIB, 16 * MIB, 64 * MIB)):
                    hit = [x for x in r if x[1] == s and x[4] > 0]
                    bws[i].append(s / 1e9 / (hit[0][4] * 1e-6) * bus_factor(coll, n) if hit else None)
                wrong += sum(x[5] or 0 for x in r)
            name = c + (" (ip)" if tag else "")
            if all(v is None for v in lat):
                L.append("   %-17s %s" % (name, "not supported" if unsupported else "-"))
            elif coll == "barrier":
                L.append("   %-17s %s" % (name, "/".join(fmt(v) for v in lat)))
            else:
                L.append("   %-17s %-26s %-20s %-20s %-20s %d" % (
                    name, "/".join(fmt(v) for v in lat) + ("" if smallest is None else " (%dB)" % smallest),
                    "/".join(fmt(v) for v in bws[0]), "/".join(fmt(v) for v in bws[1]),
                    "/".join(fmt(v) for v in bws[2]), wrong))
        L.append("")
    L.append("== c2c fingerprint (median ns, before>after) and exit status, per pass")
    for c in configs:
        cells = []
        for p in passes:
            meta = data.get((p, c), ([], {}))[1]
            cells.append("%s>%s rc=%s" % (meta.get("c2c before", "?") or "?", meta.get("c2c after", "?") or "?",
                                          meta.get("rc", "?")))
        L.append("   %-17s %s" % (c, "   ".join(cells)))
    if bad:
        L.append("")
        L.append("== problems")
        L += ["   " + b for b in bad]
    with open(os.path.join(d, "SUMMARY.txt"), "w") as f:
        f.write("\n".join(L) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
