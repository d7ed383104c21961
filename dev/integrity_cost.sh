#!/usr/bin/env bash
# dev/integrity_cost.sh [PASSES] - what authenticating (and encrypting) every
# TCP frame costs (docs/performance.md, "Integrity and encryption over TCP";
# bench/results/token-cost.txt is its output there).
#
# One build, three settings, side by side: 2 ranks on this host, all_reduce
# float32 sum over TCP on loopback (CC_TRANSPORT=tcp), started by hand with an
# env:// rendezvous so that the token is ours to give or not:
#   off      no CC_TOKEN: frames neither authenticated nor encrypted
#   mac      CC_TOKEN set: every frame authenticated (AES-256-GCM where the CPU
#            has AES-NI, else ChaCha20-Poly1305), payloads in clear
#   encrypt  CC_TOKEN and CC_NET_ENCRYPT=1: payloads encrypted too
# PASSES passes (default 5); each runs the three, in an order that rotates
# from pass to pass, and records the vCPU placement fingerprint (c2c median
# ns, build/peers/c2c_latency) before and after each run. Sizes 8 B, 1 MiB,
# 16 MiB, 64 MiB (cc_bench -l 0.3: about 0.3 s per size and column). Prints
# each run's busbw (out of place / in place) and latency at 8 B, then per
# setting the median over the passes and its ratio to `off`. Results go to
# BUILD/integrity/ (BUILD: build, or $BUILD). BENCH_ARGS: cc_bench flags added
# after these (they win), e.g. BENCH_ARGS="-l 0.1".
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${BUILD:-$root/build}
passes=${1:-5}
bench=$build/cc_bench
c2c=$build/peers/c2c_latency
[ -x "$bench" ] || { echo "integrity_cost: $bench is missing (make build/cc_bench)"; exit 1; }
[ -x "$c2c" ] || { echo "integrity_cost: $c2c is missing (make build/peers/c2c_latency)"; exit 1; }
out=$build/integrity/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
token=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
modes=(off mac encrypt)

fp() { "$c2c" 2>/dev/null | sed -n 's/.*median=\([0-9.]*\).*/\1/p'; }

run() { # MODE FILE
  local mode=$1 file=$2 p r vars=()
  case $mode in
    mac) vars=(CC_TOKEN="$token") ;;
    encrypt) vars=(CC_TOKEN="$token" CC_NET_ENCRYPT=1) ;;
  esac
  p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
  for r in 1 0; do
    env -u CC_TOKEN -u CC_NET_ENCRYPT -u CC_JOB_ID "${vars[@]}" RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$p CC_TRANSPORT=tcp CC_TIMEOUT=60 timeout 300 "$bench" -k all_reduce -d float -o sum \
      -b 16M -e 16M -s 8,1M,64M -l 0.3 -w 5 -c 1 ${BENCH_ARGS:-} >"$file.$r" 2>&1 &
  done
  wait
  cp "$file.0" "$file"
}

# the row of SIZE in FILE: "oop_busbw ip_busbw oop_time_us"
row() { awk -v s="$2" '$1 == s && NF >= 13 { print $8, $12, $6; exit }' "$1"; }

printf '%-5s %-8s %-12s %-22s %-22s %-22s %s\n' pass setting "c2c ns" "8 B us (oop/ip)" "1 MiB GB/s" "16 MiB GB/s" "64 MiB GB/s"
for pass in $(seq "$passes"); do
  for k in 0 1 2; do
    mode=${modes[$(((k + pass) % 3))]}
    f=$out/$pass-$mode.txt
    before=$(fp)
    run "$mode" "$f"
    after=$(fp)
    wrong=$(awk '$1 ~ /^[0-9]+$/ && NF >= 13 && ($9 != 0 || $13 != 0)' "$f" | wc -l)
    r8=$(awk '$1 == 8 && NF >= 13 { print $6 "/" $10; exit }' "$f")
    r1=$(row "$f" 1048576) r16=$(row "$f" 16777216) r64=$(row "$f" 67108864)
    printf '%-5s %-8s %-12s %-22s %-22s %-22s %s%s\n' "$pass" "$mode" "$before>$after" "$r8" \
      "${r1% *}" "${r16% *}" "${r64% *}" "$([ "$wrong" -gt 0 ] && echo "  WRONG RESULTS: $wrong rows")"
    echo "$pass $mode $before $after $(row "$f" 8) | $(row "$f" 1048576) | $(row "$f" 16777216) | $(row "$f" 67108864)" >>"$out/summary"
  done
done

echo
echo "median over $passes passes (out-of-place busbw GB/s; 8 B: time us), and the ratio to off:"
for mode in "${modes[@]}"; do
  line=$mode
  for col in 8 1048576 16777216 67108864; do
    med=$(for pass in $(seq "$passes"); do
            awk -v s="$col" '$1 == s && NF >= 13 { print (s == 8 ? $6 : $8); exit }' "$out/$pass-$mode.txt"
          done | sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
    eval "m_${mode}_$col=\$med"
    base=$(eval "echo \${m_off_$col:-}")
    ratio=$(awk -v a="$med" -v b="$base" 'BEGIN { if (b > 0 && a > 0) printf "%.0f%%", 100 * a / b }')
    line="$line  $col: $med ($ratio)"
  done
  echo "  $line"
done
echo "(files in $out)"
