#!/usr/bin/env bash
# tests/fuzz/test_fuzz.sh [BUILD_DIR] - a short libFuzzer run of every decoder of
# bytes from the network (tests/fuzz/fuzz_*.c): frame headers (48 bytes, every
# link), abort payloads, handshake hellos, rendezvous records, the file://
# rendezvous line, Slurm node lists, the message engine's receive path on a TCP
# link fed a stream (whole, or in pieces that split frames anywhere), checked
# against a model of the protocol, and the accepting side of the handshake
# (many clients at once, genuine and not, messages split and pipelined, a full
# table and eviction; about 30 inputs a second: each runs a real
# server on loopback for 25 ms).
#
# Each target is built with clang -fsanitize=fuzzer,address,undefined into
# BUILD_DIR/fuzz (again only when its sources changed), its corpus
# BUILD_DIR/fuzz/corpus-NAME is seeded with a few valid encodings (written here,
# so no binary file is committed; what the fuzzer adds stays for the next run),
# then all targets run side by side for CC_FUZZ_SECONDS each (default 8; 3 with
# CC_TEST_QUICK=1), from the fixed seed CC_FUZZ_SEED (default 1): the suite
# explores the same inputs on every run, so a new finding fails it on the
# machine that found it first, never at random in CI; CC_FUZZ_SEED=0 (random)
# with a longer CC_FUZZ_SECONDS explores further. One line per target: `PASS: fuzz NAME (N runs in S s)`, or
# `FAIL: ...` with the input that failed (kept in BUILD_DIR/fuzz/crash-NAME/)
# and the tail of the log; `SKIP: fuzz: ...` when clang or libFuzzer is missing
# (Debian: the libclang-rt-dev package).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
mkdir -p "$build" && build=$(cd "$build" && pwd)
out=$build/fuzz
mkdir -p "$out"

secs=${CC_FUZZ_SECONDS:-}
if [ -z "$secs" ]; then
  if [ "${CC_TEST_QUICK:-0}" = 1 ]; then secs=3; else secs=8; fi
fi
cc=${CC_FUZZ_CC:-clang}
# The targets define CC_STATIC, so that only what they call is compiled (about
# a second per target instead of seven); the rest of the API is unused then.
cflags=(-g -O1 "-fsanitize=fuzzer,address,undefined" -fno-sanitize-recover=all -fno-omit-frame-pointer
  -Wall -Wextra -Wno-unused-function -Werror -I"$root")
targets=(frame abort hello rec file hostlist stream handshake)
# cc.h logs failures with CC_DEBUG set: the fuzzer's inputs fail by the million.
unset CC_DEBUG
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# --- is there a libFuzzer? ------------------------------------------------------
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "SKIP: fuzz: no $cc"
  exit 0
fi
cat >"$out/probe.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)data;
  (void)size;
  return 0;
}
EOF
if ! "$cc" "${cflags[@]}" -o "$out/probe" "$out/probe.c" >"$out/probe.log" 2>&1; then
  echo "SKIP: fuzz: $cc cannot build a libFuzzer target ($(grep -m1 -iE 'error|cannot|not found' "$out/probe.log" || head -n1 "$out/probe.log"); on Debian install libclang-rt-dev)"
  exit 0
fi
if ! "$out/probe" -runs=1 >>"$out/probe.log" 2>&1; then
  echo "SKIP: fuzz: a trivial libFuzzer target does not run ($(tail -n1 "$out/probe.log"))"
  exit 0
fi

