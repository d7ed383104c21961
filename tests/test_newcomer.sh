#!/usr/bin/env bash
# tests/test_newcomer.sh [BUILD_DIR] - a newcomer's first hour holds no trap.
#
#   make run      builds only ccrun and the tour (make -n, into a scratch build
#                 directory: the commands it would run compile those two only)
#   bench flags   cc_bench speaks nccl-tests: all_reduce_perf -b 8 -e 64 -f 2
#                 -o sum -d float measures 8, 16, 32 and 64 bytes (the end size
#                 included); an unknown flag and a bad -o are named in the error
#   README        the README's program, and the common pattern
#                 malloc(n * cc_comm_size(c)), compile with gcc and g++ -O2 -Wall
#                 -Wextra -Werror when the implementation is in the same file
#   no launcher   a plain process is a world of one and says so at INFO;
#                 CC_REQUIRE_LAUNCHER=1 makes it an error naming the fix
#   long wait     a rank 2.5 s late: the waiting rank prints, at 1 s and 2 s
#                 (CC_WARN_AFTER=1), which call waits for which rank and where
#                 the ranks it can see are (shared memory, and TCP); at the
#                 timeout the error and a last line say where every rank is
#   cc_spawn      when a rank fails, cc_spawn says on stderr which rank, how, and
#                 the job's first error
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "FAIL: newcomer: no build directory '${1:-build}'"; exit 1; }
ccrun=$build/ccrun
probe=$build/probes/newcomer_probe
work=$(mktemp -d "${TMPDIR:-/tmp}/cc-test-newcomer.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
pass() { echo "PASS: newcomer: $*"; }
fail() { echo "FAIL: newcomer: $*"; fails=$((fails + 1)); }
clean_env=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT -u CC_JOB_ID
  -u CC_TRANSPORT -u CC_TOKEN -u CC_DEBUG -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u PMI_RANK -u PMI_SIZE
  -u SLURM_PROCID -u SLURM_NTASKS -u CC_REQUIRE_LAUNCHER -u CC_WARN_AFTER -u CC_TIMEOUT)

# --- make run builds only what it runs --------------------------------------------
out=$(cd "$root" && make -n run BUILD="$work/b" 2>&1)
built=$(printf '%s\n' "$out" | grep -oE -- "-o $work/b/[^ ]+" | sed "s|-o $work/b/||" | sort -u | tr '\n' ' ')
if [ "$built" = "cc_impl.o ccrun examples/tour " ]; then
  pass "make run builds only ccrun, examples/tour and the implementation it links"
else
  fail "make run would build: ${built:-nothing} (expected cc_impl.o, ccrun and examples/tour only)"
fi

# --- nccl-tests' flags ---------------------------------------------------------------
if [ -x "$build/all_reduce_perf" ]; then
  out=$("${clean_env[@]}" timeout 60 "$ccrun" -n 2 "$build/all_reduce_perf" -b 8 -e 64 -f 2 -o sum -d float -n 2 -w 1 2>&1)
  sizes=$(printf '%s\n' "$out" | awk '$1 ~ /^[0-9]+$/ && $3 == "float" { print $1 }' | sort -n | uniq | tr '\n' ' ')
  if [ "$sizes" = "8 16 32 64 " ] && printf '%s\n' "$out" | grep -q 'sum'; then
    pass "all_reduce_perf -b 8 -e 64 -f 2 -o sum -d float: sizes $sizes(the end size included)"
  else
    fail "all_reduce_perf -b 8 -e 64 -f 2 -o sum: sizes '$sizes'; output: $(printf '%s\n' "$out" | head -5)"
  fi
  out=$("$build/cc_bench" -Z 2>&1)
  if printf '%s\n' "$out" | grep -q -- '-Z'; then pass "an unknown flag is named: $(printf '%s\n' "$out" | head -1)"
  else fail "cc_bench -Z does not name the flag: $out"; fi
  out=$("$build/cc_bench" -o foo 2>&1)
  if printf '%s\n' "$out" | grep -q "foo" && printf '%s\n' "$out" | grep -q "sum"; then
    pass "a bad reduction op is named, with the ones there are: $(printf '%s\n' "$out" | head -1)"
  else fail "cc_bench -o foo: $out"; fi
else
  fail "$build/all_reduce_perf is not built"
fi

# --- the README's program, and the common pattern, under -O2 -Werror ---------------
sed -n '/^## Usage/,/^```$/p' "$root/README.md" | sed -n '/^```c$/,/^```$/p' | sed '1d;$d' > "$work/readme.c"
cat > "$work/pattern.c" <<'EOF'
#define CC_IMPLEMENTATION
#include "cc.h"
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  cc_comm *c;
  size_t n = 1 << 10, i, size;
  float *in, *all;
  if (cc_comm_init(&c, NULL) != CC_OK) { fprintf(stderr, "%s\n", cc_comm_last_error(NULL)); return 1; }
  size = cc_comm_size(c);
  in = (float *)malloc(n * sizeof(float));
  all = (float *)malloc(n * size * sizeof(float));
  if (!in || !all) return 1;
  for (i = 0; i < n; i++) in[i] = (float)cc_comm_rank(c);
  if (cc_all_gather(c, in, all, n, CC_FLOAT32) != CC_OK) return 1;
  printf("%g\n", all[n * size - 1]);
  free(in);
  free(all);
  return cc_comm_destroy(c);
}
EOF
if [ ! -s "$work/readme.c" ]; then
  fail "no C program under '## Usage' in README.md"
