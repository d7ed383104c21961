#!/usr/bin/env bash
# tests/cuda/gpu_device_check.sh [--build-only | --self-test] [OUT_DIR]
#
# cc_cuda.cuh on a real GPU, in at most about 8 minutes on one H100 or H200
# (16 cores), from a fresh copy of the working tree where the CUDA toolkit (and
# the driver) is installed:
#
#   1. builds for sm_90 with make -j16 (BUILD=build-gpu): the GPU suite
#      (tests/cuda/test_cuda.cu), the example, cc_bench's CUDA mode, ccrun, and the
#      example once more with --use_fast_math;
#   2. runs the GPU suite's fast worlds on the device: ipc mode with 3 ranks on
#      the GPUs there are (several ranks on one GPU when there is one), the
#      two-shot and sliced worlds, and every regression world, among them the
#      two defects' own (evict_in_call: a group that evicts mappings its own
#      copies read; capture_modes: CUDA graph captures around the
#      communicator);
#   3. compute-sanitizer memcheck, racecheck and synccheck on a short run of
#      the example (2 ranks, each under its own sanitizer);
#   4. the example built with --use_fast_math: init must refuse it;
#   5. cc_bench's CUDA mode at 2 and 4 ranks, 8 B to 64 MiB: all_reduce,
#      all_gather, broadcast and the device-to-device copy row;
#
# then prints one summary: each step's PASS or FAIL, the figures (time and
# bus bandwidth at 8 B, 256 KiB, 16 MiB and 64 MiB), and how the ranks waited
# for each other on the stream and how remote writes were ordered (init's
# CC_DEBUG=INFO line). Every log, and the summary, go to OUT_DIR (default:
# $OUT when set, else build-gpu/device-check). Each step has a time limit,
# and none runs past 470 s from the start (CC_DEVICE_CHECK_BUDGET, seconds):
# the whole stays within 8 minutes, leaving a device session time to run it
# again.
#
# Without an NVIDIA GPU it says so on one FAIL line and exits 2, having built
# nothing. --build-only: step 1 alone (a machine with nvcc and no GPU can check
# that much). --self-test: no GPU needed; the summary's reading of cc_bench's
# rows, on cc_bench's CPU mode (built with the C compiler into $BUILD, default
# build). Exit status: 0 when
# every step passed, 1 when one failed, 2 when there is nothing to check here.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
mode=all
case ${1:-} in
  --build-only) mode=build; shift ;;
  --self-test) mode=self; shift ;;
  -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
out=${1:-${OUT:-$root/build-gpu/device-check}}
mkdir -p "$out" && out=$(cd "$out" && pwd)
build=$root/build-gpu
t_start=$(date +%s)
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -lt 16 ] 2>/dev/null || jobs=16
results=()                             # "PASS: ..." / "FAIL: ..." per step
failed=0

say() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
note() {                               # a step's verdict, kept for the summary
  results+=("$1: gpu device check: $2")
  [ "$1" = FAIL ] && failed=1
  printf '%s: gpu device check: %s\n' "$1" "$2"
}
elapsed() { echo $(($(date +%s) - t_start)); }
budget=${CC_DEVICE_CHECK_BUDGET:-470}
# run LIMIT LOG CMD...: the command under a time limit (cut to what is left
# of the budget), its output in LOG; its status (124: out of time)
run() {
  local limit=$1 log=$2 left
  shift 2
  left=$((budget - $(elapsed)))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 5 ]; then
    echo "no time left of the check's ${budget} s" >"$log"
    return 124
  fi
  timeout --kill-after=5 "$limit" "$@" >"$log" 2>&1
}

# ---- the table of cc_bench's rows: collective, size, out-of-place and
# in-place time (us) and busbw (GB/s), at the sizes the summary shows
bench_table() {
  awk -v want="$2" '
    /^# Collective test: / { coll = $4 }
    /^ *[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z_]+ +-?[0-9]+ / {
      if (("," want ",") ~ ("," $1 ",")) printf "  %-10s %9s B  %9s us %8s GB/s   %9s us %8s GB/s  %s wrong\n", coll, $1, $6, $8, $10, $12, $9 + $13
    }' "$1"
}
bench_ok() {                           # every section, no wrong value, the footer
  grep -q '^# Out of bounds values : 0 OK' "$1" && [ "$(grep -c '^# Collective test: ' "$1")" = "$2" ]
}
sizes=8,262144,16777216,67108864