# --- seeds -----------------------------------------------------------------------
# le VALUE N: VALUE as N bytes, little-endian (negative values two's complement).
le() {
  local v=$1 n=$2 i b s=""
  for ((i = 0; i < n; i++)); do
    printf -v b '\\x%02x' $(((v >> (8 * i)) & 255))
    s+=$b
  done
  printf '%b' "$s"
}
# pad STRING N: STRING, then NUL bytes up to N bytes in all.
pad() {
  printf '%s' "$1"
  head -c $(($2 - ${#1})) /dev/zero
}
# frame TAG BYTES [SEQ COUNT OP ROOT COLL DTYPE]: a frame's 48-byte header
frame() {
  printf 'ccF2'; le "$1" 4; le "$2" 8; le "${3:-0}" 8; le "${4:-0}" 8; le "${5:-0}" 4; le "${6:-0}" 4
  le "${7:-0}" 1; le "${8:-0}" 1; le 0 6
}
# the collective fuzz_stream's run is in: all_reduce(1250 float32, sum) #7,
# or with setup & 1 gather_v(int32, root 1) #7
ar() { frame -2 "$1" "${2:-7}" "${3:-1250}" 0 0 4 8; }
gv() { frame -2 "$1" 7 "${2:-1024}" 0 1 10 2; }
# bytes N BYTE: N copies of a byte (given as a decimal number)
bytes() { head -c "$1" /dev/zero | tr '\0' "$(printf '\\%03o' "$2")"; }
job=0123456789abcdef0123456789abcdef

seed() { # seed NAME SEEDNAME: stdin into the corpus
  mkdir -p "$out/corpus-$1"
  cat >"$out/corpus-$1/seed-$2"
}
write_seeds() {
  frame 5 8 | seed frame data
  ar 4096 | seed frame coll
  frame -2 64 3 100 1 2 16 11 | seed frame coll-other
  frame -3 20 | seed frame abort
  frame 0 $((1 << 44)) | seed frame largest

  { printf '\x40'; le 4 4; le 1 4; printf 'rank 1 exited\0'; } | seed abort peer-lost
  { printf '\x08'; le 6 4; le -1 4; printf 'a long message\001\377 cut short'; } | seed abort short-buffer

  { printf 'ccH1'; le 4 4; le 2 4; le 4 4; le 1 4; le 0 4; pad "$job" 40; bytes 16 7; le 5 4; bytes 12 0; } | seed hello data
  { printf 'ccH1'; le 4 4; le 1 4; le 3 4; le 2 4; le 0 4; pad "" 40; bytes 16 0; le 0 4; bytes 12 0; } | seed hello rendezvous

  # handshake: a config byte (1 token, 2 encryption, 4 records), then ops on
  # 8 clients (high nibble: which; low: 0 connect, 3-5 and 10-15 send genuine
  # bytes, 6 read, 7 a flipped byte, 8 close, 9 sleep; see fuzz_handshake.c)
  printf '\x01\x00\x01\x03\x5f\x13\x5f\x06\x16\x03\x5f\x13\x5f\x06\x16\x03\x5f\x13\x5f' | seed handshake data-token
  printf '\x07\x00\x10\x20\x30\x40\x03\x5f\x13\x5f\x23\x01\x33\x5f\x06\x16\x03\x5f\x13\x5f\x09\x02\x43\x5f' | seed handshake rdv-encrypt
  printf '\x04\x00\x10\x20\x30\x40\x50\x60\x70\x09\x03\x09\x03\x03\x5f\x73\x5f\x06\x03\x5f\x07\x00\x78' | seed handshake full-table
  { printf '\x01\x00\x02\x20'; head -c 33 /dev/zero; printf '\x10\x03\x30\x08\x13\x5f'; } | seed handshake garbage

  { pad "host-a/boot-1234" 176; pad 127.0.0.1 64; le 1234 4; pad "" 12; } | seed rec ipv4
  { pad "node07" 176; pad "fe80::1" 64; le 65535 4; pad "cc-1a2b-g4" 12; } | seed rec ipv6

  printf '\x3fcc-rendezvous 2 127.0.0.1 4000 %s\n' "$job" | seed file ipv4
  printf '\x3fcc-rendezvous 2 ::1 65535 0123456789abcdef\n' | seed file ipv6
  printf '\x05cc-rendezvous 2 10.0.0.1 1 %s' "$job" | seed file small-buffer

  printf '\x40node[01-04,7],gpu[2-3]' | seed hostlist brackets
  printf '\x40n1,n2,n3' | seed hostlist plain
  printf '\x40rack[1-2]-node[009-010]' | seed hostlist two-groups
  printf '\x04node[01-04,7]' | seed hostlist too-long

  # stream: a mode byte (0x80 whole, else pieces of 1..24 bytes, 1..4096 with
  # 0x20; 0x40 messages that become live as receives complete), a setup byte
  # (1: the run is gather_v; 2: a send that blocks; 4: the call's entry reads
  # first), then frames
  { printf '\x80\x00'; frame 5 8; bytes 8 1; frame 5 8; bytes 8 2; frame 9 0; frame 3 100; bytes 100 3
    frame 0 4096; bytes 4096 4; ar 5000; bytes 5000 5; frame 42 3; printf 'abc'; } | seed stream fixed-whole
  { printf '\x06\x00'; frame 42 3; printf 'abc'; frame 5 8; bytes 8 1; ar 5000; bytes 5000 4; frame 0 4096
    bytes 4096 5; frame 5 8; bytes 8 2; frame 9 0; frame 3 100; bytes 100 3; } | seed stream fixed-pieces
  { printf '\x80\x00'; frame 5 8; bytes 8 1; frame -3 20; le 4 4; le 1 4; printf 'rank 1 died\0'; } |
    seed stream abort
  { printf '\x80\x00'; frame 5 4; printf 'abcd'; } | seed stream mismatch-size
  # after the run's data: a failure report, a frame cut short (both posted for the next call)
  all() { frame 5 8; bytes 8 1; frame 5 8; bytes 8 2; frame 9 0; frame 3 100; bytes 100 3; frame 0 4096; bytes 4096 4
    ar 5000; bytes 5000 5; }
  { printf '\x80\x00'; all; frame -3 22; le 6 4; le 1 4; printf 'rank 1 failed\0'; } | seed stream done-abort
  # the same with a send to rank 1 waiting (setup 2): the report's code ends the run, not the lost stream
  { printf '\x80\x02'; all; frame -3 22; le 6 4; le 1 4; printf 'rank 1 failed\0'; } | seed stream done-abort-send
  { printf '\x80\x00'; all; frame 42 5000; bytes 100 6; } | seed stream done-cut
  # a farewell (tag -4, no payload) in the middle of the stream, then the end
  { printf '\x80\x00'; frame 42 3; printf 'abc'; frame -4 0; } | seed stream farewell
  # the call's entry reads first (setup 4): everything queued, taken when the receives start
  { printf '\x80\x04'; frame 42 3; printf 'abc'; all; } | seed stream entry-whole
  { printf '\x2a\x04'; frame 42 3; printf 'abc'; all; } | seed stream entry-pieces
  { printf '\x66\x04'; frame 5 8; bytes 8 1; frame 5 8; bytes 8 2; ar 4096; bytes 4096 3; frame 9 0; frame 5 8; bytes 8 4
    frame -3 22; le 6 4; le 1 4; printf 'rank 1 failed\0'; } | seed stream entry-abort
  { printf '\x80\x00'; ar 5000 6; bytes 5000 1; } | seed stream mismatch-seq
  { printf '\x46\x00'; ar 4096 8; bytes 4096 1; } | seed stream call-ahead
  { printf '\x80\x00'; ar 5000 7 1251; bytes 5000 1; } | seed stream mismatch-count
  { printf '\x0b\x01'; gv 5000 77; bytes 5000 1; frame 9 0; gv 4096 5; bytes 4096 2; } | seed stream gather-v
  { printf '\xc0\x00'; ar 4096; bytes 4096 6; frame 5 8; bytes 8 1; frame 5 8; bytes 8 2; ar 4096; bytes 4096 7
    frame 3 100; bytes 100 9; frame 9 0; frame 9 16; bytes 16 8; } | seed stream dynamic-whole
  { printf '\x4f\x00'; frame 5 8; bytes 8 1; frame 5 8; bytes 8 2; frame 5 8; bytes 8 3; ar 4096; bytes 4096 9
    frame 9 0; frame 3 100; bytes 100 4; frame 9 16; bytes 16 5; ar 4096; bytes 4096 6; } | seed stream dynamic-pieces
  # tag 5 arrives before its receives start: taken from the queue, oldest first
  { printf '\x63\x00'; frame 5 8; bytes 8 1; frame 9 0; frame 5 8; bytes 8 2; frame 5 8; bytes 8 3; frame 5 8; bytes 8 4
    ar 4096; bytes 4096 5; frame 9 16; bytes 16 6; ar 4096; bytes 4096 7; frame 3 100; bytes 100 8; } |
    seed stream dynamic-queued
  { printf '\x80\x00'; frame 77 5000; bytes 100 1; } | seed stream truncated
  { printf '\x83\x02'; frame 5 8; bytes 8 1; frame 9 0; frame 42 3; printf 'abc'; } | seed stream blocked-whole
  { printf '\x47\x03'; frame 5 8; bytes 8 1; gv 4096; bytes 4096 2; frame 9 0; frame 5 8; bytes 8 3; } |
    seed stream blocked-dynamic
  # more than the 64 KiB stage at once: 4088 bytes, then 4096-byte frames, so
  # that the 17th header starts 8 bytes before the stage's end
  {
    printf '\x80\x00'; frame 42 4040; bytes 4040 1
    for i in $(seq 16); do frame 42 4048; bytes 4048 "$i"; done
    frame 5 8; bytes 8 1
  } | seed stream stage-full
  { printf '\x25\x00'; frame 0 4096; bytes 4096 1; frame 12 3000; bytes 3000 2; frame 3 100; bytes 100 3; } |
    seed stream big-pieces
}
write_seeds

# --- build ----------------------------------------------------------------------------
# A target is rebuilt when cc.h, fuzz_util.h, its source or the flags changed.
stamp="$cc ${cflags[*]}"
pids=()
for t in "${targets[@]}"; do
  bin=$out/fuzz_$t src=$here/fuzz_$t.c
  if [ -x "$bin" ] && [ "$(cat "$out/fuzz_$t.flags" 2>/dev/null)" = "$stamp" ] &&
    [ "$bin" -nt "$root/cc.h" ] && [ "$bin" -nt "$here/fuzz_util.h" ] && [ "$bin" -nt "$src" ]; then
    continue
  fi
  rm -f "$bin" "$out/fuzz_$t.flags"
  ("$cc" "${cflags[@]}" -o "$bin" "$src" -pthread >"$out/build-$t.log" 2>&1 &&
    printf '%s' "$stamp" >"$out/fuzz_$t.flags") &
  pids+=($!)
done
for p in ${pids[@]+"${pids[@]}"}; do wait "$p"; done

# --- run, all side by side ----------------------------------------------------------------
declare -A pid
for t in "${targets[@]}"; do
  [ -x "$out/fuzz_$t" ] || continue
  mkdir -p "$out/crash-$t"
  # the decoders of fixed-size fields run a million inputs in seconds; the
  # stream target (system calls, inputs up to 70000 bytes) gets the CPU first
  prio=5
  case $t in
    frame) maxlen=48 ;;
    hello) maxlen=96 ;;
    rec) maxlen=256 ;;
    stream) maxlen=70000 prio=0 ;;
    handshake) maxlen=256 prio=0 ;;
    *) maxlen=512 ;;
  esac
  # -malloc_limit_mb: the targets refuse more than 64 MiB in one piece (see
  # fuzz_util.h), so a larger request is a bug in the target or in cc.h.
  nice -n "$prio" timeout -k 5 $((secs + 60)) "$out/fuzz_$t" -seed="${CC_FUZZ_SEED:-1}" -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 \
    -malloc_limit_mb=256 -max_len=$maxlen -print_final_stats=1 -artifact_prefix="$out/crash-$t/" \
    "$out/corpus-$t" >"$out/run-$t.log" 2>&1 </dev/null &
  pid[$t]=$!
