/* tests/fuzz/fuzz_util.h - what every libFuzzer target of tests/fuzz shares:
   cc.h's implementation (so that its static decoders are callable here), an
   allocator that refuses absurd sizes, and FZ_CHECK.

   The allocator: cc.h mallocs the size that a frame header claims for an
   unexpected message (up to 2^44 bytes). Under the fuzzer such a request would
   trip -malloc_limit_mb (a false "out-of-memory" report), so CC_MALLOC refuses
   anything above FZ_MALLOC_CAP and cc.h takes its out-of-memory path instead,
   which is worth fuzzing too. CC_STATIC: every function of cc.h is static, so
   that the compiler drops what a target does not call (a target builds in a
   second instead of several). Include this file before any system header (cc.h
   picks its feature macros). */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#define FZ_MALLOC_CAP ((__SIZE_TYPE__)64 << 20)
static void *fz_malloc(__SIZE_TYPE__ n);
#define CC_MALLOC(n) fz_malloc(n)
#define CC_FREE(p) free(p)
#define CC_STATIC                      /* only what a target calls is compiled */
#define CC_IMPLEMENTATION
#include "cc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long fz_refused;       /* requests above the cap, refused */

static void *fz_malloc(size_t n) {
  if (n > FZ_MALLOC_CAP) {
    fz_refused++;
    return NULL;
  }
  return malloc(n);
}

/* An invariant of the code under test: a failure is a crash the fuzzer reports
   (with the input that caused it). */
#define FZ_CHECK(cond)                                                              \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "fuzz: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                      \
    }                                                                               \
  } while (0)

/* 1 when s has a NUL within its first n bytes. */
static inline int fz_terminated(const char *s, size_t n) {
  return memchr(s, 0, n) != NULL;
}

#endif
