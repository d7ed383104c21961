/* test_ref.h - inputs and plain reference reductions for the functional tests
 * (test_collectives, test_vcoll, test_ops, test_determinism).
 *
 * Include after cc.h and test_util.h.
 *
 *   tr_gen          one element of dtype t from a hash: random-looking, finite,
 *                   never -0.0; TR_GEN_NEAR_ONE keeps float magnitudes in
 *                   [0.5, 2) (products of 8 stay far from overflow)
 *   tr_acc_*        the documented reduction of one element, written plainly:
 *                   a left fold in rank order, float16/bfloat16 accumulated in
 *                   float32 and rounded once (nearest even), AVG = the sum
 *                   divided by the number of ranks once, MIN/MAX as fmin/fmax,
 *                   integer SUM/PROD wrapping
 *   tr_buf_*        heap buffers with guard bands around them
 *   tr_compare      bitwise comparison that describes the first difference
 *   tr_layout       the v collectives' displacements: packed, gaps, reversed */
#ifndef TEST_REF_H_INCLUDED
#define TEST_REF_H_INCLUDED

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tr_dtype_names[CC_DTYPE_COUNT] = {
  "int8", "uint8", "int32", "uint32", "int64", "uint64",
  "float16", "bfloat16", "float32", "float64", "complex64", "complex128"};
static const char *const tr_op_names[CC_OP_BUILTIN_COUNT] = {
  "sum", "prod", "min", "max", "avg", "band", "bor", "bxor"};

static inline const char *tr_dtype_name(cc_dtype t) {
  return (int)t >= 0 && t < CC_DTYPE_COUNT ? tr_dtype_names[t] : "?";
}
static inline const char *tr_op_name(cc_op op) {
  return op >= 0 && op < CC_OP_BUILTIN_COUNT ? tr_op_names[op] : "user";
}

/* Our own element sizes (not cc_dtype_size: that is under test too). */
static inline size_t tr_size(cc_dtype t) {
  switch (t) {
  case CC_INT8: case CC_UINT8: return 1;
  case CC_FLOAT16: case CC_BFLOAT16: return 2;
  case CC_INT32: case CC_UINT32: case CC_FLOAT32: return 4;
  case CC_INT64: case CC_UINT64: case CC_FLOAT64: case CC_COMPLEX64: return 8;
  case CC_COMPLEX128: return 16;
  default: return 0;
  }
}
static inline int tr_is_int(cc_dtype t) { return t <= CC_UINT64; }
static inline int tr_is_complex(cc_dtype t) {
  return t == CC_COMPLEX64 || t == CC_COMPLEX128;
}
static inline int tr_is_signed(cc_dtype t) {
  return t == CC_INT8 || t == CC_INT32 || t == CC_INT64;
}

/* The dtype/op rules of api.md. */
static inline int tr_valid_pair(cc_dtype t, cc_op op) {
  switch (op) {
  case CC_SUM: case CC_PROD: return 1;
  case CC_MIN: case CC_MAX: return !tr_is_complex(t);
  case CC_AVG: return !tr_is_int(t);
  case CC_BAND: case CC_BOR: case CC_BXOR: return tr_is_int(t);
  default: return 0;
  }
}

/* ------------------------------------------------------------ inputs */

enum { TR_GEN_ANY = 0, TR_GEN_NEAR_ONE = 1 };

/* A finite nonzero double from h: +-[2^-4, 2^4) with a random mantissa and
 * exponent, or +-[0.5, 2). */
static inline double tr_gen_real(uint64_t h, int kind) {
  double u = tu_unit(h);                     /* [0,1) from bits 11..63 */
  double sign = (h & 1u) ? -1.0 : 1.0;
  double v;
  if (kind == TR_GEN_NEAR_ONE)
    v = 0.5 + 1.5 * u;
  else {
    int e = (int)((h >> 1) & 7u);            /* [1,2) * 2^-4 .. 2^3 */
    v = (1.0 + u) * (double)(1 << e) * 0.0625;
  }
  return sign * v;
}

