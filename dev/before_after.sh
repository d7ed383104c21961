#!/bin/bash
# before_after.sh - cc against an earlier cc, side by side: did a change make
# anything slower?
#
#   bash dev/before_after.sh REV            # cc.h of REV (a git revision) against the working tree's
#   PASSES=5 ONLY="shm_np2 tcp_np2" bash dev/before_after.sh main
#
# Both sides run the same benchmark program (bench/cc_bench.c of the working
# tree, compiled once against REV's cc.h and once against the working tree's)
# under the same ccrun, so only the library differs. Every pass runs each
# configuration on both sides, interleaved (before, after, then the next
# configuration after, before: the order alternates), with the core-to-core
# fingerprint (build/peers/c2c_latency, ns) before and after every run: on a
# small VM whose host moves the vCPUs, results move 2-4x with them.
#
# BENCH_ARGS="-e 64 -l 0.03 -N 15" measures small sizes only, each value the
# median of 15 sweeps of 0.03 s (robust to the host taking a vCPU away for a
# few ms, which moves a 0.5 s mean).
#
# Configurations (ONLY picks some): shm_np2 shm_np4 tcp_np2 (CC_TRANSPORT=shm or
# tcp, N ranks on this host). The benchmark: float32 sum, all_reduce,
# all_gather, reduce_scatter, broadcast, all_to_all, gather, scatter, barrier,
# 8 B to 64 MiB, about -l seconds per size (BENCH_ARGS is added last).
#
# Writes RESULTS (default build/before_after/DATE-TIME): SIDE_CONFIG_passN.txt
# per run and SUMMARY.txt: the c2c fingerprint's medians per side, then per
# configuration and collective, latency at the smallest size (8 B, or the
# least that the ranks can split) and
# busbw at 1, 16 and 64 MiB, before and after, each as the median of the
# passes with every pass's value, and after/before (busbw: > 1 is better;
# latency: < 1 is better), with a "!" where the median is more than 10% worse.
# DEV_CFLAGS: the compiler's flags for both sides (default -O2).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
REV=${1:-}
[ -n "$REV" ] || { echo "usage: bash dev/before_after.sh REV   (a git revision of cc.h)" >&2; exit 2; }
PASSES=${PASSES:-3}
ONLY=${ONLY:-"shm_np2 shm_np4 tcp_np2"}
BUILD=${BUILD:-$TOP/build}
R=${RESULTS:-$BUILD/before_after/$(date +%Y%m%d-%H%M%S)}
BENCH_ARGS=${BENCH_ARGS:-}
COMMON="-k all_reduce,all_gather,reduce_scatter,broadcast,all_to_all,gather,scatter,barrier -d float -o sum -b 8 -e 64M -f 8 -s 1M,16M -l 0.1 -n 3 -w 5 -c 1"
mkdir -p "$R/before" "$R/after" || exit 1
R=$(cd "$R" && pwd)

git -C "$TOP" show "$REV:cc.h" > "$R/before/cc.h" || { echo "before_after.sh: no cc.h at $REV" >&2; exit 2; }
cp "$TOP/cc.h" "$R/after/cc.h"
make -s -C "$TOP" BUILD="$BUILD" "$BUILD/ccrun" "$BUILD/peers/c2c_latency" || exit 1
for side in before after; do
  extra=()   # a cc.h from before cc_mem_alloc: cc_bench without -R 1 in CPU mode
  grep -q 'cc_mem_alloc(cc_comm' "$R/$side/cc.h" || extra=(-DCC_BENCH_NO_MEM_ALLOC)
  ${CC:-cc} -std=c99 ${DEV_CFLAGS:--O2} ${extra[@]+"${extra[@]}"} -I"$R/$side" -o "$R/$side/cc_bench" "$TOP/bench/cc_bench.c" -pthread -lm ||
    { echo "before_after.sh: cc_bench does not build against the $side cc.h" >&2; exit 1; }
