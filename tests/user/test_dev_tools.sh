#!/usr/bin/env bash
# tests/user/test_dev_tools.sh [BUILD_DIR] - the tools of dev/ (dev/README.md) run
# as their README shows them, each on the smallest workload, against HEAD's
# cc.h, and produce their tables:
#   before_after.sh  SUMMARY.txt has a before and an after time for 2-rank
#                    all_reduce, and their ratio; an unknown revision is
#                    refused (status 2, naming it)
#   same_pair.sh     a row per collective with a time per build
#   call_cost.sh     instructions per call of each build (needs valgrind)
#   integrity_cost.sh  the three settings' medians, no wrong result
# Compiled at -O0 (DEV_CFLAGS), everything under a temporary BUILD; BUILD_DIR
# gives only cc_bench for integrity_cost.sh. The whole file is a SKIP under
# CC_TEST_QUICK=1 (the sanitizer runs) and outside a git checkout.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "FAIL: dev: no build directory '${1:-build}'"; exit 1; }
if [ "${CC_TEST_QUICK:-0}" = 1 ]; then
  echo "SKIP: dev: the tools of dev/ (CC_TEST_QUICK=1: they build cc.h twice each, with no sanitizer)"
  exit 0
fi
if ! git -C "$root" rev-parse --verify -q HEAD:cc.h >/dev/null 2>&1; then
  echo "SKIP: dev: not a git checkout with a commit: the tools compare revisions of cc.h"
  exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cc-dev.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0
pass() { echo "PASS: dev: $*"; }
fail() { echo "FAIL: dev: $*"; status=1; }
show() { printf '%s\n' "$1" | tail -n "${2:-8}" | sed 's/^/    /'; }

export BUILD=$tmp/build DEV_CFLAGS=-O0 PASSES=1
unset RESULTS ONLY KINDS BENCH_ARGS CC_TOKEN CC_TRANSPORT 2>/dev/null
mkdir -p "$BUILD"
if ! out=$(env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$root" BUILD="$BUILD" "$BUILD/ccrun" "$BUILD/peers/c2c_latency" 2>&1); then
  fail "could not build ccrun and c2c_latency into $BUILD:"
  show "$out"
  exit 1
fi

# before_after.sh
out=$(ONLY=shm_np2 RESULTS=$tmp/ba BENCH_ARGS="-k all_reduce,barrier -e 64 -s 8 -l 0 -n 2 -w 1" \
      timeout 300 bash "$root/dev/before_after.sh" HEAD 2>&1)
st=$?
if [ "$st" -eq 0 ] && grep -qE '^shm_np2 +all_reduce +lat_us@min +[0-9.]+ \([0-9.]+\) +[0-9.]+ \([0-9.]+\) +[0-9.]+' "$tmp/ba/SUMMARY.txt" 2>/dev/null &&
   grep -q '^# before_after.sh .*before = cc.h of HEAD' "$tmp/ba/SUMMARY.txt"; then
  pass "before_after.sh HEAD: 2-rank all_reduce before, after and their ratio"
else
  fail "before_after.sh HEAD: status $st, SUMMARY.txt without the all_reduce row:"
  show "$out"
fi
out=$(timeout 60 bash "$root/dev/before_after.sh" no-such-revision 2>&1)
st=$?
if [ "$st" -eq 2 ] && printf '%s' "$out" | grep -q "no cc.h at no-such-revision"; then
  pass "before_after.sh refuses a revision that does not exist, naming it"
else
  fail "before_after.sh no-such-revision: status $st (expected 2), output: $out"
fi

# same_pair.sh
out=$(KINDS=all_reduce,barrier ROUNDS=2 CALLS=50 RESULTS=$tmp/sp.txt timeout 300 bash "$root/dev/same_pair.sh" HEAD 2>&1)
st=$?
if [ "$st" -eq 0 ] && grep -qE '^all_reduce +[0-9.]+ \[[0-9.-]+\] +[0-9.]+ \[[0-9.-]+\]$' "$tmp/sp.txt" 2>/dev/null &&
   grep -qE '^barrier +[0-9.]+ ' "$tmp/sp.txt"; then
  pass "same_pair.sh HEAD: all_reduce and barrier timed for HEAD's build and the working tree's"
else
  fail "same_pair.sh HEAD: status $st, no all_reduce row with two times:"
  show "$out"
fi

# call_cost.sh
if ! command -v valgrind >/dev/null; then
  echo "SKIP: dev: call_cost.sh needs valgrind (Debian's valgrind)"
else
  out=$(KINDS=barrier N1=10 N2=20 timeout 300 bash "$root/dev/call_cost.sh" HEAD 2>&1)
  st=$?
  if [ "$st" -eq 0 ] && printf '%s\n' "$out" | grep -qE '^barrier +[1-9][0-9]* +[1-9][0-9]*$'; then
    pass "call_cost.sh HEAD: instructions per barrier of both builds"
  else
    fail "call_cost.sh HEAD: status $st, no barrier row with two counts:"
    show "$out"
  fi
fi

# integrity_cost.sh
if [ ! -x "$build/cc_bench" ]; then
  fail "integrity_cost.sh: $build/cc_bench is missing (run make)"
else
  ln -s "$build/cc_bench" "$BUILD/cc_bench"
  out=$(BENCH_ARGS="-b 8 -e 8 -s 1M -l 0 -n 3 -w 1" timeout 300 bash "$root/dev/integrity_cost.sh" 1 2>&1)
  st=$?
  ok=1
  for mode in off mac encrypt; do
    printf '%s\n' "$out" | grep -qE "^  $mode  8: [0-9.]+ \([0-9]+%\)  1048576: [0-9.]+ \([0-9]+%\)" || ok=0
  done
  if [ "$st" -eq 0 ] && [ "$ok" = 1 ] && ! printf '%s' "$out" | grep -q 'WRONG'; then
    pass "integrity_cost.sh 1: no token, token and encryption side by side, every result right"
  else
    fail "integrity_cost.sh 1: status $st:"
    show "$out" 12
  fi
fi
exit $status