static inline void tr_store_real(void *dst, cc_dtype t, double v) {
  switch (t) {
  case CC_FLOAT16: { uint16_t x = tu_f32_to_f16((float)v); memcpy(dst, &x, 2); break; }
  case CC_BFLOAT16: { uint16_t x = tu_f32_to_bf16((float)v); memcpy(dst, &x, 2); break; }
  case CC_FLOAT32: { float x = (float)v; memcpy(dst, &x, 4); break; }
  case CC_FLOAT64: memcpy(dst, &v, 8); break;
  default: break;
  }
}

/* One element of dtype t, determined by h. */
static inline void tr_gen(void *dst, cc_dtype t, int kind, uint64_t h) {
  switch (t) {
  case CC_INT8: case CC_UINT8: { uint8_t x = (uint8_t)(h >> 24); memcpy(dst, &x, 1); break; }
  case CC_INT32: case CC_UINT32: { uint32_t x = (uint32_t)(h >> 16); memcpy(dst, &x, 4); break; }
  case CC_INT64: case CC_UINT64: memcpy(dst, &h, 8); break;
  case CC_FLOAT16: case CC_BFLOAT16: case CC_FLOAT32: case CC_FLOAT64:
    tr_store_real(dst, t, tr_gen_real(h, kind));
    break;
  case CC_COMPLEX64: {
    float z[2];
    z[0] = (float)tr_gen_real(h, kind);
    z[1] = (float)tr_gen_real(tu_mix64(h), kind);
    memcpy(dst, z, 8);
    break;
  }
  case CC_COMPLEX128: {
    double z[2];
    z[0] = tr_gen_real(h, kind);
    z[1] = tr_gen_real(tu_mix64(h), kind);
    memcpy(dst, z, 16);
    break;
  }
  default: break;
  }
}

/* Fill n elements: element i is tr_gen(hash(seed, rank, first + i)). */
static inline void tr_fill(void *buf, cc_dtype t, int kind, uint64_t seed, int rank,
                           size_t first, size_t n) {
  size_t es = tr_size(t), i;
  uint64_t base = tu_hash2(seed, (uint64_t)rank + 1);
  unsigned char *p = (unsigned char *)buf;
  for (i = 0; i < n; i++) tr_gen(p + i * es, t, kind, tu_hash2(base, first + i));
}
static inline void tr_gen_at(void *dst, cc_dtype t, int kind, uint64_t seed, int rank,
                             size_t index) {
  tr_gen(dst, t, kind, tu_hash2(tu_hash2(seed, (uint64_t)rank + 1), index));
}

/* ------------------------------------------------------------ reference */

typedef struct tr_acc {
  uint64_t u;      /* integers: value, sign-extended for signed types  */
  double d, di;    /* float64, complex128                              */
  float f, fi;     /* float16, bfloat16 (in float32), float32, complex64 */
} tr_acc;

static inline void tr_acc_load(tr_acc *a, cc_dtype t, const void *e) {
  memset(a, 0, sizeof *a);
  switch (t) {
  case CC_INT8: { int8_t x; memcpy(&x, e, 1); a->u = (uint64_t)(int64_t)x; break; }
  case CC_UINT8: { uint8_t x; memcpy(&x, e, 1); a->u = x; break; }
  case CC_INT32: { int32_t x; memcpy(&x, e, 4); a->u = (uint64_t)(int64_t)x; break; }
  case CC_UINT32: { uint32_t x; memcpy(&x, e, 4); a->u = x; break; }
  case CC_INT64: case CC_UINT64: memcpy(&a->u, e, 8); break;
  case CC_FLOAT16: { uint16_t x; memcpy(&x, e, 2); a->f = tu_f16_to_f32(x); break; }
  case CC_BFLOAT16: { uint16_t x; memcpy(&x, e, 2); a->f = tu_bf16_to_f32(x); break; }
  case CC_FLOAT32: memcpy(&a->f, e, 4); break;
  case CC_FLOAT64: memcpy(&a->d, e, 8); break;
  case CC_COMPLEX64: { float z[2]; memcpy(z, e, 8); a->f = z[0]; a->fi = z[1]; break; }
  case CC_COMPLEX128: { double z[2]; memcpy(z, e, 16); a->d = z[0]; a->di = z[1]; break; }
  default: break;
  }
}