done

st=0
for t in "${targets[@]}"; do
  if [ ! -x "$out/fuzz_$t" ]; then
    echo "FAIL: fuzz $t: does not build ($cc ${cflags[*]} $here/fuzz_$t.c)"
    tail -n 20 "$out/build-$t.log"
    st=1
    continue
  fi
  rc=0
  wait "${pid[$t]}" || rc=$?
  log=$out/run-$t.log
  runs=$(grep -m1 '^stat::number_of_executed_units:' "$log" | awk '{print $2}')
  took=$(grep -m1 '^Done [0-9]* runs in' "$log" | awk '{print $5}')
  if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
    echo "PASS: fuzz $t (${runs} runs in ${took:-$secs} s)"
  else
    unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    echo "FAIL: fuzz $t: the fuzzer exited with status $rc; the input: ${unit:-none saved} (rerun: $out/fuzz_$t FILE); log $log ends:"
    # the report without ASan's shadow-byte map
    grep -vE '^ *(=>)?0x[0-9a-f]+:|^Shadow byte|^  (Addressable|Partially|Heap|Freed|Stack|Global|Poisoned|Container|Array|Intra|ASan|Left|Right)\b' "$log" |
      tail -n 60 | sed 's/^/    /'
    st=1
  fi
done
exit "$st"
