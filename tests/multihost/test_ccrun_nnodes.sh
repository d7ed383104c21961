#!/usr/bin/env bash
# tests/multihost/test_ccrun_nnodes.sh [BUILD_DIR] - the multi-node launch paths on the
# loopback of this one machine (no namespaces, no root needed), running
# BUILD/probes/net_probe all (tests/multihost/net_probe.c: every collective, checked):
#   a) two `ccrun --nnodes 2 --node-rank {0,1} --master-addr 127.0.0.1
#      --master-port P -n 2` at once (the README's recipe on one machine):
#      both exit 0, every check passes, size 4 local_size 4, and every rank
#      runs over shared memory (CC_DEBUG=INFO's "ready" line); the same with
#      CC_TRANSPORT=tcp, every rank over TCP
#   b) Open MPI: `mpirun -np 4 -x MASTER_ADDR -x MASTER_PORT` (the library takes
#      rank and size from OMPI_COMM_WORLD_*): exit 0, every check passes,
#      `info: size 4 local_size 4`; SKIP when mpirun is not installed
#   c) the float32 sum of inexact values has the same bits under a) (both
#      transports), b) and a plain `ccrun -n 4` (same inputs, same bits: api.md)
# a) needs the TCP transport (LOCAL_WORLD_SIZE < WORLD_SIZE); while the job gets
# CC_ERR_UNSUPPORTED naming it, a) is skipped unless CC_TEST_REQUIRE_TCP=1.
# After each case no process of it runs and nothing is new in /dev/shm/cc-*.
set -u

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.bash
. "$here/../lib.bash"

build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "FAIL: nnodes: no build directory '${1:-build}'"; exit 1; }
ccrun=$build/ccrun
probe=$build/probes/net_probe
for f in "$ccrun" "$probe"; do
  [ -x "$f" ] || { echo "FAIL: nnodes: $f is missing (run make)"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cc-test-nnodes.XXXXXX")
case_id=""
npass=0 nfail=0 nskip=0
pass() { echo "PASS: nnodes: $*"; npass=$((npass + 1)); }
fail() { echo "FAIL: nnodes: $*"; nfail=$((nfail + 1)); }
skip() { echo "SKIP: nnodes: $*"; nskip=$((nskip + 1)); }

clean_env=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u GROUP_RANK
  -u MASTER_ADDR -u MASTER_PORT -u CC_JOB_ID -u CC_TRANSPORT -u CC_TOKEN -u CC_DEBUG
  -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK
  -u OMPI_COMM_WORLD_LOCAL_SIZE -u PMI_RANK -u PMI_SIZE -u SLURM_PROCID
  -u SLURM_NTASKS -u SLURM_LOCALID CC_TIMEOUT=20)
limit=60
nsections=8                   # PASS lines net_probe all prints from rank 0

