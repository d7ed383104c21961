#!/bin/bash
# same_pair.sh - cc.h of earlier revisions against the working tree's, timed
# in the same processes, call for call (dev/same_pair.c): the small-message
# side by side that separate runs cannot give on a small VM, where the host's
# placement of the vCPUs moves a run 2-4x (dev/before_after.sh compares
# whole runs, interleaved, and needs many passes to see 10%).
#
#   bash dev/same_pair.sh REV...              # each REV's cc.h, then the working tree's
#   NP=4 PASSES=3 bash dev/same_pair.sh main
#   KINDS=all_reduce,barrier BYTES=64 bash dev/same_pair.sh HEAD~3 HEAD~1
#
# Each cc.h is built into a shared library (-fPIC, and DEV_CFLAGS: default
# -O2); one job of NP ranks (default 2) on this host, started here with env:// (MASTER_ADDR=127.0.0.1),
# loads them all and makes a communicator with each: shared memory, as ccrun
# runs on one host. PASSES jobs (default 3), each with the core-to-core
# fingerprint (build/peers/c2c_latency) before it; rounds, calls: ROUNDS,
# CALLS. Output: every pass's table on stdout and in RESULTS (default
# build/same_pair/DATE-TIME.txt).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
[ $# -ge 1 ] || { echo "usage: bash dev/same_pair.sh REV... (git revisions of cc.h)" >&2; exit 2; }
NP=${NP:-2}
PASSES=${PASSES:-3}
BUILD=${BUILD:-$TOP/build}
W=$BUILD/same_pair
mkdir -p "$W" || exit 1
OUT=${RESULTS:-$W/$(date +%Y%m%d-%H%M%S).txt}
make -s -C "$TOP" BUILD="$BUILD" "$BUILD/peers/c2c_latency" || exit 1

. "$HERE/revisions.bash"
revisions_headers "$W" "$@" || exit $?
names=("${rev_names[@]}") libs=()
for n in "${names[@]}"; do   # each cc.h as a shared library
  printf '#define CC_IMPLEMENTATION\n#include "cc.h"\n' > "$W/$n/lib.c"
  ${CC:-cc} -std=c99 ${DEV_CFLAGS:--O2} -shared -fPIC -I"$W/$n" -o "$W/$n/libcc.so" "$W/$n/lib.c" -pthread -lm ||
    { echo "same_pair.sh: cc.h of $n does not build" >&2; exit 1; }
  libs+=("$W/$n/libcc.so")
done
${CC:-cc} -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -o "$W/same_pair" "$HERE/same_pair.c" -ldl || exit 1

args=()
[ -n "${KINDS:-}" ] && args+=(-k "$KINDS")
[ -n "${BYTES:-}" ] && args+=(-b "$BYTES")
[ -n "${ROUNDS:-}" ] && args+=(-r "$ROUNDS")
[ -n "${CALLS:-}" ] && args+=(-n "$CALLS")
{
  echo "# same_pair.sh $(date -Is): ${names[*]} (work = the working tree's cc.h, $(git -C "$TOP" log -1 --format=%h HEAD)$(git -C "$TOP" diff --quiet HEAD -- cc.h || echo ' + uncommitted changes'))"
  echo "# $NP ranks, $(nproc) cpus, passes $PASSES; load: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"
for p in $(seq "$PASSES"); do
  port=$((20000 + RANDOM % 20000))
  pids=()
  echo "pass $p, c2c: $("$BUILD/peers/c2c_latency" 2>&1 | head -1); columns: ${names[*]}" | tee -a "$OUT"
  for r in $(seq 0 $((NP - 1))); do
    RANK=$r WORLD_SIZE=$NP LOCAL_RANK=$r LOCAL_WORLD_SIZE=$NP MASTER_ADDR=127.0.0.1 SAME_PAIR_PORT=$port \
      timeout 900 "$W/same_pair" ${args[@]+"${args[@]}"} "${libs[@]}" > "$W/rank$r.out" 2>&1 &
    pids+=($!)
  done
  rc=0
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  tee -a "$OUT" < "$W/rank0.out"
  if [ "$rc" != 0 ]; then
    for r in $(seq 1 $((NP - 1))); do cat "$W/rank$r.out"; done >&2
    echo "same_pair.sh: pass $p failed" >&2
    exit 1
  fi
done
echo "# written to $OUT"
