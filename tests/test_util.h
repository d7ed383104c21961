/* test_util.h - small helpers shared by the programs in tests/.
 *
 * Include it after cc.h. The including file should define _POSIX_C_SOURCE
 * (200809L) before its first #include: the helpers use clock_gettime, mmap,
 * fileno, setenv.
 *
 *   Reporting       tu_pass / tu_fail / tu_skip print the lines tests/run.sh
 *                   counts ("PASS: name", "FAIL: name: reason",
 *                   "SKIP: name: reason"); tu_exit_code() is 1 after any FAIL.
 *   Inputs          tu_hash* (splitmix64 based), deterministic across runs
 *   fp16 / bf16     tu_f32_to_f16, tu_f16_to_f32, tu_f32_to_bf16, tu_bf16_to_f32:
 *                   written here from the IEEE formats, round to nearest even,
 *                   independent of the library's own conversions
 *   Misc            tu_quick() (CC_TEST_QUICK set: sanitizer runs), tu_now(),
 *                   tu_shared_alloc() (memory shared with the cc_spawn'ed
 *                   ranks), tu_spawn() (flushes stdout first), tu_sleep_us()
 *
 * Everything is static inline so that a program using part of it still builds
 * under -Wall -Werror. */
#ifndef TEST_UTIL_H_INCLUDED
#define TEST_UTIL_H_INCLUDED

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------ reporting */

static inline int *tu__failures(void) {
  static int n;
  return &n;
}

static inline void tu__line(const char *kind, const char *name, const char *sep,
                            const char *fmt, va_list ap) {
  char msg[1024];
  msg[0] = 0;
  if (fmt) vsnprintf(msg, sizeof msg, fmt, ap);
  if (msg[0])
    printf("%s: %s%s%s\n", kind, name, sep, msg);
  else
    printf("%s: %s\n", kind, name);
  fflush(stdout);
}

/* "PASS: name (detail)"; fmt may be NULL or "" for no detail. */
static inline void tu_pass(const char *name, const char *fmt, ...) {
  va_list ap;
  char detail[1024];
  detail[0] = 0;
  if (fmt && fmt[0]) {
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
  }
  if (detail[0])
    printf("PASS: %s (%s)\n", name, detail);
  else
    printf("PASS: %s\n", name);
  fflush(stdout);
}

/* "FAIL: name: reason"; counts the failure for tu_exit_code. */
static inline void tu_fail(const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tu__line("FAIL", name, ": ", fmt, ap);
  va_end(ap);
  (*tu__failures())++;
}

/* "SKIP: name: reason". */
static inline void tu_skip(const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tu__line("SKIP", name, ": ", fmt, ap);
  va_end(ap);
}

/* PASS when ok, else FAIL with the reason. */
#define TU_REPORT(ok, name, ...) \
  ((ok) ? tu_pass((name), NULL) : tu_fail((name), __VA_ARGS__))

static inline int tu_failures(void) { return *tu__failures(); }
static inline int tu_exit_code(void) { return *tu__failures() ? 1 : 0; }

/* ------------------------------------------------------------ hashing */

