#!/usr/bin/env bash
# tests/multihost/test_multihost.sh [BUILD_DIR] - jobs spread over several "hosts": Linux
# network namespaces joined by a bridge, each host running its own
# `ccrun --nnodes N --node-rank K` of BUILD/probes/net_probe (tests/multihost/net_probe.c).
#
# Network: a switch namespace holding a bridge (10.213.X.254) and one veth
# pair per host namespace; host K is 10.213.X.(K+1)/24, rank 0's host is the
# master. Every name carries this shell's pid, X and the ports are random, so
# concurrent runs do not collide.
#   net)    the namespaces reach each other over the bridge; a switch port
#           taken down cuts its host off, and brought up restores it
#   plumb)  a single-host job inside a namespace (shared memory), and an env://
#           job rendezvousing at the namespace address
#   a) 2 hosts x 2 ranks, `all`: both ccruns exit 0; `info: size 4 local_size 2`
#   b) the same with CC_TRANSPORT=tcp
#   c) 3 hosts x 1 rank, `all`
#   f) two different tokens on host 0 and host 1: rank 1 gets CC_ERR_AUTH at
#      once, rank 0 CC_ERR_AUTH naming rank 1, its address and its token within
#      8 s (CC_TIMEOUT=120: CC_REFUSED_GRACE, 5 s); matching tokens succeed
#      (every other job has one token for all its hosts: ccrun --nnodes wants
#      one, and with it every frame between hosts is authenticated)
#   g) garbage clients (junk bytes, huge lengths, silence, held open) on the
#      rendezvous port and on every port the ranks listen on: the job succeeds
#   d) rank 3 (host 1) SIGKILLs itself: ranks 0-2 report CC_ERR_PEER_LOST (or
#      TIMEOUT) within 2 s naming rank 3, both ccruns fail, nothing is left
#   e) link cut: the switch port of host 1 goes down mid all_reduce; rank 0
#      reports CC_ERR_TIMEOUT or PEER_LOST within CC_TIMEOUT=3 + 5 s
# The cases run in the order a b c f g d e (the link cut last). They need the
# TCP transport: while a 2-host job gets CC_ERR_UNSUPPORTED ("no TCP transport
# yet") they are skipped, unless CC_TEST_REQUIRE_TCP=1. CC_MH_SAME_HOST=1 is a
# dry run of the harness itself (see in_ns below).
# Takes about 20-30 s when everything passes (f waits out CC_REFUSED_GRACE=5 on rank 0,
# e waits out CC_TIMEOUT=3, g holds the ranks 3 s).
# SKIP when not root or when `ip netns add` fails. Everything created (namespaces,
# processes) is removed on exit, failure or interrupt; after each case no
# process may run in the namespaces and nothing may be new in /dev/shm/cc-*.
set -u

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.bash
. "$here/../lib.bash"

build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "FAIL: multihost: no build directory '${1:-build}'"; exit 1; }
ccrun=$build/ccrun
probe=$build/probes/net_probe
for f in "$ccrun" "$probe"; do
  [ -x "$f" ] || { echo "FAIL: multihost: $f is missing (run make)"; exit 1; }
done
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: multihost: needs root for network namespaces (ip netns)"
  exit 0
fi
command -v ip >/dev/null || { echo "SKIP: multihost: no 'ip' command (iproute2)"; exit 0; }

prefix=ccmh$$                 # namespaces: ${prefix}-sw, ${prefix}-h0, ...
sw=$prefix-sw
net=10.213.$((RANDOM % 250 + 1))
work=$(mktemp -d "${TMPDIR:-/tmp}/cc-test-multihost.XXXXXX")
hosts=()                      # namespace names, index = node rank
case_id=setup
npass=0 nfail=0 nskip=0
pass() { echo "PASS: multihost: $*"; npass=$((npass + 1)); }
fail() { echo "FAIL: multihost: $*"; nfail=$((nfail + 1)); }
skip() { echo "SKIP: multihost: $*"; nskip=$((nskip + 1)); }

# Every process of a case carries CC_MH_CASE=$$-CASE; every launch starts from
# an environment cleared of what a surrounding launcher set.
clean_env=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u GROUP_RANK
  -u MASTER_ADDR -u MASTER_PORT -u CC_JOB_ID -u CC_TRANSPORT -u CC_TOKEN -u CC_DEBUG
  -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK
  -u OMPI_COMM_WORLD_LOCAL_SIZE -u PMI_RANK -u PMI_SIZE -u SLURM_PROCID
  -u SLURM_NTASKS -u SLURM_LOCALID CC_TIMEOUT=20)
