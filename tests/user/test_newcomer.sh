#!/usr/bin/env bash
# tests/user/test_newcomer.sh [BUILD_DIR] - a newcomer's first hour holds no trap.
#
#   make run      builds only ccrun and the tour (make -n, into a scratch build
#                 directory: the commands it would run compile those two only)
#   bench flags   cc_bench speaks nccl-tests: all_reduce_perf -b 8 -e 64 -f 2
#                 -o sum -d float measures 8, 16, 32 and 64 bytes (the end size
#                 included); an unknown flag and a bad -o are named in the error
#   README        the README's program, and the common pattern
#                 malloc(n * cc_comm_size(c)), compile with gcc and g++ -O2 -Wall
#                 -Wextra -Werror when the implementation is in the same file
#   build line    the README's own build line (cc ... -pthread, nothing else),
#                 taken from README.md, with gcc and clang: links and runs
#   no launcher   a plain process is a world of one and says so in one line on
#                 stderr (WORLD_SIZE=1: asked for, silent); CC_REQUIRE_LAUNCHER=1
#                 makes it an error naming the fix
#   long wait     a rank 2.5 s late: the waiting rank prints, at 1 s and 2 s
#                 (CC_WARN_AFTER=1), which call waits for which rank and where
#                 the ranks it can see are (shared memory, and TCP); at the
#                 timeout the error and a last line say where every rank is
#   cc_spawn      when a rank fails, cc_spawn says on stderr which rank, how, and
#                 the job's first error; workers may destroy their communicator
#   leaving       a mismatched call then every rank leaving is a mismatch, never
#                 a lost rank: shared memory, TCP, and 2 hosts x 2 ranks
#   p2p waits     name the receive and the messages from its peer that no
#                 receive took (shm, TCP)
#   start-up      one host of two started alone: its ranks say whom they wait
#                 for and where, at CC_WARN_AFTER and twice that
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.bash
. "$here/../lib.bash"
root=$(cd "$here/../.." && pwd)
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

# --- make check is make test-full, make sanitize and make tsan, in that order --------
out=$(sed -n '/^check:/,/^$/p' "$root/Makefile" | grep -oE '\$\(MAKE\) (test-full|sanitize|tsan)$' | grep -oE '[a-z-]+$' | tr '\n' ' ')
if [ "$out" = "test-full sanitize tsan " ]; then
  pass "make check runs make test-full, make sanitize and make tsan, in that order (what CI runs, .ci/run)"
else
  fail "make check would run: '${out}' (expected test-full sanitize tsan)"
fi
if grep -qE '^phase test [0-9]+ -- test-full$' "$root/.ci/run" && grep -qE '^phase sanitize [0-9]+ CC_TEST_QUICK=1 -- sanitize$' "$root/.ci/run" &&
   grep -qE '^phase tsan [0-9]+ CC_TEST_QUICK=1 -- tsan$' "$root/.ci/run"; then
  pass ".ci/run's phases are make check's three suites"
else
  fail ".ci/run's phases are not make check's: $(grep -E '^phase ' "$root/.ci/run" | tr '\n' ';')"
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
elif [ "${CC_TEST_TIER:-}" = quick ]; then
  echo "SKIP: newcomer: readme.c and pattern.c under -O2 -Wall -Wextra -Werror with gcc and g++: the quick tier builds and runs the README's program with its own build line only (make check builds these)"
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
    $cxx -O2 -Wall -Wextra -Werror -I"$root" -o "$work/$prog.$i" "$work/$prog.c" -pthread 2>"$work/cc.$i.err" &
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

# --- the README's build line, taken from README.md, with gcc and clang ----------------
# The line under the program in "## Usage" (cc ... prog.c -pthread && .../ccrun -n 4
# ./prog), run as it stands in a folder holding the program as prog.c, with
# path/to/cc this repository and cc each compiler: it must link with nothing but
# -pthread (libc and pthreads only) and print every rank's sums.
line=$(sed -n '/^## Usage/,/^## /p' "$root/README.md" | sed -n '/^```sh$/,/^```$/p' | grep -m1 -E '^cc .*prog\.c')
if [ -z "$line" ] || [ ! -s "$work/readme.c" ]; then
  fail "no build line (cc ... prog.c ...) or no program under '## Usage' in README.md"
