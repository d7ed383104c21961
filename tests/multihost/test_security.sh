#!/usr/bin/env bash
# tests/multihost/test_security.sh [BUILD_DIR] - what docs/security.md promises, tried as
# an attacker on this host would, with BUILD/probes/sec_probe (tests/multihost/sec_probe.c)
# as both the job's ranks and the stranger. Ranks are started by hand with
# RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT on loopback (as another launcher would);
# "hosts" are IPC namespaces (unshare --ipc) where a case needs TCP between ranks
# of one machine, or CC_TRANSPORT=tcp.
#   token   a weak token is refused by cc_comm_init (CC_TOKEN and cfg.token),
#           saying how to make one: a short one, and long ones made of runs,
#           sequences or a word repeated; random 128-bit ones pass;
#           cfg.token = "" is no token given (CC_TOKEN is used: over TCP, and
#           in a ccrun job's shared memory); CC_INSECURE_NO_TOKEN turns the
#           token off with a warning; either way CC_TOKEN is gone from the
#           environment once read (and from /proc/PID/environ, what other
#           processes see); without a token a job whose rendezvous is not on
#           loopback prints one warning on rank 0
#           (a network namespace of the test's own with a 10.x address; root)
#   random  without getrandom (a seccomp filter in the probe) a job runs on
#           /dev/urandom; without /dev/urandom too (a mount namespace, root)
#           cc_get_unique_id, cc_comm_init (TCP, and shared memory under ccrun)
#           and cc_spawn fail at once with CC_ERR_SYSTEM saying why
#   oracle  a stranger's hello refused for its world size gets a challenge with
#           a status and no MAC, then the connection ends; a well-formed rank-1
#           hello (token flag set) gets the challenge, and its response with a
#           random MAC gets a refusal whose MAC field is zero; the job then
#           succeeds with the right data
#   refused a stranger's hellos claiming rank 1 again and again while the job
#           starts (rank 1 1.5 s late): logged once, the job succeeds; with
#           CC_REFUSED_GRACE=1 and rank 1 3 s late the job fails naming rank 1
#   tamper  one byte flipped in what rank 0 receives (an LD_PRELOAD interposer
#           on recv: a payload byte, a frame header byte, an encrypted payload
#           byte) makes rank 0 fail with CC_ERR_AUTH naming rank 1, and no rank
#           returns CC_OK; a relay that flips one byte of rank 0's rendezvous
#           answer makes rank 1 fail with CC_ERR_AUTH
#   suites  a rank built without AES-GCM (CC_CRYPTO_PORTABLE) and one with it
#           agree on ChaCha20-Poly1305, in integrity and encryption modes
#   flood   200 silent connections on the rendezvous port before the ranks come,
#           and a sustained flood (300 connections, each reopened as soon as it
#           is dropped) while they come: the job completes within 2.5 s
#           (CC_TIMEOUT=5; a table that only expires silent connections after
#           2 s takes 6 s to reach the ranks behind 200 of them); 1000 silent
#           ones reopened as dropped, and 1000 that dribble a hello one byte
#           every 150 ms (rank 0's soft open-files limit at 256; every link
#           over TCP): the job completes within CC_TIMEOUT=5
#   file    a symbolic link at the file:// path: refused, its target untouched,
#           the link left; a file owned by another user: refused (root only)
#   shm     a segment made first by someone else (mode 0666, or another owner)
#           at the name a job will use: refused at once, not waited in, and
#           left where it is (even by root); with a
#           token the job's names carry a suffix nobody else can compute, and a
#           segment planted at the plain name does not stop the job
#   unexp   a rank that sends empty messages nobody receives, without end: the
#           receiving rank fails with CC_ERR_NO_MEMORY naming it and
#           CC_MAX_UNEXPECTED, its memory bounded; over TCP and shared memory
# About 40 s; CC_TEST_QUICK=1 (the sanitizer runs) leaves out the suites case
# (a build of its own) and shortens the floods.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lib.bash
. "$here/../lib.bash"

build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "FAIL: security: no build directory '${1:-build}'"; exit 1; }
probe=$build/probes/sec_probe
ccrun=$build/ccrun
for f in "$probe" "$ccrun"; do
  [ -x "$f" ] || { echo "FAIL: security: $f is missing (run make)"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cc-test-security.XXXXXX")
quick=${CC_TEST_QUICK:-0}
case_id=""
npass=0 nfail=0 nskip=0
pass() { echo "PASS: security: $*"; npass=$((npass + 1)); }
fail() { echo "FAIL: security: $*"; nfail=$((nfail + 1)); }
skip() { echo "SKIP: security: $*"; nskip=$((nskip + 1)); }

clean_env=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u GROUP_RANK
  -u MASTER_ADDR -u MASTER_PORT -u CC_JOB_ID -u CC_TRANSPORT -u CC_TOKEN -u CC_DEBUG -u CC_NET_ENCRYPT
  -u CC_MAX_UNEXPECTED -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK
  -u OMPI_COMM_WORLD_LOCAL_SIZE -u PMI_RANK -u PMI_SIZE -u SLURM_PROCID
  -u SLURM_NTASKS -u SLURM_LOCALID -u LD_PRELOAD CC_TIMEOUT=20)
limit=60
netns=""