cleanup() {
  local pid
  for pid in $(cc_marked_pids "CC_NN_CASE=$$-*"); do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'fail "interrupted in case $case_id"; exit 1' INT TERM

begin() {
  case_id=$1
  shm_before=$(cc_shm_snapshot)
}

# launch OUT VAR=VALUE... -- COMMAND... (background, pid in $last_pid), show
# FILE..., finish: see tests/lib.bash
launch() { cc_case_launch CC_NN_CASE "$@"; }
show() { cc_case_show 40 "$@"; }
finish() { cc_case_finish CC_NN_CASE; }

# probe_ok FILE... - the first FILE holds rank 0's $nsections PASS lines of the
# probe; no FILE holds a FAIL line (with or without a ccrun "[R] " tag)
probe_ok() {
  [ "$(grep -cE '^(\[0\] )?PASS: net_probe: ' "$1")" -ge "$nsections" ] &&
    ! grep -qE '^(\[[0-9]+\] )?FAIL: ' "$@"
}

# hashes FILE - rank 0's hashes of the inexact float32 sums, one line
hashes() { sed -n 's/^\(\[0\] \)\{0,1\}info: float32 sum of \([0-9]*\) inexact values: hash \([0-9a-f]*\).*/\2:\3/p' "$1" | tr '\n' ' '; }

port() { cc_free_port; }

# --- reference: one ccrun -n 4 (shared memory, no TCP) -----------------------------
begin ref
launch ref.out -- "$ccrun" --tag-output -n 4 "$probe" all
wait "$last_pid"
st=$?
ref_hash=""
if [ "$st" -eq 0 ] && probe_ok "$work/ref.out"; then
  ref_hash=$(hashes "$work/ref.out")
else
  fail "reference: ccrun -n 4 net_probe all: status $st, expected 0 and every check passing"
  show "$work/ref.out"
fi
finish

# --- a) two ccrun --nnodes 2 on loopback -----------------------------------------
# nnodes CASE WANT [VAR=VALUE...]: the README's recipe on one machine, with
# CC_DEBUG=INFO: every rank says which transport it runs (comm_init's "ready"
# line), which must be WANT ("shared memory": both "hosts" are this one; "tcp"
# under CC_TRANSPORT=tcp). Sets a_hash (the sums' bits) when it passes.
nnodes() {
  local name=$1 want=$2 p t0 p0 p1 s0 s1 ms info ready n
  shift 2
  begin "$name"
  p=$(port)
  t0=$(cc_now_ms)
  tok=$("$ccrun" --make-token)          # several hosts: ccrun wants a token (docs/security.md)
  launch "$name.0.out" CC_TOKEN="$tok" CC_DEBUG=INFO "$@" -- "$ccrun" --tag-output --nnodes 2 --node-rank 0 \
    --master-addr 127.0.0.1 --master-port "$p" -n 2 "$probe" all
  p0=$last_pid
  launch "$name.1.out" CC_TOKEN="$tok" CC_DEBUG=INFO "$@" -- "$ccrun" --tag-output --nnodes 2 --node-rank 1 \
    --master-addr 127.0.0.1 --master-port "$p" -n 2 "$probe" all
  p1=$last_pid
  wait "$p0"; s0=$?
  wait "$p1"; s1=$?
  ms=$(($(cc_now_ms) - t0))
  info=$(sed -n 's/^\[0\] info: \(size .*\)/\1/p' "$work/$name.0.out")
  ready=$(cat "$work/$name".[01].out | grep -c "INFO comm_init: rank [0-3] of 4 ready (job [0-9a-f]*, $want[,)]")
  if grep -q 'result: CC_ERR_UNSUPPORTED.*\(TCP\|tcp\)' "$work/$name".[01].out && [ "${CC_TEST_REQUIRE_TCP:-0}" != 1 ]; then
    skip "ccrun --nnodes 2 on 127.0.0.1${*:+ ($*)}: cc.h has no TCP transport: '$(sed -n 's/^\[[0-9]*\] result: //p' "$work/$name".[01].out | head -n 1)' (CC_TEST_REQUIRE_TCP=1 to count it as a failure)"
  elif [ "$s0" -eq 0 ] && [ "$s1" -eq 0 ] && probe_ok "$work/$name.0.out" "$work/$name.1.out" &&
       [ "$info" = "size 4 local_size 4" ] && [ "$ready" -eq 4 ]; then
    pass "two ccrun --nnodes 2 --node-rank 0/1 -n 2 on 127.0.0.1:$p${*:+ with $*}: every check passes on every rank, $info, every rank on $want ($ms ms)"
    a_hash=$(hashes "$work/$name.0.out")
  else
    fail "two ccrun --nnodes 2 -n 2 on 127.0.0.1:$p${*:+ with $*}: statuses $s0 $s1, info '$info', $ready of 4 ranks ready on $want; expected 0 0, $nsections PASS sections, 'info: size 4 local_size 4', 4"
    show "$work/$name".[01].out
  fi
  finish
}
a_hash=""
nnodes ccrun-nnodes "shared memory"
shm_hash=$a_hash
a_hash=""
nnodes ccrun-nnodes-tcp tcp CC_TRANSPORT=tcp
tcp_hash=$a_hash

# --- b) mpirun -np 4 --------------------------------------------------------------
b_hash=""
if ! command -v mpirun >/dev/null; then
  skip "mpirun -np 4: mpirun is not installed (Open MPI)"
else
  begin mpirun
  p=$(port)
  t0=$(cc_now_ms)
  # As root Open MPI wants --allow-run-as-root; --oversubscribe and --bind-to
  # none for machines with fewer cores than ranks; the probe uses no MPI, so no
  # transport settings matter beyond keeping mpirun quiet.
  launch mpi.out OMPI_MCA_btl=self,tcp OMPI_MCA_btl_base_warn_component_unused=0 -- \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 \
    -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$p" -x CC_TIMEOUT "$probe" all
  wait "$last_pid"
  st=$?
  ms=$(($(cc_now_ms) - t0))
  if [ "$st" -eq 0 ] && probe_ok "$work/mpi.out" && grep -q '^info: size 4 local_size 4$' "$work/mpi.out"; then
    pass "mpirun -np 4 with MASTER_ADDR=127.0.0.1 MASTER_PORT=$p: every check passes on every rank, size 4 local_size 4 ($ms ms)"
    b_hash=$(hashes "$work/mpi.out")
  else
    fail "mpirun -np 4 (MASTER_PORT=$p): status $st, expected 0, $nsections PASS sections and 'info: size 4 local_size 4'"
    show "$work/mpi.out"
  fi
  finish
fi

# --- c) the same bits whoever launched ---------------------------------------------
if [ -n "$ref_hash" ]; then
  bad=""
  [ -n "$shm_hash" ] && [ "$shm_hash" != "$ref_hash" ] && bad="$bad ccrun --nnodes 2: $shm_hash;"
  [ -n "$tcp_hash" ] && [ "$tcp_hash" != "$ref_hash" ] && bad="$bad ccrun --nnodes 2 over TCP: $tcp_hash;"
  [ -n "$b_hash" ] && [ "$b_hash" != "$ref_hash" ] && bad="$bad mpirun: $b_hash;"
  if [ -z "$shm_hash$tcp_hash$b_hash" ]; then
    skip "same bits under every launcher: only the ccrun -n 4 job ran"
  elif [ -z "$bad" ]; then
    pass "float32 sum of inexact values, 4 ranks: the same bits under ccrun -n 4${shm_hash:+, ccrun --nnodes 2}${tcp_hash:+, ccrun --nnodes 2 over TCP}${b_hash:+, mpirun} (count:hash $ref_hash)"
  else
    fail "float32 sum of inexact values, 4 ranks: ccrun -n 4 gives $ref_hash but$bad (api.md: same inputs, same bits)"
  fi
fi

echo "nnodes: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
