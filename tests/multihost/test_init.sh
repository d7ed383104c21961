#!/usr/bin/env bash
# tests/multihost/test_init.sh [BUILD_DIR] - how ranks find each other, with real processes
# running BUILD/probes/init_probe (tests/multihost/init_probe.c):
#   a) ccrun -n 1, 3, 4;  b) two ccrun jobs at once on this host;
#   c) env:// - four processes started from bash with RANK, WORLD_SIZE,
#      MASTER_ADDR, MASTER_PORT and no CC_JOB_ID (also with rank 0 late);
#   d) two env:// jobs at once;  e) a bad RANK / WORLD_SIZE -> CC_ERR_INVALID_ARG
#      naming it, at once;  f) the OMPI_*, PMI_*, SLURM_* fallbacks and RANK's
#      precedence;  g) ccrun with a rank killed by SIGKILL -> 137 at once;
#   h) env:// with a rank killed by SIGKILL -> the others CC_ERR_PEER_LOST;
#   i) a rank that never starts (env:// and CC_JOB_ID) -> the others get
#      CC_ERR_TIMEOUT naming it after CC_TIMEOUT, and nothing is left in /dev/shm;
#   j) ccrun itself killed by SIGKILL -> its ranks end too.
# After every case: no process of it still runs, nothing new in /dev/shm/cc-*.
set -u

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.bash
. "$here/../lib.bash"

build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "FAIL: init: no build directory '${1:-build}'"; exit 1; }
ccrun=$build/ccrun
probe=$build/probes/init_probe
for f in "$ccrun" "$probe"; do
  [ -x "$f" ] || { echo "FAIL: init: $f is missing (run make)"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cc-test-init.XXXXXX")
case_id=""

# Every launch runs under `timeout`, with an environment cleared of anything a
# surrounding launcher set, a marker to find its processes, and CC_TIMEOUT=20 so
# that a library that waits for a rank that never comes fails well before
# `timeout` strikes.
clean_env=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE
  -u MASTER_ADDR -u MASTER_PORT -u CC_JOB_ID -u CC_TRANSPORT -u CC_TOKEN
  -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK
  -u OMPI_COMM_WORLD_LOCAL_SIZE -u PMI_RANK -u PMI_SIZE -u SLURM_PROCID
  -u SLURM_NTASKS -u SLURM_LOCALID CC_TIMEOUT=20)
limit=60