else
  comps="gcc clang"
  [ -n "${CC_TEST_SANITIZER:-}" ] || [ "${CC_TEST_TIER:-}" = quick ] && comps=gcc
  for comp in $comps; do
    if ! command -v "$comp" >/dev/null; then echo "SKIP: newcomer: README build line: $comp is not installed"; continue; fi
    d=$work/line-$comp
    mkdir -p "$d" && cp "$work/readme.c" "$d/prog.c"
    cmd=${line//path\/to\/cc/$root}
    cmd="$comp ${cmd#cc }"
    out=$(cd "$d" && "${clean_env[@]}" timeout 120 bash -c "$cmd" 2>&1)
    n=$(printf '%s\n' "$out" | grep -cE '^rank [0-3] of 4: 4 8 12 6$')
    if [ "$n" -eq 4 ]; then
      pass "README's build line with $comp ($(printf '%s' "$line" | cut -c1-60)...) links and its 4 ranks print their sums"
    else
      fail "README's build line with $comp: $cmd: $(printf '%s\n' "$out" | head -4)"
    fi
  done
fi

# --- no launcher ----------------------------------------------------------------------
out=$("${clean_env[@]}" timeout 30 "$probe" world 2>"$work/alone.err")
err=$(cat "$work/alone.err")
if [ "$out" = "size 1" ] && [ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ] &&
   printf '%s\n' "$err" | grep -q 'comm_init: no launcher.*world of one rank.*ccrun -n N .*newcomer_probe.*cc_spawn.*WORLD_SIZE=1'; then
  pass "a plain process is a world of one and says so in one line on stderr: $(printf '%s' "$err" | cut -c1-120)..."
else
  fail "a plain process: stdout '$out', stderr: $(printf '%s\n' "$err" | head -3)"
fi
for asked in "WORLD_SIZE=1" "RANK=0 WORLD_SIZE=1"; do
  out=$("${clean_env[@]}" $asked timeout 30 "$probe" world 2>"$work/alone.err")
  if [ "$out" = "size 1" ] && [ ! -s "$work/alone.err" ]; then
    pass "$asked: a world of one, asked for, without a word"
  else
    fail "$asked: stdout '$out', stderr: $(head -3 "$work/alone.err")"
  fi
done
out=$("${clean_env[@]}" CC_REQUIRE_LAUNCHER=1 timeout 30 "$probe" world 2>&1)
if printf '%s\n' "$out" | grep -q '^error: comm_init: no launcher.*CC_REQUIRE_LAUNCHER=1.*ccrun'; then
  pass "CC_REQUIRE_LAUNCHER=1: $(printf '%s\n' "$out" | grep -m1 error: | cut -c1-120)"
else
  fail "CC_REQUIRE_LAUNCHER=1: $(printf '%s\n' "$out" | head -3)"
fi

# --- long waits ------------------------------------------------------------------------
if cc_full_only "newcomer: long waits (a late rank, shm and TCP; the timeout's summary)"; then
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

fi  # cc_full_only

# --- cc_spawn's failure summary ----------------------------------------------------------
out=$("${clean_env[@]}" timeout 60 "$probe" spawn_fail 2>&1)
if printf '%s\n' "$out" | grep -qE '^cc_spawn: rank [0-2] \(pid [0-9]+\) exited with status [34]; the job.s first error: rank 1 called cc_comm_abort' &&
   printf '%s\n' "$out" | grep -qE '^spawn: [34]$'; then
  pass "cc_spawn names the failed rank and the job's first error on stderr ($(printf '%s\n' "$out" | grep -m1 '^cc_spawn' | cut -c1-150))"
else
  fail "cc_spawn's summary: $(printf '%s\n' "$out" | head -4)"
fi

# --- cc_spawn's workers may destroy their communicator, as main() does ----------------
ok=0
for i in 1 2 3 4 5; do
  out=$("${clean_env[@]}" timeout 60 "$probe" spawn_destroy 2>&1)
  [ "$out" = "spawn: 0" ] && ok=$((ok + 1))
done
if [ "$ok" -eq 5 ]; then
  pass "cc_spawn workers that end with 'return cc_comm_destroy(c);': 5 runs of 5 return 0, no crash"
else
  fail "cc_spawn workers that destroy their communicator: $ok runs of 5 returned 0; last: $(printf '%s\n' "$out" | head -3)"
fi

# --- a mismatched call, then every rank leaves: a mismatch, never "left" ---------------
# rank_line OUT RANK LABEL - the line "[RANK] LABEL: ..." of a --tag-output run
rank_line() { printf '%s\n' "$1" | sed -n "s/^\[$2\] $3: //p" | head -n 1; }
for tr in shm tcp; do
  out=$("${clean_env[@]}" CC_TRANSPORT=$tr CC_TIMEOUT=20 timeout 60 "$ccrun" --tag-output -n 4 "$probe" leave coll 2>&1)
  bad=""
  for r in 1 2 3; do
    l=$(rank_line "$out" $r call)
    case $l in CC_ERR_MISMATCH:*broadcast*all_reduce* | CC_ERR_MISMATCH:*all_reduce*broadcast*) ;; *) bad="$bad rank $r: '$l';" ;; esac
  done
  if [ -z "$bad" ] && ! printf '%s\n' "$out" | grep -q 'PEER_LOST'; then
    pass "$tr: rank 0's queued broadcast against the others' all_reduce, then all leave: ranks 1-3 get CC_ERR_MISMATCH naming both calls ($(rank_line "$out" 1 call | cut -c1-130))"
  else
    fail "$tr: broadcast against all_reduce, then all leave:$bad output: $(printf '%s\n' "$out" | head -8)"
  fi
  out=$("${clean_env[@]}" CC_TRANSPORT=$tr CC_TIMEOUT=20 timeout 60 "$ccrun" --tag-output -n 4 "$probe" leave root 2>&1)
  l=$(rank_line "$out" 3 call)
  case $l in
    CC_ERR_MISMATCH:*"root 1"*"root 0"* | CC_ERR_MISMATCH:*"root 0"*"root 1"*)
      pass "$tr: rank 3 broadcasts from root 1, the others from root 0, then all leave: rank 3 gets CC_ERR_MISMATCH naming both roots ($(printf '%s' "$l" | cut -c1-130))" ;;
    *) fail "$tr: two roots, then all leave: rank 3: '$l'; output: $(printf '%s\n' "$out" | head -8)" ;;
  esac