limit=60                      # seconds any one process may run
# Jobs on several hosts need a token (ccrun refuses to start without one):
# every job gets this one, but case f's
token=$("$build/ccrun" --make-token 2>/dev/null)

# ip with a bound: nothing here should take long
nsip() { timeout 10 ip "$@"; }

# in_ns NS COMMAND... - run COMMAND in namespace NS as a host of its own: `ip
# netns exec` gives it a mount namespace of its own too, which is part of cc's
# host identity. CC_MH_SAME_HOST=1 enters the network namespace only: every
# rank then has the same host identity, rendezvouses across the bridge and
# talks through shared memory - a dry run of this harness on a build without
# the TCP transport (cases e and the local_size checks do not apply then).
# ns_argv NS sets nsx to that command prefix (for use after `env VARS...`, so
# that the marker is there from the start).
same_host=${CC_MH_SAME_HOST:-0}
ns_argv() {
  if [ "$same_host" = 1 ]; then nsx=(nsenter "--net=/var/run/netns/$1"); else nsx=(ip netns exec "$1"); fi
}
in_ns() {
  local nsx
  ns_argv "$1"
  shift
  "${nsx[@]}" "$@"
}

# The program ccrun starts on several hosts; in the dry run without the
# LOCAL_* variables, which would tell the library that the job spans hosts.
probe_cmd=("$probe")
[ "$same_host" = 1 ] && probe_cmd=(env -u LOCAL_WORLD_SIZE -u LOCAL_RANK "$probe")

kill_case_procs() {
  local pid
  for pid in $(cc_marked_pids "CC_MH_CASE=$$-*"); do kill -KILL "$pid" 2>/dev/null; done
}

