/* tests/fuzz/fuzz_util.h - what every libFuzzer target of tests/fuzz shares:
   cc.h's implementation (so that its static decoders are callable here), an
   allocator that refuses absurd sizes, FZ_CHECK, and the frame format stated
   independently of cc.h (fz_frame_parse).

   The allocator: a frame header may claim up to 2^44 bytes. cc.h allocates an
   unexpected message's buffer as its bytes arrive (from 1 MiB, doubling), so a
   claim alone reserves nothing large; should a request above FZ_MALLOC_CAP come
   anyway, CC_MALLOC refuses it (cc.h takes its out-of-memory path, and the
   -malloc_limit_mb of the run would otherwise report a false "out-of-memory").
   CC_STATIC: every function of cc.h is static, so that the compiler drops what
   a target does not call (a target builds in a second instead of several).
   Include this file before any system header (cc.h picks its feature macros). */
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

/* Little-endian integers, read here without cc.h's helpers. */
static inline uint32_t fz_le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fz_le64(const unsigned char *p) {
  return (uint64_t)fz_le32(p) | (uint64_t)fz_le32(p + 4) << 32;
}
static inline void fz_put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}
static inline void fz_put64(unsigned char *p, uint64_t v) {
  fz_put32(p, (uint32_t)v);
  fz_put32(p + 4, (uint32_t)(v >> 32));
}

/* ------------------------------------------------------------ the frame format
   A frame header is 48 bytes, little endian (docs/tcp.md, cc.h @engine):
     0 magic "ccF2" | 4 tag i32 | 8 bytes u64 | 16 seq u64 | 24 count u64 |
     32 op i32 | 36 root i32 | 40 coll u8 | 41 dtype u8 | 42..47 zero
   The tag is >= 0 (a user's message), -2 (a collective's data) or -3 (an
   abort); bytes is at most 2^44. A collective's frame carries the sender's
   call: its number seq > 0 and its identity {count, op, root, coll, dtype}
   with coll a collective (1..CC__COLL_COUNT-1) and dtype a cc_dtype. Every
   other frame has seq and the identity all zero, and an abort's payload is
   8..CC__ABORT_MAX bytes. */

#define FZ_FRAME 48

typedef struct fz_frame {
  int32_t tag;
  uint64_t bytes, seq, count;
  int32_t op, root;
  uint8_t coll, dtype;
} fz_frame;

/* Header p: 1 (with its fields in *f) when it is a frame of that format, else 0. */
static inline int fz_frame_parse(const unsigned char *p, fz_frame *f) {
  int i;
  f->tag = (int32_t)fz_le32(p + 4);
  f->bytes = fz_le64(p + 8);
  f->seq = fz_le64(p + 16);
  f->count = fz_le64(p + 24);
  f->op = (int32_t)fz_le32(p + 32);
  f->root = (int32_t)fz_le32(p + 36);
  f->coll = p[40];
  f->dtype = p[41];
  if (p[0] != 'c' || p[1] != 'c' || p[2] != 'F' || p[3] != '2') return 0;
  for (i = 42; i < FZ_FRAME; i++)
    if (p[i]) return 0;
  if (f->bytes > ((uint64_t)1 << 44)) return 0;
  if (f->tag == -2) return f->seq > 0 && f->coll >= 1 && f->coll < CC__COLL_COUNT && f->dtype < CC_DTYPE_COUNT;
  if (f->tag == -4 && f->seq)          /* farewell: no payload, the last collective's number and identity */
    return !f->bytes && f->coll >= 1 && f->coll < CC__COLL_COUNT && f->dtype < CC_DTYPE_COUNT;
  if (f->tag == -4) return !f->bytes && !f->count && !f->op && !f->root && !f->coll && !f->dtype;
  if (f->seq || f->count || f->op || f->root || f->coll || f->dtype) return 0;
  if (f->tag == -3) return f->bytes >= 8 && f->bytes <= CC__ABORT_MAX;
  return f->tag >= 0;
}

/* The header of a frame with these fields (what a sender must write). */
static inline void fz_frame_make(unsigned char *p, const fz_frame *f) {
  memset(p, 0, FZ_FRAME);
  p[0] = 'c'; p[1] = 'c'; p[2] = 'F'; p[3] = '2';
  fz_put32(p + 4, (uint32_t)f->tag);
  fz_put64(p + 8, f->bytes);
  fz_put64(p + 16, f->seq);
  fz_put64(p + 24, f->count);
  fz_put32(p + 32, (uint32_t)f->op);
  fz_put32(p + 36, (uint32_t)f->root);
  p[40] = f->coll;
  p[41] = f->dtype;
}

#endif