static inline float tr_fminf(float a, float b) { return b < a ? b : a; }
static inline float tr_fmaxf(float a, float b) { return b > a ? b : a; }
static inline double tr_fmin(double a, double b) { return b < a ? b : a; }
static inline double tr_fmax(double a, double b) { return b > a ? b : a; }

/* a = a op b (b already loaded); op is a builtin op (AVG adds). */
static inline void tr_acc_op(tr_acc *a, const tr_acc *b, cc_dtype t, cc_op op) {
  if (tr_is_int(t)) {
    int sgn = tr_is_signed(t);
    /* compare in the dtype's own width: values are sign- or zero-extended */
    switch (op) {
    case CC_SUM: a->u = a->u + b->u; break;
    case CC_PROD: a->u = a->u * b->u; break;
    case CC_MIN:
      if (sgn ? (int64_t)b->u < (int64_t)a->u : b->u < a->u) a->u = b->u;
      break;
    case CC_MAX:
      if (sgn ? (int64_t)b->u > (int64_t)a->u : b->u > a->u) a->u = b->u;
      break;
    case CC_BAND: a->u &= b->u; break;
    case CC_BOR: a->u |= b->u; break;
    case CC_BXOR: a->u ^= b->u; break;
    default: break;
    }
    /* keep the value sign- or zero-extended from the dtype's width */
    switch (t) {
    case CC_INT8: a->u = (uint64_t)(int64_t)(int8_t)(uint8_t)a->u; break;
    case CC_UINT8: a->u = (uint8_t)a->u; break;
    case CC_INT32: a->u = (uint64_t)(int64_t)(int32_t)(uint32_t)a->u; break;
    case CC_UINT32: a->u = (uint32_t)a->u; break;
    default: break;
    }
    return;
  }
  switch (t) {
  case CC_FLOAT16: case CC_BFLOAT16: case CC_FLOAT32:
    switch (op) {
    case CC_SUM: case CC_AVG: a->f = a->f + b->f; break;
    case CC_PROD: a->f = a->f * b->f; break;
    case CC_MIN: a->f = tr_fminf(a->f, b->f); break;
    case CC_MAX: a->f = tr_fmaxf(a->f, b->f); break;
    default: break;
    }
    break;
  case CC_FLOAT64:
    switch (op) {
    case CC_SUM: case CC_AVG: a->d = a->d + b->d; break;
    case CC_PROD: a->d = a->d * b->d; break;
    case CC_MIN: a->d = tr_fmin(a->d, b->d); break;
    case CC_MAX: a->d = tr_fmax(a->d, b->d); break;
    default: break;
    }
    break;
  case CC_COMPLEX64:
    if (op == CC_PROD) {
      float re = a->f * b->f - a->fi * b->fi;
      float im = a->f * b->fi + a->fi * b->f;
      a->f = re;
      a->fi = im;
    } else {
      a->f = a->f + b->f;
      a->fi = a->fi + b->fi;
    }
    break;
  case CC_COMPLEX128:
    if (op == CC_PROD) {
      double re = a->d * b->d - a->di * b->di;
      double im = a->d * b->di + a->di * b->d;
      a->d = re;
      a->di = im;
    } else {
      a->d = a->d + b->d;
      a->di = a->di + b->di;
    }
    break;
  default: break;
  }
}

