#!/bin/bash
# compare.sh - cc side by side with Open MPI, MPICH and Gloo on this machine.
#
#   bash bench/compare.sh                      # 3 passes, results in /tmp/cc-compare
#   PASSES=1 RESULTS=/tmp/x bash bench/compare.sh
#   ONLY="cc_shm_np2 openmpi_shm_np2" bash bench/compare.sh    # a subset
#   ONLY="cc_tcp_np2 openmpi_tcp_np2 mpich_tcp_np2 gloo_tcp_np2" bash bench/compare.sh   # over TCP
#
# Every pass runs each configuration once, interleaved (the order rotates from
# pass to pass), because on a small VM the placement of the vCPUs changes within
# seconds and moves shared-memory results by 2-4x; a comparison only means
# something between runs of one session, several times over. The peers run
# through their own harness (shared/bench/peers/run_all.sh, ONLY=one name at a
# time); cc runs through cc_bench with the same sizes, dtype (float), op (sum),
# collectives and timing rule (calibrated to about -t seconds per size), and its
# result files get the same header/footer, c2c fingerprint included, so the
# peers' summarize.py reads them too.
#
# Writes RESULTS/passN/<config>.txt (+ .err when stderr said something), the
# peers' versions.txt, runs.log and SUMMARY.txt per pass, and RESULTS/SUMMARY.txt:
# per collective, latency at the smallest size and busbw at 1/16/64 MiB for every
# configuration, one value per pass (p1/p2/...), then each pass's summarize.py.
#
# Settings (environment): PASSES (3), RESULTS (/tmp/cc-compare), TIMEOUT per run
# in seconds (300), BUILD for the peers' binaries (RESULTS/build), ONLY (names
# below), BENCH_ARGS (extra flags for the peers' benches), CC_BENCH_ARGS (extra
# flags for cc_bench, after the defaults, so they win), CC_TRANSPORT (shm),
# SUMMARY_ONLY=1 (run nothing; rebuild RESULTS/SUMMARY.txt from the passes there).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
PEERS=$(cd "$(dirname "$0")/../../shared/bench/peers" 2>/dev/null && pwd) || {
    echo "compare.sh: the peers' harness is not at $(dirname "$0")/../../shared/bench/peers" >&2
    exit 2
}
PASSES=${PASSES:-3}
R=${RESULTS:-/tmp/cc-compare}
B=${BUILD:-$R/build}
TO=${TIMEOUT:-300}
BENCH_ARGS=${BENCH_ARGS:-}
CC_BENCH_ARGS=${CC_BENCH_ARGS:-}
CC_TRANSPORT=${CC_TRANSPORT:-shm}
ALL="cc_shm_np2 openmpi_shm_np2 mpich_shm_np2 gloo_tcp_np2 cc_shm_np4 openmpi_shm_np4 mpich_shm_np4"
ONLY=${ONLY:-$ALL}
# bench_mpi's defaults: -b 8 -e 32M -f 4 -x 1M,16M,64M -t 0.2 -w 5 -m 3, float sum
CC_DEFAULT="-o allreduce,allgather,broadcast,alltoall,reduce_scatter,barrier -d float -R sum -b 8 -e 32M -f 4 -x 1M,16M,64M -t 0.2 -n 3 -w 5 -c 1"

mkdir -p "$R" "$B" || exit 1
SUMMARY_ONLY=${SUMMARY_ONLY:-}
if [ -n "$SUMMARY_ONLY" ]; then PASSES=$(find "$R" -maxdepth 1 -name 'pass*' -type d | wc -l); fi

# ---------------------------------------------------------------- build
if [ -z "$SUMMARY_ONLY" ]; then
echo "building cc (make -C $TOP build/ccrun build/cc_bench)"
make -s -C "$TOP" build/ccrun build/cc_bench || { echo "compare.sh: cc build failed" >&2; exit 1; }
CCRUN=$TOP/build/ccrun
CCBENCH=$TOP/build/cc_bench
if [ ! -x "$B/c2c_latency" ]; then   # as run_all.sh builds it (it does so again on its first run)
    gcc -O2 -Wall -pthread -o "$B/c2c_latency" "$PEERS/c2c_latency.c" || exit 1
