#!/usr/bin/env bash
# tests/run.sh [BUILD_DIR] - the test suite (`make test`, `make check`;
# BUILD_DIR defaults to build).
#
# Runs the tests tests/tiers lists, in its order: CC_TEST_TIER=quick (make
# test) the quick tier only, with CC_TEST_QUICK=1; CC_TEST_TIER=full (the
# default; make check, make sanitize, make tsan) every one. A test is a
# program in BUILD_DIR/tests (run with no arguments) or a script under tests/
# (run as `bash tests/.../X.sh BUILD_DIR`); a test the list does not name, or a
# name that names no test, fails the run. Each runs under `timeout`
# (CC_TEST_TIMEOUT seconds, default 300; test_cuda.sh, test_compile.sh and
# test_torch.sh twice that), stdin from /dev/null, output in BUILD_DIR/test-logs/NAME.log
# and echoed once the test is over. It counts the lines `PASS: ...`,
# `FAIL: ...` and `SKIP: ...`; a test that exits nonzero (or times out, or
# crashes) without printing a FAIL line is one more failure. A test whose log
# holds a sanitizer report, or that leaves a process running or an entry in
# /dev/shm/cc-*, fails too (the leftovers are then removed). The last line is
# the summary `N passed, N failed` (with `, N skipped` when some were
# skipped); in the quick tier the line before it says what the full suite
# adds. The exit status is 1 if any failed.
# CC_TEST_SANITIZER (address or thread: make sanitize, make tsan) leaves out
# the scripts that left_out names, with a SKIP line each.
set -u

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.bash
. "$here/lib.bash"

build=${1:-build}
limit=${CC_TEST_TIMEOUT:-300}
passed=0 failed=0 skipped=0
# Every test's processes carry this in their environment, plus the test's name.
mark_base=CC_TEST_MARK=run-$$-$RANDOM

fail() {
  echo "FAIL: $*"
  failed=$((failed + 1))
}

