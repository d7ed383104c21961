#!/bin/bash
# call_cost.sh - instructions per small call, cc.h of earlier revisions against
# the working tree's: a count that does not move with the vCPUs' placement.
#
#   bash bench/call_cost.sh REV...              # each REV's cc.h, then the working tree's
#   KINDS="all_reduce barrier" bash bench/call_cost.sh 0bcc014
#
# Each cc.h builds bench/call_cost.c (-O2); in a world of one (RANK=0
# WORLD_SIZE=1: the arena path, the queued calls need two ranks) it runs N1
# and N2 calls of each collective with 8-byte blocks under valgrind's
# callgrind, and prints (Ir(N2) - Ir(N1)) / (N2 - N1): the instructions of one
# call, argument checks, dispatch, descriptor, the first phase and the copy,
# and no wait (alone, a rank never waits). At 2 ranks on this VM a call is
# about 600-900 of these between seeing the peer's step and publishing the
# next one, a few hundred nanoseconds with the cache line's trip: 100
# instructions are 10-15% of an 8-byte call (docs/performance.md).
# Needs valgrind (Debian's package).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
[ $# -ge 1 ] || { echo "usage: bash bench/call_cost.sh REV... (git revisions of cc.h)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "call_cost.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
KINDS=${KINDS:-"all_reduce all_gather reduce_scatter broadcast all_to_all gather scatter barrier"}
N1=${N1:-1000} N2=${N2:-11000}
W=${BUILD:-$TOP/build}/call_cost
mkdir -p "$W" || exit 1

. "$HERE/revisions.bash"
revisions_headers "$W" "$@" || exit $?
names=("${rev_names[@]}")
for n in "${names[@]}"; do
  printf '#define CC_IMPLEMENTATION\n#include "cc.h"\n' > "$W/$n/impl.c"
  sed 's|"../cc.h"|"cc.h"|' "$HERE/call_cost.c" > "$W/$n/call_cost.c"
  ${CC:-cc} -std=c99 -O2 -I"$W/$n" -o "$W/$n/call_cost" "$W/$n/call_cost.c" "$W/$n/impl.c" -pthread -lm ||
    { echo "call_cost.sh: cc.h of $n does not build" >&2; exit 1; }
done

ir() {   # ir NAME KIND N: instructions of the whole run
  RANK=0 WORLD_SIZE=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$W/$1/call_cost" "$2" "$3" 2>&1 |
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
echo "# call_cost.sh $(date -Is): instructions per 8-byte call, a world of one (work = the working tree's cc.h, $(git -C "$TOP" log -1 --format=%h HEAD))"
printf '%-15s' collective
for n in "${names[@]}"; do printf ' %10s' "$n"; done
echo
for k in $KINDS; do
  printf '%-15s' "$k"
  for n in "${names[@]}"; do
    a=$(ir "$n" "$k" "$N1") b=$(ir "$n" "$k" "$N2")
    if [ -n "$a" ] && [ -n "$b" ]; then printf ' %10d' $(( (b - a) / (N2 - N1) )); else printf ' %10s' failed; fi
  done
  echo
done
