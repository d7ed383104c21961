#!/bin/bash
# cuda_compare.sh - cc's GPU mode side by side with torch.distributed's gloo on
# CUDA tensors, several ranks on one GPU, with the GPU's own copy bandwidth as
# the yardstick. Run it on the GPU machine:
#
#   bash bench/cuda_compare.sh                     # writes bench/results/cuda-<date>.txt
#   PASSES=1 NRANKS=2 CONFIGS="cc gloo" bash bench/cuda_compare.sh    # a quick one
#   SUMMARY_ONLY=1 RESULT=bench/results/cuda-DATE.txt bash bench/cuda_compare.sh
#                                                  # the summary of an earlier run, to stdout
#
# Every pass runs, for nranks 2 and 4, every rank on GPU 0 (CUDA_VISIBLE_DEVICES,
# so cc_bench's device rank % count and gloo_cuda.py's are both 0), each of
#
#   cc      build/ccrun -n N build/cc_bench_cuda -g 1 -k all_reduce,copy -d float -o sum -R 1 SIZES
#           (cc_cuda_malloc buffers; the copy rows are measured in the same run)
#   cc_r0   the same with -R 0 (plain cudaMalloc buffers, mapped by the peers on first
#           use; "cc_m0" in CONFIGS, its name when the flag was -M 0, runs it too)
#   gloo    python3 bench/gloo_cuda.py -N N -k all_reduce -d float -o sum SIZES
#
# interleaved, the order rotating from pass to pass, so that a drift of the
# machine shows as a difference between passes rather than between libraries.
# The flags are nccl-tests' (bench/README.md), and both programs print
# nccl-tests' rows under "# Collective test: NAME" lines (size count type redop
# root, time algbw busbw #wrong out of place, the same in place, iters), which
# the summary reads. SIZES are compare.sh's: -b 8 -e 64M -f 4 -s 1M,16M (8 B ..
# 64 MiB, -e always measured), with -n 20 -w 5; every result is checked
# (#wrong). Timing, in both programs: a batch of iterations from a barrier
# (device idle) to a stream/device synchronize after its last call, divided by
# the batch, max over the ranks (cc_bench's -a 3, its default).
#
# The results file holds a header (date, nvidia-smi -L, driver, nvcc, torch, the
# build and the commands), every run's output verbatim (each after a "#### run:"
# line, its stderr as "# stderr:" lines), and a summary:
#   - all_reduce time_us at 8 B, 1 MiB, 16 MiB, 64 MiB, one value per pass;
#     cc out of place and in place, gloo in place (torch has only that form);
#   - all_reduce at 64 MiB against the copy of the same run. The copy's right
#     column (every rank copying 64 MiB at once) has busbw = 2*n*size/time: the
#     bytes read + written per second through the GPU's memory. An all_reduce
#     over n ranks on one GPU must at least read the n inputs and write the n
#     outputs, 2*n*size bytes: "mem_GBps" = 2*n*algbw. ratio = mem_GBps / copy
#     busbw: 1.0 = the all_reduce moves its unavoidable bytes at copy speed.
#
# Settings (environment): PASSES (3), NRANKS ("2 4"), CONFIGS ("cc cc_r0 gloo"),
# GPU (0), SIZES, ITERS ("-n 20 -w 5"), TIMEOUT per run in seconds (600),
# NVCC (nvcc on PATH, else /usr/local/cuda/bin/nvcc), NVCC_ARCH (-arch=native,
# dropped when nvcc refuses it), PYTHON (python3, with torch), RESULT (the
# results file; default bench/results/cuda-<date>[-b, -c, ...].txt, never
# overwritten). When $OUT is a writable directory (the device machine's), a copy
# of the results file is left there too.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
PASSES=${PASSES:-3}
NRANKS=${NRANKS:-2 4}
CONFIGS=${CONFIGS:-cc cc_r0 gloo}
GPU=${GPU:-0}
SIZES=${SIZES:--b 8 -e 64M -f 4 -s 1M,16M}
ITERS=${ITERS:--n 20 -w 5}
TO=${TIMEOUT:-600}
PYTHON=${PYTHON:-python3}
NVCC_ARCH=${NVCC_ARCH--arch=native}
if [ -z "${NVCC:-}" ]; then
    NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
fi
CCRUN=$TOP/build/ccrun
BENCH=$TOP/build/cc_bench_cuda