if [ "$mode" = self ]; then
  # cc_bench's CPU mode prints the same rows: read them as the summary does
  cpu=${BUILD:-$root/build}             # where make builds the CPU programs
  mkdir -p "$cpu" && cpu=$(cd "$cpu" && pwd)
  if ! make --no-print-directory -s -C "$root" BUILD="$cpu" "$cpu/cc_bench" "$cpu/ccrun" >"$out/self-build.log" 2>&1; then
    echo "FAIL: gpu device check self-test: cc_bench does not build: $(tail -n 3 "$out/self-build.log" | tr '\n' ' ')"
    exit 1
  fi
  run 120 "$out/self-bench.log" "$cpu/ccrun" -n 2 "$cpu/cc_bench" -k all_reduce,all_gather,broadcast,copy \
    -b 8 -e 1M -f 128 -n 2 -w 1
  rc=$?
  rows=$(bench_table "$out/self-bench.log" 8,1048576)
  n=$(printf '%s\n' "$rows" | grep -c ' wrong$')
  shape='^  (all_reduce|all_gather|broadcast|copy) +(8|1048576) B +[0-9.]+ us +[0-9.]+ GB/s +[0-9.]+ us +[0-9.]+ GB/s  0 wrong$'
  if [ $rc = 0 ] && bench_ok "$out/self-bench.log" 4 && [ "$n" = 8 ] &&
     [ "$(printf '%s\n' "$rows" | grep -c -E "$shape")" = 8 ]; then
    echo "PASS: gpu device check self-test: the summary reads cc_bench's rows (4 collectives x 2 sizes, in CPU mode)"
    printf '%s\n' "$rows"
    exit 0
  fi
  echo "FAIL: gpu device check self-test: cc_bench exited $rc; rows read: $n of 8: $(printf '%s\n' "$rows" | head -n 3 | tr '\n' ' ')"
  exit 1
fi

: >"$out/summary.txt"
# ---- 0. is there anything to check here?
nvcc=${NVCC:-$(command -v nvcc 2>/dev/null || true)}
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  say "FAIL: gpu device check: no nvcc (PATH, NVCC, /usr/local/cuda/bin): install the CUDA toolkit"
  exit 2
fi
gpus=
if [ "$mode" = all ]; then
  if command -v nvidia-smi >/dev/null 2>&1; then gpus=$(nvidia-smi -L 2>&1 | grep '^GPU ' || true); fi
  if [ -z "$gpus" ] || [ ! -e /dev/nvidiactl ]; then
    say "FAIL: gpu device check: no NVIDIA GPU on this machine ($( [ -e /dev/nvidiactl ] && echo "nvidia-smi lists none" || echo "no /dev/nvidiactl, no driver")): nothing to check here; tests/cuda/test_cuda.sh runs the emulated suite instead"
    exit 2
  fi
  say "# gpu device check: $(printf '%s\n' "$gpus" | wc -l) GPU(s): $(printf '%s\n' "$gpus" | head -n 1)"
  say "# driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1), $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/nvcc \1/p'), CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-(unset)}, $(nproc) CPUs"
fi

# ---- 1. builds, sm_90, all at once
arch='-gencode arch=compute_90,code=sm_90'
t0=$(date +%s)
mkdir -p "$build/cuda"
# shellcheck disable=SC2086
run 240 "$out/build-fastmath.log" "$nvcc" -std=c++17 $arch --use_fast_math -O2 -I"$root" \
  -o "$build/cuda/cuda_all_reduce_fastmath" "$root/examples/cuda_all_reduce.cu" -lpthread -lm &
fastmath=$!
run 240 "$out/build.log" make --no-print-directory -j"$jobs" -C "$root" BUILD="$build" NVCC="$nvcc" \
  NVCC_ARCH="$arch" NVFLAGS='-O2 -g' "$build/ccrun" "$build/cuda/test_cuda" "$build/cuda/cuda_all_reduce" \
  "$build/cuda/cc_bench_cuda"
rc=$?
wait "$fastmath" || rc=1
if [ $rc = 0 ]; then
  note PASS "build: test_cuda, cuda_all_reduce (and with --use_fast_math), cc_bench_cuda for sm_90, make -j$jobs, $(($(date +%s) - t0)) s"
else
  note FAIL "build: $(grep -m 3 -E 'error|Error' "$out/build.log" "$out/build-fastmath.log" 2>/dev/null | tr '\n' ' ')(logs: $out/build*.log)"
  exit 1
fi
[ "$mode" = build ] && exit 0
ccrun=$build/ccrun
bin=$build/cuda

# ---- 2. the GPU suite's fast worlds and the regression worlds
t0=$(date +%s)
CC_TEST_QUICK=1 run 180 "$out/suite.log" "$bin/test_cuda" 3 twoshot regress
rc=$?
npass=$(grep -c '^PASS' "$out/suite.log")
nfail=$(grep -c '^FAIL' "$out/suite.log")
if grep -q '^SKIP: cuda: no CUDA device' "$out/suite.log"; then
  note FAIL "GPU suite: test_cuda found no CUDA device: $(grep -m 1 '^SKIP' "$out/suite.log")"
