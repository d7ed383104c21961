#!/usr/bin/env bash
# tests/user/test_plot.sh [BUILD_DIR] - `make plot` as bench/README.md and
# docs/performance.md show it, in a copy of the repository's plot files (the
# Makefile, bench/plot.py, bench/results, docs/perf.png) with no build folder,
# as a fresh clone has:
#   1. `make plot` draws the committed results (bench/results) into
#      build/perf.png and says so; docs/perf.png is left as it was;
#   2. `make plot RESULTS=DIR` draws DIR's run into build/perf.png, not into
#      docs/perf.png;
#   3. with a compare.sh run in build/compare/latest, `make plot` draws that;
#   4. `make plot OUT=docs/perf.png` writes docs/perf.png from the committed
#      results, even with build/compare/latest there;
#   5. bench/plot.py with a folder that holds no results.tsv exits 2 naming it.
# 1-4 need matplotlib in python3 or /usr/bin/python3 (Debian's
# python3-matplotlib): without it, `make plot` must fail saying so, and 1-4 are
# SKIP lines. BUILD_DIR is not used: everything happens in a temporary copy.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cc-plot.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0
pass() { echo "PASS: plot: $*"; }
fail() { echo "FAIL: plot: $*"; status=1; }
skip() { echo "SKIP: plot: $*"; }

# the copy: a fresh clone's plot files, nothing else
repo=$tmp/repo
mkdir -p "$repo"
( cd "$root" && { git ls-files Makefile bench/plot.py bench/results docs/perf.png 2>/dev/null ||
    { echo Makefile; echo bench/plot.py; echo docs/perf.png; find bench/results -type f; }; } |
  while IFS= read -r f; do mkdir -p "$repo/$(dirname "$f")" && cp "$f" "$repo/$f"; done )
[ -f "$repo/Makefile" ] && [ -f "$repo/bench/results/shm/results.tsv" ] && [ -f "$repo/docs/perf.png" ] ||
  { fail "could not copy the Makefile, bench/results/shm/results.tsv and docs/perf.png into $repo"; exit 1; }
cp "$repo/docs/perf.png" "$tmp/perf.orig.png"

# mk ARGS... - make in the copy, alone (not as a sub-make of the suite's make)
mk() { env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u RESULTS -u OUT -u BUILD -u CFLAGS make -C "$repo" --no-print-directory "$@" 2>&1; }
png() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' \n')" = '211PNG' ]; }
docs_unchanged() { cmp -s "$repo/docs/perf.png" "$tmp/perf.orig.png"; }

# a made-up run: two configurations, two passes, two sizes, a barrier
made=$tmp/run
mkdir -p "$made"
{
  printf 'pass\tconfig\tcollective\tbytes\tcount\tinplace\ttime_us\talgbw\tbusbw\twrong\titers\tc2c_before\tc2c_after\trc\n'
  for p in 1 2; do
    for c in cc_shm_np2 openmpi_shm_np2; do
      printf '%s\t%s\tall_reduce\t1024\t256\t0\t1\t1\t1.%s\t0\t9\t80\t80\t0\n' "$p" "$c" "$p"
      printf '%s\t%s\tall_reduce\t1048576\t262144\t0\t100\t10\t9.%s\t0\t9\t80\t80\t0\n' "$p" "$c" "$p"
      printf '%s\t%s\tbarrier\t0\t0\t0\t0.3\t0\t0\t0\t9\t80\t80\t0\n' "$p" "$c"
    done
  done
} >"$made/results.tsv"

# 5. no results
py=python3
command -v "$py" >/dev/null 2>&1 || py=/usr/bin/python3
out=$("$py" "$root/bench/plot.py" -o "$tmp/x.png" "$tmp/nothing" 2>&1)
st=$?
if [ "$st" -eq 2 ] && printf '%s' "$out" | grep -q "no $tmp/nothing/results.tsv" && [ ! -e "$tmp/x.png" ]; then
  pass "plot.py with a folder without results.tsv exits 2 and names it"
else
  fail "plot.py with a folder without results.tsv: status $st (expected 2), output: $out"
fi

have=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import matplotlib' >/dev/null 2>&1; then have=$p; break; fi
done
if [ -z "$have" ]; then
  out=$(mk plot)
  st=$?
  if [ "$st" -ne 0 ] && printf '%s' "$out" | grep -q "needs matplotlib" && [ ! -e "$repo/build/perf.png" ] && docs_unchanged; then
    pass "without matplotlib, make plot fails saying it needs matplotlib, and writes nothing"
  else
    fail "without matplotlib, make plot: status $st, output: $(printf '%s' "$out" | tail -n 3)"
  fi
  skip "make plot's drawings: no python3 or /usr/bin/python3 imports matplotlib (Debian: apt-get install python3-matplotlib)"
  exit $status
fi

# 1. a fresh clone: the committed results, into build/perf.png
out=$(mk plot)
st=$?
if [ "$st" -eq 0 ] && png "$repo/build/perf.png" && docs_unchanged &&
   printf '%s' "$out" | grep -q "wrote build/perf.png from bench/results/shm/results.tsv"; then
  pass "make plot on a fresh clone draws the committed results into build/perf.png and says so; docs/perf.png unchanged"
else
  fail "make plot on a fresh clone: status $st; build/perf.png $(png "$repo/build/perf.png" && echo is || echo is not) a PNG; docs/perf.png $(docs_unchanged && echo unchanged || echo CHANGED); output: $(printf '%s' "$out" | tail -n 3)"
fi

# 2. RESULTS= draws that run, into build/
rm -f "$repo/build/perf.png"
out=$(mk plot RESULTS="$made")
st=$?
if [ "$st" -eq 0 ] && png "$repo/build/perf.png" && docs_unchanged &&
   printf '%s' "$out" | grep -q "wrote build/perf.png from $made/results.tsv (2 configurations, 2 passes)"; then
  pass "make plot RESULTS=DIR draws DIR's run into build/perf.png; docs/perf.png unchanged"
else
  fail "make plot RESULTS=DIR: status $st; docs/perf.png $(docs_unchanged && echo unchanged || echo CHANGED); output: $(printf '%s' "$out" | tail -n 3)"
fi

# 3. the latest compare.sh run, when there is one
mkdir -p "$repo/build/compare"
cp -r "$made" "$repo/build/compare/latest"
rm -f "$repo/build/perf.png"
out=$(mk plot)
st=$?
if [ "$st" -eq 0 ] && png "$repo/build/perf.png" && docs_unchanged &&
   printf '%s' "$out" | grep -q "wrote build/perf.png from build/compare/latest/results.tsv"; then
  pass "make plot after a compare.sh run draws build/compare/latest"
else
  fail "make plot with build/compare/latest: status $st; output: $(printf '%s' "$out" | tail -n 3)"
fi

# 4. the documentation's plot, when asked for
rm -f "$repo/docs/perf.png"
out=$(mk plot OUT=docs/perf.png)
st=$?
if [ "$st" -eq 0 ] && png "$repo/docs/perf.png" &&
   printf '%s' "$out" | grep -q "wrote docs/perf.png from bench/results/shm/results.tsv bench/results/tcp/results.tsv"; then
  pass "make plot OUT=docs/perf.png draws the committed results into docs/perf.png (build/compare/latest there or not)"
else
  fail "make plot OUT=docs/perf.png: status $st; output: $(printf '%s' "$out" | tail -n 3)"
fi
exit $status
