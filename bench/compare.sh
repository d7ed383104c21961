#!/bin/bash
# compare.sh - cc side by side with Open MPI, MPICH and Gloo on this machine.
#
#   bash bench/compare.sh                      # 3 passes of every configuration (about 30 min on 2 cores)
#   PASSES=1 BENCH_ARGS="-l 0.02" bash bench/compare.sh         # a quick look (a few minutes)
#   ONLY="cc_shm_np2 openmpi_shm_np2" bash bench/compare.sh    # a subset
#   ONLY="cc_tcp_np2 openmpi_tcp_np2 mpich_tcp_np2 gloo_tcp_np2" bash bench/compare.sh   # over TCP
#   make plot                                  # then: build/perf.png from the latest run
#   python3 bench/targets.py build/compare/latest   # cc against each library, the targets
#
# Configurations (ONLY picks some, in this order by default):
#   cc_shm_np2 ccmem_shm_np2 openmpi_shm_np2 mpich_shm_np2 cc_shm_np4 openmpi_shm_np4 mpich_shm_np4
#   cc_tcp_np2 openmpi_tcp_np2 mpich_tcp_np2 gloo_tcp_np2 gloo_tcp_np4
# cc_*: build/ccrun -n N build/cc_bench, with CC_TRANSPORT=shm or tcp (TCP on
# loopback); ccmem_*: the same with buffers from cc_mem_alloc (cc_bench -R 1:
# symmetric memory, which every rank on the host maps); cc_* runs cc's
# default, CC_SHM_CMA=auto (large messages on plain buffers by cross-memory
# attach or through the arena, whichever cc measures faster); cccma_*: plain
# buffers with CC_SHM_CMA=1 (always read from the peers' buffers by
# cross-memory attach, as Open MPI does), ccarena_*: CC_SHM_CMA=0 (always
# through the arena), ccopen_*: CC_TOKEN= (no token: TCP frames not
# authenticated, as the peers' are not; ccrun otherwise makes one) (those
# three not in ALL: ONLY names them); the others: bench/peers/run.sh NAME (bench/peers/README.md says how
# each library runs). Each needs nothing beside this repository: the peers'
# Debian packages are installed when missing if this runs as root (apt-get
# update, then apt-get install), else the apt-get line to run is printed and
# compare.sh stops (status 2).
#
# Every configuration runs the same benchmark: float32, op sum, the collectives
# all_reduce all_gather reduce_scatter broadcast all_to_all gather scatter
# barrier, sizes 8 B to 64 MiB (x4, plus 1 MiB and 16 MiB), about 0.2 s per
# size (calibrated iterations, at least 3, after 5 warm-up calls), time = the
# greatest over the ranks of the mean per iteration, busbw with nccl-tests'
# factors, every size checked (#wrong): cc_bench's flags
#   -k COLLS -d float -o sum -b 8 -e 64M -f 4 -s 1M,16M -l 0.2 -n 3 -w 5 -c 1
# which every bench takes (BENCH_ARGS are added after them, so they win).
#
# Every pass runs each configuration once, interleaved, the order rotating from
# pass to pass, because on a small VM the placement of the vCPUs changes within
# seconds and moves shared-memory results by 2-4x; a comparison only means
# something between runs of one compare.sh run, several times over. Before and after
# every run, build/peers/c2c_latency takes the placement's fingerprint.
#
# Writes, under RESULTS:
#   passN/CONFIG.txt     the run's output, after "# run:", "# cmd:", "# date:",
#                        "# c2c before:" lines, then "# rc=... wall_s=..." and
#                        "# c2c after:" (CONFIG.err: its stderr, when not empty)
#   results.tsv          one line per pass, configuration, collective, size and
#                        column: pass config collective bytes count inplace
#                        time_us algbw busbw wrong iters c2c_before c2c_after rc
#                        (what make plot reads)
#   SUMMARY.txt          per collective: latency at the smallest size and busbw
#                        at 1, 16, 64 MiB of every configuration, one value per pass
#   machine.txt          versions, CPU, memcpy_bw; runs.log: one line per run
# and points build/compare/latest at RESULTS.
#
# Settings (environment): PASSES (3); RESULTS (build/compare/DATE-TIME); ONLY;
# TIMEOUT per run in seconds (600); BENCH_ARGS (flags for every bench, after the
# defaults); CC_BENCH_ARGS (flags for cc_bench only, after those); BUILD (the
# build directory, default build); SUMMARY_ONLY=1 (run nothing: rebuild
# results.tsv and SUMMARY.txt from the passes in RESULTS).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
BUILD=${BUILD:-$TOP/build}
case $BUILD in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
export BUILD
PASSES=${PASSES:-3}
R=${RESULTS:-$BUILD/compare/$(date +%Y%m%d-%H%M%S)}
TO=${TIMEOUT:-600}
BENCH_ARGS=${BENCH_ARGS:-}
CC_BENCH_ARGS=${CC_BENCH_ARGS:-}
ALL="cc_shm_np2 ccmem_shm_np2 openmpi_shm_np2 mpich_shm_np2 cc_shm_np4 openmpi_shm_np4 mpich_shm_np4"
ALL="$ALL cc_tcp_np2 openmpi_tcp_np2 mpich_tcp_np2 gloo_tcp_np2 gloo_tcp_np4"
ONLY=${ONLY:-$ALL}
COLLS=all_reduce,all_gather,reduce_scatter,broadcast,all_to_all,gather,scatter,barrier
COMMON="-k $COLLS -d float -o sum -b 8 -e 64M -f 4 -s 1M,16M -l 0.2 -n 3 -w 5 -c 1"
SUMMARY_ONLY=${SUMMARY_ONLY:-}
CCRUN=$BUILD/ccrun
CCBENCH=$BUILD/cc_bench
C2C=$BUILD/peers/c2c_latency