elif [ $rc = 0 ] && [ "$nfail" = 0 ] && [ "$npass" -gt 20 ]; then
  note PASS "GPU suite (CC_TEST_QUICK=1 test_cuda 3 twoshot regress): $npass PASS, 0 FAIL, $(($(date +%s) - t0)) s"
else
  note FAIL "GPU suite: exit $rc ($([ $rc = 124 ] || [ $rc = 137 ] && echo "out of time" || echo "finished")), $npass PASS, $nfail FAIL: $(grep -m 3 '^FAIL' "$out/suite.log" | cut -c1-300 | tr '\n' ' ')"
fi
for w in evict_in_call capture_modes; do   # the two defects' own tests
  line=$(grep -E "^(PASS|FAIL): cuda n=[0-9]+ regress $w " "$out/suite.log" | head -n 1)
  if [ "${line%%:*}" = PASS ]; then note PASS "defect test $w on the GPU: ${line#*(}"
  else note FAIL "defect test $w on the GPU: ${line:-not run (see $out/suite.log)}"
  fi
done

# ---- 3. compute-sanitizer on a short run of the example
san=$(command -v compute-sanitizer 2>/dev/null || true)
[ -z "$san" ] && [ -x "$(dirname "$nvcc")/compute-sanitizer" ] && san=$(dirname "$nvcc")/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  if [ -z "$san" ]; then
    note FAIL "compute-sanitizer: not found beside $nvcc"
    break
  fi
  # each rank under its own sanitizer: one wrapped around ccrun with
  # --target-processes all often does not exit after the ranks have
  run 60 "$out/san-$tool.log" "$ccrun" -n 2 "$san" --tool "$tool" --error-exitcode 9 "$bin/cuda_all_reduce" 4099
  rc=$?
  nclean=$(grep -c -E '(ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards)' "$out/san-$tool.log")
  if [ $rc = 0 ] && [ "$nclean" = 2 ]; then
    note PASS "compute-sanitizer --tool $tool on each rank: ccrun -n 2 compute-sanitizer cuda_all_reduce 4099: 0 errors on both"
  elif [ $rc = 124 ] || [ $rc = 137 ]; then
    note FAIL "compute-sanitizer --tool $tool: did not exit within its time (60 s); $(grep -c 'all right' "$out/san-$tool.log") of 2 ranks had printed their result"
  else
    note FAIL "compute-sanitizer --tool $tool: $(grep -m 3 -E 'ERROR|Invalid|Race|Barrier|rror' "$out/san-$tool.log" | cut -c1-200 | tr '\n' ' ')"
  fi
done

# ---- 4. built with --use_fast_math, init refuses
if run 20 "$out/fastmath.log" "$ccrun" -n 2 "$bin/cuda_all_reduce_fastmath" 1000; then
  note FAIL "--use_fast_math: the example built with it ran; cc_cuda_comm_init must refuse it (flushed subnormals break the folds' bits)"
elif grep -q -e '--use_fast_math or -ftz=true' "$out/fastmath.log"; then
  note PASS "--use_fast_math: cc_cuda_comm_init refuses the build, saying why"
else
  note FAIL "--use_fast_math: the run failed otherwise: $(tail -n 3 "$out/fastmath.log" | tr '\n' ' ')"
fi

# ---- 5. cc_bench's CUDA mode at 2 and 4 ranks
for n in 2 4; do
  log=$out/bench-$n.log
  if CC_DEBUG=INFO run 75 "$log" "$ccrun" -n "$n" "$bin/cc_bench_cuda" -g 1 -k all_reduce,all_gather,broadcast,copy \
       -b 8 -e 64M -f 8 -n 10 -w 3 && bench_ok "$log" 4; then
    note PASS "cc_bench -g 1 at $n ranks: all_reduce, all_gather, broadcast, copy, 8 B to 64 MiB, every result right"
  else
    note FAIL "cc_bench -g 1 at $n ranks: $(grep -v '^#' "$log" | grep -v '^ *[0-9]' | tail -n 3 | cut -c1-200 | tr '\n' ' ')"
  fi
done

# ---- the summary
say ""
say "# ==== gpu device check: summary ($(elapsed) s)"
for r in "${results[@]}"; do say "$r"; done
for n in 2 4; do
  log=$out/bench-$n.log
  [ -f "$log" ] || continue
  say ""
  say "# cc_bench -g 1, $n ranks: $(grep -m 1 '^# cuda: ' "$log" | sed 's/^# cuda: //')"
  say "# waits: $(grep -m 1 'cuda_comm_init: rank 0: device' "$log" | sed 's/.*cuda_comm_init: rank 0: //')"
  say "  collective      size         out of place                 in place"
  bench_table "$log" "$sizes" | tee -a "$out/summary.txt"
done
say ""
say "# logs: $out"
exit $failed
