#!/usr/bin/env bash
# tests/user/test_ccrun.sh - checks of the ccrun launcher, with shell programs as ranks.
#
#   bash tests/user/test_ccrun.sh [BUILD_DIR]      (uses BUILD_DIR/ccrun; default build)
#
# Prints one line per check, "PASS: ccrun <what>" or "FAIL: ccrun <what>: <why>",
# and exits nonzero if any check failed. Every command is bounded by `timeout`.

BUILD_DIR=${1:-build}
CCRUN=$BUILD_DIR/ccrun
failures=0

pass() { echo "PASS: ccrun $1"; }
fail() { echo "FAIL: ccrun $1: $2"; failures=$((failures + 1)); }

if [ ! -x "$CCRUN" ]; then
  fail "binary" "$CCRUN not found or not executable"
  exit 1
fi

T=$(mktemp -d /tmp/test_ccrun.XXXXXX) || exit 1
# A unique word in the command line of every long-lived process the ranks start,
# so that leftovers can be found with pgrep (and killed by pid at the end).
MARK="ccrunmark$$x$RANDOM"
ln -s "$(command -v sleep)" "$T/sleep_$MARK"
SLEEP="$T/sleep_$MARK"

cleanup() {
  local pids
  pids=$(pgrep -f "$MARK")
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  rm -f /dev/shm/cc-"$KEEP_ID"-keep
  rm -rf "$T"
}
trap cleanup EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# leftovers: the pids of processes still carrying the marker, after a short grace
leftovers() {
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pgrep -f "$MARK" >/dev/null || return 0
    sleep 0.1
  done
  pgrep -f "$MARK" | tr '\n' ' '
}

