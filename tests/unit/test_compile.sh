#!/usr/bin/env bash
# tests/unit/test_compile.sh [BUILD_DIR] - cc.h compiles clean everywhere it should:
#   - as C99 and C11 (gcc, clang) and as C++11 and C++17 (g++, clang++), with
#     -Wall -Wextra -Wpedantic -Werror -Wshadow and the stricter flags users
#     turn on for their own code (-Wconversion -Wsign-conversion
#     -Wdouble-promotion; -Wstrict-prototypes for C), -O2
#     (the second standard, the include orders and CC_NO_* at -O0: what they
#     ask is the front end's);
#   - in a TU that implements it (#define CC_IMPLEMENTATION, then two
#     #includes), linked with a second TU that only includes it (twice), and
#     run; also implemented in C++ and used from C and back; every link with
#     -pthread and nothing else (the implementation needs libc and pthreads
#     only), and nm finds no symbol of libm's among what each implementation
#     object needs;
#   - in a TU that includes it for the declarations first and implements it
#     after; and after <stdio.h> with -D_GNU_SOURCE (as the header asks);
#   - a TU that defines CC_IMPLEMENTATION, built with -DCC_NO_IMPLEMENTATION
#     and linked with an implementation TU;
#   - at -O0, -O1, -Os and -O3 as well (gcc: clang's warnings do not depend on
#     the level; compiled only);
#   - with -DCC_NO_TCP and with -DCC_NO_SHM (gcc and clang; compiled only);
#     the CC_NO_TCP object holds no cipher (nm: @crypto's ciphers, AEADs and
#     HKDF are compiled out; SHA-256 and HMAC stay, the segments' names use them);
#   - tests/unit/test_crypto.c with -DCC_CRYPTO_PORTABLE -DCC_CRYPTO_NO_INT128, with
#     -DCC_CRYPTO_NO_INT128 (clang) and as C++ (g++): built and run.
# One PASS or FAIL line per combination; a SKIP line for an absent compiler.
# CC_TEST_QUICK set (the sanitizer runs): skipped, the flags change nothing here.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
mkdir -p "$build" && build=$(cd "$build" && pwd)
out=$build/compile-test

if [ -n "${CC_TEST_QUICK:-}" ]; then
  echo "SKIP: compile: CC_TEST_QUICK is set (the plain test run compiles every combination)"
  exit 0
fi
rm -rf "$out"
mkdir -p "$out"

warn=(-Wall -Wextra -Wpedantic -Werror -Wshadow -Wconversion -Wsign-conversion -Wdouble-promotion -O2)
libs=(-pthread)   # the promise (README, docs/api.md): libc and pthreads, no libm

# nolibm.sh COMPILER OBJECT: no undefined symbol of OBJECT is one that only
# libm defines (libm.so.6's dynamic symbols less libc.so.6's); names them if any.
cat >"$out/nolibm.sh" <<'EOF'
set -u
comp=$1 obj=$2
libm=$($comp -print-file-name=libm.so.6) libc=$($comp -print-file-name=libc.so.6)
[ -f "$libm" ] && [ -f "$libc" ] || { echo "cannot find libm.so.6 and libc.so.6 ($libm, $libc)"; exit 1; }
syms() { nm -D --defined-only "$1" | awk '{ sub(/@.*/, "", $3); print $3 }' | sort -u; }
only_m=$(comm -23 <(syms "$libm") <(syms "$libc"))
[ "$(echo "$only_m" | wc -l)" -gt 100 ] || { echo "libm.so.6 defines too few symbols of its own: is nm working?"; exit 1; }
used=$(nm -u "$obj" | awk '{ sub(/@.*/, "", $2); print $2 }' | sort -u)
bad=$(comm -12 <(echo "$only_m") <(echo "$used"))
[ -z "$bad" ] || { echo "$obj needs libm's $(echo $bad)"; exit 1; }
EOF

# The implementation TU, as the header's usage says: CC_IMPLEMENTATION, then
# cc.h, then cc.h again (a second include, and a second implementation request,
# must both be harmless).
cat >"$out/impl.c" <<'EOF'
#define CC_IMPLEMENTATION
#include "cc.h"
#include "cc.h"
EOF
# The same TU the other way round: cc.h included for its declarations (as a
# project header that includes it would), then CC_IMPLEMENTATION and cc.h.
cat >"$out/impl-late.c" <<'EOF'
#include "cc.h"
#define CC_IMPLEMENTATION
#include "cc.h"
EOF
# A system header first, then the implementation; the header asks for
# -D_GNU_SOURCE then, which the command line gives.
cat >"$out/impl-after-stdio.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#define CC_IMPLEMENTATION
#include "cc.h"
EOF
# The user TU: only the declarations, twice; calls a few functions so that the
# link needs the implementation, and checks what they return.
cat >"$out/use.c" <<'EOF'
#include "cc.h"
#include "cc.h"
#include <string.h>