/* Write the finished reduction of `nranks` inputs to e (AVG divides here). */
static inline void tr_acc_store(const tr_acc *a0, cc_dtype t, cc_op op, int nranks, void *e) {
  tr_acc a = *a0;
  if (op == CC_AVG) {
    a.f = a.f / (float)nranks;
    a.fi = a.fi / (float)nranks;
    a.d = a.d / (double)nranks;
    a.di = a.di / (double)nranks;
  }
  switch (t) {
  case CC_INT8: case CC_UINT8: { uint8_t x = (uint8_t)a.u; memcpy(e, &x, 1); break; }
  case CC_INT32: case CC_UINT32: { uint32_t x = (uint32_t)a.u; memcpy(e, &x, 4); break; }
  case CC_INT64: case CC_UINT64: memcpy(e, &a.u, 8); break;
  case CC_FLOAT16: { uint16_t x = tu_f32_to_f16(a.f); memcpy(e, &x, 2); break; }
  case CC_BFLOAT16: { uint16_t x = tu_f32_to_bf16(a.f); memcpy(e, &x, 2); break; }
  case CC_FLOAT32: memcpy(e, &a.f, 4); break;
  case CC_FLOAT64: memcpy(e, &a.d, 8); break;
  case CC_COMPLEX64: { float z[2]; z[0] = a.f; z[1] = a.fi; memcpy(e, z, 8); break; }
  case CC_COMPLEX128: { double z[2]; z[0] = a.d; z[1] = a.di; memcpy(e, z, 16); break; }
  default: break;
  }
}

/* Reference of a builtin reduction over nranks ranks' generated inputs:
 * out[i] = reduce over r in 0..nranks-1 of gen(seed, r, first + i). */
static inline void tr_reference(void *out, cc_dtype t, cc_op op, int kind, uint64_t seed,
                                int nranks, size_t first, size_t n) {
  size_t es = tr_size(t), i;
  unsigned char *o = (unsigned char *)out;
  unsigned char e[16];
  uint64_t bases[64];
  tr_acc a, b;
  int r;
  for (r = 0; r < nranks && r < 64; r++) bases[r] = tu_hash2(seed, (uint64_t)r + 1);
  for (i = 0; i < n; i++) {
    tr_gen(e, t, kind, tu_hash2(bases[0], first + i));
    tr_acc_load(&a, t, e);
    for (r = 1; r < nranks; r++) {
      tr_gen(e, t, kind, tu_hash2(bases[r], first + i));
      tr_acc_load(&b, t, e);
      tr_acc_op(&a, &b, t, op);
    }
    tr_acc_store(&a, t, op, nranks, o + i * es);
  }
}

/* Reference of premul_sum: out = sum over r in rank order of scal[r] * x_r,
 * x_r = gen(seed, r, index), scal[r] a value of dtype t (int32, float32,
 * float64 or complex64 here; float16 and bfloat16 in float32, rounded once). */
static inline void tr_premul_reference(void *out, cc_dtype t, int kind, uint64_t seed, int nranks,
                                       size_t index, const unsigned char (*scal)[16]) {
  unsigned char x[16];
  tr_acc acc, term, sc;
  int r;
  memset(&acc, 0, sizeof acc);
  for (r = 0; r < nranks; r++) {
    tr_gen_at(x, t, kind, seed, r, index);
    tr_acc_load(&term, t, x);
    tr_acc_load(&sc, t, scal[r]);
    /* term = scalar * x, in the accumulation precision */
    if (t == CC_COMPLEX64)
      tr_acc_op(&term, &sc, t, CC_PROD);
    else if (t == CC_INT32)
      term.u = (uint64_t)(int64_t)(int32_t)(uint32_t)(term.u * sc.u);
    else if (t == CC_FLOAT64)
      term.d = sc.d * term.d;
    else
      term.f = sc.f * term.f;
    if (r == 0)
      acc = term;
    else
      tr_acc_op(&acc, &term, t, CC_SUM);
  }
  tr_acc_store(&acc, t, CC_SUM, nranks, out);
}