cleanup() {
  local ns pid
  trap - EXIT INT TERM
  disown -a 2>/dev/null       # no "Killed" notices for the jobs killed here
  kill_case_procs
  for ns in "${hosts[@]}" "$sw"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  done
  for ns in "${hosts[@]}" "$sw"; do
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'fail "interrupted in case $case_id"; exit 1' INT TERM

# Namespaces of earlier runs that died by SIGKILL (their shell is gone).
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^ccmh[0-9]+-'); do
  pid=${ns#ccmh}; pid=${pid%%-*}
  [ -d "/proc/$pid" ] || ip netns del "$ns" 2>/dev/null
done

# ------------------------------------------------------------ network

# make_net N - the switch and N hosts; 0 on success
make_net() {
  local n=$1 k h
  nsip netns add "$sw" 2>"$work/netns.err" || return 2
  nsip -n "$sw" link set lo up &&
    nsip -n "$sw" link add br0 type bridge &&
    nsip -n "$sw" addr add "$net.254/24" dev br0 &&
    nsip -n "$sw" link set br0 up || return 1
  for k in $(seq 0 $((n - 1))); do
    h=$prefix-h$k
    nsip netns add "$h" || return 1
    hosts+=("$h")
    nsip -n "$h" link set lo up &&
      nsip link add name eth0 netns "$h" type veth peer name "p$k" netns "$sw" &&
      nsip -n "$sw" link set "p$k" master br0 &&
      nsip -n "$sw" link set "p$k" up &&
      nsip -n "$h" addr add "$net.$((k + 1))/24" dev eth0 &&
      nsip -n "$h" link set eth0 up || return 1
  done
}

# reach FROM_NS ADDR [SECONDS] - true when ADDR answers a TCP connect from
# FROM_NS (port 9 is closed: a refusal proves the path; a timeout or "No route"
# does not)
reach() {
  local err
  err=$(in_ns "$1" timeout "${3:-3}" bash -c "exec 3<>/dev/tcp/$2/9" 2>&1)
  case $err in *refused*) return 0 ;; esac
  return 1
}

make_net 3
st=$?
if [ "$st" -eq 2 ]; then
  skip "'ip netns add' failed ($(head -c 200 "$work/netns.err")): no network namespaces here"
  echo "multihost: $npass passed, $nfail failed, $nskip skipped"
  exit 0
elif [ "$st" -ne 0 ]; then
  fail "net: could not build the namespaces, bridge and veth pairs (status $st)"
  exit 1
fi
bad=""
for k in 0 1 2; do
  for j in 0 1 2; do
    [ "$k" = "$j" ] && continue
    reach "${hosts[$k]}" "$net.$((j + 1))" || bad="$bad h$k->h$j"
  done
  reach "$sw" "$net.$((k + 1))" || bad="$bad sw->h$k"
done
if command -v ping >/dev/null; then
  in_ns "${hosts[1]}" timeout 5 ping -c 1 -W 2 "$net.1" >/dev/null 2>&1 || bad="$bad ping:h1->h0"
fi
# What case e does: host 1's switch port down cuts it off; up again, it is back.
if [ -z "$bad" ]; then
  nsip -n "$sw" link set p1 down
  reach "${hosts[0]}" "$net.2" 1 && bad="$bad h0->h1-with-p1-down"
  nsip -n "$sw" link set p1 up
  for _ in $(seq 40); do reach "${hosts[0]}" "$net.2" 1 && break; sleep 0.05; done
  reach "${hosts[0]}" "$net.2" || bad="$bad h0->h1-after-p1-up"
fi
if [ -z "$bad" ]; then
  pass "net: 3 host namespaces and a switch ($net.0/24) reach each other over the bridge; a switch port down cuts its host off, up restores it"
else
  fail "net: unreachable:$bad"
  exit 1
fi

# ------------------------------------------------------------ helpers

# begin NAME - start a case
begin() {
  case_id=$1
  shm_before=$(cc_shm_snapshot)
  rm -f "$work"/*.out
}

# free port for the rendezvous (the namespaces are ours: no clash to fear,
# but random as a concurrent run on the real network would need)
port() { echo $((20000 + (RANDOM * 32768 + RANDOM) % 20000)); }

# launch HOST OUT VAR=VALUE... -- COMMAND... : run COMMAND in host HOST's
# namespace, in the background, output in $work/OUT, pid in $last_pid
launch() {
  local h=$1 case_prefix
  shift
  ns_argv "${hosts[$h]}"
  case_prefix=("${nsx[@]}")
  cc_case_launch CC_MH_CASE "$@"
}

# job NNODES PER_NODE PORT VARS... -- PROBE ARGS... : one ccrun per host;
# outputs h0.out, h1.out, ...; pids in job_pids. Host 0 starts first.
job() {
  local nn=$1 per=$2 p=$3 k vars=()
  shift 3
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  job_pids=()
  for k in $(seq 0 $((nn - 1))); do
    launch "$k" "h$k.out" CC_TOKEN="$token" "${vars[@]}" -- "$ccrun" --tag-output --kill-grace 5 --nnodes "$nn" \
      --node-rank "$k" --master-addr "$net.1" --master-port "$p" -n "$per" "${probe_cmd[@]}" "$@"
    job_pids+=("$last_pid")
  done
}

# wait_all PID... - wait for each; their exit statuses in $statuses
wait_all() {
  local pid
  statuses=()
  for pid in "$@"; do
    wait "$pid" 2>/dev/null
    statuses+=("$?")
  done
}

# alive PID... - true while any of them runs
alive() {
  local pid
  for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}

# wait_until SECONDS PID... - let the PIDs run at most SECONDS more, then kill
# the case's processes; their exit statuses in $statuses
wait_until() {
  local end=$(($(cc_now_ms) + $1 * 1000))
  shift
  while alive "$@" && [ "$(cc_now_ms)" -lt "$end" ]; do sleep 0.05; done
  alive "$@" && kill_case_procs
  wait_all "$@"
}

# wait_for FILE REGEX N SECONDS [PID...] - until FILE has N lines matching
# REGEX; false after SECONDS, or once none of the PIDs runs any more
wait_for() {
  local file=$1 re=$2 n=$3 end=$(($(cc_now_ms) + $4 * 1000))
  shift 4
  while [ "$(cc_now_ms)" -lt "$end" ]; do
    [ "$(grep -cE "$re" "$file" 2>/dev/null)" -ge "$n" ] && return 0
    [ $# -gt 0 ] && ! alive "$@" && break
    sleep 0.05
  done
  [ "$(grep -cE "$re" "$file" 2>/dev/null)" -ge "$n" ]
}

# show FILE... - the output of a failed case, indented (so that the probe's own
# PASS/FAIL lines are not counted as this test's)
show() { cc_case_show 40 "$@"; }

# finish - after a case: no process of it, nothing in the namespaces, nothing
# new in /dev/shm
finish() {
  local n ns pids
  cc_case_finish CC_MH_CASE
  for ns in "${hosts[@]}" "$sw"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    if [ -n "$pids" ]; then
      fail "$case_id: processes left in namespace $ns (killed now): $(echo "$pids" | tr '\n' ' ')"
      for n in $pids; do kill -KILL "$n" 2>/dev/null; done
    fi
  done
}

# result_of FILE RANK - the `result:` line of RANK (without "[R] result: ")
result_of() { sed -n "s/^\[$2\] result: //p" "$1" | head -n 1; }

# probe_ok FILE NSECTIONS - rank 0's output (in FILE) holds NSECTIONS PASS
# lines of the probe and no FAIL line from any rank
probe_ok() {
  local first=$1 n=$2
  shift 2
  [ "$(grep -c '^\[0\] PASS: net_probe: ' "$first")" -ge "$n" ] &&
    ! grep -q '^\[[0-9]*\] FAIL: ' "$first" "$@"
}
nsections=8

# ------------------------------------------------------------ plumbing (no TCP transport needed)

begin plumb-shm
t0=$(cc_now_ms)
launch 0 h0.out -- "$ccrun" --tag-output -n 2 "$probe" all
wait "$last_pid"
st=$?
ms=$(($(cc_now_ms) - t0))
if [ "$st" -eq 0 ] && probe_ok "$work/h0.out" "$nsections" && grep -q '^\[0\] info: size 2 local_size 2$' "$work/h0.out"; then
  pass "plumbing: ccrun -n 2 net_probe all inside host namespace h0 (shared memory) ($ms ms)"
else
  fail "plumbing: ccrun -n 2 net_probe all inside h0: status $st, expected 0, $nsections PASS sections and 'info: size 2 local_size 2'"
  show "$work/h0.out"
fi
finish

# Two ranks started by one shell in h0 (one mount namespace: one host) meet at
# h0's address over env://, then talk through shared memory.
begin plumb-env
p=$(port)
t0=$(cc_now_ms)
ns_argv "${hosts[0]}"
"${clean_env[@]}" "CC_MH_CASE=$$-$case_id" "${nsx[@]}" timeout -k 5 "$limit" bash -c '
  for r in 1 0; do
    { RANK=$r WORLD_SIZE=2 MASTER_ADDR=$1 MASTER_PORT=$2 "$3" all; echo "exit: $?"; } 2>&1 |
      sed "s/^/[$r] /" &
  done
  wait' _ "$net.1" "$p" "$probe" </dev/null >"$work/h0.out" 2>&1
st=$?
ms=$(($(cc_now_ms) - t0))
if [ "$st" -eq 0 ] && probe_ok "$work/h0.out" "$nsections" && grep -q '^\[0\] info: size 2 local_size 2$' "$work/h0.out" &&
   grep -q '^\[0\] exit: 0$' "$work/h0.out" && grep -q '^\[1\] exit: 0$' "$work/h0.out"; then
  pass "plumbing: env:// job of 2 ranks in h0, rendezvous at $net.1:$p ($ms ms)"
else
  fail "plumbing: env:// job of 2 ranks in h0 at $net.1:$p: status $st, expected 'exit: 0' from both ranks and $nsections PASS sections"
  show "$work/h0.out"
fi
finish

# ------------------------------------------------------------ is there a TCP transport?

begin preflight
p=$(port)
job 2 1 "$p" CC_TIMEOUT=10 -- token
wait_all "${job_pids[@]}"
have_tcp=1
if grep -q 'result: CC_ERR_UNSUPPORTED.*\(TCP\|tcp\)' "$work"/h*.out; then
  have_tcp=0
  why=$(sed -n 's/^\[[0-9]*\] result: //p' "$work"/h*.out | head -n 1)
  if [ "${CC_TEST_REQUIRE_TCP:-0}" = 1 ]; then
    fail "preflight: a 2-host job gets '$why' (CC_TEST_REQUIRE_TCP=1: the TCP transport is required)"
  else
    skip "cases a-g (2- and 3-host jobs): cc.h has no TCP transport yet: a 2-host job gets '$why' (set CC_TEST_REQUIRE_TCP=1 to run them anyway)"
  fi
fi
finish

if [ "$have_tcp" = 1 ] || [ "${CC_TEST_REQUIRE_TCP:-0}" = 1 ]; then

# ------------------------------------------------------------ a, b, c: everything, across hosts

# all_case NAME NNODES PER_NODE WANT_INFO_REGEX VARS... - one `all` job
all_case() {
  local name=$1 nn=$2 per=$3 want=$4 k ok=1 info others
  shift 4
  begin "$name"
  [ "$same_host" = 1 ] && want="size $((nn * per)) local_size $((nn * per))"
  p=$(port)
  t0=$(cc_now_ms)
  job "$nn" "$per" "$p" "$@" -- all
  wait_all "${job_pids[@]}"
  ms=$(($(cc_now_ms) - t0))
  for k in "${statuses[@]}"; do [ "$k" -eq 0 ] || ok=0; done
  others=()
  for k in $(seq 1 $((nn - 1))); do others+=("$work/h$k.out"); done
  probe_ok "$work/h0.out" "$nsections" "${others[@]}" || ok=0
  info=$(sed -n 's/^\[0\] info: \(size .*\)/\1/p' "$work/h0.out")
  grep -qE "^\[0\] info: $want\$" "$work/h0.out" || ok=0
  what="$nn hosts x $per ranks${*:+ ($*)}, net_probe all"
  if [ $ok = 1 ]; then
    pass "$what: every check passes on every rank, $info ($ms ms)"
  else
    fail "$what: statuses ${statuses[*]} (hosts 0..), info '$info'; expected all 0, $nsections PASS sections, 'info: $want'"
    show "$work"/h*.out
  fi
  finish
}

all_case a 2 2 'size 4 local_size 2'
if cc_full_only "multihost: b (2 x 2 over TCP alone), c (3 x 1), f (tokens), g (garbage)"; then
all_case b 2 2 'size 4 local_size [12]' CC_TRANSPORT=tcp
all_case c 3 1 'size 3 local_size 1'

# ------------------------------------------------------------ f: tokens

begin f-token
p=$(port)
t0=$(cc_now_ms)
tok_a=$("$ccrun" --make-token) tok_b=$("$ccrun" --make-token)
launch 0 h0.out CC_TOKEN="$tok_a" CC_TIMEOUT=120 -- "$ccrun" --tag-output --nnodes 2 --node-rank 0 \
  --master-addr "$net.1" --master-port "$p" -n 1 "${probe_cmd[@]}" token
p0=$last_pid
launch 1 h1.out CC_TOKEN="$tok_b" CC_TIMEOUT=120 -- "$ccrun" --tag-output --nnodes 2 --node-rank 1 \
  --master-addr "$net.1" --master-port "$p" -n 1 "${probe_cmd[@]}" token
p1=$last_pid
wait_all "$p0" "$p1"
ms=$(($(cc_now_ms) - t0))
r0=$(result_of "$work/h0.out" 0)
r1=$(result_of "$work/h1.out" 1)
if [[ $r1 == CC_ERR_AUTH* ]] && [[ $r0 == CC_ERR_AUTH*rank\ 1\ \(from\ $net.2\)\ was\ refused*CC_TOKEN\ differs* ]] &&
   [ "${statuses[0]}" -ne 0 ] && [ "${statuses[1]}" -ne 0 ] && [ "$ms" -lt 8000 ]; then
  pass "f: one CC_TOKEN on host 0, another on host 1: rank 1 '$r1', rank 0 '$r0' ($ms ms)"
else
  fail "f: two tokens: rank 0 '$r0', rank 1 '$r1', statuses ${statuses[*]} after $ms ms; expected rank 1 CC_ERR_AUTH, rank 0 CC_ERR_AUTH naming rank 1 from $net.2 and its token, both nonzero within 8 s (CC_TIMEOUT=120, CC_REFUSED_GRACE 5 s)"
  show "$work"/h*.out
fi
finish

begin f-token-same
p=$(port)
t0=$(cc_now_ms)
job 2 1 "$p" CC_TIMEOUT=5 -- token
wait_all "${job_pids[@]}"
ms=$(($(cc_now_ms) - t0))
r0=$(result_of "$work/h0.out" 0)
r1=$(result_of "$work/h1.out" 1)
if [ "${statuses[*]}" = "0 0" ] && [[ $r0 == CC_OK* ]] && [[ $r1 == CC_OK* ]]; then
  pass "f: the same CC_TOKEN on both hosts: init and barrier succeed ($ms ms)"
else
  fail "f: the same CC_TOKEN on both hosts: statuses ${statuses[*]}, rank 0 '$r0', rank 1 '$r1'; expected 0 0 and CC_OK"
  show "$work"/h*.out
fi
finish

# ------------------------------------------------------------ g: garbage clients

# poke NAME ADDR PORT KIND - a client in the switch namespace: junk (4 KiB of
# random bytes, held open), huge (64 bytes 0xff: every length field huge, held),
# silent (nothing, held), close (300 random bytes, then closed). Output in
# $work/poke-NAME.out; pid appended to poke_pids.
poke() {
  ns_argv "$sw"
  "${clean_env[@]}" "CC_MH_CASE=$$-$case_id" "${nsx[@]}" timeout -k 2 "$limit" bash -c '
    exec 3<>"/dev/tcp/$1/$2" || exit 1
    echo connected
    case $3 in
      junk) head -c 4096 /dev/urandom >&3 ;;
      huge) head -c 64 /dev/zero | tr "\0" "\377" >&3 ;;
      close) head -c 300 /dev/urandom >&3; exit 0 ;;
    esac
    exec sleep 50' _ "$2" "$3" "$4" </dev/null >"$work/poke-$1.out" 2>&1 &
  poke_pids+=("$!")
}

begin g-garbage
p=$(port)
poke_pids=()
t0=$(cc_now_ms)
launch 0 h0.out CC_TOKEN="$token" -- "$ccrun" --tag-output --kill-grace 5 --nnodes 2 --node-rank 0 \
  --master-addr "$net.1" --master-port "$p" -n 2 "${probe_cmd[@]}" all hold 3000
pj0=$last_pid
# The rendezvous port, before host 1's ranks come
listening=0
end=$(($(cc_now_ms) + 5000))
while [ "$(cc_now_ms)" -lt "$end" ] && alive "$pj0"; do
  if in_ns "${hosts[0]}" ss -ltnH 2>/dev/null | awk '{print $4}' | grep -q ":$p\$"; then
    listening=1
    break
  fi
  sleep 0.05
done
for kind in junk huge silent close; do poke "rdv-$kind" "$net.1" "$p" "$kind"; done
sleep 0.3
launch 1 h1.out CC_TOKEN="$token" -- "$ccrun" --tag-output --kill-grace 5 --nnodes 2 --node-rank 1 \
  --master-addr "$net.1" --master-port "$p" -n 2 "${probe_cmd[@]}" all hold 3000
pj1=$last_pid
# Then every other port a rank listens on, while the ranks hold
ports=""
if wait_for "$work/h0.out" '^\[[0-9]+\] ready: ' 2 30 "$pj0" && wait_for "$work/h1.out" '^\[[0-9]+\] ready: ' 2 5 "$pj1"; then
  for k in 0 1; do
    for lp in $(in_ns "${hosts[$k]}" ss -ltnpH 2>/dev/null | grep net_probe | awk '{print $4}' | sed 's/.*://' | sort -u); do
      [ "$lp" = "$p" ] && continue
      ports="$ports h$k:$lp"
      for kind in junk huge silent close; do poke "h$k-$lp-$kind" "$net.$((k + 1))" "$lp" "$kind"; done
    done
  done
fi
wait_all "$pj0" "$pj1"
ms=$(($(cc_now_ms) - t0))
for pid in "${poke_pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
wait "${poke_pids[@]}" 2>/dev/null
nconn=$(cat "$work"/poke-*.out 2>/dev/null | grep -c '^connected')
if [ "${statuses[*]}" = "0 0" ] && probe_ok "$work/h0.out" "$nsections" "$work/h1.out"; then
  pass "g: 2 hosts x 2 ranks succeed with $nconn garbage connections (junk, huge lengths, silent, closed) on the rendezvous port $p${ports:+ and on the ports of the ranks:$ports}${ports:- (the ranks listened on no other port)} ($ms ms)"
else
  fail "g: garbage connections on the rendezvous port $p (listening seen: $listening)${ports:+ and$ports}: statuses ${statuses[*]}, expected 0 0 and every check passing"
  show "$work"/h*.out "$work"/poke-*.out
fi
finish

fi  # cc_full_only

# ------------------------------------------------------------ d: a rank dies

begin d-die
p=$(port)
job 2 2 "$p" CC_TIMEOUT=30 -- die 3
wait_for "$work/h1.out" '^\[3\] die: ' 1 30 "${job_pids[1]}"
t_die=$(cc_now_ms)
wait_until 15 "${job_pids[@]}"
ms=$(($(cc_now_ms) - t_die))
ok=1 why="" codes=""
grep -q '^\[3\] die: rank 3' "$work/h1.out" || { ok=0; why="$why; rank 3 never died"; }
for r in 0 1 2; do
  f=$work/h$((r / 2)).out
  res=$(result_of "$f" "$r")
  code=${res%% *}
  t=$(sed -n 's/^[A-Z_]* in \(-\{0,1\}[0-9]*\) ms: .*/\1/p' <<<"$res")
  msg=${res#*ms: }
  names=0
  for q in 3 0 1 2; do
    [ "$q" = "$r" ] && continue
    grep -qE "rank $q([^0-9]|\$)" <<<"$msg" && names=1 && break
  done
  case $code in
    CC_ERR_PEER_LOST | CC_ERR_TIMEOUT) ;;
    *) ok=0; why="$why; rank $r: '$res'" ; continue ;;
  esac
  [ -n "$t" ] && [ "$t" -le 2000 ] || { ok=0; why="$why; rank $r noticed after ${t:-?} ms"; }
  [ "$names" = 1 ] || { ok=0; why="$why; rank $r's message names no other rank: '$msg'"; }
  codes="$codes rank $r $code ${t} ms;"
done
[ "${statuses[0]}" -ne 0 ] && [ "${statuses[1]}" -ne 0 ] || { ok=0; why="$why; ccrun statuses ${statuses[*]}"; }
if [ $ok = 1 ]; then
  pass "d: rank 3 (host 1) killed by SIGKILL:$codes ccruns exit ${statuses[*]} ($ms ms after the death); message of rank 0: '$(result_of "$work/h0.out" 0 | sed 's/^[^:]*ms: //')'"
else
  fail "d: rank 3 killed by SIGKILL${why}; expected PEER_LOST (or TIMEOUT) within 2000 ms naming rank 3 on ranks 0-2 and both ccruns nonzero"
  show "$work"/h*.out
fi
finish

# ------------------------------------------------------------ e: a cut link
if cc_full_only "multihost: e (a cut link)"; then

begin e-linkcut
p=$(port)
if [ "$same_host" = 1 ]; then
  skip "e: link cut: CC_MH_SAME_HOST=1, the ranks talk through shared memory"
else
  job 2 1 "$p" CC_TIMEOUT=3 -- hang
  if wait_for "$work/h0.out" '^\[0\] ready: ' 1 20 "${job_pids[0]}" && wait_for "$work/h1.out" '^\[1\] ready: ' 1 5 "${job_pids[1]}"; then
    sleep 1
    t_cut=$(cc_now_ms)
    nsip -n "$sw" link set p1 down
    wait_until 15 "${job_pids[0]}"
    st0=${statuses[0]}
    ms=$(($(cc_now_ms) - t_cut))
    wait_until 5 "${job_pids[1]}"
    st1=${statuses[0]}
    ms1=$(($(cc_now_ms) - t_cut))
    r0=$(result_of "$work/h0.out" 0)
    if [[ $r0 == CC_ERR_TIMEOUT* || $r0 == CC_ERR_PEER_LOST* ]] && [ "$st0" -ne 0 ] && [ "$ms" -le 8000 ]; then
      pass "e: host 1's switch port down mid all_reduce (CC_TIMEOUT=3): rank 0 '$r0', its ccrun exits $st0 after $ms ms; host 1's after $ms1 ms (status $st1)"
    else
      fail "e: host 1's switch port down (CC_TIMEOUT=3): rank 0 '$r0', ccrun status $st0 after $ms ms; expected TIMEOUT or PEER_LOST and a nonzero status within 8 s"
      show "$work"/h*.out
    fi
  else
    fail "e: the ranks never reported ready"
    show "$work"/h*.out
    kill_case_procs
  fi
  nsip -n "$sw" link set p1 up
fi
finish

fi  # cc_full_only
fi  # have_tcp

echo "multihost: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