static int check_api(void) {
  cc_config cfg;
  const char *s = cc_strerror(CC_ERR_TIMEOUT);
  cc_config_init(&cfg);
  if (s == NULL || strncmp(s, "CC_ERR_TIMEOUT", 14) != 0) return 1;
  if (cc_dtype_size(CC_FLOAT64) != 8 || cc_dtype_size(CC_COMPLEX128) != 16) return 2;
  if (cc_dtype_size(CC_BFLOAT16) != 2 || cc_dtype_size(CC_INT8) != 1) return 3;
  if (cfg.rank != -1 || cfg.world_size != -1 || cfg.timeout_ms != 0) return 4;
  if (cc_comm_last_error(NULL) == NULL) return 5;
  return 0;
}

int main(void) { return check_api(); }
EOF
for f in impl impl-late impl-after-stdio use; do cp "$out/$f.c" "$out/$f.cpp"; done

have() { command -v "$1" >/dev/null 2>&1; }
lang_flags() { # COMPILER STD -> the flags for it
  case $1 in
    *++) echo "-std=$2 ${warn[*]}" ;;
    *) echo "-std=$2 ${warn[*]} -Wstrict-prototypes" ;;
  esac
}
ext() { case $1 in *++) echo cpp ;; *) echo c ;; esac; }

# Each combination is a step: a description and a shell command line, run in
# $out; its line (and on failure the compiler's output) goes to $out/NN.result.
# A job is a list of steps run in order (a step whose predecessor failed is not
# tried); jobs run in parallel, one per CPU; the lines are printed in order at
# the end.
jobs=0 maxjobs=$(nproc 2>/dev/null || echo 2)
n=0
job() { # DESCRIPTION COMMAND [DESCRIPTION COMMAND]...
  local first=$n
  n=$((n + $# / 2))
  (
    cd "$out" || exit 1
    local id=$first ok=1 res
    while [ $# -ge 2 ]; do
      res=$(printf '%02d' "$id").result
      if [ $ok = 0 ]; then
        echo "FAIL: compile: $1 (not tried: the step before failed)" >"$res"
      elif timeout 300 bash -c "$2" >"$id.log" 2>&1; then
        echo "PASS: compile: $1" >"$res"
      else
        { echo "FAIL: compile: $1"; echo "    \$ $2"; head -n 30 "$id.log" | sed 's/^/    /'; } >"$res"
        ok=0
      fi
      id=$((id + 1))
      shift 2
    done
  ) &
  jobs=$((jobs + 1))
  if [ "$jobs" -ge "$maxjobs" ]; then
    wait -n
    jobs=$((jobs - 1))
  fi
}

skips=()
for comp in gcc clang g++ clang++; do
  if ! have "$comp"; then
    skips+=("SKIP: compile: $comp is not installed")
    continue
  fi
  case $comp in *++) stds="c++11 c++17" ;; *) stds="c99 c11" ;; esac
  e=$(ext "$comp")
  for std in $stds; do
    f=$(lang_flags "$comp" "$std")
    # -O2 with the first standard; the second is a question of the front
    # end's warnings, asked at -O0 (a build of the implementation at -O2
    # costs about 9 s of CPU here, at -O0 about 2)
    lvl=-O2
    [ "$std" = "${stds%% *}" ] || lvl=-O0
    f=${f/-O2/$lvl}
    tag="$comp-$std"
    job "$comp -std=$std: implementation TU (#define CC_IMPLEMENTATION, cc.h included twice)" \
      "$comp $f -I$root -c impl.$e -o impl-$tag.o" \
      "$comp -std=$std $lvl: the implementation object needs no symbol of libm's (nm)" \
      "bash nolibm.sh $comp impl-$tag.o" \
      "$comp -std=$std $lvl: declarations-only TU linked with the implementation TU (-pthread, no -lm), runs" \
      "$comp $f -I$root -c use.$e -o use-$tag.o && $comp -o use-$tag impl-$tag.o use-$tag.o ${libs[*]} && ./use-$tag"
  done
  std=${stds%% *}
  f=$(lang_flags "$comp" "$std")
  f0=${f/-O2/-O0}   # what these ask is the preprocessor's and the front end's
  job "$comp -std=$std -O0: cc.h included, then CC_IMPLEMENTATION and cc.h again" \
    "$comp $f0 -I$root -c impl-late.$e -o impl-late-$comp.o"
  job "$comp -std=$std -O0 -D_GNU_SOURCE: the implementation after <stdio.h>" \
    "$comp $f0 -D_GNU_SOURCE -I$root -c impl-after-stdio.$e -o impl-after-stdio-$comp.o"
  # The two parts a build may leave out, with the C compilers only (the C++
  # compilers build the whole implementation above; each build of it costs
  # about 9 s of CPU here).
  case $comp in *++) continue ;; esac
  # gcc's flow-dependent warnings (-Wmaybe-uninitialized and the like) come
  # and go with the optimisation level: every level a user may pick (clang's
  # warnings do not depend on the level).
  if [ "$comp" = gcc ]; then
    for lvl in -O0 -O1 -Os -O3; do
      job "$comp -std=$std $lvl: implementation TU" \
        "$comp ${f/-O2/$lvl} -I$root -c impl.$e -o impl-$comp$lvl.o"
    done
  fi
  job "$comp -std=$std -O0 -DCC_NO_TCP: implementation TU" \
    "$comp $f0 -DCC_NO_TCP -I$root -c impl.$e -o impl-$comp-CC_NO_TCP.o" \
    "$comp -std=$std -O0 -DCC_NO_TCP: no cipher in the object (nm: no ChaCha20, Poly1305, AES, GHASH, HKDF or AEAD symbol; SHA-256 and HMAC stay, for the segments' names)" \
    "nm impl-$comp-CC_NO_TCP.o | awk '{print \$NF}' >nm-$comp-notcp.txt && grep -q 'cc__hmac_sha256' nm-$comp-notcp.txt && ! grep -iE 'chacha|poly1305|aes|gcm|ghash|clmul|hkdf|aead|crypto_cpu' nm-$comp-notcp.txt"
  job "$comp -std=$std -O0 -DCC_NO_SHM: implementation TU" \
    "$comp $f0 -DCC_NO_SHM -I$root -c impl.$e -o impl-$comp-CC_NO_SHM.o"