/* A large odd count: more than 1 MiB per rank for every element size. */
static inline size_t tr_large_count(cc_dtype t) {
  switch (tr_size(t)) {
  case 1: return 1200007;
  case 2: return 600007;
  case 4: return 300007;
  case 8: return 150007;
  default: return 75007;
  }
}

/* One big block of the v collectives' tests: about 1.2 MB, an odd count. */
static inline size_t tr_big_block(cc_dtype t) { return (1200000 / tr_size(t)) | 1; }

/* The v collectives' buffer layouts: blocks packed in rank order, with gaps
 * between them, or in reverse rank order with gaps. */
enum { TR_L_PACKED, TR_L_GAPS, TR_L_REVERSED, TR_L_COUNT };
static inline const char *tr_layout_name(int l) {
  return l == TR_L_PACKED ? "packed" : l == TR_L_GAPS ? "gaps" : "reversed+gaps";
}

/* Displacements for blocks of counts[0..n) in layout l, the gaps drawn from
 * (seed, salt). Returns the buffer length in elements, which ends with a short
 * gap too (unless packed). */
static inline size_t tr_layout(int l, uint64_t seed, int n, const size_t *counts, size_t *displs,
                               uint64_t salt) {
  size_t pos = 0;
  int i, r;
  for (i = 0; i < n; i++) {
    r = l == TR_L_REVERSED ? n - 1 - i : i;
    if (l != TR_L_PACKED) pos += (size_t)(tu_hash3(seed, salt, (uint64_t)r) % 40);
    displs[r] = pos;
    pos += counts[r];
  }
  if (l != TR_L_PACKED) pos += 3;
  return pos;
}

/* ------------------------------------------------------------ buffers */

#define TR_GUARD 64
#define TR_SENTINEL 0xA5

/* n bytes with TR_GUARD sentinel bytes on each side; contents set to TR_SENTINEL. */
static inline void *tr_buf_alloc(size_t n) {
  unsigned char *p = (unsigned char *)malloc(n + 2 * TR_GUARD);
  if (!p) return NULL;
  memset(p, TR_SENTINEL, n + 2 * TR_GUARD);
  return p + TR_GUARD;
}
static inline void tr_buf_free(void *p) {
  if (p) free((unsigned char *)p - TR_GUARD);
}
/* 1 when both guard bands of a buffer of n bytes are intact. */
static inline int tr_buf_guards_ok(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  int i;
  if (!p) return 1;
  for (i = 1; i <= TR_GUARD; i++)
    if (b[-i] != TR_SENTINEL || b[n + (size_t)i - 1] != TR_SENTINEL) return 0;
  return 1;
}
/* first index in [0, n) whose byte is not the sentinel, or n */
static inline size_t tr_first_not_sentinel(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < n; i++)
    if (b[i] != TR_SENTINEL) return i;
  return n;
}

static inline void tr_hex(char *out, size_t cap, const void *e, size_t es) {
  const unsigned char *b = (const unsigned char *)e;
  size_t i, k = 0;
  /* most significant byte first (little-endian host) */
  for (i = es; i-- > 0 && k + 3 < cap;) k += (size_t)snprintf(out + k, cap - k, "%02x", b[i]);
  if (k < cap) out[k] = 0;
}

static inline void tr_describe_elem(char *out, size_t cap, cc_dtype t, const void *e) {
  char hx[40];
  tr_acc a;
  tr_hex(hx, sizeof hx, e, tr_size(t));
  tr_acc_load(&a, t, e);
  if (tr_is_int(t))
    snprintf(out, cap, "0x%s (%lld)", hx, (long long)a.u);
  else if (t == CC_FLOAT64)
    snprintf(out, cap, "0x%s (%.17g)", hx, a.d);
  else if (t == CC_COMPLEX128)
    snprintf(out, cap, "0x%s (%.17g, %.17g)", hx, a.d, a.di);
  else if (t == CC_COMPLEX64)
    snprintf(out, cap, "0x%s (%.9g, %.9g)", hx, (double)a.f, (double)a.fi);
  else
    snprintf(out, cap, "0x%s (%.9g)", hx, (double)a.f);
}