# wait_files N PATTERN: wait (at most 5 s) until N files match PATTERN
wait_files() {
  local i
  for i in $(seq 50); do
    [ "$(ls $2 2>/dev/null | wc -l)" -ge "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# wait_exit PID SECONDS: wait for a background job; kill it if it overstays.
# Sets rc to its status (or 999 when it had to be killed).
wait_exit() {
  local i
  for i in $(seq $(( $2 * 10 ))); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; rc=$?; return 0; }
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  rc=999
  return 1
}

ENVLINE='echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK ${CC_JOB_ID-unset} ${MASTER_ADDR-unset} ${MASTER_PORT-unset} ${CC_TOKEN-unset} ${CC_TIMEOUT-unset}"'

# ---------------------------------------------------------------- environment
out=$(env -u MASTER_ADDR -u MASTER_PORT -u CC_TOKEN RANK=99 CC_JOB_ID=stale \
      timeout 20 "$CCRUN" -n 4 --timeout 7 sh -c "$ENVLINE" 2>"$T/err")
rc=$?
if [ $rc -ne 0 ]; then
  fail "env -n 4" "exit $rc: $(head -3 "$T/err")"
else
  ranks=$(echo "$out" | awk '{print $1}' | sort -n | tr '\n' ' ')
  bad=$(echo "$out" | awk '$2 != 4 || $3 != $1 || $4 != 4 || $5 != 0 || $7 != "unset" ||
                           $8 != "unset" || $10 != 7' | head -1)
  ids=$(echo "$out" | awk '{print $6}' | sort -u)
  tokens=$(echo "$out" | awk '{print $9}' | sort -u)
  if [ "$ranks" != "0 1 2 3 " ]; then fail "env -n 4" "RANKs are '$ranks'"
  elif [ -n "$bad" ]; then fail "env -n 4" "bad line '$bad'"
  elif ! [[ "$ids" =~ ^[0-9a-f]{32}$ ]]; then fail "env -n 4" "CC_JOB_ID '$ids'"
  elif ! [[ "$tokens" =~ ^[0-9a-f]{64}$ ]]; then fail "env -n 4" "CC_TOKEN '$tokens' (want 64 hex digits)"
  elif [ "$ids" = "$tokens" ]; then fail "env -n 4" "CC_TOKEN equals CC_JOB_ID"
  else pass "env -n 4 (RANK, WORLD_SIZE, LOCAL_*, GROUP_RANK, CC_JOB_ID, CC_TOKEN, CC_TIMEOUT)"
  fi
  id2=$(timeout 20 "$CCRUN" -n 2 sh -c 'echo $CC_JOB_ID' 2>/dev/null | sort -u)
  if ! [[ "$id2" =~ ^[0-9a-f]{32}$ ]] || [ "$id2" = "$ids" ]; then
    fail "job id per job" "first '$ids', second '$id2'"
  else
    pass "job id per job"
  fi
fi

strong=29b95765721245e15340fa89df69876f
tok=$(CC_TOKEN=$strong timeout 20 "$CCRUN" -n 2 sh -c 'echo $CC_TOKEN' 2>/dev/null | sort -u)
[ "$tok" = "$strong" ] && pass "CC_TOKEN passed through" \
                        || fail "CC_TOKEN passed through" "got '$tok'"

# ---------------------------------------------------------------- tokens (docs/security.md)
t1=$(timeout 10 "$CCRUN" --make-token 2>&1); rc1=$?
t2=$(timeout 10 "$CCRUN" --make-token 2>&1)
if [ $rc1 -eq 0 ] && [[ "$t1" =~ ^[0-9a-f]{64}$ ]] && [ "$t1" != "$t2" ]; then pass "--make-token prints a fresh 256-bit hex token"
else fail "--make-token" "exit $rc1, '$t1' then '$t2'"; fi
# several hosts without a token: refused (exit 2) with a message saying how to make one
env -u CC_TOKEN timeout 10 "$CCRUN" --nnodes 2 --node-rank 1 --master-addr 10.1.2.3 --master-port 29501 -n 1 \
  sh -c 'echo started' >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -eq 2 ] && [ ! -s "$T/out" ] && grep -q -- '--make-token' "$T/err" && grep -q -- '--insecure-no-token' "$T/err"; then
  pass "--nnodes 2 without CC_TOKEN refuses to start: $(cut -c1-100 "$T/err")..."
else fail "--nnodes 2 without CC_TOKEN" "exit $rc (want 2), out '$(cat "$T/out")', err '$(cat "$T/err")'"; fi
out=$(env -u CC_TOKEN timeout 10 "$CCRUN" --insecure-no-token --nnodes 2 --node-rank 1 --master-addr 10.1.2.3 \
      --master-port 29501 -n 1 sh -c 'echo "started ${CC_TOKEN-none}"' 2>&1)
[ "$out" = "started none" ] && pass "--insecure-no-token: --nnodes 2 starts without a token" \
                             || fail "--insecure-no-token" "got '$out'"
# a weak token is refused (on one host too: the ranks would refuse it)
for weak in s3cret 0123456789abcdef aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa \
            0123456789abcdef0123456789abcdef deadbeefdeadbeefdeadbeefdeadbeef passwordpasswordpasswordpasswordpassword; do
  CC_TOKEN=$weak timeout 10 "$CCRUN" -n 1 sh -c 'echo started' >"$T/out" 2>"$T/err"
  rc=$?
  if [ $rc -eq 2 ] && [ ! -s "$T/out" ] && grep -q 'too weak' "$T/err" && grep -q -- '--make-token' "$T/err"; then
    pass "CC_TOKEN=$weak refused as too weak: $(grep -o 'about [0-9]* bits' "$T/err")"
  else fail "weak CC_TOKEN=$weak" "exit $rc (want 2), err '$(cat "$T/err")'"; fi
done

# ---------------------------------------------------------------- multi-host
out=$(CC_JOB_ID=stale CC_TOKEN=$strong timeout 20 "$CCRUN" --nnodes 2 --node-rank 1 \
      --master-addr 10.1.2.3 --master-port=29501 -n 2 sh -c "$ENVLINE" 2>"$T/err")
rc=$?
got=$(echo "$out" | awk '{print $1, $2, $3, $4, $5, $6, $7, $8, $9}' | sort)
want=$'2 4 0 2 1 unset 10.1.2.3 29501 '"$strong"$'\n3 4 1 2 1 unset 10.1.2.3 29501 '"$strong"
if [ $rc -ne 0 ]; then fail "multi-host env" "exit $rc: $(head -3 "$T/err")"
elif [ "$got" != "$want" ]; then fail "multi-host env" "got '$got'"
else pass "multi-host env (RANK, WORLD_SIZE, GROUP_RANK, MASTER_*, CC_TOKEN passed, no CC_JOB_ID)"
fi

# ---------------------------------------------------------------- argument handling
out=$(timeout 20 "$CCRUN" -n 1 sh -c 'echo "$*"' prog -n 5 --tag-output 2>&1)
[ "$out" = "-n 5 --tag-output" ] && pass "options stop at the program" \
                                  || fail "options stop at the program" "got '$out'"

for args in "" "-n 0 true" "-n 1025 true" "-n 2" "--bogus -n 2 true" "-n x true" \
            "--nnodes 2 -n 2 true" "--nnodes 2 --node-rank 2 --master-addr h --master-port 1 -n 1 true" \
            "--kill-grace -1 -n 1 true" "--timeout 0 -n 1 true"; do
  timeout 10 "$CCRUN" $args >"$T/out" 2>"$T/err"
  rc=$?
  if [ $rc -ne 2 ]; then fail "usage error '$args'" "exit $rc, want 2"
  elif [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q '^ccrun: ' "$T/err"; then
    fail "usage error '$args'" "message '$(cat "$T/err")'"
  else pass "usage error '$args' gives 2"
  fi
done
timeout 10 "$CCRUN" --help >"$T/out" 2>&1 && grep -q '^usage: ccrun' "$T/out" \
  && pass "--help" || fail "--help" "$(head -1 "$T/out")"
timeout 10 "$CCRUN" --version 2>&1 | grep -q '^ccrun [0-9]' \
  && pass "--version" || fail "--version" "no version line"

# ---------------------------------------------------------------- --tag-output
# Each rank writes its lines in two pieces, and a last line without newline.
timeout 30 "$CCRUN" --tag-output -n 4 sh -c '
  i=0
  while [ $i -lt 200 ]; do
    printf "r%s-" $RANK; printf "line%s\n" $i
    printf "e%s-" $RANK >&2; printf "err%s\n" $i >&2
    i=$((i + 1))
  done
  printf "tail%s" $RANK' >"$T/out" 2>"$T/err"
rc=$?
bad_out=$(grep -Ev '^\[([0-3])\] (r\1-line[0-9]+|tail\1)$' "$T/out" | head -1)
bad_err=$(grep -Ev '^\[([0-3])\] e\1-err[0-9]+$' "$T/err" | head -1)
if [ $rc -ne 0 ]; then fail "--tag-output" "exit $rc"
elif [ -n "$bad_out" ]; then fail "--tag-output" "stdout line '$bad_out'"
elif [ -n "$bad_err" ]; then fail "--tag-output" "stderr line '$bad_err'"
elif [ "$(wc -l <"$T/out")" -ne 804 ] || [ "$(wc -l <"$T/err")" -ne 800 ]; then
  fail "--tag-output" "$(wc -l <"$T/out") stdout and $(wc -l <"$T/err") stderr lines"
elif [ "$(grep -c '^\[2\] r2-line' "$T/out")" -ne 200 ] || ! grep -qx '\[3\] tail3' "$T/out"; then
  fail "--tag-output" "lines of rank 2 or tail of rank 3 missing"
else pass "--tag-output prefixes whole lines on stdout and stderr"
fi

# ---------------------------------------------------------------- failures
t0=$(now_ms)
timeout 30 "$CCRUN" -n 4 sh -c \
  "if [ \$RANK = 2 ]; then sleep 0.3; exit 3; fi; $SLEEP 100" 2>"$T/err"
rc=$?
dt=$(( $(now_ms) - t0 ))
left=$(leftovers)
if [ $rc -ne 3 ]; then fail "failing rank" "exit $rc, want 3"
elif [ $dt -gt 3000 ]; then fail "failing rank" "took $dt ms"
elif [ -n "$left" ]; then fail "failing rank" "processes left: $left"
elif ! grep -Eq '^ccrun: rank 2 \(pid [0-9]+\) exited with status 3$' "$T/err"; then
  fail "failing rank" "message '$(cat "$T/err")'"
else pass "failing rank stops the others (exit 3, ${dt} ms, nothing left)"
fi

# Ranks that ignore SIGTERM are killed after --kill-grace.
t0=$(now_ms)
timeout 30 "$CCRUN" --kill-grace 1 -n 3 sh -c \
  "trap '' TERM; if [ \$RANK = 0 ]; then sleep 0.3; exit 5; fi; $SLEEP 100" 2>/dev/null
rc=$?
dt=$(( $(now_ms) - t0 ))
left=$(leftovers)
if [ $rc -ne 5 ]; then fail "--kill-grace escalates to SIGKILL" "exit $rc, want 5"
elif [ $dt -lt 1200 ] || [ $dt -gt 4000 ]; then fail "--kill-grace escalates to SIGKILL" "took $dt ms"
elif [ -n "$left" ]; then fail "--kill-grace escalates to SIGKILL" "processes left: $left"
else pass "--kill-grace escalates to SIGKILL (${dt} ms, nothing left)"
fi

timeout 20 "$CCRUN" -n 2 sh -c "if [ \$RANK = 1 ]; then kill -KILL \$\$; fi; $SLEEP 100" 2>"$T/err"
rc=$?
left=$(leftovers)
if [ $rc -ne 137 ]; then fail "rank killed by SIGKILL" "exit $rc, want 137"
elif [ -n "$left" ]; then fail "rank killed by SIGKILL" "processes left: $left"
elif ! grep -Eq '^ccrun: rank 1 \(pid [0-9]+\) was killed by signal SIGKILL$' "$T/err"; then
  fail "rank killed by SIGKILL" "message '$(cat "$T/err")'"
else pass "rank killed by SIGKILL gives 137"
fi

timeout 20 "$CCRUN" -n 2 "$T/no-such-program" >/dev/null 2>"$T/err"
rc=$?
if [ $rc -ne 127 ]; then fail "exec failure" "exit $rc, want 127"
elif ! grep -q "^ccrun: cannot run $T/no-such-program: No such file or directory$" "$T/err"; then
  fail "exec failure" "message '$(head -1 "$T/err")'"
else pass "exec failure gives 127"
fi

# A rank's background child is stopped once the job is over.
timeout 20 "$CCRUN" -n 2 sh -c "$SLEEP 100 >/dev/null 2>&1 & exit 0"
rc=$?
left=$(leftovers)
if [ $rc -ne 0 ]; then fail "leftover children" "exit $rc, want 0"
elif [ -n "$left" ]; then fail "leftover children" "processes left: $left"
else pass "leftover children of ranks are stopped"
fi

# ---------------------------------------------------------------- signals
# SIGTERM to ccrun reaches every rank (and its children); the ranks' trap runs.
"$CCRUN" -n 3 sh -c "trap 'echo \$RANK > $T/term.\$RANK; exit 0' TERM
                      touch $T/ready.\$RANK; while :; do $SLEEP 0.2; done" &
pid=$!
if ! wait_files 3 "$T/ready.*"; then
  kill -KILL $pid; wait $pid 2>/dev/null
  fail "SIGTERM forwarded" "ranks did not start"
else
  kill -TERM $pid
  wait_exit $pid 10
  got=$(cat "$T"/term.* 2>/dev/null | sort -n | tr '\n' ' ')
  left=$(leftovers)
  if [ "$got" != "0 1 2 " ]; then fail "SIGTERM forwarded" "trap ran on ranks '$got'"
  elif [ $rc -ne 143 ]; then fail "SIGTERM forwarded" "exit $rc, want 143"
  elif [ -n "$left" ]; then fail "SIGTERM forwarded" "processes left: $left"
  else pass "SIGTERM forwarded to every rank"
  fi
fi

# SIGUSR1 is forwarded and the job goes on.
rm -f "$T"/ready.*
"$CCRUN" -n 2 sh -c "trap 'echo u > $T/usr.\$RANK' USR1; touch $T/ready.\$RANK
                      while [ ! -e $T/usr.\$RANK ]; do $SLEEP 0.1; done; exit 0" &
pid=$!
if ! wait_files 2 "$T/ready.*"; then
  kill -KILL $pid; wait $pid 2>/dev/null
  fail "SIGUSR1 forwarded" "ranks did not start"
else
  kill -USR1 $pid
  wait_exit $pid 10
  [ $rc -eq 0 ] && [ -e "$T/usr.0" ] && [ -e "$T/usr.1" ] && pass "SIGUSR1 forwarded" \
    || fail "SIGUSR1 forwarded" "exit $rc"
fi

# Two SIGINTs within the grace period kill ranks that ignore SIGINT. (A background
# job of a script starts with SIGINT ignored; env gives it back its default.)
rm -f "$T"/ready.*
env --default-signal=INT "$CCRUN" --kill-grace 5 -n 2 \
  sh -c "trap '' INT; touch $T/ready.\$RANK; $SLEEP 100" 2>/dev/null &
pid=$!
if ! wait_files 2 "$T/ready.*"; then
  kill -KILL $pid; wait $pid 2>/dev/null
  fail "second SIGINT kills" "ranks did not start"
else
  kill -INT $pid; sleep 0.3; kill -INT $pid
  wait_exit $pid 3
  left=$(leftovers)
  if [ $rc -ne 137 ]; then fail "second SIGINT kills" "exit $rc, want 137"
  elif [ -n "$left" ]; then fail "second SIGINT kills" "processes left: $left"
  else pass "second SIGINT kills the ranks"
  fi
fi

# ---------------------------------------------------------------- /dev/shm
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  KEEP_ID=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  touch /dev/shm/cc-"$KEEP_ID"-keep        # another job's: must stay
  for status in 0 1; do
    ids=$(timeout 20 "$CCRUN" -n 3 sh -c \
      "touch /dev/shm/cc-\$CC_JOB_ID-x\$RANK /dev/shm/cc-\$CC_JOB_ID; echo \$CC_JOB_ID; exit $status" \
      2>/dev/null | sort -u)
    rc=$?
    if ! [[ "$ids" =~ ^[0-9a-f]{32}$ ]]; then fail "/dev/shm cleanup (exit $status)" "job id '$ids'"
    elif ls /dev/shm/cc-"$ids"* >/dev/null 2>&1; then
      fail "/dev/shm cleanup (exit $status)" "left: $(ls /dev/shm/cc-"$ids"* | tr '\n' ' ')"
      rm -f /dev/shm/cc-"$ids"*
    elif [ ! -e /dev/shm/cc-"$KEEP_ID"-keep ]; then
      fail "/dev/shm cleanup (exit $status)" "removed another job's entry"
    else pass "/dev/shm/cc-<jobid>* removed after the job (ranks exit $status)"
    fi
  done
else
  pass "/dev/shm cleanup (skipped: no writable /dev/shm)"
fi

[ $failures -eq 0 ]
