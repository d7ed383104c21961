#!/usr/bin/env bash
# tests/cuda/test_cuda.sh [BUILD_DIR] - cc_cuda.cuh, with or without a GPU:
#   - nvcc builds every CUDA test, the example and cc_bench's CUDA mode
#     (`make cuda`: -Werror all-warnings, -Wall -Wextra -Werror for the host
#     code), one PASS or FAIL line each;
#   - the declarations compile from plain C99 (gcc, clang) and C++11 (g++):
#     they need only <cuda_runtime_api.h>;
#   - tests/cuda/test_cuda_fold.cu runs the fold kernel's body on the CPU against
#     cc.h's fold, and tests/cuda/test_cuda_watchdog.cu the watchdog's logic on a
#     flag page in plain memory, and tests/cuda/test_cuda_init.cu init's failures
#     where there is no GPU (no GPU needed for any of the three);
#   - test_cuda_emu, tests/cuda/test_cuda.cu linked with tests/cuda/cuda_emu.cpp (the
#     CUDA runtime on the CPU: kernels run as their CPU twins on stream
#     threads, CUDA IPC between processes, stream memory operations) and built
#     with ASan and UBSan, runs the GPU suite in ipc mode at 2 and 3 ranks,
#     staged, two-shot, a rank's exit and the regression worlds,
#     GPU or not; and the staged path over TCP;
#   - every emulated run is under the emulation's happens-before checker
#     (CC_EMU_HB=1): a PASS line each when it checked accesses and found no
#     race, use after free or checker error; tests/cuda/test_cuda_hb.cu shows it
#     finds defects brought back on purpose (calls on two streams unordered,
#     in a copy of cc_cuda.cuh that the Makefile patches; memory freed while
#     mapped; a missing flag or event; a close while a read is in flight; a
#     remote write without a flush);
#   - cc_cuda.cuh's kernels use nothing that needs a block's threads to run
#     at once (the emulation runs them one after another) but a block's first
#     phase, its abort word read once into shared memory (the emulation runs
#     it once per block, before the block's threads);
#   - tests/cuda/test_cuda.cu runs every collective on the GPU, or prints one SKIP
#     line when this machine has no CUDA device; with a device, the example
#     and a short cc_bench run follow, and the example under compute-sanitizer
#     (memcheck, racecheck, synccheck) where it is installed.
# No nvcc: one SKIP line. CC_TEST_QUICK set (the sanitizer runs): under
# `make tsan` (CFLAGS has -fsanitize=thread) only test_cuda_emu_tsan, the
# emulated suite under ThreadSanitizer with CC_TEST_QUICK's smaller matrix
# (sum and one more op per dtype instead of every pair, fewer large counts) at
# 3 ranks plus the regression worlds (2 ranks, for CI's time: the same host
# code, which the plain run checks at 2 ranks under ASan and the
# happens-before checker); under `make sanitize` nothing (the plain run
# already runs test_cuda_emu under ASan and UBSan).
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
mkdir -p "$build" && build=$(cd "$build" && pwd)
out=$build/cuda

tsan_only=0 quick_tier=0
if [ "${CC_TEST_TIER:-}" = quick ] && [ -z "${CC_TEST_SANITIZER:-}" ]; then
  quick_tier=1                         # make test: one build, the quickest world (below)
elif [ -n "${CC_TEST_QUICK:-}" ]; then
  case " ${CFLAGS:-} " in
    *-fsanitize=thread*) tsan_only=1 ;;
    *)
      echo "SKIP: cuda: CC_TEST_QUICK is set (the plain test run builds and runs the CUDA tests under ASan and UBSan; make tsan runs them under TSan)"
      exit 0
      ;;
  esac
fi
nvcc=${NVCC:-$(command -v nvcc 2>/dev/null || true)}
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "SKIP: cuda: no nvcc on this machine (PATH, NVCC, /usr/local/cuda/bin)"
  exit 0