cleanup() {
  local pid
  for pid in $(cc_marked_pids "CC_INIT_CASE=$$-*"); do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

npass=0 nfail=0
pass() { echo "PASS: init: $*"; npass=$((npass + 1)); }
fail() { echo "FAIL: init: $*"; nfail=$((nfail + 1)); }

# begin NAME - start a case: its marker, and what /dev/shm holds now
begin() {
  case_id=$1
  shm_before=$(cc_shm_snapshot)
  rm -f "$work"/*.out
}

# launch OUT VAR=VALUE... -- COMMAND... (background, pid in $last_pid), show
# FILE..., finish: see tests/lib.bash
launch() { cc_case_launch CC_INIT_CASE "$@"; }
show() { cc_case_show 20 "$@"; }
finish() { cc_case_finish CC_INIT_CASE; }

# check_sums FILE N [RANK] - FILE holds "rank R of N: sum S" for every rank R
# (or for RANK alone)
check_sums() {
  local file=$1 n=$2 r first=0 last=$(($2 - 1))
  [ $# -gt 2 ] && first=$3 last=$3
  for r in $(seq "$first" "$last"); do
    grep -q "^rank $r of $n: sum $((n * (n + 1) / 2))\$" "$file" || return 1
  done
}

# ccrun_job N OUT [PROBE ARGS...] - start `ccrun -n N init_probe ARGS`
ccrun_job() {
  local n=$1 out=$2
  shift 2
  launch "$out" -- "$ccrun" -n "$n" "$probe" "$@"
}

# env_job NAME PORT N STYLE [DELAY0 [PROBE ARGS...]] - start N processes with rank variables of
# STYLE (torch, ompi, pmi, slurm, both), MASTER_ADDR=127.0.0.1 MASTER_PORT=PORT;
# output in $work/NAME.R.out; pids in env_pids. Rank 0 starts DELAY0 seconds late.
env_job() {
  local prefix=$1 port=$2 n=$3 style=$4 delay=${5:-0} r vars
  env_pids=()
  for r in $(seq $((n - 1)) -1 0); do
    case $style in
      torch) vars=(RANK=$r WORLD_SIZE=$n) ;;
      ompi) vars=(OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n
        OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=$n) ;;
      pmi) vars=(PMI_RANK=$r PMI_SIZE=$n) ;;
      slurm) vars=(SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$r) ;;
      both) vars=(RANK=$r WORLD_SIZE=$n OMPI_COMM_WORLD_RANK=$((n - 1 - r))
        OMPI_COMM_WORLD_SIZE=$n) ;;
    esac
    [ "$r" -eq 0 ] && [ "$delay" != 0 ] && sleep "$delay"
    launch "$prefix.$r.out" "${vars[@]}" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" -- "$probe" "${@:6}"
    env_pids+=("$last_pid")
  done
}

# wait_all PID... - wait for each; the list of exit statuses in $statuses
wait_all() {
  local pid st
  statuses=()
  for pid in "$@"; do
    wait "$pid" 2>/dev/null
    st=$?
    statuses+=("$st")
  done
}

# --- a) ccrun -n N --------------------------------------------------------------
for n in 1 3 4; do
  begin "ccrun-$n"
  t0=$(cc_now_ms)
  ccrun_job "$n" job.out
  wait "$last_pid" 2>/dev/null
  st=$?
  ms=$(($(cc_now_ms) - t0))
  if [ "$st" -eq 0 ] && check_sums "$work/job.out" "$n"; then
    pass "ccrun -n $n: every rank has the sum ($ms ms)"
  else
    fail "ccrun -n $n: status $st, expected 0 and 'rank R of $n: sum $((n * (n + 1) / 2))' from every rank"
    show "$work/job.out"
  fi
  finish
done

# --- a2) CC_DEBUG: log lines on stderr, prefixed with the rank -------------------
begin "ccrun-debug"
timeout 30 env CC_DEBUG=TRACE "$build/ccrun" -n 2 "$probe" >"$work/dbg.out" 2>"$work/dbg.err"
st=$?
if [ "$st" -eq 0 ] && grep -q '^\[cc rank 0\] INFO comm_init: rank 0 of 2 ready' "$work/dbg.err" &&
   grep -q '^\[cc rank 1\] TRACE all_reduce(count 1, int64, op [a-z]*), collective #' "$work/dbg.err" &&
   grep -q '^\[cc rank 0\] TRACE barrier' "$work/dbg.err"; then
  pass "CC_DEBUG=TRACE: INFO and TRACE lines on stderr, prefixed with the rank"
else
  fail "CC_DEBUG=TRACE: status $st, expected INFO comm_init and TRACE all_reduce/barrier lines from each rank"
  show "$work/dbg.err"
fi
timeout 30 env CC_DEBUG=WARN "$build/ccrun" -n 2 "$probe" >/dev/null 2>"$work/dbg2.err"
if [ ! -s "$work/dbg2.err" ]; then
  pass "CC_DEBUG=WARN: a job without failures logs nothing"
else
  fail "CC_DEBUG=WARN: a job without failures printed on stderr"
  show "$work/dbg2.err"
fi
finish

# --- b) two ccrun jobs at once ------------------------------------------------
begin "ccrun-twice"
t0=$(cc_now_ms)
ccrun_job 4 a.out hold 1000
pa=$last_pid
ccrun_job 4 b.out hold 1000
pb=$last_pid
wait_all "$pa" "$pb"
ms=$(($(cc_now_ms) - t0))
if [ "${statuses[*]}" = "0 0" ] && check_sums "$work/a.out" 4 && check_sums "$work/b.out" 4; then
  pass "two ccrun -n 4 jobs at once on one host both succeed ($ms ms)"
else
  fail "two ccrun -n 4 jobs at once: statuses ${statuses[*]}, expected 0 0 and every rank's sum"
  show "$work/a.out" "$work/b.out"
fi
finish

# --- c) env:// from a shell script ----------------------------------------------
for late in 0 1; do
  begin "env-late$late"
  port=$(cc_free_port)
  t0=$(cc_now_ms)
  env_job env "$port" 4 torch "$late"
  wait_all "${env_pids[@]}"
  ms=$(($(cc_now_ms) - t0))
  ok=1
  for r in 0 1 2 3; do
    check_sums "$work/env.$r.out" 4 "$r" || ok=0
  done
  what="env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT=$port, no CC_JOB_ID), 4 processes"
  [ "$late" = 1 ] && what="$what, rank 0 started 1 s after the others"
  if [ "${statuses[*]}" = "0 0 0 0" ] && [ $ok = 1 ]; then
    pass "$what ($ms ms)"
  else
    fail "$what: statuses ${statuses[*]} (ranks 3..0), expected all 0 and every rank's sum"
    show "$work"/env.*.out
  fi
  finish
done

# --- d) two env:// jobs at once -------------------------------------------------
begin "env-twice"
port_a=$(cc_free_port)
port_b=$(cc_free_port)
while [ "$port_b" = "$port_a" ]; do port_b=$(cc_free_port); done
t0=$(cc_now_ms)
env_job a "$port_a" 4 torch 0 hold 1000
pids=("${env_pids[@]}")
env_job b "$port_b" 4 torch 0 hold 1000
wait_all "${pids[@]}" "${env_pids[@]}"
ms=$(($(cc_now_ms) - t0))
ok=1
for r in 0 1 2 3; do
  check_sums "$work/a.$r.out" 4 "$r" || ok=0
  check_sums "$work/b.$r.out" 4 "$r" || ok=0
done
if [ "${statuses[*]}" = "0 0 0 0 0 0 0 0" ] && [ $ok = 1 ]; then
  pass "two env:// jobs at once (ports $port_a, $port_b) both succeed ($ms ms)"
else
  fail "two env:// jobs at once (ports $port_a, $port_b): statuses ${statuses[*]}, expected all 0"
  show "$work"/a.*.out "$work"/b.*.out
fi
finish

# --- e) a bad environment -------------------------------------------------------
# VARS... | NAME the message must contain. MASTER_ADDR/PORT are good, so a
# library that misreads the variables would wait for ranks that never come.
bad_envs=(
  "RANK=5 WORLD_SIZE=4|RANK"
  "RANK=4 WORLD_SIZE=4|RANK"
  "RANK=abc WORLD_SIZE=4|RANK"
  "RANK=1x WORLD_SIZE=4|RANK"
  "RANK=-1 WORLD_SIZE=4|RANK"
  "RANK= WORLD_SIZE=4|RANK"
  "WORLD_SIZE=4|RANK"
  "RANK=0|WORLD_SIZE"
  "RANK=0 WORLD_SIZE=abc|WORLD_SIZE"
  "RANK=0 WORLD_SIZE=0|WORLD_SIZE"
  "RANK=0 WORLD_SIZE=99999999999999999999|WORLD_SIZE"
  "OMPI_COMM_WORLD_RANK=abc OMPI_COMM_WORLD_SIZE=4|OMPI_COMM_WORLD_RANK"
  "OMPI_COMM_WORLD_RANK=7 OMPI_COMM_WORLD_SIZE=4|OMPI_COMM_WORLD_RANK"
)
for spec in "${bad_envs[@]}"; do
  vars=${spec%|*} name=${spec##*|}
  begin "bad-env"
  port=$(cc_free_port)
  t0=$(cc_now_ms)
  # shellcheck disable=SC2086
  launch bad.out $vars MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" -- "$probe"
  wait "$last_pid" 2>/dev/null
  st=$?
  ms=$(($(cc_now_ms) - t0))
  out=$(head -c 300 "$work/bad.out")
  if [ "$st" -eq 1 ] && grep -q "^error: CC_ERR_INVALID_ARG .*$name" "$work/bad.out" && [ "$ms" -lt 5000 ]; then
    pass "$vars: CC_ERR_INVALID_ARG naming $name ($ms ms)"
  else
    fail "$vars: status $st after $ms ms, output '$out'; expected status 1 and 'error: CC_ERR_INVALID_ARG ...$name...' within 5 s"
  fi
  finish
done

# --- f) other launchers' variables ----------------------------------------------
for style in ompi pmi slurm both; do
  begin "env-$style"
  port=$(cc_free_port)
  t0=$(cc_now_ms)
  env_job env "$port" 4 "$style"
  wait_all "${env_pids[@]}"
  ms=$(($(cc_now_ms) - t0))
  ok=1
  for r in 0 1 2 3; do
    # For "both", the process given RANK=r must be rank r: RANK wins over OMPI_*.
    check_sums "$work/env.$r.out" 4 "$r" || ok=0
  done
  case $style in
    ompi) what="OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}" ;;
    pmi) what="PMI_RANK/PMI_SIZE" ;;
    slurm) what="SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID" ;;
    both) what="RANK/WORLD_SIZE win over OMPI_COMM_WORLD_RANK/SIZE" ;;
  esac
  if [ "${statuses[*]}" = "0 0 0 0" ] && [ $ok = 1 ]; then
    pass "$what with MASTER_ADDR/MASTER_PORT, 4 processes ($ms ms)"
  else
    fail "$what: statuses ${statuses[*]} (ranks 3..0), expected all 0 and 'rank R of 4: sum 10' from the process given rank R"
    show "$work"/env.*.out
  fi
  finish
done

# --- g) ccrun, a rank killed ------------------------------------------------------
# CC_TIMEOUT=60: only noticing the death, not a timeout, ends the job in time.
begin "ccrun-kill"
t0=$(cc_now_ms)
launch job.out CC_TIMEOUT=60 -- "$ccrun" -n 4 "$probe" kill 2
wait "$last_pid"
st=$?
ms=$(($(cc_now_ms) - t0))
if [ "$st" -eq 137 ] && [ "$ms" -lt 8000 ]; then
  pass "ccrun -n 4 with rank 2 killed by SIGKILL exits 137 ($ms ms)"
else
  fail "ccrun -n 4 with rank 2 killed by SIGKILL: status $st after $ms ms, expected 137 within 8 s"
  show "$work/job.out"
fi
finish

# --- h) env://, a rank killed: no launcher cleans up, the library alone must ----
begin "env-kill"
port=$(cc_free_port)
t0=$(cc_now_ms)
env_job env "$port" 4 torch 0 kill 2
# the env_job's CC_TIMEOUT=20 stays; a survivor that waits for it fails the bound
wait_all "${env_pids[@]}"
ms=$(($(cc_now_ms) - t0))
ok=1
for r in 0 1 3; do
  grep -q "^error: CC_ERR_PEER_LOST .*rank 2\([^0-9]\|\$\)" "$work/env.$r.out" || ok=0
done
if [ "${statuses[*]}" = "1 137 1 1" ] && [ $ok = 1 ] && [ "$ms" -lt 8000 ]; then
  pass "env:// with rank 2 killed by SIGKILL: the others exit with CC_ERR_PEER_LOST naming rank 2 ($ms ms)"
else
  fail "env:// with rank 2 killed by SIGKILL: statuses ${statuses[*]} (ranks 3..0) after $ms ms, expected 1 137 1 1 within 8 s and 'error: CC_ERR_PEER_LOST ...rank 2...' from ranks 0, 1, 3"
  show "$work"/env.*.out
fi
finish

# --- i) a rank that never starts: the others time out naming it ---------------
# Ranks 0-2 of 4 start, with CC_TIMEOUT=2: env:// (MASTER_ADDR/PORT), and as
# ccrun would start them (CC_JOB_ID, LOCAL_RANK, LOCAL_WORLD_SIZE). Each must
# exit with CC_ERR_TIMEOUT naming rank 3 after about 2 s, and leave nothing in
# /dev/shm behind.
for style in env jobid; do
  begin "missing-$style"
  port=$(cc_free_port)
  jobid=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  pids=()
  t0=$(cc_now_ms)
  for r in 2 1 0; do
    if [ "$style" = env ]; then
      vars=(MASTER_ADDR=127.0.0.1 MASTER_PORT="$port")
    else
      vars=(CC_JOB_ID="$jobid" LOCAL_RANK=$r LOCAL_WORLD_SIZE=4)
    fi
    launch "miss.$r.out" RANK=$r WORLD_SIZE=4 CC_TIMEOUT=2 "${vars[@]}" -- "$probe"
    pids+=("$last_pid")
  done
  wait_all "${pids[@]}"
  ms=$(($(cc_now_ms) - t0))
  ok=1
  for r in 0 1 2; do
    grep -q "^error: CC_ERR_TIMEOUT .*rank 3\([^0-9]\|\$\)" "$work/miss.$r.out" || ok=0
  done
  what="env:// (MASTER_ADDR/MASTER_PORT)"
  [ "$style" = jobid ] && what="CC_JOB_ID (as under ccrun)"
  if [ "${statuses[*]}" = "1 1 1" ] && [ $ok = 1 ] && [ "$ms" -ge 1900 ] && [ "$ms" -lt 6000 ]; then
    pass "$what, rank 3 of 4 never starts, CC_TIMEOUT=2: ranks 0-2 exit with CC_ERR_TIMEOUT naming rank 3 ($ms ms)"
  else
    fail "$what, rank 3 of 4 never starts, CC_TIMEOUT=2: statuses ${statuses[*]} (ranks 2..0) after $ms ms, expected 1 1 1 after 2-6 s and 'error: CC_ERR_TIMEOUT ...rank 3...' from each"
    show "$work"/miss.*.out
  fi
  finish
done

# --- j) ccrun itself killed by SIGKILL: its ranks must not live on -------------
begin "ccrun-killed"
launch job.out -- "$ccrun" -n 4 "$probe" hold 5000
sleep 1
runner=$(pgrep -P "$last_pid" | head -n 1)
if [ -z "$runner" ]; then
  fail "ccrun killed by SIGKILL: could not find ccrun under pid $last_pid"
else
  t0=$(cc_now_ms)
  kill -KILL "$runner"
  wait "$last_pid" 2>/dev/null
  left=""
  for i in $(seq 40); do
    left=$(cc_marked_pids "CC_INIT_CASE=$$-$case_id")
    [ -z "$left" ] && break
    sleep 0.05
  done
  ms=$(($(cc_now_ms) - t0))
  if [ -z "$left" ]; then
    pass "ccrun killed by SIGKILL mid-job: its 4 ranks are gone ${ms} ms later"
  else
    fail "ccrun killed by SIGKILL mid-job: ranks still running 2 s later: $(echo $left)"
  fi
fi
finish

echo "init: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