done
# the leaving rank's own destroy, where it can see the others' calls (one host)
out=$("${clean_env[@]}" CC_TIMEOUT=20 timeout 60 "$ccrun" --tag-output -n 4 "$probe" leave coll 300 2>&1)
l=$(rank_line "$out" 0 destroy)
case $l in
  CC_ERR_MISMATCH:*comm_destroy*all_reduce*broadcast*)
    pass "the rank that left with the mismatched call gets it from cc_comm_destroy ($(printf '%s' "$l" | cut -c1-130))" ;;
  *) fail "rank 0's cc_comm_destroy after its mismatched broadcast: '$l'; output: $(printf '%s\n' "$out" | head -8)" ;;
esac
# two hosts of two ranks: host 1 in an IPC namespace of its own, so that the
# ranks of the two ccruns take each other for other hosts (TCP between them,
# shared memory within each): the hierarchical run
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null && unshare -i true 2>/dev/null; then
  for kind in coll root; do
    port=$(cc_free_port)
    tok=$("$ccrun" --make-token)
    ( "${clean_env[@]}" CC_TOKEN=$tok CC_TIMEOUT=20 timeout 60 "$ccrun" --tag-output --nnodes 2 --node-rank 0 \
        --master-addr 127.0.0.1 --master-port "$port" -n 2 "$probe" leave $kind >"$work/h0.out" 2>&1 ) &
    h0=$!
    "${clean_env[@]}" CC_TOKEN=$tok CC_TIMEOUT=20 timeout 60 unshare -i "$ccrun" --tag-output --nnodes 2 --node-rank 1 \
      --master-addr 127.0.0.1 --master-port "$port" -n 2 "$probe" leave $kind >"$work/h1.out" 2>&1
    wait "$h0"
    out=$(cat "$work/h0.out" "$work/h1.out")
    want="1 2 3"; [ $kind = root ] && want=3
    bad=""
    for r in $want; do
      l=$(rank_line "$out" $r call)
      case $l in CC_ERR_MISMATCH:*) ;; *) bad="$bad rank $r: '$l';" ;; esac
    done
    for r in 0 1 2 3; do
      l=$(rank_line "$out" $r call)
      case $l in CC_OK | CC_ERR_MISMATCH:*) ;; *) bad="$bad rank $r: '$l';" ;; esac
    done
    if [ -z "$bad" ]; then
      pass "2 hosts x 2 ranks, leave $kind: CC_ERR_MISMATCH where the calls differ, never a loss ($(rank_line "$out" 3 call | cut -c1-120))"
    else
      fail "2 hosts x 2 ranks, leave $kind:$bad output: $(printf '%s\n' "$out" | head -8)"
    fi
  done
