# tests/lib.bash - helpers that tests/run.sh and the shell tests source: what a
# test left behind in /dev/shm, and which of its processes still run.
#
# A test's processes are found by a marker in their environment (`VAR=value`,
# set on the command that starts them): every descendant inherits it, forked or
# exec'd, whatever process group or session it moves to.

# cc_shm_snapshot - the names of the /dev/shm/cc-* entries, one a line, sorted.
cc_shm_snapshot() {
  local f
  for f in /dev/shm/cc-*; do
    [ -e "$f" ] && printf '%s\n' "${f##*/}"
  done | LC_ALL=C sort
}

# cc_shm_in_use NAME - true when a live process has /dev/shm/NAME mapped or open
# (a job in progress, maybe not ours).
cc_shm_in_use() {
  grep -qsF "/dev/shm/$1" /proc/[0-9]*/maps 2>/dev/null && return 0
  [ -n "$(find /proc/[0-9]*/fd -lname "/dev/shm/$1*" -print -quit 2>/dev/null)" ]
}

# cc_shm_leaked BEFORE - the entries that were not in BEFORE (a snapshot), are
# still there after a grace of up to 2 s, and that no live process uses.
cc_shm_leaked() {
  local before=$1 new="" n i
  for i in $(seq 20); do
    new=$(LC_ALL=C comm -13 <(printf '%s\n' "$before") <(cc_shm_snapshot))
    [ -z "$new" ] && return 0
    sleep 0.1
  done
  for n in $new; do
    cc_shm_in_use "$n" || printf '%s\n' "$n"
  done
}

# cc_marked_pids MARK - the live processes whose environment holds MARK exactly
# (MARK ending in `*`: a prefix). Zombies have no environment and do not count.
cc_marked_pids() {
  local mark=$1 f pid
  local opt=(-lzxF -e "$mark")
  if [ "${mark%\*}" != "$mark" ]; then
    opt=(-lzE -e "^$(printf '%s' "${mark%\*}" | sed 's/[][\.^$*+?(){}|/]/\\&/g')")
  fi
  for f in $(grep "${opt[@]}" /proc/[0-9]*/environ 2>/dev/null); do
    pid=${f#/proc/}; pid=${pid%/environ}
    [ "$pid" != "$$" ] && [ "$pid" != "$BASHPID" ] && echo "$pid"
  done
}

# cc_leftover_procs MARK - wait up to 2 s for MARK's processes to end, then print
# "PID COMMAND" for each one still running, kill it (SIGKILL) and return 1.
cc_leftover_procs() {
  local mark=$1 pids="" i pid
  for i in $(seq 20); do
    pids=$(cc_marked_pids "$mark")
    [ -z "$pids" ] && return 0
    sleep 0.1
  done
  for pid in $pids; do
    printf '%s %s\n' "$pid" "$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
    kill -KILL "$pid" 2>/dev/null
  done
  return 1
}

# cc_free_port - a TCP port that nothing on this host listens on, drawn at random
# below the ephemeral range, so two tests running at once hardly ever draw the
# same one and no connecting socket is given it meanwhile.
cc_free_port() {
  local port hex i lo=32768 hi=60999 base=20000 span
  # below the kernel's ephemeral range: a client socket of another job
  # (connecting, retrying) is never given the port between our pick and
  # the bind
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  if [ "$lo" -gt 12000 ] 2>/dev/null; then span=$((lo - 1 - 10000)); base=10000
  else base=$((hi + 1)); span=$((65535 - hi)); fi
  [ "$span" -gt 100 ] 2>/dev/null || { base=20000; span=40000; }
  for i in $(seq 50); do
    port=$((base + (RANDOM * 32768 + RANDOM) % span))
    hex=$(printf ':%04X ' "$port")
    if ! grep -qs "$hex" /proc/net/tcp /proc/net/tcp6; then
      echo "$port"
      return 0
    fi
  done
  echo 29500
}

# cc_now_ms - milliseconds of the monotonic-enough wall clock.
cc_now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# The case helpers of the shell tests that start processes (test_init.sh,
# test_ccrun_nnodes.sh, test_multihost.sh). They use the caller's case_id,
# clean_env (an `env -i ...` or `env -u ...` prefix), limit, work and
# shm_before, and its fail function.

# cc_case_launch MARK OUT VAR=VALUE... -- COMMAND... - start one process of the
# case in the background, its environment cleaned and marked MARK=$$-$case_id,
# under `timeout $limit` (preceded by ${case_prefix[@]} when the caller set it),
# output in $work/OUT; its pid in $last_pid
cc_case_launch() {
  local mark=$1 out=$2 vars=()
  shift 2
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  "${clean_env[@]}" "$mark=$$-$case_id" "${vars[@]}" \
    ${case_prefix[@]+"${case_prefix[@]}"} timeout -k 5 "$limit" "$@" </dev/null >"$work/$out" 2>&1 &
  last_pid=$!
}

# cc_case_show LINES FILE... - the output of a failed case, indented, at most
# LINES lines of each FILE (so that a probe's own PASS/FAIL lines are not counted)
cc_case_show() {
  local lines=$1 f
  shift
  for f in "$@"; do
    [ -s "$f" ] && sed "s|^|    ${f##*/}: |" "$f" | head -"$lines"
  done
}

# cc_case_finish MARK - after a case: no process marked MARK=$$-$case_id may
# still run and nothing may be new in /dev/shm (both removed, each a failure)
cc_case_finish() {
  local left n leaked
  if ! left=$(cc_leftover_procs "$1=$$-$case_id"); then
    while read -r n; do fail "$case_id: a process still runs (killed now): $n"; done <<<"$left"
  fi
  leaked=$(cc_shm_leaked "$shm_before")
  for n in $leaked; do
    fail "$case_id: left /dev/shm/$n (removed now)"
    rm -f "/dev/shm/$n"
  done
}

# cc_full_only WHAT - in the quick tier (CC_TEST_TIER=quick: make test) print
# "SKIP: WHAT: ..." and return 1, so that a script leaves that part to the
# full suite (make check); else return 0.
cc_full_only() {
  [ "${CC_TEST_TIER:-}" = quick ] || return 0
  echo "SKIP: $1: the quick tier leaves it to the full suite (make check)"
  return 1
}