fi
# CUDA's own headers, for the declaration checks: where nvcc says it looks
# (it may be named without its directory, NVCC=nvcc), then beside it.
cuda_inc=
for d in $("$nvcc" --dryrun -x cu -c /dev/null -o /dev/null 2>&1 |
             sed -n 's/^#\$ \(SYSTEM_\)\{0,1\}INCLUDES=//p' | tr -d '"' | tr ' ' '\n' | sed -n 's/^-I//; /^\//p') \
         "$(dirname "$nvcc")/../include" "$(dirname "$nvcc")"/../targets/*/include; do
  if [ -f "$d/cuda_runtime_api.h" ]; then cuda_inc=$(cd "$d" && pwd); break; fi
done
mkdir -p "$out"

# The happens-before checker's counts of one run (the process that made the
# checker appends them to CC_EMU_HB_LOG when it exits): PASS when it checked
# accesses and found no race, no use after free and no error of its own.
hb_check() {
  local log=$1 what=$2 line k v races= uaf= errors= accesses= flag_edges= sync_edges= released_waits= \
    after_release= history_misses= dropped_reads= extra=
  line=$(tail -n 1 "$log" 2>/dev/null)
  for k in $line; do
    v=${k#*=}
    case ${k%%=*} in
      races | uaf | errors | accesses | flag_edges | sync_edges | released_waits | after_release | history_misses | dropped_reads)
        printf -v "${k%%=*}" '%s' "$v" ;;
    esac
  done
  if [ -z "$line" ] || [ -z "$races" ]; then
    echo "FAIL: cuda hb: $what: the checker left no counts in $log (did the run end?)"
  elif [ "$races" = 0 ] && [ "$uaf" = 0 ] && [ "$errors" = 0 ] && [ "$accesses" -gt 0 ]; then
    [ "$released_waits" != 0 ] && extra="; $released_waits wait(s) released by a failed communicator, $after_release report(s) after them not counted"
    [ "$history_misses" != 0 ] && extra="$extra; $history_misses lost stream orders"
    [ "$dropped_reads" != 0 ] && extra="$extra; $dropped_reads reads forgotten"
    echo "PASS: cuda hb: $what under the happens-before checker: 0 races in $accesses accesses checked, $flag_edges flag and $sync_edges stream/event edges$extra"
  else
    echo "FAIL: cuda hb: $what: $races races, $uaf uses after free or close, $errors checker errors in $accesses accesses (the 'cuda_emu: RACE' lines above say where)"
  fi
}

if [ "$tsan_only" = 1 ]; then
  release=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  make --no-print-directory -s -C "$root" BUILD="$build" "$build/ccrun" >/dev/null 2>&1
  tsan_builds=(test_cuda_emu_tsan test_cuda_hb_tsan) tsan_pids=()
  for t in "${tsan_builds[@]}"; do   # both at once
    make --no-print-directory -s -C "$root" BUILD="$build" NVCC="$nvcc" "$out/$t" >"$out/$t.build.log" 2>&1 &
    tsan_pids+=($!)
  done
  for i in "${!tsan_builds[@]}"; do
    t=${tsan_builds[$i]}
    if wait "${tsan_pids[$i]}"; then
      src=tests/cuda/test_cuda.cu
      [ "$t" = test_cuda_hb_tsan ] && src=tests/cuda/test_cuda_hb.cu
      echo "PASS: cuda build: $src with tests/cuda/cuda_emu.cpp and TSan, nvcc $release"
    else
      echo "FAIL: cuda build: $t: $(tail -n 5 "$out/$t.build.log" | tr '\n' ' ')"
      wait
      exit 1
    fi
  done
  rm -f "$out/hb-tsan.log"
  CC_EMU_HB=1 CC_EMU_HB_LOG="$out/hb-tsan.log" "$out/test_cuda_emu_tsan" 3 regress
  rc=$?
  hb_check "$out/hb-tsan.log" "TSan: ipc mode at 3 ranks and the regression worlds"
  "$out/test_cuda_hb_tsan" || rc=1
  exit $rc
fi

# ---- the quick tier (make test): the emulated GPU suite's quickest world,
# ipc mode at 2 ranks under the happens-before checker, from one build
if [ "$quick_tier" = 1 ]; then
  release=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  make --no-print-directory -s -C "$root" BUILD="$build" "$build/ccrun" >/dev/null 2>&1
  if make --no-print-directory -s -C "$root" BUILD="$build" NVCC="$nvcc" "$out/test_cuda_emu" >"$out/test_cuda_emu.build.log" 2>&1; then
    echo "PASS: cuda build: tests/cuda/test_cuda.cu with tests/cuda/cuda_emu.cpp, ASan and UBSan, nvcc $release"
  else
    echo "FAIL: cuda build: test_cuda_emu: $(tail -n 5 "$out/test_cuda_emu.build.log" | tr '\n' ' ')"
    exit 1
  fi
  rm -f "$out/hb-quick.log"
  CC_EMU_HB=1 CC_EMU_HB_LOG="$out/hb-quick.log" "$out/test_cuda_emu" 2
  rc=$?
  hb_check "$out/hb-quick.log" "ipc mode at 2 ranks"
  echo "SKIP: cuda: the quick tier runs the emulated suite at 2 ranks only; make check builds every CUDA program and runs 3 ranks, staged, two-shot, a rank's exit, the regression worlds, TCP, the kernel waits, the checker's own tests, and the GPU where there is one"
  exit $rc
fi

# ---- builds, as many at once as there are CPUs (nvcc is slow), the longest
# first. Where an NVIDIA driver is, as make builds them by default (fat
# binaries). Where none is, nothing built here can run on a GPU: for CI's
# time, one architecture each (a fat binary costs about a minute of CPU), the
# example still at -O2 as make builds it, the GPU suite and the benchmark with
# the host side unoptimized (-O0: nvcc's host compile of cc.h at -O2 is half a
# build).
fat=1
[ -e /dev/nvidiactl ] || fat=0
built=1 srcs=() bins=() pids=() archs=()
make --no-print-directory -s -C "$root" BUILD="$build" "$build/ccrun" >/dev/null 2>&1
for t in tests/cuda/cuda_emu.cpp $(cd "$root" && ls examples/*.cu) tests/cuda/test_cuda_hb.cu tests/cuda/test_cuda.cu bench/cc_bench.c \
         $(cd "$root" && ls tests/cuda/*.cu | grep -v -e '^tests/cuda/test_cuda.cu$' -e '^tests/cuda/test_cuda_hb.cu$') mutant; do
  case $t in
    bench/*) bin=cc_bench_cuda ;;
    tests/cuda/cuda_emu.cpp) bin=test_cuda_emu t="tests/cuda/test_cuda.cu with tests/cuda/cuda_emu.cpp, ASan and UBSan" ;;
    mutant) bin=test_cuda_hb_unordered t="tests/cuda/test_cuda_hb.cu against cc_cuda.cuh without the order of calls on two streams (a mutant the Makefile makes)" ;;
    *) bin=$(basename "$t" .cu) ;;
  esac
  one=()
  case $bin in
    test_cuda | cc_bench_cuda) [ "$fat" = 1 ] || one=('NVCC_ARCH=$(EMU_ARCH)' 'NVFLAGS=-O0 -g') ;;
    cuda_all_reduce) [ "$fat" = 1 ] || one=('NVCC_ARCH=$(EMU_ARCH)') ;;
  esac
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc 2>/dev/null || echo 2)" ]; do wait -n; done
  make --no-print-directory -s -C "$root" BUILD="$build" NVCC="$nvcc" ${one[@]+"${one[@]}"} "$build/cuda/$bin" \
    >"$out/$bin.build.log" 2>&1 &
  srcs+=("$t") bins+=("$bin") pids+=($!) archs+=("${one[*]:+, one architecture (no NVIDIA driver here)}")
done
release=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    echo "PASS: cuda build: ${srcs[$i]} with nvcc $release${archs[$i]}"
  else
    echo "FAIL: cuda build: ${srcs[$i]}: $(tail -n 5 "$out/${bins[$i]}.build.log" | tr '\n' ' ')"
    built=0
  fi
done

# ---- the declarations alone, from C and C++ (CUDA's headers as system headers)
cat >"$out/decl.c" <<'EOF'
#include "cc.h"
#include "cc_cuda.cuh"
#include <stdio.h>
typedef void (*fn)(void);
int main(void) {   /* every public call exists, with the contract's types */
  fn f[] = {(fn)cc_cuda_comm_init, (fn)cc_cuda_comm_destroy, (fn)cc_cuda_malloc, (fn)cc_cuda_free,
            (fn)cc_cuda_comm_abort, (fn)cc_cuda_comm_last_error, (fn)cc_cuda_comm_check, (fn)cc_cuda_comm_mode, (fn)cc_cuda_barrier,
            (fn)cc_cuda_broadcast, (fn)cc_cuda_reduce, (fn)cc_cuda_all_reduce, (fn)cc_cuda_gather,
            (fn)cc_cuda_all_gather, (fn)cc_cuda_scatter, (fn)cc_cuda_reduce_scatter, (fn)cc_cuda_all_to_all,
            (fn)cc_cuda_gather_v, (fn)cc_cuda_all_gather_v, (fn)cc_cuda_scatter_v, (fn)cc_cuda_all_to_all_v,
            (fn)cc_cuda_send, (fn)cc_cuda_recv, (fn)cc_cuda_group_begin, (fn)cc_cuda_group_end};
  cc_result (*ar)(cc_cuda_comm *, const void *, void *, size_t, cc_dtype, cc_op, cudaStream_t) = cc_cuda_all_reduce;
  printf("%d\n", (int)(sizeof f / sizeof f[0]) + (ar != NULL));
  return 0;
}
EOF
cp "$out/decl.c" "$out/decl.cpp"
[ -n "$cuda_inc" ] || echo "SKIP: cuda declarations: cuda_runtime_api.h is not where $nvcc looks (nvcc --dryrun) nor beside it"
for cc in "gcc -std=c99 -Wstrict-prototypes:$out/decl.c" "clang -std=c99 -Wstrict-prototypes:$out/decl.c" \
          "g++ -std=c++11:$out/decl.cpp"; do
  comp=${cc%%:*} src=${cc#*:}
  [ -n "$cuda_inc" ] || break
  if ! command -v "${comp%% *}" >/dev/null 2>&1; then
    echo "SKIP: cuda declarations: $comp: not installed"
    continue
  fi
  # shellcheck disable=SC2086
  if $comp -Wall -Wextra -Wpedantic -Werror -Wshadow -I"$root" -isystem "$cuda_inc" -c "$src" \
      -o "$out/decl.o" >"$out/decl.log" 2>&1; then
    echo "PASS: cuda declarations compile alone: $comp -Wall -Wextra -Wpedantic -Werror"
  else
    echo "FAIL: cuda declarations: $comp: $(head -n 5 "$out/decl.log" | tr '\n' ' ')"
  fi
done

[ "$built" = 1 ] || exit 1

# ---- the kernels may run thread after thread (the emulation does): nothing
# in cc_cuda.cuh's kernel section may need a block's threads at once but the
# one first phase of a block, cc_cuda__block_stopped (its abort word read
# once into shared memory), which the twins run once per block before its
# threads (comments dropped by the preprocessor, which expands nothing with
# -fpreprocessed)
kern=$(sed -n '/^\/\* =* @cuda-kernels \*\//,/^\/\* =* @cuda-types \*\//p' "$root/cc_cuda.cuh" |
       g++ -fpreprocessed -dD -E -P -x c++ - 2>/dev/null)
phase=$(printf '%s\n' "$kern" | sed -n '/int cc_cuda__block_stopped(const volatile/,/^}/p')
rest=$(printf '%s\n' "$kern" | sed '/int cc_cuda__block_stopped(const volatile/,/^}/d')
coop='__syncthreads|__syncwarp|__shared__|(^|[^_a-zA-Z])atomic[A-Z][A-Za-z]*[[:space:]]*\(|__shfl|__ballot|__any_sync|__all_sync|__activemask|__match_|__reduce_[a-z]+_sync|cooperative_groups|this_thread_block'
nglobal=$(printf '%s\n' "$kern" | grep -c '__global__')
nstopped=$(printf '%s\n' "$rest" | grep -c 'if (cc_cuda__block_stopped(a\.abort)) return;')
if [ "$nglobal" -lt 3 ]; then
  echo "FAIL: cuda kernels: the @cuda-kernels section of cc_cuda.cuh was not found (or holds fewer than 3 kernels)"
elif hits=$(printf '%s\n' "$rest" | grep -nE "$coop"); then
  echo "FAIL: cuda kernels: cc_cuda.cuh's kernels cooperate within a block, which the CPU emulation cannot run: $(echo "$hits" | head -n 3 | tr '\n' ' ')"
elif [ "$(printf '%s\n' "$phase" | grep -cE "$coop")" != 2 ] ||
     [ "$(printf '%s\n' "$phase" | grep -c '^ *if (threadIdx.x == 0) stop = \*abort;$')" != 1 ]; then
  echo "FAIL: cuda kernels: cc_cuda__block_stopped is not the one shared word and barrier the twins run as a block's first phase: $(printf '%s\n' "$phase" | tr '\n' ' ')"
else
  echo "PASS: cuda kernels: no __syncthreads, shared memory, atomics or warp intrinsics in cc_cuda.cuh's $nglobal kernels but a block's first phase ($nstopped kernels read the abort word once per block), which the twins run once per block; their threads may run one after another"
fi

# ---- on the CPU: the kernel's body, the watchdog's logic, init without a
# GPU, and the GPU suite on the CPU emulation of the CUDA runtime
"$out/test_cuda_fold"
"$out/test_cuda_watchdog"
"$out/test_cuda_init"
# ipc mode at 2 and 3 ranks (4 adds 15 s and no new path), the staged path
# (CC_CUDA_TRANSPORT=staged), two-shot all_reduce, a rank's exit, the
# regression worlds; all under the happens-before checker (it costs no
# measurable time: 36 s with, 40 s without, on 2 shared cores)
rm -f "$out"/hb-*.log
CC_EMU_HB=1 CC_EMU_HB_LOG="$out/hb-main.log" "$out/test_cuda_emu" 2 3 staged twoshot death regress
hb_check "$out/hb-main.log" "ipc mode at 2 and 3 ranks, staged, two-shot, a rank's exit, the regression worlds"
# the staged path over TCP: how ranks on several hosts run
CC_EMU_HB=1 CC_EMU_HB_LOG="$out/hb-tcp.log" CC_TRANSPORT=tcp "$out/test_cuda_emu" staged
hb_check "$out/hb-tcp.log" "the staged path over TCP"
# the waits as a kernel (where stream memory operations do not work), the
# smaller matrix
CC_EMU_HB=1 CC_EMU_HB_LOG="$out/hb-kernel.log" CC_CUDA_SYNC=kernel CC_TEST_QUICK=1 "$out/test_cuda_emu" 3
hb_check "$out/hb-kernel.log" "ipc mode at 3 ranks with the waits as a kernel"
# the checker finds what it must: defects brought back on purpose, missing
# flags and events, a use after free, a close while a read is in flight, an
# unflushed remote write; and nothing in the same programs made right
"$out/test_cuda_hb"
"$out/test_cuda_hb_unordered"

# ---- on the GPU
log=$out/test_cuda.log
"$out/test_cuda" 2>&1 | tee "$log"
if grep -q '^SKIP: cuda: no CUDA device' "$log"; then
  echo "SKIP: cuda example and benchmark: no CUDA device"
  # tests/cuda/gpu_device_check.sh, the check for the day a GPU is lent: here it
  # must say that there is none (exit 2, building nothing), and read
  # cc_bench's rows right (its self-test, in CPU mode)
  dc=$(bash "$root/tests/cuda/gpu_device_check.sh" "$out/device-check" 2>&1)
  rc=$?
  if [ $rc = 2 ] && [ "$(printf '%s\n' "$dc" | wc -l)" = 1 ] &&
     printf '%s\n' "$dc" | grep -q '^FAIL: gpu device check: no NVIDIA GPU on this machine'; then
    echo "PASS: gpu device check: without a GPU it exits 2 on one line saying so"
  else
    echo "FAIL: gpu device check: without a GPU it exited $rc: $(printf '%s\n' "$dc" | head -n 2 | tr '\n' ' ')"
  fi
  st=$(BUILD=$build bash "$root/tests/cuda/gpu_device_check.sh" --self-test "$out/device-check" 2>&1 | grep -E '^(PASS|FAIL):')
  echo "${st:-FAIL: gpu device check self-test: it printed no verdict}"
  exit 0
fi
for n in 2 3; do
  if "$build/ccrun" -n "$n" "$out/cuda_all_reduce" 100003 >"$out/example.log" 2>&1 &&
     [ "$(grep -c 'all right; average right' "$out/example.log")" = "$n" ]; then
    echo "PASS: cuda example: ccrun -n $n cuda_all_reduce ($(head -n 1 "$out/example.log"))"
  else
    echo "FAIL: cuda example: ccrun -n $n cuda_all_reduce: $(tail -n 4 "$out/example.log" | tr '\n' ' ')"
  fi
done
# -g 1: GPU mode; -k all: the 10 collectives, each under its own
# "# Collective test:" line, 4 sizes (8, 256, 8K, 256K) each but the barrier's
# one row: 37 rows of nccl-tests' columns, every #wrong summed in the footer
bench_rows=
if "$build/ccrun" -n 2 "$out/cc_bench_cuda" -g 1 -k all -b 8 -e 256K -f 32 -n 2 -w 1 >"$out/bench.log" 2>&1 &&
   bench_rows=$(grep -cE '^ *[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z_]+ +-?[0-9]+ ' "$out/bench.log") &&
   grep -q '^# cuda: device' "$out/bench.log" &&
   [ "$(grep -c '^# Collective test: ' "$out/bench.log")" = 10 ] && [ "$bench_rows" = 37 ] &&
   grep -q '^# Out of bounds values : 0 OK' "$out/bench.log"; then
  echo "PASS: cuda benchmark: ccrun -n 2 cc_bench_cuda -g 1 -k all: 10 collectives, $bench_rows rows, every result checked and right"
else
  echo "FAIL: cuda benchmark: ccrun -n 2 cc_bench_cuda -g 1 -k all (want 10 collectives, 37 rows, 0 wrong; rows: ${bench_rows:-none}): $(grep -v '^#' "$out/bench.log" | tail -n 4 | tr '\n' ' ')"
fi
san=$(command -v compute-sanitizer 2>/dev/null || true)
[ -z "$san" ] && [ -x "$(dirname "$nvcc")/compute-sanitizer" ] && san=$(dirname "$nvcc")/compute-sanitizer
if [ -z "$san" ]; then
  echo "SKIP: cuda compute-sanitizer: not installed"
  exit 0
fi
# memcheck; racecheck and synccheck: the abort word that each block shares.
# Each rank under its own sanitizer (one around ccrun with --target-processes
# all often does not exit after the ranks have: seen on an H200)
for tool in memcheck racecheck synccheck; do
  if timeout 120 "$build/ccrun" -n 2 "$san" --tool "$tool" --error-exitcode 9 "$out/cuda_all_reduce" 4099 \
      >"$out/san-$tool.log" 2>&1 &&
     [ "$(grep -c -E '(ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards)' "$out/san-$tool.log")" = 2 ]; then
    echo "PASS: cuda compute-sanitizer --tool $tool: cuda_all_reduce, 2 ranks, each under the tool"
  else
    echo "FAIL: cuda compute-sanitizer --tool $tool: $(grep -m 3 -E 'ERROR|Invalid|Race' "$out/san-$tool.log" | tr '\n' ' ')"
  fi
done