static inline uint64_t tu_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static inline uint64_t tu_hash2(uint64_t a, uint64_t b) {
  return tu_mix64(tu_mix64(a) ^ (b * 0xd6e8feb86659fd93ull));
}
static inline uint64_t tu_hash3(uint64_t a, uint64_t b, uint64_t c) {
  return tu_hash2(tu_hash2(a, b), c);
}
static inline uint64_t tu_hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return tu_hash2(tu_hash3(a, b, c), d);
}
/* FNV-1a over bytes: a fingerprint of a result buffer. */
static inline uint64_t tu_hash_bytes(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i;
  for (i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
/* A double in [0, 1) from 53 bits of h. */
static inline double tu_unit(uint64_t h) {
  return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------------------ fp16 / bf16 */

static inline uint32_t tu_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float tu_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
static inline uint16_t tu_f32_to_f16(float f) {
  uint32_t x = tu_f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  uint32_t h, rem, mant, shift, halfway;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* NaN */
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: inf */
  if (ax >= 0x38800000u) {                                  /* normal half */
    h = ((((ax >> 23) - 127u + 15u) << 10) | ((ax >> 13) & 0x3ffu));
    rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  if (ax <= 0x33000000u) return (uint16_t)sign; /* <= 2^-25: rounds to zero */
  /* subnormal half: value / 2^-24, rounded */
  mant = (ax & 0x7fffffu) | 0x800000u;
  shift = 126u - (ax >> 23);
  h = mant >> shift;
  rem = mant & ((1u << shift) - 1u);
  halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

static inline float tu_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t e = ((uint32_t)h >> 10) & 0x1fu;
  uint32_t m = (uint32_t)h & 0x3ffu;
  float v;
  if (e == 0) {
    v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
    return sign ? -v : v;
  }
  if (e == 31) return tu_bits_f32(sign | 0x7f800000u | (m << 13));
  return tu_bits_f32(sign | ((e - 15u + 127u) << 23) | (m << 13));
}

/* bfloat16: the top 16 bits of a float32, rounded to nearest even. */
static inline uint16_t tu_f32_to_bf16(float f) {
  uint32_t x = tu_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
static inline float tu_bf16_to_f32(uint16_t b) { return tu_bits_f32((uint32_t)b << 16); }

/* ------------------------------------------------------------ misc */

/* Built with ThreadSanitizer? It sees the threads of one process (the
   caller's and cc's worker), not the memory ranks share: worlds of more ranks
   add time under it, not checks (tr_run_worlds and test_collectives stop at 4). */
static inline int tu_tsan(void) {
#if defined(__SANITIZE_THREAD__)
  return 1;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return 1;
#else
  return 0;
#endif
#else
  return 0;
#endif
}
#define TU_TSAN_MAX_WORLD 4

/* The SKIP line for the worlds (`worlds`: "5, 6, 8", or "5 to 8") that a
   test leaves out under ThreadSanitizer: PREFIX.tsan. */
static inline void tu_tsan_skip(const char *prefix, const char *worlds) {
  char name[96];
  snprintf(name, sizeof name, "%s.tsan", prefix);
  tu_skip(name, "worlds of %s ranks under ThreadSanitizer (it checks each process's threads, which do not depend "
          "on the world's size; make test and make sanitize run them)", worlds);
}

/* CC_TEST_QUICK set (and not "0"): the sanitizer runs; shrink the heavy loops. */
static inline int tu_quick(void) {
  const char *q = getenv("CC_TEST_QUICK");
  return q && q[0] && strcmp(q, "0") != 0;
}

/* The quick tier (make test, CC_TEST_TIER=quick): every feature area once,
   at two or three world sizes; the full suite (make check) runs the rest. */
static inline int tu_quick_tier(void) {
  const char *q = getenv("CC_TEST_TIER");
  return q && strcmp(q, "quick") == 0;
}

static inline double tu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void tu_sleep_us(long us) {
  struct timespec ts;
  ts.tv_sec = us / 1000000;
  ts.tv_nsec = (us % 1000000) * 1000;
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Zeroed memory shared between this process and the ranks cc_spawn forks
 * (a MAP_SHARED mapping of an unlinked temporary file). NULL on failure. */
static inline void *tu_shared_alloc(size_t bytes) {
  FILE *f = tmpfile();
  void *p;
  if (!f) return NULL;
  if (ftruncate(fileno(f), (off_t)bytes) != 0) {
    fclose(f);
    return NULL;
  }
  p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
  fclose(f); /* the mapping keeps the file alive */
  return p == MAP_FAILED ? NULL : p;
}
static inline void tu_shared_free(void *p, size_t bytes) {
  if (p) munmap(p, bytes);
}

/* cc_spawn, with stdout flushed first so that the forked ranks do not inherit
 * (and print again) buffered lines. */
static inline int tu_spawn(int nprocs, cc_main_fn fn, void *arg) {
  fflush(stdout);
  fflush(stderr);
  return cc_spawn(nprocs, fn, arg);
}

/* Bound every wait of the library unless the caller chose a timeout. */
static inline void tu_default_timeout(const char *seconds) {
  setenv("CC_TIMEOUT", seconds, 0);
}

#endif /* TEST_UTIL_H_INCLUDED */