# ---------------------------------------------------------------- summary
# summarize RESULT [PASSES NRANKS CONFIGS]: the summary of a results file, to stdout
summarize() {
"$PYTHON" - "$@" <<'EOF'
import re, sys

# argv: RESULT [PASSES NRANKS CONFIGS]; without the last three, they are read
# from the file's "#### run:" lines (SUMMARY_ONLY=1)
path = sys.argv[1]
runs = {}   # (cfg, n, pass) -> {"rows": {(coll, size): [oop_t, oop_algbw, oop_busbw, oop_wrong, ip_t, ...]}, "rc": rc}
order = []  # (cfg, n, pass) as the file has them
cur = coll = None
# a row, as cc_bench and gloo_cuda.py print nccl-tests' columns: size count type
# redop root | time algbw busbw #wrong (out of place) | the same (in place) | iters;
# a column not measured reads N/A
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)((?:\s+\S+){8})\s+(\d+)\s*$")
def num(x):
    try:
        return float(x)
    except ValueError:
        return None   # N/A
for line in open(path):
    m = re.match(r"#### run: (\S+) n=(\d+) pass=(\d+)", line)
    if m:
        key = (m.group(1), int(m.group(2)), int(m.group(3)))
        cur, coll = runs.setdefault(key, {"rows": {}, "rc": None}), None
        order.append(key)
        continue
    if cur is None:
        continue
    m = re.match(r"# rc=(-?\d+)", line)
    if m:
        cur["rc"] = int(m.group(1))
        continue
    m = re.match(r"# Collective test: (\S+)", line)
    if m:
        coll = m.group(1)
        continue
    m = ROW.match(line)
    if m and coll is not None:
        cur["rows"][(coll, int(m.group(1)))] = [num(x) for x in m.group(6).split()]
if len(sys.argv) > 4:
    passes, nranks, configs = int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
else:
    passes = max([p for (c, n, p) in order] or [0])
    nranks = [str(n) for n in sorted({n for (c, n, p) in order})]
    configs = []
    for (c, n, p) in order:
        if c not in configs:
            configs.append(c)

def cell(vals, fmt="%.2f"):
    return "/".join(fmt % v if v is not None else "-" for v in vals)

def get(cfg, n, p, coll, size, i):
    r = runs.get((cfg, n, p), {}).get("rows", {}).get((coll, size))
    return r[i] if r else None

MIB = 1 << 20
print("#")
print("# ======== summary (each cell: pass1/pass2/...; - = missing)")
print("# exit status per run (cc_bench and gloo_cuda.py exit 1 when a result was wrong):")
for n in map(int, nranks):
    for cfg in configs:
        print("#   n=%d %-6s rc %s   #wrong %s" % (n, cfg, cell([runs.get((cfg, n, p), {}).get("rc") for p in range(1, passes + 1)], "%d"),
              cell([sum((r[3] or 0) + (r[7] or 0) for r in runs.get((cfg, n, p), {}).get("rows", {}).values()) if (cfg, n, p) in runs else None
                    for p in range(1, passes + 1)], "%d")))
print("#")
print("# all_reduce float32 sum, time_us (cc: out of place | in place; gloo: in place only)")
for n in map(int, nranks):
    sizes = sorted({s for (c, nn, p), r in runs.items() if nn == n for (coll, s) in r["rows"] if coll == "all_reduce"})
    show = [s for s in sizes if s in (sizes[0] if sizes else -1, MIB, 16 * MIB, 64 * MIB)]
    print("#  n=%d" % n)
    for s in show:
        parts = []
        for cfg in configs:
            if cfg.startswith("cc"):
                parts.append("%s %s | %s" % (cfg, cell([get(cfg, n, p, "all_reduce", s, 0) for p in range(1, passes + 1)]),
                                             cell([get(cfg, n, p, "all_reduce", s, 4) for p in range(1, passes + 1)])))
            else:
                parts.append("%s %s" % (cfg, cell([get(cfg, n, p, "all_reduce", s, 4) for p in range(1, passes + 1)])))
        print("#    %9d B   %s" % (s, "    ".join(parts)))
