#!/usr/bin/env bash
# tests/transport/test_arena_shapes.sh BUILD - the collectives suite again with
# the arena's schedules pushed to their other shapes: every call through the
# arena (no cross-memory attach, no queued calls) in 16 KiB stages, so that a
# large call takes hundreds of phases and every block runs out at a different
# phase; then every reduction by blocks (CC_SMALL_BYTES=0: reduce-scatter,
# then the gather of the blocks) however small; then every staging chosen by
# measuring (CC_STREAM_BYTES=0) with a try of the other kind of store at every
# chance (CC_SHM_TUNE_FIRST=CC_SHM_TUNE_MOST=1, CC_SHM_TUNE_GAIN=0), so that the
# calls that move data stage with plain and streaming stores by turns. Their
# PASS/FAIL lines are relayed with "arena.stages.", "arena.blocks." or
# "arena.stores." in front of the name.
set -u
build=${1:-build}
status=0
run() {   # run PREFIX ENV...
  local prefix=$1 out st
  shift
  out=$(env "$@" timeout 280 "$build/tests/test_collectives" 2>&1)
  st=$?
  printf '%s\n' "$out" | sed -n -E "s/^(PASS|FAIL|SKIP): /\\1: $prefix./p"
  if [ "$st" -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^FAIL: '; then
    echo "FAIL: $prefix: test_collectives exited with status $st"
    printf '%s\n' "$out" | tail -n 5
  fi
  [ "$st" -eq 0 ] || status=1
}
if [ ! -x "$build/tests/test_collectives" ]; then
  echo "FAIL: arena: $build/tests/test_collectives is not built"
  exit 1
fi
run arena.stages CC_SHM_CHUNK=16384 CC_SHM_CMA=0 CC_SHM_QUEUE_BYTES=0
run arena.blocks CC_SMALL_BYTES=0 CC_SHM_CMA=0
run arena.stores CC_STREAM_BYTES=0 CC_SHM_TUNE_FIRST=1 CC_SHM_TUNE_MOST=1 CC_SHM_TUNE_GAIN=0 CC_SHM_CMA=0 \
  CC_SHM_QUEUE_BYTES=0 CC_SHM_CHUNK=16384
exit $status