fi
{
    echo "# date: $(date -Is)"
    echo "# cc: $(grep -m1 'define CC_VERSION_STRING' "$TOP/cc.h" | awk '{print $3}')" \
         "git $(git -C "$TOP" log -1 --format='%h %s' 2>/dev/null)$(git -C "$TOP" diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
    echo "# cc_bench args: $CC_DEFAULT $CC_BENCH_ARGS  CC_TRANSPORT=$CC_TRANSPORT"
    echo "# peers: $PEERS  BENCH_ARGS='$BENCH_ARGS'"
    echo "# kernel: $(uname -r)  cpus: $(nproc --all)"
} > "$R/cc_version.txt"

# ---------------------------------------------------------------- one cc run, as run_all.sh's run()
run_cc() {   # run_cc NAME DIR CMD...
    local name=$1 dir=$2; shift 2
    local out="$dir/$name.txt" err="$dir/$name.err" t0 t1 rc wall
    {
        echo "# run: $name"
        echo "# cmd: $*"
        echo "# date: $(date -Is)"
        echo "# c2c before: $("$B/c2c_latency")"
    } > "$out"
    t0=$(date +%s.%N)
    timeout -k 10 "$TO" "$@" >> "$out" 2> "$err"
    rc=$?
    t1=$(date +%s.%N)
    wall=$(echo "$t1 - $t0" | bc)
    echo "# rc=$rc wall_s=$wall  (124/137 = killed by timeout $TO s)" >> "$out"
    echo "# c2c after: $("$B/c2c_latency")" >> "$out"
    [ -s "$err" ] || rm -f "$err"
    printf '%-34s rc=%-3d wall=%7.1fs  %s\n' "$name" "$rc" "$wall" "$(date +%T)" | tee -a "$dir/runs.log"
}

run_one() {   # run_one NAME DIR
    local name=$1 dir=$2 np
    case $name in
    cc_tcp_np*)
        np=${name#cc_tcp_np}
        # shellcheck disable=SC2086  # the argument lists are meant to split
        run_cc "$name" "$dir" env CC_TRANSPORT=tcp OMP_NUM_THREADS=1 \
            "$CCRUN" -n "$np" "$CCBENCH" $CC_DEFAULT $CC_BENCH_ARGS
        ;;
    cc_shm_np*)
        np=${name#cc_shm_np}
        # shellcheck disable=SC2086  # the argument lists are meant to split
        run_cc "$name" "$dir" env CC_TRANSPORT="$CC_TRANSPORT" OMP_NUM_THREADS=1 \
            "$CCRUN" -n "$np" "$CCBENCH" $CC_DEFAULT $CC_BENCH_ARGS
        ;;
    *)
        ONLY="$name" RESULTS="$dir" BUILD="$B" TIMEOUT="$TO" BENCH_ARGS="$BENCH_ARGS" \
            bash "$PEERS/run_all.sh" >> "$dir/harness.log" 2>&1
        grep "^$name " "$dir/runs.log" 2>/dev/null | tail -n 1 | grep . || echo "$name: no result (see $dir/harness.log)"
        ;;
    esac
}