print("#")
print("# all_reduce at 64 MiB vs the copy of the same cc_bench run: mem_GBps = 2*n*algbw (n inputs read,")
print("# n outputs written); copy_GBps = the copy's busbw with every rank copying (2*n*size/time);")
print("# copy1_GBps = rank 0 copying alone (2*size/time); ratio = mem_GBps / copy_GBps")
S = 64 * MIB
for n in map(int, nranks):
    for cfg in [c for c in configs if c.startswith("cc")]:
        for p in range(1, passes + 1):
            ar_t, ar_ip_t = get(cfg, n, p, "all_reduce", S, 0), get(cfg, n, p, "all_reduce", S, 4)
            cp_all, cp_one = get(cfg, n, p, "copy", S, 6), get(cfg, n, p, "copy", S, 2)
            if ar_t is None or cp_all is None:
                print("#   n=%d %-6s pass %d: missing" % (n, cfg, p))
                continue
            mem = 2.0 * n * S / 1e9 / (ar_t * 1e-6)
            mem_ip = 2.0 * n * S / 1e9 / (ar_ip_t * 1e-6) if ar_ip_t else None
            print("#   n=%d %-6s pass %d: all_reduce %9.1f us (in place %9.1f us)  mem_GBps %7.1f (in place %s)"
                  "  copy_GBps %7.1f  copy1_GBps %7.1f  ratio %.3f (in place %s)" % (
                      n, cfg, p, ar_t, ar_ip_t or 0.0, mem, "%.1f" % mem_ip if mem_ip else "-",
                      cp_all, cp_one or 0.0, mem / cp_all, "%.3f" % (mem_ip / cp_all) if mem_ip else "-"))
    if "gloo" in configs:
        gl = [get("gloo", n, p, "all_reduce", S, 4) for p in range(1, passes + 1)]
        print("#   n=%d gloo   all_reduce in place, us: %s  mem_GBps: %s" % (
            n, cell(gl, "%.1f"), cell([2.0 * n * S / 1e9 / (t * 1e-6) if t else None for t in gl], "%.1f")))
print("#")
EOF
}

if [ "${SUMMARY_ONLY:-0}" = 1 ]; then
    if [ -z "${RESULT:-}" ] || [ ! -r "$RESULT" ]; then
        echo "cuda_compare.sh: SUMMARY_ONLY=1 needs RESULT=FILE, a results file to read" >&2
        exit 2
    fi
    summarize "$RESULT"
    exit
fi

if [ -z "${RESULT:-}" ]; then
    mkdir -p "$TOP/bench/results" || exit 1
    RESULT=$TOP/bench/results/cuda-$(date +%F).txt
    for s in b c d e f g h i j k l m n o p q r s t u v w x y z; do
        [ -e "$RESULT" ] || break
        RESULT=$TOP/bench/results/cuda-$(date +%F)-$s.txt
    done
fi

# ---------------------------------------------------------------- build
echo "building: make -s -C $TOP build/ccrun"
make -s -C "$TOP" build/ccrun || { echo "cuda_compare.sh: make build/ccrun failed" >&2; exit 1; }
[ -x "$NVCC" ] || { echo "cuda_compare.sh: no nvcc (not on PATH, not at $NVCC); set NVCC=" >&2; exit 1; }
build() {   # build [ARCH]
    BUILD_CMD="$NVCC -x cu -std=c++17 -O2 $* -I$TOP -Xcompiler -Wall,-Wextra,-Werror -o $BENCH $TOP/bench/cc_bench.c -lpthread"
    echo "building: $BUILD_CMD"
    $BUILD_CMD
}
mkdir -p "$TOP/build"
# shellcheck disable=SC2086  # NVCC_ARCH is one word or none
if ! build $NVCC_ARCH; then
    [ -n "$NVCC_ARCH" ] || { echo "cuda_compare.sh: the nvcc build failed" >&2; exit 1; }
    echo "cuda_compare.sh: retrying without $NVCC_ARCH" >&2
    build || { echo "cuda_compare.sh: the nvcc build failed" >&2; exit 1; }
fi