else
  echo "SKIP: newcomer: leave across hosts: needs root and unshare -i (an IPC namespace makes a second host)"
fi

# --- a point-to-point wait says which receive waits, and what came instead --------------
if cc_full_only "newcomer: p2p waits (shm and TCP)"; then
for tr in shm tcp; do
  out=$("${clean_env[@]}" CC_TRANSPORT=$tr CC_WARN_AFTER=1 CC_TIMEOUT=2.5 timeout 60 "$ccrun" --tag-output --kill-grace 5000 -n 2 "$probe" p2p_tag 2>&1)
  w=$(printf '%s\n' "$out" | grep -c '^\[1\] \[cc rank 1\] WARN recv: rank 1: the receive of 4 bytes from rank 0 with tag 5 has waited [0-9] s (the timeout is 2.5 s); from rank 0, messages no receive took: tag 0 (4 bytes)$')
  if [ "$w" -ge 2 ] && printf '%s\n' "$out" | grep -q '^\[1\] result: CC_ERR_TIMEOUT: recv: rank 1: waited 2.5 s for the receive of 4 bytes from rank 0 with tag 5 (timeout); from rank 0, messages no receive took: tag 0 (4 bytes)' &&
     ! printf '%s\n' "$out" | grep -q '^\[1\].*collective #0'; then
    pass "$tr: a receive of tag 5 against a send of tag 0: $w warnings and the timeout name the receive and the message that came instead"
  else
    fail "$tr: p2p wait: $w warnings; output: $(printf '%s\n' "$out" | grep '^\[1\]' | head -4)"
  fi
done

fi  # cc_full_only

# --- start-up: one host of two started alone speaks up while it waits -----------------
if cc_full_only "newcomer: start-up waits (one host of two alone)"; then
port=$(cc_free_port)
tok=$("$ccrun" --make-token)
out=$("${clean_env[@]}" CC_TOKEN=$tok CC_WARN_AFTER=1 CC_TIMEOUT=3.5 timeout 60 "$ccrun" --tag-output --nnodes 2 --node-rank 0 \
  --master-addr 127.0.0.1 --master-port "$port" -n 2 "$probe" world 2>&1)
w0=$(printf '%s\n' "$out" | grep -c "^\[0\] \[cc rank 0\] WARN comm_init: rank 0: has waited [12] s for 2 of 4 ranks to join the rendezvous at 127.0.0.1 port $port: ranks 2-3")
w1=$(printf '%s\n' "$out" | grep -c "^\[1\] \[cc rank 1\] WARN comm_init: rank 1: joined the rendezvous at 127.0.0.1 port $port and has waited [12] s for rank 0's answer")
if [ "$w0" -ge 2 ] && [ "$w1" -ge 2 ] && printf '%s\n' "$out" | grep -q "^\[0\] error: comm_init: rank 0: ranks 2-3 did not join the rendezvous at 127.0.0.1 port $port within the timeout"; then
  pass "host 0 alone: rank 0 names the ranks missing and the address at 1 s and 2 s, rank 1 says it waits for rank 0's answer"
else
  fail "host 0 alone: $w0 and $w1 warnings (expected 2 or more each); output: $(printf '%s\n' "$out" | head -6)"
fi
port=$(cc_free_port)
out=$("${clean_env[@]}" CC_TOKEN=$tok CC_WARN_AFTER=1 CC_TIMEOUT=3.5 timeout 60 "$ccrun" --tag-output --nnodes 2 --node-rank 1 \
  --master-addr 127.0.0.1 --master-port "$port" -n 2 "$probe" world 2>&1)
w2=$(printf '%s\n' "$out" | grep -c "^\[2\] \[cc rank 2\] WARN comm_init: rank 2: has waited [12] s to reach rank 0 at 127.0.0.1 port $port (Connection refused")
if [ "$w2" -ge 2 ]; then
  pass "host 1 alone: its ranks say at 1 s and 2 s that they cannot reach rank 0 at its address, and why"
else
  fail "host 1 alone: $w2 warnings from rank 2 (expected 2 or more); output: $(printf '%s\n' "$out" | head -6)"
fi

fi  # cc_full_only

echo "newcomer: $fails failed"
[ "$fails" -eq 0 ]