done
C2C=$BUILD/peers/c2c_latency
{
  echo "# before_after.sh $(date -Is): before = cc.h of $REV ($(git -C "$TOP" log -1 --format='%h %s' "$REV" | cut -c1-80))"
  echo "# after = the working tree's cc.h ($(git -C "$TOP" log -1 --format='%h' HEAD)$(git -C "$TOP" diff --quiet HEAD -- cc.h || echo ' + uncommitted changes'))"
  echo "# flags: $COMMON $BENCH_ARGS; passes $PASSES; configurations $ONLY; $(nproc) cpus; load: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$R/SUMMARY.txt"

run() {   # run SIDE CONFIG PASS
  local side=$1 conf=$2 p=$3 out
  out=$R/${side}_${conf}_pass$p.txt
  {
    echo "# c2c before: $("$C2C" 2>&1 | head -1)"
    CC_TRANSPORT=${conf%%_*} timeout 600 "$BUILD/ccrun" -n "${conf##*_np}" "$R/$side/cc_bench" $COMMON $BENCH_ARGS 2>&1
    echo "# rc=$?"
    echo "# c2c after: $("$C2C" 2>&1 | head -1)"
  } > "$out"
  echo "  $side $conf pass $p: c2c $(grep -m1 'c2c before' "$out" | grep -oE 'median=[0-9.]+' | head -1 | cut -d= -f2) ns"
}

for p in $(seq "$PASSES"); do
  echo "pass $p"
  flip=$((p % 2))
  for conf in $ONLY; do
    if [ "$flip" = 1 ]; then run before "$conf" "$p"; run after "$conf" "$p"
    else run after "$conf" "$p"; run before "$conf" "$p"; fi
    flip=$((1 - flip))
  done
done

# The fingerprint: every c2c median (ns) taken around each side's runs.
for side in before after; do
  echo "# c2c $side: $(cat "$R/${side}"_*_pass*.txt 2>/dev/null | grep -oE '^# c2c (before|after): .*median=[0-9.]+' | grep -oE '[0-9.]+$' | sort -n | awk '{v[NR]=$1} END {if (NR) printf "median %s ns over %d readings (least %s, most %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}')"
done >> "$R/SUMMARY.txt"

# rows: "# Collective test: NAME" sections; size count type redop root, out-of-place time algbw busbw #wrong, ...
awk -v passes="$PASSES" -v only="$ONLY" -v R="$R" '
function val(side, conf, coll, size, col,   p, f, line, n, a, cur, v, out, first) {
  out = ""
  for (p = 1; p <= passes; p++) {
    f = R "/" side "_" conf "_pass" p ".txt"; cur = ""; v = ""; first = ""
    while ((getline line < f) > 0) {
      if (line ~ /^# Collective test: /) { split(line, a, " "); cur = a[4] }
      n = split(line, a, " ")
      # size "min": the collective'"'"'s first size (8 B, or the least that np
      # ranks can split); with -N, one row per sweep: their median
      if (cur == coll && n >= 9 && a[1] ~ /^[0-9]+$/) {
        if (first == "") first = a[1]
        if (a[1] == size || (size == "min" && a[1] == first)) v = v (v == "" ? "" : "/") a[col]
      }
    }
    close(f)
    out = out (out == "" ? "" : "/") (v == "" ? "-" : med(v))
  }
  return out
}
function med(list,   a, n, i, j, t) {
  n = split(list, a, "/")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  return a[int((n + 1) / 2)]
}
BEGIN {
  ncolls = split("all_reduce all_gather reduce_scatter broadcast all_to_all gather scatter barrier", colls, " ")
  nconf = split(only, confs, " ")
  printf "%-9s %-15s %-10s %-24s %-24s %s\n", "config", "collective", "measure", "before (median: passes)", "after (median: passes)", "after/before"
  for (ci = 1; ci <= nconf; ci++) for (k = 1; k <= ncolls; k++) {
    coll = colls[k]
    for (m = 1; m <= 4; m++) {
      if (m == 1) { size = "min"; col = 6; what = "lat_us@min" } else {
        if (coll == "barrier") continue
        size = m == 2 ? 1048576 : m == 3 ? 16777216 : 67108864; col = 8; what = "busbw@" (m == 2 ? "1M" : m == 3 ? "16M" : "64M") }
      b = val("before", confs[ci], coll, size, col); a = val("after", confs[ci], coll, size, col)
      mb = med(b); ma = med(a); r = (mb + 0 > 0) ? ma / mb : 0
      worse = (m == 1) ? (r > 1.10) : (r < 0.90 && r > 0)
      printf "%-9s %-15s %-10s %-24s %-24s %.2f%s\n", confs[ci], coll, what, mb " (" b ")", ma " (" a ")", r, worse ? " !" : ""
    }
  }
}' >> "$R/SUMMARY.txt"
cat "$R/SUMMARY.txt"
