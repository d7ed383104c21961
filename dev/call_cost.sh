#!/bin/bash
# call_cost.sh - instructions per small call, cc.h of earlier revisions against
# the working tree's: a count that does not move with the vCPUs' placement.
#
#   bash dev/call_cost.sh REV...              # each REV's cc.h, then the working tree's
#   KINDS="all_reduce barrier" bash dev/call_cost.sh main
#   QUEUED=1 bash dev/call_cost.sh main        # the queued calls, 2 ranks
#
# Each cc.h builds dev/call_cost.c (DEV_CFLAGS: default -O2); in a world of
# one (RANK=0 WORLD_SIZE=1: the arena path, the queued calls need two ranks)
# it runs N1 and N2 calls of each collective with 8-byte blocks under valgrind's
# callgrind, and prints (Ir(N2) - Ir(N1)) / (N2 - N1): the instructions of one
# call, argument checks, dispatch, descriptor, the first phase and the copy,
# and no wait (alone, a rank never waits). At 2 ranks a call is about
# 600-900 of these between seeing the peer's step and publishing the next
# one; with the cache line's trip between cores an 8-byte call takes a few
# hundred nanoseconds, of which 100 instructions are 10-15%.
# QUEUED=1: broadcast, gather and scatter as they go at 2 ranks, queued
# through the rings: both ranks under callgrind (env:// on 127.0.0.1), the
# receiving rank (gather: the root) 300 ms late, so that the frames of all
# N1 (100) or N2 (1100) calls are in the ring before it starts and neither
# rank waits inside them; only the instructions inside cc_broadcast (...)
# count (--toggle-collect); each cell is sender/receiver.
# Needs valgrind (Debian's package).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
[ $# -ge 1 ] || { echo "usage: bash dev/call_cost.sh REV... (git revisions of cc.h)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "call_cost.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
QUEUED=${QUEUED:-}
if [ -n "$QUEUED" ]; then
  KINDS=${KINDS:-"broadcast gather scatter"}
  N1=${N1:-100} N2=${N2:-1100}
else
  KINDS=${KINDS:-"all_reduce all_gather reduce_scatter broadcast all_to_all gather scatter barrier"}
  N1=${N1:-1000} N2=${N2:-11000}
fi
W=${BUILD:-$TOP/build}/call_cost
mkdir -p "$W" || exit 1

. "$HERE/revisions.bash"
revisions_headers "$W" "$@" || exit $?
names=("${rev_names[@]}")
for n in "${names[@]}"; do
  printf '#define CC_IMPLEMENTATION\n#include "cc.h"\n' > "$W/$n/impl.c"
  sed 's|"../cc.h"|"cc.h"|' "$HERE/call_cost.c" > "$W/$n/call_cost.c"
  ${CC:-cc} -std=c99 ${DEV_CFLAGS:--O2} -I"$W/$n" -o "$W/$n/call_cost" "$W/$n/call_cost.c" "$W/$n/impl.c" -pthread -lm ||
    { echo "call_cost.sh: cc.h of $n does not build" >&2; exit 1; }
done

collected() { sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$@"; }   # callgrind's total, from its report

ir2() {   # ir2 NAME KIND N: instructions of the whole run of each rank, "sender receiver"
  local port=$((20000 + RANDOM % 20000)) r out=() pids=()
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      valgrind --tool=callgrind --toggle-collect="cc_$2" --callgrind-out-file=/dev/null "$W/$1/call_cost" "$2" "$3" late > "$W/rank$r.out" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  for r in 0 1; do out+=("$(collected "$W/rank$r.out")"); done
  if [ "$2" = gather ]; then echo "${out[1]} ${out[0]}"; else echo "${out[0]} ${out[1]}"; fi
}

ir() {   # ir NAME KIND N: instructions of the whole run
  RANK=0 WORLD_SIZE=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$W/$1/call_cost" "$2" "$3" 2>&1 | collected
}
cell() {   # cell NAME KIND: instructions per call (QUEUED: sender/receiver), or "failed"
  local a0 a1 b0 b1
  if [ -n "$QUEUED" ]; then
    read -r a0 a1 <<< "$(ir2 "$1" "$2" "$N1")"
    read -r b0 b1 <<< "$(ir2 "$1" "$2" "$N2")"
  else
    a0=$(ir "$1" "$2" "$N1") a1=0 b0=$(ir "$1" "$2" "$N2") b1=0
  fi
  if [ -z "$a0" ] || [ -z "$a1" ] || [ -z "$b0" ] || [ -z "$b1" ]; then echo failed
  elif [ -n "$QUEUED" ]; then echo "$(( (b0 - a0) / (N2 - N1) ))/$(( (b1 - a1) / (N2 - N1) ))"
  else echo "$(( (b0 - a0) / (N2 - N1) ))"
  fi
}

if [ -n "$QUEUED" ]; then what="queued call, 2 ranks, sender/receiver" w=15; else what="call, a world of one" w=10; fi
echo "# call_cost.sh $(date -Is): instructions per 8-byte $what (work = the working tree's cc.h, $(git -C "$TOP" log -1 --format=%h HEAD))"
printf '%-15s' collective
for n in "${names[@]}"; do printf " %${w}s" "$n"; done
echo
for k in $KINDS; do
  printf '%-15s' "$k"
  for n in "${names[@]}"; do printf " %${w}s" "$(cell "$n" "$k")"; done
  echo
done