/* Bitwise comparison of n elements. Returns the number of differing
 * elements; on a difference writes a description of the first into msg. */
static inline size_t tr_compare(const void *got, const void *want, size_t n, cc_dtype t,
                                char *msg, size_t cap) {
  size_t es = tr_size(t), i, bad = 0, first = 0;
  const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
  if (n == 0 || memcmp(got, want, n * es) == 0) return 0;
  for (i = 0; i < n; i++)
    if (memcmp(g + i * es, w + i * es, es) != 0) {
      if (!bad) first = i;
      bad++;
    }
  if (msg && cap) {
    char a[96], b[96];
    tr_describe_elem(a, sizeof a, t, g + first * es);
    tr_describe_elem(b, sizeof b, t, w + first * es);
    snprintf(msg, cap, "%zu of %zu elements differ; first at [%zu]: got %s, want %s", bad, n,
             first, a, b);
  }
  return bad;
}


/* ------------------------------------------------------------ result table
 *
 * The ranks of a cc_spawn'ed world record their checks per group (e.g. one
 * collective) in a table in shared memory; the parent prints one PASS/FAIL
 * line per group after cc_spawn returns, naming the first failure, and also
 * notices a group that a rank never finished (it died or hung). */

#define TR_MAXR 8
#define TR_MAXG 24

typedef struct tr_slot {
  int started, done;
  long cases, fails;
  char msg[480];
} tr_slot;

typedef struct tr_table {
  tr_slot s[TR_MAXR][TR_MAXG];
  int64_t scratch[1024]; /* free for the test: counters, hashes */
} tr_table;

typedef struct tr_ctx {
  cc_comm *c;
  int rank, n;
  tr_table *tab;
  tr_slot *cur;
  int printed;
  char label[200]; /* the case being run, for messages */
} tr_ctx;

static inline void tr_ctx_init(tr_ctx *x, cc_comm *c, tr_table *tab) {
  memset(x, 0, sizeof *x);
  x->c = c;
  x->tab = tab;
  x->rank = cc_comm_rank(c);
  x->n = cc_comm_size(c);
}

/* Start group g on this rank; returns 0 when the rank is out of range. */
static inline int tr_group_begin(tr_ctx *x, int g) {
  if (x->rank < 0 || x->rank >= TR_MAXR || g < 0 || g >= TR_MAXG) return 0;
  x->cur = &x->tab->s[x->rank][g];
  x->cur->started = 1;
  return 1;
}
static inline void tr_group_end(tr_ctx *x) {
  if (x->cur) x->cur->done = 1;
}

static inline void tr_label(tr_ctx *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->label, sizeof x->label, fmt, ap);
  va_end(ap);
  if (x->cur) x->cur->cases++;
}

