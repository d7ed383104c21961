#!/usr/bin/env bash
# tests/user/test_bench.sh [BUILD_DIR] - bench/compare.sh and bench/targets.py as
# bench/README.md shows them, on the smallest workload and cc's own
# configurations only (the peers' packages are not needed):
#   1. compare.sh with ONLY="cc_shm_np2 ccmem_shm_np2 cc_tcp_np2 ccopen_tcp_np2"
#      and PASSES=2 writes results.tsv (every configuration in both passes,
#      0 wrong), SUMMARY.txt and machine.txt, points build/compare/latest at
#      the run, and exits 0;
#   2. SUMMARY_ONLY=1 RESULTS=DIR bash bench/compare.sh rebuilds the same
#      results.tsv from the runs;
#   3. targets.py on the run (build/compare/latest) gives cc's figures, and no
#      row of what the run did not measure; with Open MPI, a ratio against it.
#   4. `make bench` (nccl-tests' all_reduce_perf sweep over 2 ranks) ends
#      with its 64 MiB row, nothing wrong.
# Where Open MPI's mpirun and mpi.h are installed (Debian: openmpi-bin
# libopenmpi-dev), openmpi_shm_np2 runs too; else a SKIP line says so.
# Under a temporary BUILD; ccrun and cc_bench are BUILD_DIR's. SKIP under
# CC_TEST_QUICK=1 (the sanitizer runs: compare.sh builds its probes without).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "FAIL: bench: no build directory '${1:-build}'"; exit 1; }
if [ "${CC_TEST_QUICK:-0}" = 1 ]; then
  echo "SKIP: bench: compare.sh (CC_TEST_QUICK=1)"
  exit 0
fi
for f in ccrun cc_bench; do
  [ -x "$build/$f" ] || { echo "FAIL: bench: $build/$f is missing (run make)"; exit 1; }
done
if ! /usr/bin/python3 -c '' 2>/dev/null; then
  echo "SKIP: bench: compare.sh reads its runs with /usr/bin/python3, which is missing"
  exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cc-bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0
pass() { echo "PASS: bench: $*"; }
fail() { echo "FAIL: bench: $*"; status=1; }

# ccrun and cc_bench from BUILD_DIR (make finds them up to date); the probes are built
mkdir -p "$tmp/build"
ln -s "$build/ccrun" "$tmp/build/ccrun"
ln -s "$build/cc_bench" "$tmp/build/cc_bench"
run=$tmp/run
configs="cc_shm_np2 ccmem_shm_np2 cc_tcp_np2 ccopen_tcp_np2"
ompi=0
if command -v mpirun.openmpi >/dev/null && echo '#include <mpi.h>' | mpicc.openmpi -x c -E - >/dev/null 2>&1; then
  configs="$configs openmpi_shm_np2"
  ompi=1
else
  echo "SKIP: bench: compare.sh with openmpi_shm_np2: Open MPI's mpirun.openmpi or mpi.h is missing (Debian: openmpi-bin libopenmpi-dev)"
fi
out=$(env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u CC_TOKEN -u CC_TRANSPORT BUILD="$tmp/build" RESULTS="$run" \
      ONLY="$configs" PASSES=2 TIMEOUT=120 BENCH_ARGS="-k all_reduce,broadcast,barrier -e 64 -s 8 -l 0 -n 2 -w 1" \
      timeout 280 bash "$root/bench/compare.sh" 2>&1)
st=$?
tsv=$run/results.tsv
if [ "$st" -ne 0 ] || [ ! -f "$tsv" ]; then
  fail "compare.sh ONLY=\"$configs\" PASSES=2: status $st, results.tsv $( [ -f "$tsv" ] && echo there || echo missing):"
  printf '%s\n' "$out" | tail -n 12 | sed 's/^/    /'
  exit 1
fi
missing=""
for c in $configs; do
  for p in 1 2; do
    awk -F'\t' -v c="$c" -v p="$p" '$1 == p && $2 == c && $3 == "all_reduce" && $4 == 64 { f = 1 } END { exit !f }' "$tsv" ||
      missing="$missing $c/pass$p"
  done
done
wrong=$(awk -F'\t' 'NR > 1 && ($10 != 0 || $14 != 0)' "$tsv" | wc -l)
if [ -z "$missing" ] && [ "$wrong" -eq 0 ] && [ -s "$run/SUMMARY.txt" ] && grep -q '^# c2c: ' "$run/machine.txt" &&
   [ "$(readlink "$tmp/build/compare/latest")" = "$run" ]; then
  pass "compare.sh ONLY=\"$configs\", 2 passes: results.tsv, SUMMARY.txt, machine.txt, build/compare/latest; 0 wrong"
else
  fail "compare.sh: missing rows:${missing:- none}; $wrong rows wrong or failed; latest -> $(readlink "$tmp/build/compare/latest")"
fi

cp "$tsv" "$tmp/first.tsv"
rm -f "$tsv" "$run/SUMMARY.txt"
out=$(RESULTS="$run" ONLY="$configs" SUMMARY_ONLY=1 BUILD="$tmp/build" bash "$root/bench/compare.sh" 2>&1)
st=$?
if [ "$st" -eq 0 ] && cmp -s "$tsv" "$tmp/first.tsv" && [ -s "$run/SUMMARY.txt" ]; then
  pass "SUMMARY_ONLY=1 RESULTS=DIR bash bench/compare.sh rebuilds the same results.tsv and SUMMARY.txt"
else
  fail "SUMMARY_ONLY=1: status $st; results.tsv $(cmp -s "$tsv" "$tmp/first.tsv" && echo same || echo differs)"
fi

py=$(command -v python3 || echo /usr/bin/python3)
out=$("$py" "$root/bench/targets.py" "$tmp/build/compare/latest" 2>&1)
if [ "$ompi" = 1 ]; then want='^\| all_reduce 8 B \(µs\) \| [0-9.]+ \| [0-9.]+ \| - \| - \|$'; else want='^\| all_reduce 8 B \(µs\) \| [0-9.]+ \| - \| - \| - \|$'; fi
if printf '%s\n' "$out" | grep -qE "$want" &&
   printf '%s\n' "$out" | grep -qE '^\| \*\*TCP over loopback, 2 ranks, without a token\*\* \|' &&
   ! printf '%s\n' "$out" | grep -qE '16 MiB|cc_mem_alloc all_reduce|4 ranks' &&
   printf '%s\n' "$out" | grep -qE '^c2c fingerprint of .*latest'; then
  pass "targets.py build/compare/latest: cc's figures$([ "$ompi" = 1 ] && echo ", the ratio against Open MPI"), no row of what was not measured"
else
  fail "targets.py build/compare/latest:"
  printf '%s\n' "$out" | head -n 20 | sed 's/^/    /'
fi
out=$(env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u CC_TOKEN -u CC_TRANSPORT timeout 200 \
      make -s -C "$root" --no-print-directory BUILD="$tmp/build" bench 2>&1)
st=$?
if [ "$st" -eq 0 ] && printf '%s\n' "$out" | grep -qE '^ +67108864 +16777216 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 ' &&
   printf '%s\n' "$out" | grep -q '^# Out of bounds values : 0 OK'; then
  pass "make bench: all_reduce_perf over 2 ranks, 8 B to 64 MiB, nothing wrong"
else
  fail "make bench: status $st:"
  printf '%s\n' "$out" | tail -n 8 | sed 's/^/    /'
fi
exit $status
