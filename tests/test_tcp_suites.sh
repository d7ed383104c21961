#!/usr/bin/env bash
# tests/test_tcp_suites.sh BUILD - the v-variant, split/group/async, op and
# determinism suites again, with every rank talking over TCP (CC_TRANSPORT=tcp:
# cc_spawn's ranks swap addresses in shared memory, then connect over loopback).
# Their PASS/FAIL lines are relayed with "tcp." in front of the name.
set -u
build=${1:-build}
status=0
suites="test_vcoll test_split_group test_ops test_determinism test_p2p_blocking"
# under the sanitizers (CC_TEST_QUICK=1) the TCP-specific ones only: v layouts,
# groups/async/split and blocking sends
[ -n "${CC_TEST_QUICK:-}" ] && suites="test_vcoll test_split_group test_p2p_blocking"
for t in $suites; do
  if [ ! -x "$build/tests/$t" ]; then
    echo "FAIL: tcp.$t: $build/tests/$t is not built"
    status=1
    continue
  fi
  out=$(CC_TRANSPORT=tcp CC_TIMEOUT=${CC_TIMEOUT:-60} timeout 280 "$build/tests/$t" 2>&1)
  st=$?
  printf '%s\n' "$out" | sed -n -E 's/^(PASS|FAIL|SKIP): /\1: tcp./p'
  if [ "$st" -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^FAIL: '; then
    echo "FAIL: tcp.$t: exited with status $st"
    printf '%s\n' "$out" | tail -n 5
  fi
  [ "$st" -eq 0 ] || status=1
done
exit $status