# ---------------------------------------------------------------- header
CC_ARGS="-g 1 -k all_reduce,copy -d float -o sum $SIZES $ITERS"
GLOO_ARGS="-k all_reduce -d float -o sum $SIZES $ITERS"
{
    echo "# cuda_compare.sh: cc (cc_cuda.cuh) vs torch.distributed gloo on CUDA tensors, every rank on one GPU"
    echo "# date: $(date -Is)  host: $(hostname)  kernel: $(uname -r)  cpus: $(nproc --all)"
    echo "# cc: $(grep -m1 'define CC_VERSION_STRING' "$TOP/cc.h" | awk '{print $3}')" \
         "git $(git -C "$TOP" log -1 --format='%h %s' 2>/dev/null)$(git -C "$TOP" diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
    echo "# nvidia-smi -L:"
    nvidia-smi -L 2>&1 | sed 's/^/#   /'
    echo "# driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -n 1)"
    echo "# gpus (index, name, compute mode, max sm/mem clocks, memory): "
    nvidia-smi --query-gpu=index,name,compute_mode,clocks.max.sm,clocks.max.mem,memory.total --format=csv,noheader 2>&1 | sed 's/^/#   /'
    echo "# nvcc: $("$NVCC" --version | tail -n 1)"
    echo "# torch: $("$PYTHON" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1)"
    echo "# build: $BUILD_CMD"
    echo "# commands (N = nranks in $NRANKS; every one with CUDA_VISIBLE_DEVICES=$GPU):"
    echo "#   cc:    $CCRUN -n N $BENCH $CC_ARGS -R 1"
    echo "#   cc_r0: $CCRUN -n N $BENCH $CC_ARGS -R 0"
    echo "#   gloo:  $PYTHON $HERE/gloo_cuda.py -N N $GLOO_ARGS"
    echo "# passes: $PASSES, interleaved (order rotating); configs: $CONFIGS"
} > "$RESULT"
echo "results: $RESULT"

# ---------------------------------------------------------------- runs
run_one() {   # run_one CONFIG N PASS
    local cfg=$1 n=$2 p=$3 err rc t0 t1
    local -a cmd
    case $cfg in
    cc)    read -r -a cmd <<< "$CCRUN -n $n $BENCH $CC_ARGS -R 1" ;;
    cc_r0 | cc_m0) read -r -a cmd <<< "$CCRUN -n $n $BENCH $CC_ARGS -R 0" ;;
    gloo)  read -r -a cmd <<< "$PYTHON $HERE/gloo_cuda.py -N $n $GLOO_ARGS" ;;
    *)     echo "cuda_compare.sh: unknown config $cfg" >&2; return ;;
    esac
    err=$(mktemp)
    echo "#### run: $cfg n=$n pass=$p  $(date -Is)" >> "$RESULT"
    echo "# cmd: CUDA_VISIBLE_DEVICES=$GPU ${cmd[*]}" >> "$RESULT"
    t0=$(date +%s.%N)
    CUDA_VISIBLE_DEVICES=$GPU timeout -k 10 "$TO" "${cmd[@]}" >> "$RESULT" 2> "$err"
    rc=$?
    t1=$(date +%s.%N)
    sed 's/^/# stderr: /' "$err" >> "$RESULT"
    rm -f "$err"
    printf '# rc=%d wall_s=%.1f  (124/137 = killed by the timeout, %s s)\n' "$rc" "$(echo "$t1 - $t0" | bc)" "$TO" >> "$RESULT"
    printf 'pass %d  %-6s n=%d  rc=%-3d %6.1fs  %s\n' "$p" "$cfg" "$n" "$rc" "$(echo "$t1 - $t0" | bc)" "$(date +%T)"
}

read -r -a cfgs <<< "$CONFIGS"
read -r -a ns <<< "$NRANKS"
jobs=()
for n in "${ns[@]}"; do for c in "${cfgs[@]}"; do jobs+=("$c $n"); done; done
nj=${#jobs[@]}
for ((p = 1; p <= PASSES; p++)); do
    echo "== pass $p/$PASSES ($(date +%T))"
    for ((i = 0; i < nj; i++)); do
        read -r c n <<< "${jobs[$(( (i + p - 1) % nj ))]}"
        run_one "$c" "$n" "$p"
    done
done

# ---------------------------------------------------------------- summary
SUMMARY=$(mktemp)
summarize "$RESULT" "$PASSES" "$NRANKS" "$CONFIGS" > "$SUMMARY"
cat "$SUMMARY" >> "$RESULT"
rm -f "$SUMMARY"
echo "done: $RESULT"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ -w "$OUT" ]; then cp "$RESULT" "$OUT/" && echo "copied to $OUT/"; fi
tail -n 40 "$RESULT"
