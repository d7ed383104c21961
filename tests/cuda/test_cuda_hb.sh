#!/usr/bin/env bash
# tests/cuda/test_cuda_hb.sh [BUILD_DIR] - the logic of the CUDA emulation's
# happens-before checker (tests/cuda/cuda_emu_hb.h: vector clocks, the byte-exact
# shadow of an allocation) against hand-computed cases
# (tests/cuda/test_cuda_hb_unit.cpp), built with g++ and clang++ (-Wall -Wextra
# -Wpedantic -Werror, and the sanitizers CFLAGS names: make sanitize, make
# tsan). Needs no CUDA. The checker itself runs in tests/cuda/test_cuda.sh: the
# emulated GPU suite under it, and tests/cuda/test_cuda_hb.cu's cases (defects
# brought back on purpose must be found; right programs must not be).
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
mkdir -p "$build/cuda-hb" && out=$(cd "$build/cuda-hb" && pwd)
san=
for f in ${CFLAGS:-}; do
  case $f in -fsanitize=* | -fno-sanitize-recover* | -fno-omit-frame-pointer) san="$san $f" ;; esac
done
for comp in g++ clang++; do
  if ! command -v "$comp" >/dev/null 2>&1; then
    echo "SKIP: cuda hb unit ($comp): not installed"
    continue
  fi
  # shellcheck disable=SC2086
  if "$comp" -std=c++11 -O1 -g $san -Wall -Wextra -Wpedantic -Werror -I"$root/tests" -I"$root/tests/cuda" \
      -o "$out/unit-$comp" "$root/tests/cuda/test_cuda_hb_unit.cpp" >"$out/unit-$comp.log" 2>&1; then
    "$out/unit-$comp" "$comp" || echo "FAIL: cuda hb unit ($comp): exited with status $?"
  else
    echo "FAIL: cuda hb unit ($comp): does not build: $(head -n 5 "$out/unit-$comp.log" | tr '\n' ' ')"
  fi
done