read -r -a configs <<< "$ONLY"
nc=${#configs[@]}
[ "$nc" -gt 0 ] || { echo "compare.sh: ONLY names no configuration" >&2; exit 2; }
libs=()
for c in "${configs[@]}"; do
    if [[ ! $c =~ ^(cc|ccmem|cccma|ccarena|ccopen|openmpi|mpich|gloo)_(shm|tcp)_np([0-9]+)$ ]] || [[ $c == gloo_shm_* ]]; then
        echo "compare.sh: '$c' is not a configuration (cc, ccmem, cccma, ccarena, ccopen, openmpi, mpich _shm_ or _tcp_npN; gloo_tcp_npN)" >&2
        exit 2
    fi
    case ${BASH_REMATCH[1]} in cc|ccmem|cccma|ccarena|ccopen) ;; *) [[ " ${libs[*]-} " == *" ${BASH_REMATCH[1]} "* ]] || libs+=("${BASH_REMATCH[1]}") ;; esac
done
mkdir -p "$R" || exit 1
R=$(cd "$R" && pwd)

if [ -z "$SUMMARY_ONLY" ]; then
# ---------------------------------------------------------------- packages, build
if [ ${#libs[@]} -gt 0 ]; then
    bash "$HERE/peers/install.sh" "${libs[@]}" || exit 2
fi
targets=("$CCRUN" "$CCBENCH" "$C2C" "$BUILD/peers/memcpy_bw")
for l in "${libs[@]}"; do [ "$l" = gloo ] || targets+=("$BUILD/peers/bench_mpi.$l"); done
echo "building: make -C $TOP ${targets[*]#"$TOP/"}"
make -s -C "$TOP" BUILD="$BUILD" "${targets[@]}" || { echo "compare.sh: the build failed" >&2; exit 1; }
mkdir -p "$BUILD/compare" && ln -sfn "$R" "$BUILD/compare/latest"

{
    echo "# compare.sh $(date -Is)"
    echo "# cc: $(grep -m1 'define CC_VERSION_STRING' "$TOP/cc.h" | awk '{print $3}')" \
         "git $(git -C "$TOP" log -1 --format='%h %s' 2>/dev/null | cut -c1-100)$(git -C "$TOP" diff --quiet HEAD -- cc.h bench 2>/dev/null || echo ' (+ uncommitted changes)')"
    echo "# flags: $COMMON $BENCH_ARGS   cc_bench also: $CC_BENCH_ARGS"
    echo "# passes: $PASSES   configurations: ${configs[*]}"
    echo "# kernel: $(uname -r)   cpus: $(nproc --all)   $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null)"
    dpkg-query -W -f='# ${Package} ${Version}\n' openmpi-bin mpich libucx0 python3-torch gcc libc6 2>/dev/null
    echo "# $(grep -E '^(Mem)' /proc/meminfo 2>/dev/null | tr -s ' ' | paste -sd' ')"
    echo "# c2c: $("$C2C")"
    "$BUILD/peers/memcpy_bw" 10
} > "$R/machine.txt" 2>&1

# ---------------------------------------------------------------- one run
c2c() { "$C2C" 2>&1 | head -n 1; }

run_one() {   # run_one NAME DIR
    local name=$1 dir=$2 out err cmd t0 t1 rc np
    out=$dir/$name.txt
    err=$dir/$name.err
    np=${name##*_np}
    case $name in
    cc_*|ccmem_*|cccma_*|ccarena_*|ccopen_*)
        case $name in cccma_*) cma=1 ;; ccarena_*) cma=0 ;; *) cma=auto ;; esac
        tok=()
        [[ $name == ccopen_* ]] && tok=(CC_TOKEN=)
        # shellcheck disable=SC2206  # the flag lists are meant to split
        cmd=(env "${tok[@]}" CC_TRANSPORT="$(echo "$name" | cut -d_ -f2)" OMP_NUM_THREADS=1 CC_SHM_CMA="$cma" "$CCRUN" -n "$np" "$CCBENCH"
             $COMMON $([[ $name == ccmem_* ]] && echo "-R 1") $BENCH_ARGS $CC_BENCH_ARGS) ;;
    *)
        # shellcheck disable=SC2206
        cmd=(bash "$HERE/peers/run.sh" "$name" $COMMON $BENCH_ARGS) ;;
    esac
    {
        echo "# run: $name"
        if [[ $name == cc_* || $name == ccmem_* || $name == cccma_* || $name == ccarena_* || $name == ccopen_* ]]; then echo "# cmd: ${cmd[*]}"; else echo "# cmd: $(bash "$HERE/peers/run.sh" --cmd "$name" $COMMON $BENCH_ARGS)"; fi
        echo "# date: $(date -Is)"
        echo "# c2c before: $(c2c)"
    } > "$out"
    t0=$(date +%s%N)
    timeout -k 10 "$TO" "${cmd[@]}" >> "$out" 2> "$err" < /dev/null
    rc=$?
    t1=$(date +%s%N)
    printf '# rc=%d wall_s=%d.%d  (124/137 = killed by the timeout, %s s)\n' "$rc" $(( (t1 - t0) / 1000000000 )) \
        $(( (t1 - t0) / 100000000 % 10 )) "$TO" >> "$out"
    echo "# c2c after: $(c2c)" >> "$out"
    [ -s "$err" ] || rm -f "$err"
    printf 'pass %s  %-18s rc=%-3d wall=%5d s  %s\n' "${dir##*pass}" "$name" "$rc" $(( (t1 - t0) / 1000000000 )) \
        "$(date +%T)" | tee -a "$R/runs.log"
}

# ---------------------------------------------------------------- passes
echo "# compare.sh started $(date -Is): $PASSES pass(es) of ${configs[*]}; results in $R" | tee -a "$R/runs.log"
for ((p = 1; p <= PASSES; p++)); do
    mkdir -p "$R/pass$p"
    echo "== pass $p/$PASSES ($(date +%T))"
    for ((i = 0; i < nc; i++)); do
        run_one "${configs[$(( (i + p - 1) % nc ))]}" "$R/pass$p"
    done
done
echo "# compare.sh finished $(date -Is)" >> "$R/runs.log"
fi   # SUMMARY_ONLY

# ---------------------------------------------------------------- results.tsv, SUMMARY.txt
# (status 1 when a run failed or a result was wrong; the summary says which)
st=0
/usr/bin/python3 "$HERE/compare_summary.py" "$R" "${configs[@]}" || st=$?
[ -f "$R/SUMMARY.txt" ] && cat "$R/SUMMARY.txt"
echo "done: $R/SUMMARY.txt, $R/results.tsv (make plot RESULTS=$R draws build/perf.png; python3 bench/targets.py $R: cc against each library, and the targets against Open MPI)"
exit "$st"