/* Record a failed check of the current case (x->label). */
static inline void tr_fail(tr_ctx *x, const char *fmt, ...) {
  char m[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  if (x->cur) {
    x->cur->fails++;
    if (x->cur->fails == 1)
      snprintf(x->cur->msg, sizeof x->cur->msg, "rank %d: %.190s: %.270s", x->rank, x->label,
               m);
  }
  if (x->printed < 12) {
    fprintf(stderr, "  [n=%d rank %d] %s: %s\n", x->n, x->rank, x->label, m);
    x->printed++;
  }
}

/* 1 when rc is CC_OK, else records the failure. */
static inline int tr_ok(tr_ctx *x, cc_result rc, const char *call) {
  if (rc == CC_OK) return 1;
  tr_fail(x, "%s returned %s (%s)", call, cc_strerror(rc), cc_comm_last_error(x->c));
  return 0;
}

static inline int tr_failed_any(const tr_ctx *x, int ngroups) {
  int g;
  for (g = 0; g < ngroups && g < TR_MAXG; g++)
    if (x->tab->s[x->rank][g].fails) return 1;
  return 0;
}

/* Print the line of group g for a world of n ranks: "FAIL: name: ..." or
 * "PASS: name (coverage)". Returns 1 on PASS. */
static inline int tr_report_group(const tr_table *tab, int n, int g, const char *name,
                                  const char *coverage, int spawn_rc) {
  long fails = 0;
  int r, notdone = -1;
  const char *msg = NULL;
  for (r = 0; r < n && r < TR_MAXR; r++) {
    fails += tab->s[r][g].fails;
    if (!msg && tab->s[r][g].fails) msg = tab->s[r][g].msg;
    if (!tab->s[r][g].done && notdone < 0) notdone = r;
  }
  if (fails) {
    tu_fail(name, "%ld failed checks; first: %s", fails, msg);
    return 0;
  }
  if (notdone >= 0) {
    tu_fail(name, "rank %d did not finish (%s; cc_spawn returned %d)", notdone,
            tab->s[notdone][g].started ? "died or hung in it" : "never started it", spawn_rc);
    return 0;
  }
  tu_pass(name, "%s; %ld cases", coverage ? coverage : "", tab->s[0][g].cases);
  return 1;
}

/* What tr_run_worlds hands every rank: the shared result table of this world
   size, and whether CC_TEST_QUICK asks for the short version. */
typedef struct tr_world {
  tr_table *tab;
  int quick;
} tr_world;

/* One cc_spawn of rank_main per world size in `sizes` (only `want` when it is
   not 0), then a PASS/FAIL line per result group, named PREFIX.GROUP.nN, and a
   FAIL line PREFIX.spawn.nN when a rank failed. Returns tu_exit_code(). */
static inline int tr_run_worlds(const char *prefix, const int *sizes, size_t nsizes, int want,
                                cc_main_fn rank_main, const char *const *names,
                                const char *const *cover, int ngroups) {
  static tr_world arg;
  size_t si;
  int g, rc;
  char name[96];
  double t0 = tu_now(), t1;
  char big[64] = "";
  arg.quick = tu_quick();
  for (si = 0; si < nsizes; si++) {
    int n = sizes[si];
    if (want && n != want) continue;
    if (!want && tu_tsan() && n > TU_TSAN_MAX_WORLD) {
      size_t used = strlen(big);
      snprintf(big + used, sizeof big - used, "%s%d", used ? ", " : "", n);
      continue;
    }
    arg.tab = (tr_table *)tu_shared_alloc(sizeof(tr_table));
    if (!arg.tab) {
      snprintf(name, sizeof name, "%s.setup", prefix);
      tu_fail(name, "cannot map shared memory");
      break;
    }
    t1 = tu_now();
    rc = tu_spawn(n, rank_main, &arg);
    for (g = 0; g < ngroups; g++) {
      snprintf(name, sizeof name, "%s.%s.n%d", prefix, names[g], n);
      tr_report_group(arg.tab, n, g, name, cover[g], rc);
    }
    if (rc != 0) {
      snprintf(name, sizeof name, "%s.spawn.n%d", prefix, n);
      tu_fail(name, "cc_spawn returned %d (%s)", rc, cc_comm_last_error(NULL));
    }
    fprintf(stderr, "%s: world size %d took %.2f s\n", prefix, n, tu_now() - t1);
    tu_shared_free(arg.tab, sizeof(tr_table));
  }
  if (big[0]) tu_tsan_skip(prefix, big);
  fprintf(stderr, "test_%s: %.2f s\n", prefix, tu_now() - t0);
  return tu_exit_code();
}

#endif /* TEST_REF_H_INCLUDED */