# ---------------------------------------------------------------- passes
read -r -a configs <<< "$ONLY"
nc=${#configs[@]}
echo "# compare.sh started $(date -Is): $PASSES pass(es) of: ${configs[*]}" | tee -a "$R/runs.log"
for ((p = 1; p <= PASSES; p++)); do
    dir=$R/pass$p
    mkdir -p "$dir"
    echo "== pass $p/$PASSES ($(date +%T))"
    for ((i = 0; i < nc; i++)); do
        run_one "${configs[$(( (i + p - 1) % nc ))]}" "$dir"
    done
    /usr/bin/python3 "$PEERS/summarize.py" "$dir" > /dev/null
    cat "$dir/runs.log" >> "$R/runs.log"
done
fi   # SUMMARY_ONLY

# ---------------------------------------------------------------- summary
PEERS="$PEERS" /usr/bin/python3 - "$R" "$PASSES" "$ONLY" > "$R/SUMMARY.txt" <<'EOF'
import os, re, sys
sys.path.insert(0, os.environ["PEERS"])
import summarize  # the peers' parser, so that every file is read the same way

d, passes, names = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
colls = summarize.COLLS + ["barrier"]
MIB = [1 << 20, 16 << 20, 64 << 20]
data = {}   # (name, pass) -> (rows, meta, notes)
for name in names:
    for p in range(1, passes + 1):
        path = os.path.join(d, "pass%d" % p, name + ".txt")
        if os.path.exists(path):
            data[name, p] = summarize.parse(path)

def cell(vals):
    return "/".join(summarize.fmt(v) if v is not None else "-" for v in vals)

def median_c2c(s):
    m = re.search(r"median=([0-9.]+)", s or "")
    return m.group(1) if m else "?"

print("# cc vs peers, %d pass(es), interleaved; each cell: pass1/pass2/...  (%s)" % (passes, d))
print("# lat_us: time at the smallest size (8 B; n*4 B when each rank needs >= 1 float);")
print("# bw@X: busbw GB/s (nccl-tests factors); wrong: #wrong summed over sizes and passes")
print("# c2c: median core-to-core round trip (ns) before>after each run, the vCPU-placement fingerprint;")
print("# rc: the run's exit status (cc_bench exits 1 when any result, in place or out of place, was wrong)")
print()
print("== c2c fingerprint and exit status, per pass")
for name in names:
    fp = []
    for p in range(1, passes + 1):
        m = data.get((name, p), ({}, {}, []))[1]
        rc = re.search(r"rc=(-?[0-9]+)", m.get("rc=", ""))
        fp.append("%s>%s rc=%s" % (median_c2c(m.get("c2c before:")), median_c2c(m.get("c2c after:")),
                                   rc.group(1) if rc else "?"))
    print("   %-18s %s" % (name, "   ".join(fp)))
print()
for c in colls:
    print("== " + c)
    if c == "barrier":
        print("   %-18s %-24s" % ("config", "lat_us"))
    else:
        print("   %-18s %-24s %-24s %-24s %-24s %s" % ("config", "lat_us(size)", "bw@1MiB", "bw@16MiB", "bw@64MiB", "wrong"))
    for name in names:
        lat, bws, wrong, smallest, unsupported = [], [[], [], []], 0, None, False
        for p in range(1, passes + 1):
            rows, meta, notes = data.get((name, p), ({}, {}, []))
            r = sorted(rows.get(c, []))
            if not r:
                unsupported |= any(c in n for n in notes)
                lat.append(None)
                for b in bws:
                    b.append(None)
                continue
            lat.append(r[0][1])
            smallest = r[0][0]
            for i, s in enumerate(MIB):
                hit = [x for x in r if x[0] == s]
                bws[i].append(hit[0][2] if hit else None)
            wrong += sum(x[3] for x in r)
        if unsupported and all(v is None for v in lat):
            print("   %-18s unsupported" % name)
        elif c == "barrier":
            print("   %-18s %-24s" % (name, cell(lat)))
        else:
            l = cell(lat) + ("" if smallest is None else " (%dB)" % smallest)
            print("   %-18s %-24s %-24s %-24s %-24s %d" % (name, l, cell(bws[0]), cell(bws[1]), cell(bws[2]), wrong))
    print()
for p in range(1, passes + 1):
    path = os.path.join(d, "pass%d" % p, "SUMMARY.txt")
    if os.path.exists(path):
        print("######## pass %d (summarize.py)" % p)
        print(open(path).read())
EOF
echo "# compare.sh finished $(date -Is)" >> "$R/runs.log"
cat "$R/SUMMARY.txt"
echo "done: see $R/SUMMARY.txt"
