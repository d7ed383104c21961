#!/usr/bin/env bash
# tests/transport/test_tcp_suites.sh BUILD - the v-variant, split/group/async, op,
# determinism, blocking send, any-source receive, failure, queued-call and fence
# suites again, with every rank talking over TCP (CC_TRANSPORT=tcp:
# cc_spawn's ranks swap addresses in shared memory, then connect over loopback).
# Their PASS/FAIL lines are relayed with "tcp." in front of the name.
set -u
build=${1:-build}
status=0
suites="test_vcoll test_split_group test_ops test_determinism test_p2p_blocking test_p2p_any test_failures test_queued test_fence"
# under the sanitizers (CC_TEST_QUICK=1) the TCP-specific ones only: v layouts,
# groups/async/split, blocking sends and receives from any source
[ -n "${CC_TEST_QUICK:-}" ] && suites="test_vcoll test_split_group test_p2p_blocking test_p2p_any test_failures test_queued test_fence"
for t in $suites; do
  if [ ! -x "$build/tests/$t" ]; then
    echo "FAIL: tcp.$t: $build/tests/$t is not built"
    status=1
    continue
  fi
  out=$(CC_TRANSPORT=tcp CC_TEST_TRANSPORT=tcp CC_TIMEOUT=${CC_TIMEOUT:-60} timeout 280 "$build/tests/$t" 2>&1)
  st=$?
  printf '%s\n' "$out" | sed -n -E 's/^(PASS|FAIL|SKIP): /\1: tcp./p'
  if [ "$st" -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^FAIL: '; then
    echo "FAIL: tcp.$t: exited with status $st"
    printf '%s\n' "$out" | tail -n 5
  fi
  [ "$st" -eq 0 ] || status=1
done
# calls that do not match, over TCP: CC_ERR_MISMATCH on every rank, not garbage or a hang
for kind in 1 2 3 4 5 6; do
  case $kind in 1) what="all_reduce sum against max";; 2) what="all_reduce against broadcast";; 3) what="all_reduce of 299999 against 300000 floats";;
    4) what="all_reduce sum against max, 39218 floats";; 5) what="all_reduce sum against max, 75534 floats";;
    6) what="all_reduce sum against max, 119728 floats";; esac
  out=$(CC_TRANSPORT=tcp CC_TIMEOUT=10 timeout 60 "$build/ccrun" -n 2 --kill-grace 5000 "$build/probes/net_probe" mismatch $kind 2>&1)
  st=$?
  # both ranks fail, at least one with CC_ERR_MISMATCH (a rank whose peer failed in the middle
  # of a large message may see the connection reset first: CC_ERR_PEER_LOST)
  nm=$(printf '%s\n' "$out" | grep -c 'result: CC_ERR_MISMATCH')
  nf=$(printf '%s\n' "$out" | grep -c 'result: CC_ERR_\(MISMATCH\|PEER_LOST\)')
  if [ "$nm" -ge 1 ] && [ "$nf" -eq 2 ]; then
    echo "PASS: tcp.mismatch: $what: $nm of 2 ranks CC_ERR_MISMATCH, none succeeds ($(printf '%s\n' "$out" | grep -m1 -o 'rank [0-9]: rank [0-9] called.*' | cut -c1-120))"
  else
    echo "FAIL: tcp.mismatch: $what: status $st: $(printf '%s\n' "$out" | head -4)"
    status=1
  fi
done
exit $status