done
# The launcher, with the same flags (gcc and clang), linked with -pthread alone.
for comp in gcc clang; do
  have "$comp" || continue
  job "$comp -std=c99: tools/ccrun.c with the strict flags, linked without libm, runs" \
    "$comp $(lang_flags "$comp" c99) -o ccrun-$comp $root/tools/ccrun.c -pthread && ./ccrun-$comp --version"
done
# @crypto's portable builds: no x86 intrinsics (CC_CRYPTO_PORTABLE: ChaCha20-
# Poly1305 in plain C, AES-256-GCM unavailable) and no unsigned __int128
# (CC_CRYPTO_NO_INT128: Poly1305's portable 64x64 multiply), with its vector
# tests run on each; and the tests as C++.
if have gcc; then
  fc=$(lang_flags gcc c99)
  job "gcc -DCC_CRYPTO_PORTABLE -DCC_CRYPTO_NO_INT128: tests/unit/test_crypto.c (RFC 8439 vectors, portable C) builds and passes" \
    "gcc $fc -DCC_CRYPTO_PORTABLE -DCC_CRYPTO_NO_INT128 -I$root -o crypto-portable $root/tests/unit/test_crypto.c ${libs[*]} && ./crypto-portable >crypto-portable.out && ! grep -q '^FAIL' crypto-portable.out"
fi
if have clang; then
  job "clang -DCC_CRYPTO_NO_INT128: tests/unit/test_crypto.c builds and passes" \
    "clang $(lang_flags clang c99) -DCC_CRYPTO_NO_INT128 -I$root -o crypto-noint128 $root/tests/unit/test_crypto.c ${libs[*]} && ./crypto-noint128 >crypto-noint128.out && ! grep -q '^FAIL' crypto-noint128.out"
fi
if have g++; then
  job "g++ -std=c++11: tests/unit/test_crypto.c as C++ builds and passes" \
    "g++ -x c++ $(lang_flags g++ c++11) -I$root -o crypto-cxx $root/tests/unit/test_crypto.c ${libs[*]} && ./crypto-cxx >crypto-cxx.out && ! grep -q '^FAIL' crypto-cxx.out"
fi
# A program written to stand alone (it defines CC_IMPLEMENTATION) built with
# -DCC_NO_IMPLEMENTATION holds only the declarations: linked with an
# implementation TU, no symbol is defined twice (the Makefile builds the
# examples so).
if have gcc; then
  { echo '#define CC_IMPLEMENTATION'; cat "$out/use.c"; } >"$out/use-alone.c"
  f0=$(lang_flags gcc c99)
  f0=${f0/-O2/-O0}
  job "gcc -DCC_NO_IMPLEMENTATION: a file that defines CC_IMPLEMENTATION links with the implementation TU, runs" \
    "gcc $f0 -I$root -c impl.c -o noimpl-impl.o && gcc $f0 -DCC_NO_IMPLEMENTATION -I$root -c use-alone.c -o noimpl-use.o && gcc -o noimpl noimpl-impl.o noimpl-use.o ${libs[*]} && ./noimpl"
fi
# Implemented in one language, used from the other: extern "C" must line up.
if have gcc && have g++; then
  fc=$(lang_flags gcc c99) fx=$(lang_flags g++ c++11)
  job "implementation built by g++, used from C (gcc), linked, runs" \
    "g++ $fx -I$root -c impl.cpp -o mix1-impl.o && gcc $fc -I$root -c use.c -o mix1-use.o && g++ -o mix1 mix1-impl.o mix1-use.o ${libs[*]} && ./mix1"
  job "implementation built by gcc, used from C++ (g++), linked, runs" \
    "gcc $fc -I$root -c impl.c -o mix2-impl.o && g++ $fx -I$root -c use.cpp -o mix2-use.o && g++ -o mix2 mix2-impl.o mix2-use.o ${libs[*]} && ./mix2"
fi
wait

for s in "${skips[@]}"; do echo "$s"; done
status=0
for r in "$out"/*.result; do
  [ -e "$r" ] || continue
  cat "$r"
  grep -q '^FAIL' "$r" && status=1
done
exit $status