cleanup() {
  local pid
  for pid in $(cc_marked_pids "CC_SEC_CASE=$$-*"); do kill -KILL "$pid" 2>/dev/null; done
  [ -n "$netns" ] && ip netns del "$netns" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'fail "interrupted in case $case_id"; exit 1' INT TERM

begin() { case_id=$1; shm_before=$(cc_shm_snapshot); rm -f "$work"/*.out; }
launch() { cc_case_launch CC_SEC_CASE "$@"; }
show() { cc_case_show 12 "$@"; }
finish() { cc_case_finish CC_SEC_CASE; }
port() { cc_free_port; }
token=$(od -An -tx1 -N32 /dev/urandom | tr -d " \n")   # 256 bits, as ccrun --make-token

# rank R N PORT OUT VARS... - start rank R of N (env:// at 127.0.0.1:PORT) with
# `sec_probe ARGS` (ARGS in $args); pid in $last_pid
rank() {
  local r=$1 n=$2 p=$3 out=$4
  shift 4
  launch "$out" RANK="$r" WORLD_SIZE="$n" MASTER_ADDR=127.0.0.1 MASTER_PORT="$p" "$@" -- "$probe" "${args[@]}"
}

# wait_all PID... - their exit statuses in $statuses
wait_all() {
  local pid
  statuses=()
  for pid in "$@"; do wait "$pid" 2>/dev/null; statuses+=("$?"); done
}

res() { sed -n 's/^result: //p' "$work/$1" | head -n 1; }

# ------------------------------------------------------------ token

begin token-weak
# (a world of one: the token is judged before anything else)
a64=$(printf 'a%.0s' $(seq 64))
weak_tokens=(s3cret "$a64" 0123456789abcdef0123456789abcdef deadbeefdeadbeefdeadbeefdeadbeef
             passwordpasswordpasswordpasswordpassword 0f1e2d3c4b5a69788796a5b4c3d2e1f0)
args=(allreduce 10)
for w in "${weak_tokens[@]}"; do
  for how in CC_TOKEN cfg.token; do
    if [ "$how" = CC_TOKEN ]; then rank 0 1 "$(port)" r0.out CC_TOKEN="$w" CC_TIMEOUT=5
    else rank 0 1 "$(port)" r0.out SEC_CFG_TOKEN="$w" CC_TIMEOUT=5; fi
    wait_all "$last_pid"
    r0=$(res r0.out)
    if [[ $r0 == CC_ERR_INVALID_ARG:*"the token ($how) is too weak"* ]] && [[ $r0 == *--make-token* ]] &&
       { [ "$w" = s3cret ] || [[ $r0 == *"repeats itself"* ]]; }; then
      pass "token: $how=${w:0:40}$([ ${#w} -gt 40 ] && echo ...) refused by cc_comm_init: '$(echo "$r0" | grep -o 'about [0-9]* bits of entropy\( ([^)]*)\)\?')'"
    else
      fail "token: $how=$w: expected CC_ERR_INVALID_ARG saying it is too weak (and, but for s3cret, that it repeats itself or counts) and how to make one, got '$r0'"
    fi
  done
done
# random tokens of 128 bits (32 hex digits, as `head -c 16 /dev/urandom | xxd -p`)
# pass: 100,000 of a fixed pseudo-random sequence, judged as cc_comm_init does
out=$("$probe" tokens 100000 2>&1)
nref=$(echo "$out" | sed -n 's/^tokens: \([0-9]*\) of 100000 refused$/\1/p')
if [ -n "$nref" ] && [ "$nref" -le 3 ]; then
  pass "token: $nref of 100000 random 128-bit hex tokens refused (a pattern by chance)"
else
  fail "token: random 128-bit hex tokens: '$out'; expected at most 3 of 100000 refused"
fi
finish

begin token-env
p=$(port)
args=(allreduce 1000)
rank 1 2 "$p" r1.out CC_TOKEN="$token"; p1=$last_pid
rank 0 2 "$p" r0.out CC_TOKEN="$token"; p0=$last_pid
wait_all "$p0" "$p1"
if [ "${statuses[*]}" = "0 0" ] && grep -q '^env token: absent$' "$work/r0.out" && grep -q '^env token: absent$' "$work/r1.out" &&
   grep -q '^proc environ token: absent$' "$work/r0.out" && grep -q '^proc environ token: absent$' "$work/r1.out"; then
  pass "token: CC_TOKEN is gone from a rank's environment once cc_comm_init read it, and from /proc/PID/environ (the job succeeds)"
else
  fail "token: statuses ${statuses[*]}; expected 0 0, and 'env token: absent' and 'proc environ token: absent' on both ranks"
  show "$work"/r*.out
fi
finish

# cfg.token = "" means no token given, as NULL does: CC_TOKEN is the token
# (and is gone from the environment). Over TCP: rank 0 with cfg.token = "" and
# CC_TOKEN, rank 1 with the same CC_TOKEN (a rank without the token would be
# refused); in shared memory (ccrun: CC_JOB_ID, a fresh CC_TOKEN that names the
# segments): rank 0 with cfg.token = "" meets rank 1 in the same segments.
begin token-empty
p=$(port)
args=(allreduce 1000)
rank 1 2 "$p" r1.out CC_TOKEN="$token" CC_TRANSPORT=tcp CC_TIMEOUT=8; p1=$last_pid
rank 0 2 "$p" r0.out CC_TOKEN="$token" CC_TRANSPORT=tcp CC_TIMEOUT=8 SEC_CFG_TOKEN=; p0=$last_pid
wait_all "$p0" "$p1"
if [ "${statuses[*]}" = "0 0" ] && grep -q '^data: ok' "$work/r0.out" && grep -q '^env token: absent$' "$work/r0.out"; then
  pass "token: cfg.token = \"\" with CC_TOKEN set, over TCP: rank 0 proves CC_TOKEN to rank 1 (which has it) and has it gone from its environment"
else
  fail "token: cfg.token = \"\" with CC_TOKEN set, TCP: statuses ${statuses[*]} (want 0 0, rank 0 using CC_TOKEN and 'env token: absent')"
  show "$work"/r*.out
fi
launch r.out CC_TIMEOUT=5 -- "$ccrun" --tag-output -n 2 sh -c \
  'if [ "$RANK" = 0 ]; then export SEC_CFG_TOKEN=; fi; exec "$0" allreduce 1000' "$probe"; pc=$last_pid
wait_all "$pc"
if [ "${statuses[*]}" = "0" ] && [ "$(grep -c '^\[[01]\] data: ok' "$work/r.out")" = 2 ] &&
   [ "$(grep -c '^\[[01]\] env token: absent' "$work/r.out")" = 2 ]; then
  pass "token: cfg.token = \"\" on rank 0 of a ccrun job: shared memory named after ccrun's CC_TOKEN on both ranks, the job succeeds"
else
  fail "token: cfg.token = \"\" on rank 0 of a ccrun job: status ${statuses[*]} (want 0, both ranks' data right, CC_TOKEN gone from both)"
  show "$work"/r.out
fi
finish

# cfg.token = CC_INSECURE_NO_TOKEN: no token whatever CC_TOKEN says, with a
# warning on stderr; CC_TOKEN is gone from the environment all the same
begin token-insecure
p=$(port)
args=(allreduce 1000)
rank 1 2 "$p" r1.out CC_TRANSPORT=tcp CC_TIMEOUT=8; p1=$last_pid
rank 0 2 "$p" r0.out CC_TOKEN="$token" CC_TRANSPORT=tcp CC_TIMEOUT=8 SEC_CFG_TOKEN=insecure-no-token; p0=$last_pid
wait_all "$p0" "$p1"
if [ "${statuses[*]}" = "0 0" ] && grep -q '^data: ok' "$work/r0.out" && grep -q '^env token: absent$' "$work/r0.out" &&
   grep -q 'WARN.*cfg.token is CC_INSECURE_NO_TOKEN (CC_TOKEN, which is set, is not used).*not authenticated' "$work/r0.out" &&
   ! grep -q 'CC_INSECURE_NO_TOKEN' "$work/r1.out"; then
  pass "token: cfg.token = CC_INSECURE_NO_TOKEN with CC_TOKEN set: rank 0 joins rank 1 (no token) over TCP, warns '$(grep -o 'cfg.token is CC_INSECURE.\{0,80\}' "$work/r0.out" | head -1)...', CC_TOKEN gone"
else
  fail "token: cfg.token = CC_INSECURE_NO_TOKEN: statuses ${statuses[*]} (want 0 0, a warning on rank 0, CC_TOKEN gone)"
  show "$work"/r*.out
fi
finish

begin token-warn
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
  skip "token: the warning without a token needs root for a network namespace"
else
  netns=ccsec$$
  a=10.213.$((RANDOM % 250 + 1)).1
  if ip netns add "$netns" 2>/dev/null && ip -n "$netns" link set lo up && ip -n "$netns" addr add "$a/32" dev lo; then
    p=$(port)
    "${clean_env[@]}" "CC_SEC_CASE=$$-$case_id" timeout -k 5 "$limit" nsenter "--net=/var/run/netns/$netns" bash -c '
      for r in 1 0; do RANK=$r WORLD_SIZE=2 MASTER_ADDR=$1 MASTER_PORT=$2 "$3" allreduce 1000 >"$4/w$r.out" 2>&1 & done
      wait' _ "$a" "$p" "$probe" "$work" </dev/null
    n0=$(grep -c 'WARNING.*no token' "$work/w0.out")
    n1=$(grep -c 'WARNING.*no token' "$work/w1.out")
    p2=$(port)
    "${clean_env[@]}" "CC_SEC_CASE=$$-$case_id" CC_TOKEN="$token" timeout -k 5 "$limit" nsenter "--net=/var/run/netns/$netns" bash -c '
      for r in 1 0; do CC_TOKEN=$5 RANK=$r WORLD_SIZE=2 MASTER_ADDR=$1 MASTER_PORT=$2 "$3" allreduce 1000 >"$4/t$r.out" 2>&1 & done
      wait' _ "$a" "$p2" "$probe" "$work" "$token" </dev/null
    nt=$(cat "$work"/t*.out | grep -c 'WARNING')
    if [ "$n0" = 1 ] && [ "$n1" = 0 ] && [ "$nt" = 0 ] && grep -q '^data: ok' "$work/w0.out" && grep -q '^data: ok' "$work/t0.out"; then
      pass "token: no token, rendezvous at $a (not loopback): one warning, on rank 0 only ('$(grep -o 'WARNING.\{0,90\}' "$work/w0.out")...'); with a token none"
    else
      fail "token: rendezvous at $a: warnings on rank 0: $n0, rank 1: $n1 (want 1, 0); with a token: $nt (want 0)"
      show "$work"/w*.out "$work"/t*.out
    fi
  else
    skip "token: cannot make a network namespace with a 10.x address"
  fi
  ip netns del "$netns" 2>/dev/null
  netns=""
fi
finish

# ------------------------------------------------------------ randomness
if cc_full_only "security: randomness"; then


# Without getrandom (sec_probe's seccomp filter) the ranks take /dev/urandom
# and the job runs; without either (a mount namespace in which /dev/null is
# bound over /dev/urandom, root) nothing is made of the clock and the pid:
# cc_get_unique_id, cc_comm_init (a TCP rendezvous, and shared memory under
# ccrun) and cc_spawn fail at once, saying why.
begin random-urandom
p=$(port)
args=(allreduce 1000)
rank 1 2 "$p" r1.out SEC_NO_GETRANDOM=1 CC_TOKEN="$token" CC_TRANSPORT=tcp; p1=$last_pid
rank 0 2 "$p" r0.out SEC_NO_GETRANDOM=1 CC_TOKEN="$token" CC_TRANSPORT=tcp; p0=$last_pid
wait_all "$p0" "$p1"
if [ "${statuses[*]}" = "0 0" ] && grep -q '^data: ok' "$work/r0.out" && grep -q '^data: ok' "$work/r1.out"; then
  pass "random: without getrandom (seccomp) the ranks take /dev/urandom: a TCP job with a token runs, data right"
else
  fail "random: without getrandom: statuses ${statuses[*]} (want 0 0)"
  show "$work"/r*.out
fi
finish

begin random-none
no_urandom=(unshare -m sh -c 'mount --bind /dev/null /dev/urandom && exec "$@"' _)
if [ "$(id -u)" -ne 0 ] || ! "${no_urandom[@]}" true 2>/dev/null; then
  skip "random: a mount namespace without /dev/urandom needs root (unshare -m)"
else
  want='CC_ERR_SYSTEM:*"the kernel gave no random bytes (getrandom, then /dev/urandom: "*'
  launch u.out SEC_NO_GETRANDOM=1 -- "${no_urandom[@]}" "$probe" uid; pu=$last_pid
  launch s.out SEC_NO_GETRANDOM=1 CC_TIMEOUT=10 -- "${no_urandom[@]}" "$probe" spawn 2; ps=$last_pid
  launch c.out SEC_NO_GETRANDOM=1 CC_TIMEOUT=10 -- "${no_urandom[@]}" "$ccrun" --tag-output -n 2 "$probe" allreduce 1000; pc=$last_pid
  p=$(port)
  args=(allreduce 1000)
  case_prefix=("${no_urandom[@]}")
  rank 1 2 "$p" r1.out SEC_NO_GETRANDOM=1 CC_TOKEN="$token" CC_TIMEOUT=10; p1=$last_pid
  rank 0 2 "$p" r0.out SEC_NO_GETRANDOM=1 CC_TOKEN="$token" CC_TIMEOUT=10; p0=$last_pid
  case_prefix=()
  t0=$(cc_now_ms)
  wait_all "$pu" "$ps" "$pc" "$p0" "$p1"
  ms=$(($(cc_now_ms) - t0))
  ru=$(res u.out) r0=$(res r0.out) r1=$(res r1.out)
  rs=$(sed -n 's/^spawn: status [0-9]*: //p' "$work/s.out")
  nc=$(grep -c '^\[[01]\] result: CC_ERR_SYSTEM: comm_init: cannot make nonces, keys and segment names: the kernel gave no random bytes' "$work/c.out")
  if [[ $ru == CC_ERR_SYSTEM:*"get_unique_id: cannot make the job's nonce and secret: the kernel gave no random bytes"* ]] &&
     [[ $r0 == CC_ERR_SYSTEM:*"comm_init: cannot make nonces, keys and segment names: the kernel gave no random bytes"* ]] &&
     [[ $r1 == CC_ERR_SYSTEM:*"comm_init: cannot make nonces, keys and segment names: the kernel gave no random bytes"* ]] &&
     [[ $rs == *"cc_spawn: cannot make the job's identity and segment key: the kernel gave no random bytes"* ]] &&
     [ "$nc" -ge 1 ] && ! grep -q 'result: CC_OK' "$work/c.out" && [ "${statuses[*]}" = "1 1 1 1 1" ]; then
    pass "random: neither getrandom nor /dev/urandom: cc_get_unique_id, cc_comm_init (TCP rendezvous; shared memory under ccrun) and cc_spawn fail at once ($ms ms): '${ru:0:170}...'"
  else
    fail "random: neither getrandom nor /dev/urandom: statuses ${statuses[*]} (want 1 1 1 1 1), get_unique_id '$ru', cc_spawn '$rs', ranks '$r0' / '$r1', ccrun's ranks: $nc saying why (want 1 or 2: ccrun stops the other when one fails), $(grep -c 'result: CC_OK' "$work/c.out") CC_OK"
    show "$work"/u.out "$work"/s.out "$work"/c.out "$work"/r*.out
  fi
fi
finish

fi  # cc_full_only

# ------------------------------------------------------------ oracle
if cc_full_only "security: oracle"; then


begin oracle
p=$(port)
args=(allreduce 1000)
rank 0 2 "$p" r0.out CC_TOKEN="$token" CC_DEBUG=WARN; p0=$last_pid
for _ in $(seq 100); do grep -q ":$(printf '%04X' "$p") " /proc/net/tcp 2>/dev/null && break; sleep 0.05; done
s99=$("$probe" stranger 127.0.0.1 "$p" 99 2>&1)
s2=$("$probe" stranger 127.0.0.1 "$p" 2 2>&1)
rank 1 2 "$p" r1.out CC_TOKEN="$token"; p1=$last_pid
wait_all "$p0" "$p1"
ok=1
[[ $s99 == "stranger: chal 48 bytes status 2, verdict 0 bytes status 4294967295 mac zero, closed yes" ]] || ok=0
[[ $s2 == "stranger: chal 48 bytes status 0, verdict 40 bytes status 7 mac zero, closed yes" ]] || ok=0
if [ $ok = 1 ]; then
  pass "oracle: a hello for world size 99 gets a challenge with status 2 (CC_ERR_MISMATCH), no MAC, then the end of the connection; a well-formed rank-1 hello gets the challenge and, for a response with a random MAC, a refusal (status 7, CC_ERR_AUTH) whose MAC is zero"
else
  fail "oracle: a stranger got: world 99: '$s99'; world 2: '$s2'; expected a 48-byte challenge, no MAC anywhere, a refusal, a closed connection"
fi
if [ "${statuses[*]}" = "0 0" ] && grep -q '^data: ok' "$work/r0.out" && grep -q '^data: ok' "$work/r1.out"; then
  pass "oracle: after both strangers the real rank 1 joins: all_reduce CC_OK with the right data on both ranks ($(grep -c 'refused a connection' "$work/r0.out") refusals logged by rank 0)"
else
  fail "oracle: the job after the strangers: statuses ${statuses[*]}, expected 0 0 and the right data"
  show "$work"/r*.out
fi
finish

# A stranger's hellos claiming rank 1 (a MAC it cannot compute), again and
# again while the job starts, rank 1 itself 1.5 s after the first: refused and
# logged (once per address, rank and reason), and the job succeeds - a refused
# claim fails the rendezvous only if no rank 1 joins within CC_REFUSED_GRACE
# (5 s). With CC_REFUSED_GRACE=1 and rank 1 3 s late, the same stranger fails
# the job (the documented price of failing fast: docs/security.md).
begin refused-stranger
p=$(port)
args=(allreduce 1000)
rank 0 2 "$p" r0.out CC_TOKEN="$token"; p0=$last_pid
for _ in $(seq 100); do grep -q ":$(printf '%04X' "$p") " /proc/net/tcp 2>/dev/null && break; sleep 0.05; done
( for _ in $(seq 12); do "$probe" stranger 127.0.0.1 "$p" 2 >> "$work/str.out" 2>&1; sleep 0.2; done ) &
ps=$!
sleep 1.5
rank 1 2 "$p" r1.out CC_TOKEN="$token"; p1=$last_pid
wait_all "$p0" "$p1"
wait "$ps"
nlog=$(grep -c 'refused a connection from 127\.0\.0\.1 claiming to be rank 1 of 2: its CC_TOKEN differs' "$work/r0.out")
if [ "${statuses[*]}" = "0 0" ] && grep -q '^data: ok' "$work/r0.out" && grep -q '^data: ok' "$work/r1.out" &&
   [ "$(grep -c 'verdict 40 bytes status 7' "$work/str.out")" -ge 5 ] && [ "$nlog" = 1 ]; then
  pass "refused: a stranger's hellos as rank 1 (wrong MAC, $(grep -c 'verdict 40 bytes status 7' "$work/str.out") of them) while the job starts, rank 1 1.5 s late: the job succeeds; rank 0 logged the refusal once"
else
  fail "refused: stranger hammering as rank 1: statuses ${statuses[*]} (want 0 0), refusals logged $nlog (want 1), stranger: $(sort "$work/str.out" | uniq -c | head -3)"
  show "$work"/r*.out
fi
finish

begin refused-grace
p=$(port)
args=(allreduce 1000)
rank 0 2 "$p" r0.out CC_TOKEN="$token" CC_REFUSED_GRACE=1 CC_TIMEOUT=60; p0=$last_pid
for _ in $(seq 100); do grep -q ":$(printf '%04X' "$p") " /proc/net/tcp 2>/dev/null && break; sleep 0.05; done
t0=$(cc_now_ms)
"$probe" stranger 127.0.0.1 "$p" 2 > "$work/str.out" 2>&1
sleep 3
rank 1 2 "$p" r1.out CC_TOKEN="$token" CC_TIMEOUT=3; p1=$last_pid
wait_all "$p0" "$p1"
ms=$(($(cc_now_ms) - t0))
r0=$(res r0.out)
if [ "${statuses[0]}" -ne 0 ] && [ "${statuses[1]}" -ne 0 ] && [[ $r0 == CC_ERR_AUTH:*rank\ 1\ \(from\ 127.0.0.1\)\ was\ refused*CC_TOKEN\ differs* ]]; then
  pass "refused: with CC_REFUSED_GRACE=1 a stranger's claim of rank 1, the real one 3 s late, fails the job: '${r0:0:160}...' ($ms ms)"
else
  fail "refused: CC_REFUSED_GRACE=1, stranger then rank 1 3 s late: statuses ${statuses[*]}, rank 0 '$r0'; expected both nonzero, rank 0 CC_ERR_AUTH naming rank 1"
  show "$work"/r*.out
fi
finish

fi  # cc_full_only

# ------------------------------------------------------------ tamper

shim=$work/flip.so
if ! cc -shared -fPIC -O1 -DSEC_PROBE_SHIM -o "$shim" "$here/sec_probe.c" -ldl 2>"$work/shim.err"; then
  fail "tamper: cannot build the recv interposer: $(head -c 300 "$work/shim.err")"
else
  # tamper NAME OFFSET VARS...: rank 0's second TCP stream (its data connection
  # from rank 1; the first is the rendezvous) has byte OFFSET flipped
  tamper() {
    local name=$1 off=$2 r0 r1
    shift 2
    begin "tamper-$name"
    p=$(port)
    args=(allreduce 1000000)
    rank 1 2 "$p" r1.out CC_TOKEN="$token" CC_TRANSPORT=tcp CC_TIMEOUT=8 "$@"; p1=$last_pid
    # (the shim is not built with the sanitizers: ASan must not insist on coming first)
    rank 0 2 "$p" r0.out CC_TOKEN="$token" CC_TRANSPORT=tcp CC_TIMEOUT=8 LD_PRELOAD="$shim" SEC_FLIP_AT="$off" \
      SEC_FLIP_STREAM=2 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"; p0=$last_pid
    wait_all "$p0" "$p1"
    r0=$(res r0.out) r1=$(res r1.out)
    if grep -q '^flip: ' "$work/r0.out" && [[ $r0 == CC_ERR_AUTH:*"from rank 1 failed its integrity check"* ]] &&
       [ -n "$r1" ] && [[ $r1 != CC_OK* ]] && [ "${statuses[0]}" = 1 ] && [ "${statuses[1]}" = 1 ]; then
      pass "tamper: $name (byte $off of rank 0's data stream flipped${*:+, $*}): rank 0 '${r0:0:110}...', rank 1 '${r1%%:*}'"
    else
      fail "tamper: $name (byte $off${*:+, $*}): rank 0 '$r0', rank 1 '$r1', statuses ${statuses[*]}; expected rank 0 CC_ERR_AUTH naming rank 1, no CC_OK (status 3: CC_OK with WRONG data)"
      show "$work"/r*.out
    fi
    finish
  }
  # the data stream: hello 96 + response 40 bytes of handshake, then frames
  # (header 48, its tag 16, payload, tag 16): byte 141 is the first header's tag field
  tamper "a payload byte" 1000001
  tamper "a frame header byte" 141
  tamper "an encrypted payload byte" 2000003 CC_NET_ENCRYPT=1
fi

begin tamper-relay
p=$(port)
args=(allreduce 1000)
# what rank 0 says to rank 1 on the rendezvous: challenge 48, verdict 40, then
# the answer (88) and the table: byte 200 is in rank 0's record. The relay
# listens on a port the kernel picks (a port picked free beforehand was once
# taken by another socket before the relay bound it) and says which.
launch relay.out -- "$probe" relay 0 127.0.0.1 "$p" s2c 200; pr=$last_pid
rank 0 2 "$p" r0.out CC_TOKEN="$token" CC_TIMEOUT=4; p0=$last_pid
for _ in $(seq 100); do grep -q '^relay: listening' "$work/relay.out" && break; sleep 0.05; done
rp=$(sed -n 's/^relay: listening on port \([0-9]*\)$/\1/p' "$work/relay.out")
rank 1 2 "${rp:-1}" r1.out CC_TOKEN="$token" CC_TIMEOUT=4; p1=$last_pid
wait_all "$p1" "$p0" "$pr"
r0=$(res r0.out) r1=$(res r1.out)
if grep -q '^relay: flipped byte 200' "$work/relay.out" && [[ $r1 == CC_ERR_AUTH:*"answer from rank 0"*integrity* ]] && [[ $r0 != CC_OK* ]]; then
  pass "tamper: a relay flips byte 200 of rank 0's rendezvous answer (the table): rank 1 '${r1:0:100}...', rank 0 '${r0%%:*}'"
else
  fail "tamper: relay on the rendezvous answer: rank 1 '$r1', rank 0 '$r0'; expected rank 1 CC_ERR_AUTH (the answer failed its integrity check)"
  show "$work"/relay.out "$work"/r*.out
fi
finish

# ------------------------------------------------------------ suites

if [ "$quick" = 1 ]; then
  skip "suites: CC_TEST_QUICK=1 (a build of its own)"
elif ! grep -qw aes /proc/cpuinfo; then
  skip "suites: this CPU has no AES-NI: every rank runs ChaCha20-Poly1305 already"
else
  portable=$work/sec_probe_portable
  if ! cc -std=c99 -O1 -DCC_CRYPTO_PORTABLE -I"$root" -I"$root/tests" -o "$portable" "$here/sec_probe.c" -pthread -lm 2>"$work/build.err"; then
    fail "suites: cannot build sec_probe with -DCC_CRYPTO_PORTABLE: $(head -c 300 "$work/build.err")"
  else
    for enc in 0 1; do
      begin "suites-$enc"
      p=$(port)
      args=(allreduce 300000)
      rank 1 2 "$p" r1.out CC_TOKEN="$token" CC_TRANSPORT=tcp CC_NET_ENCRYPT=$enc CC_DEBUG=INFO; p1=$last_pid
      launch r0.out RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$p" CC_TOKEN="$token" CC_TRANSPORT=tcp \
        CC_NET_ENCRYPT=$enc CC_DEBUG=INFO -- "$portable" allreduce 300000; p0=$last_pid
      wait_all "$p0" "$p1"
      if [ "${statuses[*]}" = "0 0" ] && grep -q 'authenticated: ChaCha20-Poly1305' "$work/r0.out" &&
         grep -q 'authenticated: ChaCha20-Poly1305' "$work/r1.out" && grep -q '^data: ok' "$work/r0.out"; then
        pass "suites: a rank without AES-GCM (CC_CRYPTO_PORTABLE) and one with it: ChaCha20-Poly1305 on both sides, CC_NET_ENCRYPT=$enc, all_reduce of 300000 floats right"
      else
        fail "suites: portable and AES-NI ranks, CC_NET_ENCRYPT=$enc: statuses ${statuses[*]}"
        show "$work"/r*.out
      fi
      finish
    done
  fi
fi

# ------------------------------------------------------------ flood
if cc_full_only "security: flood"; then


# flood_case NAME MAXMS N SECONDS [dribble MS]: the flood (sec_probe flood N
# SECONDS ...) starts on rank 0's rendezvous port before ranks 1 and 2 come;
# the job must complete within CC_TIMEOUT=5 (and MAXMS, when not 0). Ranks
# take VARS from flood_vars=(...), rank 0 its command prefix from
# flood_r0_prefix=(...).
flood_vars=() flood_r0_prefix=()
flood_case() {
  local name=$1 maxms=$2 n=$3 secs=$4 t0 ms
  shift 4
  begin "flood-$name"
  p=$(port)
  args=(allreduce 1000)
  case_prefix=(${flood_r0_prefix[@]+"${flood_r0_prefix[@]}"})
  rank 0 3 "$p" r0.out CC_TOKEN="$token" CC_TIMEOUT=5 ${flood_vars[@]+"${flood_vars[@]}"}; p0=$last_pid
  case_prefix=()
  for _ in $(seq 100); do grep -q ":$(printf '%04X' "$p") " /proc/net/tcp 2>/dev/null && break; sleep 0.05; done
  launch flood.out -- "$probe" flood 127.0.0.1 "$p" "$n" "$secs" "$@"; pf=$last_pid
  for _ in $(seq 100); do grep -q '^flood: .* open' "$work/flood.out" 2>/dev/null && break; sleep 0.05; done
  t0=$(cc_now_ms)
  rank 1 3 "$p" r1.out CC_TOKEN="$token" CC_TIMEOUT=5 ${flood_vars[@]+"${flood_vars[@]}"}; p1=$last_pid
  rank 2 3 "$p" r2.out CC_TOKEN="$token" CC_TIMEOUT=5 ${flood_vars[@]+"${flood_vars[@]}"}; p2=$last_pid
  wait_all "$p0" "$p1" "$p2"
  ms=$(($(cc_now_ms) - t0))
  kill -TERM "$pf" 2>/dev/null
  wait "$pf" 2>/dev/null
  if [ "${statuses[*]}" = "0 0 0" ] && grep -q '^data: ok' "$work/r0.out" && { [ "$maxms" = 0 ] || [ "$ms" -lt "$maxms" ]; }; then
    pass "flood: $name: ranks 1 and 2 join through it, the job completes in $ms ms (CC_TIMEOUT=5; $(grep -h '^flood: ' "$work/flood.out" | tr '\n' ' '))"
  else
    fail "flood: $name: statuses ${statuses[*]} after $ms ms; expected 0 0 0 within CC_TIMEOUT=5$([ "$maxms" = 0 ] || echo " and $maxms ms")"
    show "$work"/r*.out "$work"/flood.out
  fi
  finish
}
flood_case "200 silent connections" 2500 200 0
if [ "$quick" = 1 ]; then flood_case "a sustained flood (200 connections reopened as dropped, 4 s)" 2500 200 4
else flood_case "a sustained flood (300 connections reopened as dropped, 6 s)" 2500 300 6; fi
# From one address: 1000 connections that stay silent, reopened as soon as
# they are dropped; and 1000 that dribble the start of a hello, a byte every
# 150 ms (never silent long enough to look idle), reopened as dropped, with
# rank 0's soft open-files limit at 256 (it raises it toward the hard limit)
# and every link over TCP.
flood_case "1000 silent connections reopened as dropped" 0 1000 10
flood_vars=(CC_TRANSPORT=tcp)
flood_r0_prefix=(bash -c 'ulimit -S -n 256 && exec "$@"' _)
flood_case "1000 connections dribbling a hello a byte every 150 ms, reopened as dropped; ulimit -S -n 256 on rank 0; CC_TRANSPORT=tcp" 0 1000 10 dribble 150
flood_vars=() flood_r0_prefix=()
nofile=$(sed -n 's/^nofile: \([0-9]*\) of \([0-9]*\)$/\1 \2/p' "$work/r0.out")
if [ -z "$nofile" ]; then
  fail "flood: rank 0 did not say its open-files limit after cc_comm_init"
elif [ "${nofile#* }" -lt 1100 ]; then
  skip "flood: the hard open-files limit (${nofile#* }) leaves no room to raise the soft one to a table's worth"
elif [ "${nofile% *}" -ge 1088 ]; then
  pass "flood: rank 0 raised its soft open-files limit from 256 to ${nofile% *} (hard ${nofile#* }): a descriptor for each connection of its table"
else
  fail "flood: rank 0's soft open-files limit after cc_comm_init is ${nofile% *} (from 256; hard ${nofile#* }): expected it raised to a table's worth"
fi

fi  # cc_full_only

# ------------------------------------------------------------ file://
if cc_full_only "security: file://"; then


begin file-symlink
echo "precious" >"$work/victim"
ln -s "$work/victim" "$work/rdv"
t0=$(cc_now_ms)
# (net_probe takes its init method from NET_PROBE_INIT)
launch r0.out RANK=0 WORLD_SIZE=2 CC_TIMEOUT=5 NET_PROBE_INIT="file://$work/rdv" -- "$build/probes/net_probe" token; p0=$last_pid
launch r1.out RANK=1 WORLD_SIZE=2 CC_TIMEOUT=5 NET_PROBE_INIT="file://$work/rdv" -- "$build/probes/net_probe" token; p1=$last_pid
wait_all "$p0" "$p1"
ms=$(($(cc_now_ms) - t0))
r0=$(sed -n 's/^result: //p' "$work/r0.out" | head -1)
if [ "$(cat "$work/victim")" = "precious" ] && [ -L "$work/rdv" ] && [[ $r0 == *"symbolic link"* ]] && [ "$ms" -lt 4000 ]; then
  pass "file: a symbolic link at the file:// path: refused ('${r0:0:120}...'), its target untouched, the link left, both ranks done in $ms ms"
else
  fail "file: symbolic link at the file:// path: rank 0 '$r0', target now '$(head -c 80 "$work/victim")', link $( [ -L "$work/rdv" ] && echo kept || echo removed) after $ms ms"
  show "$work"/r*.out
fi
finish

begin file-foreign
if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
  skip "file: a rendezvous file of another user needs root (chown)"
else
  rm -f "$work/rdv"
  printf 'cc-rendezvous 2 127.0.0.1 %s 0123456789abcdef0123456789abcdef\n' "$(port)" >"$work/rdv"
  chown nobody "$work/rdv"
  launch r0.out RANK=0 WORLD_SIZE=2 CC_TIMEOUT=5 NET_PROBE_INIT="file://$work/rdv" -- "$build/probes/net_probe" token; p0=$last_pid
  launch r1.out RANK=1 WORLD_SIZE=2 CC_TIMEOUT=5 NET_PROBE_INIT="file://$work/rdv" -- "$build/probes/net_probe" token; p1=$last_pid
  wait_all "$p0" "$p1"
  r0=$(sed -n 's/^result: //p' "$work/r0.out" | head -1)
  r1=$(sed -n 's/^result: //p' "$work/r1.out" | head -1)
  if [[ $r0 == *"belongs to uid"* ]] && [[ $r1 == *"belongs to uid"* ]] && grep -q 0123456789abcdef "$work/rdv"; then
    pass "file: a rendezvous file owned by another user: both ranks refuse it ('${r1:0:130}...'), its content unchanged"
  else
    fail "file: a file owned by nobody: rank 0 '$r0', rank 1 '$r1'; expected both to refuse it naming its owner"
  fi
fi
finish

fi  # cc_full_only

# ------------------------------------------------------------ shm

job=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
begin shm-foreign
seg=/dev/shm/cc-$job-w0
(umask 0; : >"$seg"; chmod 0666 "$seg")
[ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && chown nobody "$seg"
owner=$(stat -c '%U %a' "$seg")
ino=$(stat -c '%i' "$seg")
t0=$(cc_now_ms)
args=(allreduce 10)
launch r1.out RANK=1 WORLD_SIZE=2 CC_JOB_ID="$job" CC_TIMEOUT=10 -- "$probe" allreduce 10; p1=$last_pid
wait_all "$p1"
ms=$(($(cc_now_ms) - t0))
r1=$(res r1.out)
left1=$([ "$(stat -c '%i' "$seg" 2>/dev/null)" = "$ino" ] && echo kept || echo removed)
# rank 0, whose O_EXCL create finds it there
launch r0.out RANK=0 WORLD_SIZE=2 CC_JOB_ID="$job" CC_TIMEOUT=10 -- "$probe" allreduce 10; p0=$last_pid
wait_all "$p0"
r0=$(res r0.out)
left0=$([ "$(stat -c '%i' "$seg" 2>/dev/null)" = "$ino" ] && echo kept || echo removed)
rm -f "$seg"
if [[ $r1 == CC_ERR_SYSTEM:*"refusing shared memory"* ]] && [ "$ms" -lt 3000 ]; then
  pass "shm: a segment made first by someone else ($owner) at the job's name: rank 1 refuses it in $ms ms: '${r1:0:140}...'"
else
  fail "shm: a foreign segment ($owner) at $seg: rank 1 '$r1' after $ms ms; expected a refusal at once, not a wait in it"
  show "$work"/r1.out
fi
if [ "$left1" = kept ] && [ "$left0" = kept ] && [[ $r0 == CC_ERR_SYSTEM:*"cannot create shared memory"* ]]; then
  pass "shm: the refusing rank 1, and rank 0 that cannot create its segment there, leave the planted one ($owner$([ "$(id -u)" -eq 0 ] && echo ', running as root')) alone: they unlink only a segment they made or mapped"
else
  fail "shm: the planted segment ($owner) after rank 1 refused it: $left1, after rank 0 failed ('$r0'): $left0; expected kept both times"
  show "$work"/r0.out
fi
finish

begin shm-suffix
job=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
seg=/dev/shm/cc-$job-w0
(umask 0; : >"$seg"; chmod 0666 "$seg")
args=(allreduce 1000)
launch r0.out RANK=0 WORLD_SIZE=2 CC_JOB_ID="$job" CC_TOKEN="$token" -- "$probe" allreduce 1000; p0=$last_pid
launch r1.out RANK=1 WORLD_SIZE=2 CC_JOB_ID="$job" CC_TOKEN="$token" -- "$probe" allreduce 1000; p1=$last_pid
wait_all "$p0" "$p1"
rm -f "$seg"
if [ "${statuses[*]}" = "0 0" ] && grep -q '^data: ok' "$work/r0.out"; then
  pass "shm: with a token the job's segments are named with a suffix from it: a segment planted at the plain name /dev/shm/cc-JOB-w0 does not stop the job"
else
  fail "shm: a segment planted at the plain name, job with a token: statuses ${statuses[*]}"
  show "$work"/r*.out
fi
finish

# ------------------------------------------------------------ unexpected messages
if cc_full_only "security: unexpected messages"; then


# unexp_case NAME VARS...: rank 1 sends empty messages that nobody receives
unexp_case() {
  local name=$1 r0 rss t0 ms
  shift
  begin "unexp-$name"
  p=$(port)
  t0=$(cc_now_ms)
  if [ "$name" = "shared memory" ]; then
    launch r.out CC_MAX_UNEXPECTED=1M CC_TIMEOUT=20 -- "$ccrun" --tag-output -n 2 "$probe" unexp; pc=$last_pid
    wait_all "$pc"
    sed -n 's/^\[0\] //p' "$work/r.out" >"$work/r0.out"
  else
    args=(unexp)
    rank 1 2 "$p" r1.out CC_MAX_UNEXPECTED=1M "$@"; p1=$last_pid
    rank 0 2 "$p" r0.out CC_MAX_UNEXPECTED=1M "$@"; p0=$last_pid
    wait_all "$p0" "$p1"
  fi
  ms=$(($(cc_now_ms) - t0))
  r0=$(res r0.out)
  rss=$(sed -n 's/^rss: //p' "$work/r0.out")
  if [[ $r0 == CC_ERR_NO_MEMORY:*"rank 1 sent more"*CC_MAX_UNEXPECTED* ]] && [ -n "$rss" ] && [ "$rss" -lt 200000 ] && [ "$ms" -lt 15000 ]; then
    pass "unexp: $name: rank 0 fails in $ms ms with '${r0:0:150}...'; its peak RSS $rss KiB"
  else
    fail "unexp: $name: rank 0 '$r0', peak RSS '${rss}' KiB after $ms ms; expected CC_ERR_NO_MEMORY naming rank 1 and CC_MAX_UNEXPECTED, bounded memory"
    show "$work"/r*.out
  fi
  finish
}
unexp_case "TCP" CC_TRANSPORT=tcp CC_TOKEN="$token"
unexp_case "shared memory"

fi  # cc_full_only

echo "security: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