summary() {
  local line="$passed passed, $failed failed"
  [ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
  echo "$line"
  [ "$failed" -eq 0 ]
}

stop_all() {
  local pid
  for pid in $(cc_marked_pids "$mark_base-*"); do
    kill -KILL "$pid" 2>/dev/null
  done
  fail "run: interrupted"
  summary
  exit 1
}
trap stop_all INT TERM

if [ ! -d "$build" ]; then
  fail "run: no build directory '$build' (run make first)"
  summary
  exit 1
fi
build=$(cd "$build" && pwd)
logs=$build/test-logs
mkdir -p "$logs"
rm -f "$logs"/*.log

# count LOG WORD - how many lines of LOG start with "WORD: "
count() { grep -c "^$2: " "$1"; }

# run_one NAME COMMAND... - run one test and account for it
run_one() {
  local name=$1
  shift
  local log=$logs/$name.log mark="$mark_base-$name"
  local shm_before st p f s t0 why left leaked n tlimit=$limit
  # test_cuda.sh builds nine CUDA programs with nvcc, then runs the emulated
  # device's suites; test_compile.sh builds the implementation some thirty
  # times; test_torch.sh runs eight suites of torch programs: minutes of CPU
  # each. Twice the limit; a hang still ends.
  case $name in test_cuda.sh | test_compile.sh | test_torch.sh) tlimit=$((limit * 2)) ;; esac
  shm_before=$(cc_shm_snapshot)
  t0=$(cc_now_ms)
  echo "=== $name"
  # In a subshell that waits (no exec), so that the shell's own "Segmentation
  # fault" notice goes to /dev/null rather than between the logs; in the
  # background, so that an INT or TERM stops the suite at once (see stop_all).
  (
    env "$mark" timeout -k 10 "$tlimit" "$@" </dev/null >"$log" 2>&1
    exit $?
  ) 2>/dev/null &
  wait $!
  st=$?
  cat "$log"
  p=$(count "$log" PASS) f=$(count "$log" FAIL) s=$(count "$log" SKIP)
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  if [ "$st" -ne 0 ] && [ "$f" -eq 0 ]; then
    why=""
    case $st in
      124) why=" (timed out after $tlimit s)" ;;
      137) why=" (killed: SIGKILL, or timed out and ignored SIGTERM)" ;;
      12[6-7]) why=" (could not be run)" ;;
      1[3-9][0-9]) why=" (killed by signal $((st - 128)))" ;;
    esac
    fail "$name: exited with status $st$why"
  fi
  # A sanitizer report from a process whose status nobody looks at (a forked
  # rank; TSan only changes the status at a normal exit) fails the test too.
  n=$(grep -cE 'ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:' "$log")
  if [ "$n" -gt 0 ]; then
    fail "$name: its log holds $n sanitizer report(s)"
  fi
  if ! left=$(cc_leftover_procs "$mark"); then
    while read -r n; do
      fail "$name: left a process running (killed now): $n"
    done <<<"$left"
  fi
  leaked=$(cc_shm_leaked "$shm_before")
  for n in $leaked; do
    fail "$name: left /dev/shm/$n (removed now)"
    rm -f "/dev/shm/$n"
  done
  echo "=== $name: status $st, $p passed, $f failed, $s skipped, $(( ($(cc_now_ms) - t0) / 1000 )) s"
}

# left_out NAME - why a script does not run in this sanitizer run (make
# sanitize, make tsan set CC_TEST_SANITIZER), or status 1. The fuzz targets
# are one build whatever the run (clang, ASan+UBSan): make test runs them.
# Under ThreadSanitizer, the scripts that start jobs to test processes' lives
# (start-up, rendezvous, several hosts, dead peers, the newcomer's paths), for
# time: TSan's runtime made them the slowest part of the run. Most of what
# they reach runs on one thread per process; not so net_probe's asynchronous
# group (cc's worker thread) on jobs of several hosts, which test_multihost
# and test_ccrun_nnodes run: TSan does not check that (ASan+UBSan and the
# plain run do; test_tcp_suites runs asynchronous requests over TCP under TSan).
left_out() {
  case ${CC_TEST_SANITIZER:-}:$1 in
    ?*:test_fuzz.sh) echo "the fuzz targets are the same build in every run; make test runs them" ;;
    thread:test_ccrun_nnodes.sh | thread:test_multihost.sh)
      echo "not under ThreadSanitizer, for time: its asynchronous group on jobs of several hosts goes unchecked by TSan (make test and make sanitize run it)" ;;
    thread:test_arena_shapes.sh)
      echo "not under ThreadSanitizer, for time: test_collectives under other settings, which TSan checks as it is (make test and make sanitize run it)" ;;
    thread:test_init.sh | thread:test_liveness.sh | thread:test_newcomer.sh | thread:test_rendezvous.sh | \
      thread:test_security.sh)
      echo "not under ThreadSanitizer, for time: its processes run one thread each (make test and make sanitize run it)" ;;
    *) return 1 ;;
  esac
}

# The list of tests and their tiers (tests/tiers): "NAME TIER ...".
tier=${CC_TEST_TIER:-full}
case $tier in
  quick) export CC_TEST_QUICK=${CC_TEST_QUICK:-1} ;;
  full) ;;
  *) fail "run: CC_TEST_TIER=$tier (quick or full)"; summary; exit 1 ;;
esac
names=() tiers=()
while read -r n t _; do
  case $n in '' | '#'*) continue ;; esac
  names+=("$n") tiers+=("$t")
done <"$here/tiers"
# where test NAME is: a program in BUILD/tests, or a script anywhere under tests/
locate() {
  case $1 in
    *.sh) find "$here" -name "$1" -type f | head -n 1 ;;
    *) [ -x "$build/tests/$1" ] && echo "$build/tests/$1" ;;
  esac
}

shm_start=$(cc_shm_snapshot)
ntests=0 nfull=0
for i in "${!names[@]}"; do
  n=${names[$i]}
  case ${tiers[$i]} in
    quick) ;;
    full) if [ "$tier" = quick ]; then nfull=$((nfull + 1)); continue; fi ;;
    *) fail "run: tests/tiers gives $n the tier '${tiers[$i]}' (quick or full)"; continue ;;
  esac
  t=$(locate "$n")
  if [ -z "$t" ]; then
    fail "run: tests/tiers names $n, which is neither built in $build/tests nor a script under tests/"
    continue
  fi
  if why=$(left_out "$n"); then
    echo "SKIP: $n: $why"
    skipped=$((skipped + 1))
    continue
  fi
  case $n in
    *.sh) run_one "$n" bash "$t" "$build" ;;
    *) run_one "$n" "$t" ;;
  esac
  ntests=$((ntests + 1))
done
# every test there is has a tier
listed=" ${names[*]} "
for t in "$build"/tests/* $(find "$here" -name 'test_*.sh' -type f); do
  [ -f "$t" ] && [ -x "$t" ] || [ "${t%.sh}" != "$t" ] || continue
  [[ $listed == *" ${t##*/} "* ]] || fail "run: ${t##*/} is a test but tests/tiers does not list it (give it a tier there)"
done
[ "$ntests" -gt 0 ] || fail "run: no tests in $build/tests or $here"

# The whole suite, once more: anything in /dev/shm that was not there before,
# or any test process, is a leak (each test's own check removed what it found).
shm_end=$(cc_shm_snapshot)
echo "shm: $(grep -c . <<<"$shm_start") cc-* entries before the suite, $(grep -c . <<<"$shm_end") after"
for n in $(cc_shm_leaked "$shm_start"); do
  fail "run: the suite left /dev/shm/$n (removed now)"
  rm -f "/dev/shm/$n"
done
if ! left=$(cc_leftover_procs "$mark_base-*"); then
  while read -r n; do
    fail "run: a test process is still running (killed now): $n"
  done <<<"$left"
fi
if [ "$tier" = quick ]; then
  echo "the full suite adds $nfull tests (the compile matrix, fuzzing, every init path and op, benchmarks, tools)," \
    "runs every test at full size, then all under ASan+UBSan and ThreadSanitizer: make check"
fi
summary
