#!/usr/bin/env bash
# tests/transport/test_liveness.sh [BUILD_DIR] - one liveness rule on every path: a rank
# that dies is reported as CC_ERR_PEER_LOST, naming it, within 1 s, whatever
# the survivor waits on and whichever transport carries it.
#
# A job of 2 hosts x 2 ranks on this machine: `ccrun --nnodes 2` twice on the
# loopback, the second under `unshare --ipc`, so that its ranks have another
# IPC namespace and therefore another host identity (ranks 0, 1 on host A and
# 2, 3 on host B: shared memory within a host, TCP between them). Rank 1 (on
# rank 0's host) raises SIGKILL while rank 0 waits on it in
#   gather (root 0), recv (from rank 1), recv_any (from any source, while the
#   other ranks leave: no rank that could send is then left), all_to_all;
# net_probe's `diein` mode (tests/multihost/net_probe.c). Rank 0 must report
# CC_ERR_PEER_LOST naming rank 1 within 1000 ms of the death, and every
# survivor must fail (never CC_OK). The same three cases run with every rank
# on one host over shared memory (`ccrun -n 4`), and with CC_TRANSPORT=tcp
# (every pair over TCP).
# SKIP (the 2-host cases) when not root or `unshare --ipc` fails.
set -u

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.bash
. "$here/../lib.bash"

build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "FAIL: liveness: no build directory '${1:-build}'"; exit 1; }
ccrun=$build/ccrun
probe=$build/probes/net_probe
for f in "$ccrun" "$probe"; do
  [ -x "$f" ] || { echo "FAIL: liveness: $f is missing (run make)"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cc-test-liveness.XXXXXX")
case_id=""
npass=0 nfail=0 nskip=0
pass() { echo "PASS: liveness: $*"; npass=$((npass + 1)); }
fail() { echo "FAIL: liveness: $*"; nfail=$((nfail + 1)); }
skip() { echo "SKIP: liveness: $*"; nskip=$((nskip + 1)); }

clean_env=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u GROUP_RANK
  -u MASTER_ADDR -u MASTER_PORT -u CC_JOB_ID -u CC_TRANSPORT -u CC_TOKEN -u CC_DEBUG
  -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK
  -u OMPI_COMM_WORLD_LOCAL_SIZE -u PMI_RANK -u PMI_SIZE -u SLURM_PROCID
  -u SLURM_NTASKS -u SLURM_LOCALID CC_TIMEOUT=20)
limit=60

cleanup() {
  local pid
  for pid in $(cc_marked_pids "CC_LV_CASE=$$-*"); do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'fail "interrupted in case $case_id"; exit 1' INT TERM

launch() { cc_case_launch CC_LV_CASE "$@"; }
finish() { cc_case_finish CC_LV_CASE; }

two_hosts=1
if [ "$(id -u)" -ne 0 ] || ! unshare --ipc true 2>/dev/null; then
  two_hosts=0
fi

# judge LABEL FILE...: rank 0's result line says CC_ERR_PEER_LOST naming rank 1
# within 1000 ms; no survivor succeeded
judge() {
  local label=$1 line ms
  shift
  line=$(cat "$@" | grep -m1 '^\[0\] result: ' | sed 's/^\[0\] //')
  # (each rank counts from its own planned time of the death, 500 ms after it
  # left the barrier: a rank that left it later than the victim and learnt of
  # the death at once reads a little below 0, "-0")
  ms=$(printf '%s\n' "$line" | sed -n -E 's/^result: [A-Z_]+ in (-?[0-9]+)(\.[0-9]+)? ms.*/\1/p')
  case $ms in -*) ms=0 ;; esac
  if cat "$@" | grep -q '^\[[0-9]\] result: CC_OK'; then
    fail "$label: a survivor's call succeeded: $(cat "$@" | grep -m1 'result: CC_OK')"
  elif [ -z "$line" ]; then
    fail "$label: rank 0 reported nothing"
    cc_case_show 20 "$@"
  elif ! printf '%s\n' "$line" | grep -q '^result: CC_ERR_PEER_LOST '; then
    fail "$label: rank 0: $line (expected CC_ERR_PEER_LOST)"
  elif ! printf '%s\n' "$line" | grep -q 'rank 1'; then
    fail "$label: rank 0's message does not name rank 1: $line"
  elif [ -z "$ms" ] || [ "$ms" -gt 1000 ]; then
    fail "$label: rank 0 learnt of the death after ${ms:-?} ms (at most 1000): $line"
  else
    pass "$label: rank 0 got CC_ERR_PEER_LOST naming rank 1 in $ms ms ($(printf '%s\n' "$line" | cut -c1-160))"
  fi
}

for coll in gather recv recv_any all_to_all; do
  # --- two hosts: ranks 0,1 | 2,3; the victim shares rank 0's host --------------
  if [ "$two_hosts" = 1 ]; then
    case_id=2hosts-$coll
    shm_before=$(cc_shm_snapshot)
    p=$(cc_free_port)
    tok=$("$ccrun" --make-token)      # several hosts: ccrun wants a token
    launch a.out CC_TOKEN="$tok" -- "$ccrun" --tag-output --kill-grace 5000 --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 \
      --master-port "$p" -n 2 "$probe" diein "$coll" 1
    pa=$last_pid
    launch b.out CC_TOKEN="$tok" -- unshare --ipc "$ccrun" --tag-output --kill-grace 5000 --nnodes 2 --node-rank 1 \
      --master-addr 127.0.0.1 --master-port "$p" -n 2 "$probe" diein "$coll" 1
    pb=$last_pid
    wait "$pa" "$pb"
    judge "2 hosts x 2 ranks, same-host peer killed during $coll" "$work/a.out" "$work/b.out"
    finish
  else
    skip "2 hosts x 2 ranks, $coll: needs root and unshare --ipc"
  fi
  # --- one host, shared memory; and every pair over TCP --------------------------
  for tr in shm tcp; do
    case_id=$tr-$coll
    shm_before=$(cc_shm_snapshot)
    launch one.out CC_TRANSPORT=$tr -- "$ccrun" --tag-output --kill-grace 5000 -n 4 "$probe" diein "$coll" 1
    wait "$last_pid"
    judge "1 host x 4 ranks ($tr), peer killed during $coll" "$work/one.out"
    finish
  done
done

echo "liveness: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