else
  # the four compiles at once (each compiles the whole implementation); the
  # sanitizer runs (CC_TEST_SANITIZER) compile the README's program with gcc
  # only, to run it: the other three are the plain run's, the same commands
  builds=("readme|gcc -x c -std=c99" "readme|g++ -x c++" "pattern|gcc -x c -std=c99" "pattern|g++ -x c++")
  if [ -n "${CC_TEST_SANITIZER:-}" ]; then
    echo "SKIP: newcomer: pattern.c, and readme.c with g++, under -O2 -Werror: the plain run compiles them (the same compilers, no sanitizer)"
    builds=("readme|gcc -x c -std=c99")
  fi
  pids=()
  for i in "${!builds[@]}"; do
    prog=${builds[$i]%%|*} cxx=${builds[$i]#*|}
    # shellcheck disable=SC2086
    $cxx -O2 -Wall -Wextra -Werror -I"$root" -o "$work/$prog.$i" "$work/$prog.c" -pthread -lm 2>"$work/cc.$i.err" &
    pids+=($!)
  done
  for i in "${!builds[@]}"; do
    prog=${builds[$i]%%|*} cxx=${builds[$i]#*|}
    if wait "${pids[$i]}"; then
      pass "$prog.c compiles with $cxx -O2 -Wall -Wextra -Werror"
      [ "$prog" = readme ] && [ ! -x "$work/readme" ] && cp "$work/$prog.$i" "$work/readme"
    else
      fail "$prog.c does not compile with $cxx -O2 -Wall -Wextra -Werror: $(head -3 "$work/cc.$i.err")"
    fi
  done
  if [ -x "$work/readme" ] && out=$("${clean_env[@]}" timeout 30 "$ccrun" -n 2 "$work/readme" 2>&1) &&
     printf '%s\n' "$out" | grep -q 'rank 1 of 2: 2 4 6 1'; then
    pass "the README's program runs under ccrun -n 2 and prints what it should"
  else
    fail "the README's program under ccrun -n 2: $(printf '%s\n' "${out:-}" | head -3)"
  fi
fi

# --- no launcher ----------------------------------------------------------------------
out=$("${clean_env[@]}" CC_DEBUG=INFO timeout 30 "$probe" world 2>&1)
if printf '%s\n' "$out" | grep -q '^size 1$' && printf '%s\n' "$out" | grep -q 'INFO comm_init: no launcher.*world of one'; then
  pass "a plain process is a world of one and says so at INFO"
else
  fail "a plain process: $(printf '%s\n' "$out" | head -3)"
fi
out=$("${clean_env[@]}" CC_REQUIRE_LAUNCHER=1 timeout 30 "$probe" world 2>&1)
if printf '%s\n' "$out" | grep -q '^error: comm_init: no launcher.*CC_REQUIRE_LAUNCHER=1.*ccrun'; then
  pass "CC_REQUIRE_LAUNCHER=1: $(printf '%s\n' "$out" | grep -m1 error: | cut -c1-120)"
else
  fail "CC_REQUIRE_LAUNCHER=1: $(printf '%s\n' "$out" | head -3)"
fi

# --- long waits ------------------------------------------------------------------------
for tr in shm tcp; do
  out=$("${clean_env[@]}" CC_TRANSPORT=$tr CC_WARN_AFTER=1 timeout 60 "$ccrun" --tag-output -n 2 "$probe" late 1 2500 2>&1)
  w1=$(printf '%s\n' "$out" | grep -c '^\[0\] \[cc rank 0\] WARN all_reduce: rank 0: collective #2 has waited [0-9]* s for rank 1')
  where='rank 0 in all_reduce #2, rank 1 in barrier #1'
  [ "$tr" = tcp ] && where='rank 0 in all_reduce #2; 1 rank over TCP not visible from here'
  if [ "$w1" -ge 2 ] && printf '%s\n' "$out" | grep -q '^\[0\] result: CC_OK' &&
     printf '%s\n' "$out" | grep -qF "where the ranks are: $where"; then
    pass "$tr: a rank 2.5 s late: $w1 warnings on the waiting rank ($(printf '%s\n' "$out" | grep -m1 'has waited' | cut -c1-170))"
  else
    fail "$tr: a rank 2.5 s late: $w1 warnings (expected 2 or more, naming the call, rank 1 and where it is); output: $(printf '%s\n' "$out" | head -6)"
  fi
done
out=$("${clean_env[@]}" CC_TIMEOUT=1.5 CC_WARN_AFTER=0 timeout 60 "$ccrun" --tag-output --kill-grace 3000 -n 2 "$probe" late 1 4000 2>&1)
if printf '%s\n' "$out" | grep -q '^\[0\] result: CC_ERR_TIMEOUT: all_reduce: rank 0: waited 1.5 s for rank 1 (timeout; rank 0 in all_reduce #2, rank 1 in barrier #1)' &&
   ! printf '%s\n' "$out" | grep -q 'has waited'; then
  pass "at the timeout the error says where every rank is ($(printf '%s\n' "$out" | grep -m1 '^\[0\] result' | cut -c1-160))"
else
  fail "timeout summary: $(printf '%s\n' "$out" | grep -E 'result|timeout' | head -4)"
fi

# --- cc_spawn's failure summary ----------------------------------------------------------
out=$("${clean_env[@]}" timeout 60 "$probe" spawn_fail 2>&1)
if printf '%s\n' "$out" | grep -qE '^cc_spawn: rank [0-2] \(pid [0-9]+\) exited with status [34]; the job.s first error: rank 1 called cc_comm_abort' &&
   printf '%s\n' "$out" | grep -qE '^spawn: [34]$'; then
  pass "cc_spawn names the failed rank and the job's first error on stderr ($(printf '%s\n' "$out" | grep -m1 '^cc_spawn' | cut -c1-150))"
else
  fail "cc_spawn's summary: $(printf '%s\n' "$out" | head -4)"
fi

echo "newcomer: $fails failed"
[ "$fails" -eq 0 ]
