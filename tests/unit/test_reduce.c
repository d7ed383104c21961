/* test_reduce - the @reduce kernels against plain per-element references: the
   half conversions (all 65536 values each way, every rounding midpoint, a sweep of
   floats), cc__op_check for every dtype x op, and cc__reduce_n for every allowed
   pair, 1 to 8 sources, counts 0, 1, 7, 1000, 4099, in place and out of place,
   with NaN, inf, -0, subnormals and integer overflow in the data.
   Prints "PASS: reduce <what>" / "FAIL: reduce <what>: <why>" per check group. */
#define CC_IMPLEMENTATION
#include "cc.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_failed;

/* one check group: report it once, with the first failure's reason */
static void report(const char *what, const char *why) {
  if (why) { printf("FAIL: reduce %s: %s\n", what, why); g_failed = 1; }
  else printf("PASS: reduce %s\n", what);
}

static uint64_t g_rng = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {   /* xorshift64* */
  g_rng ^= g_rng >> 12; g_rng ^= g_rng << 25; g_rng ^= g_rng >> 27;
  return g_rng * 0x2545f4914f6cdd1du;
}

static float f32_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t bits_of_f32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static double f64_of(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static uint64_t bits_of_f64(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

/* ---- reference conversions, by arithmetic on values rather than on bits */

static double ref_half_value(uint16_t h) {   /* NaN for NaN encodings */
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double ref_bf16_value(uint16_t b) {
  int e = (b >> 7) & 255, m = b & 127;
  double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, e - 134);
  return (b & 0x8000) ? -v : v;
}

/* nearest value in an ascending table of the non-negative finite encodings,
   ties to the even encoding; `top` is the value one step past the last entry
   (where rounding goes to inf) */
static double g_half_tab[0x7c00];
static uint16_t ref_round_tab(double a, const double *tab, int n, double top, uint16_t inf) {
  int lo = 0, hi = n - 1;
  if (a >= (tab[n - 1] + top) / 2) {   /* the midpoint to inf is a tie to the even inf */
    return inf;
  }
  while (lo < hi) {   /* largest index with tab[idx] <= a */
    int mid = (lo + hi + 1) / 2;
    if (tab[mid] <= a) lo = mid; else hi = mid - 1;
  }
  if (lo + 1 < n) {
    double d1 = a - tab[lo], d2 = tab[lo + 1] - a;
    if (d2 < d1 || (d2 == d1 && (lo & 1))) return (uint16_t)(lo + 1);
  }
  return (uint16_t)lo;
}

static uint16_t ref_float_to_half(float f) {
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  if (isnan(f)) return 0x7e00;   /* callers compare NaNs separately */
  return (uint16_t)(sign | ref_round_tab(fabs((double)f), g_half_tab, 0x7c00, 65536.0, 0x7c00));
}

static uint16_t ref_float_to_bf16(float f) {
  uint32_t x = bits_of_f32(f), lo = x & 0x7fff0000u;
  double a = fabs((double)f), lo_v, step, d1, d2;
  int e;
  if (isnan(f)) return 0x7fc0;
  if (isinf(f)) return (uint16_t)(x >> 16);
  lo_v = fabs(ref_bf16_value((uint16_t)(lo >> 16)));
  e = (int)(lo >> 23);
  step = ldexp(1.0, (e ? e : 1) - 127 - 7);
  d1 = a - lo_v; d2 = lo_v + step - a;
  if (d2 < d1 || (d2 == d1 && ((lo >> 16) & 1))) lo += 0x10000u;
  return (uint16_t)(((x >> 16) & 0x8000u) | (lo >> 16));
}

/* ---- conversions */

static void test_half_conversions(void) {
  char why[200] = "";
  uint32_t h, i;
  for (h = 0; h < 0x7c00; h++) g_half_tab[h] = ref_half_value((uint16_t)h);
  for (h = 0; h < 65536 && !why[0]; h++) {   /* every half to float */
    float f = cc__half_to_float((uint16_t)h);
    double r = ref_half_value((uint16_t)h);
    uint32_t b = bits_of_f32(f);
    if (isnan(r)) {
      if (!isnan(f) || (b >> 31) != (h >> 15) || ((b >> 13) & 0x3ff) != ((h & 0x3ff) | 0x200))
        snprintf(why, sizeof why, "half_to_float(0x%04x) = 0x%08x, want quiet NaN", (unsigned)h, (unsigned)b);
    } else if ((double)f != r || !signbit(f) != !(h & 0x8000)) {
      snprintf(why, sizeof why, "half_to_float(0x%04x) = %.9g, want %.9g", (unsigned)h, f, r);
    }
  }
  /* float to half: every half's value, the midpoints to its neighbour, one float
     either side of them, then a sweep over all float encodings */
  for (h = 0; h < 0x7c00 && !why[0]; h++) {
    double v = g_half_tab[h], nx = h + 1 < 0x7c00 ? g_half_tab[h + 1] : 65536.0;
    float mid = (float)((v + nx) / 2), probes[5];
    int p;
    probes[0] = (float)v; probes[1] = mid; probes[2] = nextafterf(mid, 0.0f);
    probes[3] = nextafterf(mid, INFINITY); probes[4] = -mid;
    for (p = 0; p < 5 && !why[0]; p++) {
      uint16_t got = cc__float_to_half(probes[p]), want = ref_float_to_half(probes[p]);
      if (got != want)
        snprintf(why, sizeof why, "float_to_half(%.9g) = 0x%04x, want 0x%04x", probes[p], got, want);
    }
  }
  for (i = 0; i < 4000000 && !why[0]; i++) {
    uint32_t x = (uint32_t)(i * 1073u) ^ (uint32_t)rnd();
    float f = f32_of(x);
    uint16_t got = cc__float_to_half(f), want = ref_float_to_half(f);
    if (isnan(f)) {
      if ((got & 0x7e00) != 0x7e00 || (got >> 15) != (x >> 31) || (got & 0x1ff) != ((x >> 13) & 0x1ff))
        snprintf(why, sizeof why, "float_to_half(NaN 0x%08x) = 0x%04x", (unsigned)x, got);
    } else if (got != want) {
      snprintf(why, sizeof why, "float_to_half(0x%08x) = 0x%04x, want 0x%04x", (unsigned)x, got, want);
    }
  }
  report("float16 conversions", why[0] ? why : NULL);
}

static void test_bf16_conversions(void) {
  char why[200] = "";
  uint32_t h, i;
  for (h = 0; h < 65536 && !why[0]; h++) {
    float f = cc__bf16_to_float((uint16_t)h);
    double r = ref_bf16_value((uint16_t)h);
    uint32_t b = bits_of_f32(f);
    if (isnan(r) ? b != ((h << 16) | 0x400000u) : ((double)f != r || (b >> 16) != h))
      snprintf(why, sizeof why, "bf16_to_float(0x%04x) = 0x%08x", (unsigned)h, (unsigned)b);
  }
  for (h = 0; h < 0x7f80 && !why[0]; h++) {   /* midpoints and their neighbours */
    float mid = f32_of((h << 16) | 0x8000u), probes[4];
    int p;
    probes[0] = f32_of(h << 16); probes[1] = mid; probes[2] = nextafterf(mid, 0.0f);
    probes[3] = -nextafterf(mid, INFINITY);
    for (p = 0; p < 4 && !why[0]; p++) {
      uint16_t got = cc__float_to_bf16(probes[p]), want = ref_float_to_bf16(probes[p]);
      if (got != want)
        snprintf(why, sizeof why, "float_to_bf16(%.9g) = 0x%04x, want 0x%04x", probes[p], got, want);
    }
  }
  for (i = 0; i < 4000000 && !why[0]; i++) {
    uint32_t x = (uint32_t)(i * 1073u) ^ (uint32_t)rnd();
    float f = f32_of(x);
    uint16_t got = cc__float_to_bf16(f);
    if (isnan(f) ? got != ((x >> 16) | 0x40u) : got != ref_float_to_bf16(f))
      snprintf(why, sizeof why, "float_to_bf16(0x%08x) = 0x%04x", (unsigned)x, got);
  }
  report("bfloat16 conversions", why[0] ? why : NULL);
}

/* ---- names and the (dtype, op) rules */

static const char *const k_dt_names[CC_DTYPE_COUNT] = {
  "int8", "uint8", "int32", "uint32", "int64", "uint64",
  "float16", "bfloat16", "float32", "float64", "complex64", "complex128"};
static const size_t k_dt_bytes[CC_DTYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 8, 16};
static const char *const k_op_names[9] = {
  "sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "premul_sum"};

enum { K_INT, K_FLT, K_CPX };
static int kind_of(int t) { return t <= CC_UINT64 ? K_INT : t <= CC_FLOAT64 ? K_FLT : K_CPX; }
static int is_signed(int t) { return t == CC_INT8 || t == CC_INT32 || t == CC_INT64; }
static int allowed(int t, int op) {
  int k = kind_of(t);
  if (op == CC_BAND || op == CC_BOR || op == CC_BXOR) return k == K_INT;
  if (op == CC_AVG) return k != K_INT;
  if (op == CC_MIN || op == CC_MAX) return k != K_CPX;
  return 1;
}

static void test_names_and_rules(void) {
  char why[300] = "", want[64];
  int t, op;
  for (t = 0; t < CC_DTYPE_COUNT; t++) {
    if (strcmp(cc__dtype_name((cc_dtype)t), k_dt_names[t]) || cc__dtype_bytes((cc_dtype)t) != k_dt_bytes[t])
      snprintf(why, sizeof why, "dtype %d: name %s, %u bytes", t, cc__dtype_name((cc_dtype)t),
               (unsigned)cc__dtype_bytes((cc_dtype)t));
  }
  if (strcmp(cc__dtype_name(CC_DTYPE_COUNT), "?") || cc__dtype_bytes(CC_DTYPE_COUNT) != 0)
    snprintf(why, sizeof why, "unknown dtype: name %s", cc__dtype_name(CC_DTYPE_COUNT));
  for (op = 0; op < 9; op++)
    if (strcmp(cc__op_name(op), k_op_names[op])) snprintf(why, sizeof why, "op %d named %s", op, cc__op_name(op));
  if (strcmp(cc__op_name(9), "?") || strcmp(cc__op_name(-1), "?")) snprintf(why, sizeof why, "op 9 or -1 named");
  if (CC__OP_PREMUL != 8) snprintf(why, sizeof why, "CC__OP_PREMUL is %d", CC__OP_PREMUL);
  report("names", why[0] ? why : NULL);

  why[0] = 0;
  for (t = 0; t < CC_DTYPE_COUNT; t++)
    for (op = 0; op < 9; op++) {
      const char *msg = cc__op_check((cc_dtype)t, op);
      if (allowed(t, op)) {
        if (msg) snprintf(why, sizeof why, "%s %s refused: %s", k_dt_names[t], k_op_names[op], msg);
        continue;
      }
      if (!msg) { snprintf(why, sizeof why, "%s %s allowed", k_dt_names[t], k_op_names[op]); continue; }
      snprintf(want, sizeof want, "op %s ", k_op_names[op]);
      if (!strstr(msg, want)) snprintf(why, sizeof why, "message does not name the op: %s", msg);
      snprintf(want, sizeof want, "dtype %s ", k_dt_names[t]);
      if (!strstr(msg, want)) snprintf(why, sizeof why, "message does not name the dtype: %s", msg);
    }
  if (!cc__op_check(CC_FLOAT32, 9) || !cc__op_check(CC_FLOAT32, -1) || !cc__op_check(CC_DTYPE_COUNT, CC_SUM))
    snprintf(why, sizeof why, "an unknown op or dtype passes cc__op_check");
  report("op_check", why[0] ? why : NULL);
}

/* ---- test data */

static void fill_float(float *p, size_t n) {
  static const uint32_t special[] = {
    0x7fc00000u, 0xffc00001u, 0x7f800001u /* signalling */, 0x7f800000u, 0xff800000u,
    0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu};
  size_t i;
  for (i = 0; i < n; i++) {
    uint64_t r = rnd();
    if (r % 100 < 4) p[i] = f32_of(special[(r >> 8) % (sizeof special / sizeof special[0])]);
    else if (r % 100 < 8) p[i] = f32_of((uint32_t)(r >> 32));   /* any encoding */
    else p[i] = (float)ldexp((double)(int32_t)(r >> 32) / 2147483648.0, (int)((r >> 8) % 40) - 20);
  }
}

static void fill_double(double *p, size_t n) {
  static const uint64_t special[] = {
    0x7ff8000000000000u, 0xfff8000000000123u, 0x7ff0000000000001u, 0x7ff0000000000000u,
    0xfff0000000000000u, 0, 0x8000000000000000u, 1, 0x7fefffffffffffffu, 0x0010000000000000u};
  size_t i;
  for (i = 0; i < n; i++) {
    uint64_t r = rnd();
    if (r % 100 < 4) p[i] = f64_of(special[(r >> 8) % (sizeof special / sizeof special[0])]);
    else if (r % 100 < 8) p[i] = f64_of(rnd());
    else p[i] = ldexp((double)(int64_t)rnd() / 9223372036854775808.0, (int)((r >> 8) % 80) - 40);
  }
}

static void fill_half(uint16_t *p, size_t n, int bf) {
  size_t i;
  for (i = 0; i < n; i++) {
    uint64_t r = rnd();
    if (r % 100 < 20) p[i] = (uint16_t)(r >> 16);   /* any encoding: NaN, inf, subnormal */
    else if (bf) p[i] = (uint16_t)(((r >> 16) & 0x8000u) | (0x3c00u + ((r >> 20) & 0x7ffu)));
    else p[i] = (uint16_t)(((r >> 16) & 0x8000u) | (0x3000u + ((r >> 20) & 0x1fffu)));
  }
}

static void fill(void *p, size_t count, int t) {
  size_t i;
  switch (kind_of(t)) {
    case K_INT:
      for (i = 0; i < count * k_dt_bytes[t]; i++) {   /* small values, random bits, extremes */
        uint64_t r = rnd();
        ((unsigned char *)p)[i] = (unsigned char)(r >> 40);
      }
      for (i = 0; i < count; i++) {
        uint64_t r = rnd(), v = r % 4 == 0 ? (r >> 8) % 7 : r % 4 == 1 ? ~(uint64_t)((r >> 8) % 7) : 0;
        if (r % 4 < 2) memcpy((char *)p + i * k_dt_bytes[t], &v, k_dt_bytes[t]);   /* little endian */
      }
      break;
    case K_FLT:
      if (t == CC_FLOAT32) fill_float((float *)p, count);
      else if (t == CC_FLOAT64) fill_double((double *)p, count);
      else fill_half((uint16_t *)p, count, t == CC_BFLOAT16);
      break;
    default:
      if (t == CC_COMPLEX64) fill_float((float *)p, 2 * count);
      else fill_double((double *)p, 2 * count);
  }
}

/* ---- the reference reduction, one element at a time */

static uint64_t ld_u(int t, const void *p) {
  uint8_t a; uint32_t b; uint64_t c;
  switch (k_dt_bytes[t]) {
    case 1: memcpy(&a, p, 1); return a;
    case 4: memcpy(&b, p, 4); return b;
    default: memcpy(&c, p, 8); return c;
  }
}
static int64_t ld_s(int t, const void *p) {
  int8_t a; int32_t b; int64_t c;
  switch (k_dt_bytes[t]) {
    case 1: memcpy(&a, p, 1); return a;
    case 4: memcpy(&b, p, 4); return b;
    default: memcpy(&c, p, 8); return c;
  }
}
static void st_u(int t, void *p, uint64_t v) {
  uint8_t a = (uint8_t)v; uint32_t b = (uint32_t)v;
  switch (k_dt_bytes[t]) {
    case 1: memcpy(p, &a, 1); break;
    case 4: memcpy(p, &b, 4); break;
    default: memcpy(p, &v, 8);
  }
}

static void ref_int(int t, int op, int nsrc, const void *const *x, const void *const *scal, void *out) {
  uint64_t acc = ld_u(t, x[0]);
  int64_t sacc = ld_s(t, x[0]);
  int k;
  if (op == CC__OP_PREMUL) acc = ld_u(t, scal[0]) * acc;
  for (k = 1; k < nsrc; k++) {
    uint64_t v = ld_u(t, x[k]);
    int64_t sv = ld_s(t, x[k]);
    switch (op) {
      case CC_SUM: acc += v; break;
      case CC_PROD: acc *= v; break;
      case CC_BAND: acc &= v; break;
      case CC_BOR: acc |= v; break;
      case CC_BXOR: acc ^= v; break;
      case CC__OP_PREMUL: acc += ld_u(t, scal[k]) * v; break;
      case CC_MIN: if (sv < sacc) sacc = sv; if (v < acc) acc = v; break;
      case CC_MAX: if (sv > sacc) sacc = sv; if (v > acc) acc = v; break;
    }
  }
  if ((op == CC_MIN || op == CC_MAX) && is_signed(t)) acc = (uint64_t)sacc;
  st_u(t, out, acc);
}

/* fmin/fmax from libm, except: any NaN (glibc returns NaN for a signalling one)
   is ignored, and on equality (-0 vs +0) the earlier operand wins */
static float rminf(float a, float b) { return isnan(a) ? b : isnan(b) || a == b ? a : fminf(a, b); }
static float rmaxf(float a, float b) { return isnan(a) ? b : isnan(b) || a == b ? a : fmaxf(a, b); }
static double rmin(double a, double b) { return isnan(a) ? b : isnan(b) || a == b ? a : fmin(a, b); }
static double rmax(double a, double b) { return isnan(a) ? b : isnan(b) || a == b ? a : fmax(a, b); }

static float ld_f(int t, const void *p) {   /* float16, bfloat16, float32 as float */
  uint16_t h; float f;
  if (t == CC_FLOAT32) { memcpy(&f, p, 4); return f; }
  memcpy(&h, p, 2);
  return (float)(t == CC_FLOAT16 ? ref_half_value(h) : ref_bf16_value(h));
}

static void ref_float(int t, int op, int nsrc, const void *const *x, const void *const *scal, void *out) {
  float acc = ld_f(t, x[0]);
  int k;
  if (op == CC__OP_PREMUL) acc = ld_f(t, scal[0]) * acc;
  for (k = 1; k < nsrc; k++) {
    float v = ld_f(t, x[k]), p;
    switch (op) {
      case CC_SUM: case CC_AVG: acc = acc + v; break;
      case CC_PROD: acc = acc * v; break;
      case CC_MIN: acc = rminf(acc, v); break;
      case CC_MAX: acc = rmaxf(acc, v); break;
      case CC__OP_PREMUL: p = ld_f(t, scal[k]) * v; acc = acc + p; break;
    }
  }
  if (op == CC_AVG) acc = acc / (float)nsrc;
  if (t == CC_FLOAT32) {
    uint32_t b = isnan(acc) ? 0x7fc00000u : bits_of_f32(acc);
    memcpy(out, &b, 4);
  } else {
    uint16_t h = t == CC_FLOAT16 ? ref_float_to_half(acc) : ref_float_to_bf16(acc);
    memcpy(out, &h, 2);
  }
}

static double ld_d(const void *p) { double d; memcpy(&d, p, 8); return d; }
static void st_d(void *p, double d) { uint64_t b = isnan(d) ? 0x7ff8000000000000u : bits_of_f64(d); memcpy(p, &b, 8); }

static void ref_double(int op, int nsrc, const void *const *x, const void *const *scal, void *out) {
  double acc = ld_d(x[0]);
  int k;
  if (op == CC__OP_PREMUL) acc = ld_d(scal[0]) * acc;
  for (k = 1; k < nsrc; k++) {
    double v = ld_d(x[k]), p;
    switch (op) {
      case CC_SUM: case CC_AVG: acc = acc + v; break;
      case CC_PROD: acc = acc * v; break;
      case CC_MIN: acc = rmin(acc, v); break;
      case CC_MAX: acc = rmax(acc, v); break;
      case CC__OP_PREMUL: p = ld_d(scal[k]) * v; acc = acc + p; break;
    }
  }
  if (op == CC_AVG) acc = acc / (double)nsrc;
  st_d(out, acc);
}

/* complex: (a + bi)(c + di) = (ac - bd) + (ad + bc)i, every product rounded */
#define REF_CPLX(name, T, LD, ST)                                                   \
static void name(int op, int nsrc, const void *const *x, const void *const *scal, void *out) { \
  T re = LD(x[0], 0), im = LD(x[0], 1), ac, bd, ad, bc, a, b, c, d;                 \
  int k;                                                                            \
  if (op == CC__OP_PREMUL) {                                                        \
    a = LD(scal[0], 0); b = LD(scal[0], 1);                                         \
    ac = a * re; bd = b * im; ad = a * im; bc = b * re; re = ac - bd; im = ad + bc; \
  }                                                                                 \
  for (k = 1; k < nsrc; k++) {                                                      \
    c = LD(x[k], 0); d = LD(x[k], 1);                                               \
    if (op == CC_SUM || op == CC_AVG) { re = re + c; im = im + d; }                 \
    else if (op == CC_PROD) {                                                       \
      ac = re * c; bd = im * d; ad = re * d; bc = im * c; re = ac - bd; im = ad + bc; \
    } else {                                                                        \
      a = LD(scal[k], 0); b = LD(scal[k], 1);                                       \
      ac = a * c; bd = b * d; ad = a * d; bc = b * c;                               \
      ac = ac - bd; ad = ad + bc; re = re + ac; im = im + ad;                       \
    }                                                                               \
  }                                                                                 \
  if (op == CC_AVG) { re = re / (T)nsrc; im = im / (T)nsrc; }                        \
  ST(out, 0, re); ST(out, 1, im);                                                   \
}
static float ld_c64(const void *p, int i) { float f; memcpy(&f, (const char *)p + 4 * i, 4); return f; }
static void st_c64(void *p, int i, float f) {
  uint32_t b = isnan(f) ? 0x7fc00000u : bits_of_f32(f);
  memcpy((char *)p + 4 * i, &b, 4);
}
static double ld_c128(const void *p, int i) { return ld_d((const char *)p + 8 * i); }
static void st_c128(void *p, int i, double d) { st_d((char *)p + 8 * i, d); }
REF_CPLX(ref_c64, float, ld_c64, st_c64)
REF_CPLX(ref_c128, double, ld_c128, st_c128)

static void ref_reduce(void *dst, const void *const *srcs, int nsrc, size_t count, int t, int op,
                       const void *const *scal) {
  size_t sz = k_dt_bytes[t], i;
  const void *x[8];
  int k;
  for (i = 0; i < count; i++) {
    void *out = (char *)dst + i * sz;
    for (k = 0; k < nsrc; k++) x[k] = (const char *)srcs[k] + i * sz;
    if (kind_of(t) == K_INT) ref_int(t, op, nsrc, x, scal, out);
    else if (t == CC_FLOAT64) ref_double(op, nsrc, x, scal, out);
    else if (kind_of(t) == K_FLT) ref_float(t, op, nsrc, x, scal, out);
    else if (t == CC_COMPLEX64) ref_c64(op, nsrc, x, scal, out);
    else ref_c128(op, nsrc, x, scal, out);
  }
}

/* ---- cc__reduce_n against the reference */

static void hex(char *buf, const unsigned char *p, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) sprintf(buf + 2 * i, "%02x", p[n - 1 - i]);
}

#define MAXC 4099
static void test_reduce_pair(int t, int op, unsigned char *pool) {
  static const size_t counts[] = {0, 1, 7, 1000, MAXC};
  size_t sz = k_dt_bytes[t], ci, stride = (MAXC + 4) * sz;
  unsigned char *src = pool, *want = pool + 9 * stride, *got = pool + 10 * stride;
  unsigned char scal_store[8 * 16];
  const void *srcs[8], *scal[8];
  char why[400] = "", what[64];
  int nsrc, inplace, k;
  for (nsrc = 1; nsrc <= 8 && !why[0]; nsrc++)
    for (ci = 0; ci < 5 && !why[0]; ci++)
      for (inplace = 0; inplace < 2 && !why[0]; inplace++) {
        size_t count = counts[ci], off = (size_t)(nsrc + ci) % 3, i;   /* element offsets 0..2 */
        for (k = 0; k < nsrc; k++) fill(src + k * stride, count + 3, t);
        fill(src + 8 * stride, count + 1, t);   /* a random guard after dst */
        fill(scal_store, 8, t);
        for (k = 0; k < nsrc; k++) {
          srcs[k] = src + k * stride + off * sz;
          scal[k] = scal_store + k * sz;
        }
        ref_reduce(want, srcs, nsrc, count, t, op, op == CC__OP_PREMUL ? scal : NULL);
        if (!inplace) memcpy(got, src + 8 * stride, (count + 1) * sz);
        {
          void *dst = inplace ? (void *)(src + off * sz) : (void *)got;
          unsigned char guard[16];
          memcpy(guard, (unsigned char *)dst + count * sz, sz);
          cc__reduce_n(dst, srcs, nsrc, count, (cc_dtype)t, op, op == CC__OP_PREMUL ? scal : NULL);
          if (memcmp(guard, (unsigned char *)dst + count * sz, sz))
            snprintf(why, sizeof why, "nsrc %d count %u: wrote past the end", nsrc, (unsigned)count);
          if (inplace) memcpy(got, dst, count * sz);
        }
        for (i = 0; i < count && !why[0]; i++)
          if (memcmp(got + i * sz, want + i * sz, sz)) {
            char g[40], w[40], in0[40], in1[40];
            hex(g, got + i * sz, sz); hex(w, want + i * sz, sz);
            hex(in0, (const unsigned char *)srcs[0] + i * sz, sz);
            hex(in1, (const unsigned char *)srcs[nsrc > 1 ? 1 : 0] + i * sz, sz);
            snprintf(why, sizeof why, "nsrc %d count %u %s, element %u: got %s want %s (in %s, %s%s)",
                     nsrc, (unsigned)count, inplace ? "in place" : "out of place", (unsigned)i, g, w,
                     inplace ? "overwritten" : in0, in1, nsrc > 2 ? ", ..." : "");
          }
        /* the same inputs again (out of place): the same bits */
        if (!why[0] && !inplace && count) {
          memcpy(want, got, count * sz);
          cc__reduce_n(got, srcs, nsrc, count, (cc_dtype)t, op, op == CC__OP_PREMUL ? scal : NULL);
          if (memcmp(want, got, count * sz)) snprintf(why, sizeof why, "nsrc %d: a second call differs", nsrc);
        }
      }
  snprintf(what, sizeof what, "%s %s", k_dt_names[t], k_op_names[op]);
  report(what, why[0] ? why : NULL);
}

/* refused pairs, nsrc 0 and premul_sum without scalars leave dst alone */
static void test_refusals(unsigned char *pool) {
  const void *srcs[2];
  unsigned char dst[64];
  char why[200] = "";
  int t, op;
  srcs[0] = pool; srcs[1] = pool + 64;
  memset(pool, 0x11, 128);
  for (t = 0; t <= CC_DTYPE_COUNT; t++)
    for (op = -1; op <= 9; op++) {
      if (t < CC_DTYPE_COUNT && op >= 0 && op < 9 && allowed(t, op) && op != CC__OP_PREMUL) continue;
      memset(dst, 0x5a, sizeof dst);
      cc__reduce_n(dst, srcs, 2, 2, (cc_dtype)t, op, NULL);
      if (dst[0] != 0x5a) snprintf(why, sizeof why, "dtype %d op %d wrote dst", t, op);
    }
  memset(dst, 0x5a, sizeof dst);
  cc__reduce_n(dst, srcs, 0, 2, CC_FLOAT32, CC_SUM, NULL);
  if (dst[0] != 0x5a) snprintf(why, sizeof why, "nsrc 0 wrote dst");
  report("refused pairs leave dst alone", why[0] ? why : NULL);
  /* a count of 0 touches no buffer: they may be NULL (a crash fails the run) */
  srcs[0] = srcs[1] = NULL;
  for (t = 0; t < CC_DTYPE_COUNT; t++)
    for (op = 0; op < 9; op++) cc__reduce_n(NULL, srcs, 2, 0, (cc_dtype)t, op, srcs);
  report("count 0 with NULL buffers", NULL);
}

/* ---- throughput (informational) */

static double now_s(void) { return (double)clock() / CLOCKS_PER_SEC; }

static void bench(const char *what, int t, int op, int nsrc, unsigned char *pool) {
  size_t n = (size_t)1 << 20, sz = k_dt_bytes[t], iters = 0;
  const void *srcs[8], *scal[8];
  double t0, t1;
  int k;
  for (k = 0; k < nsrc; k++) { srcs[k] = pool + k * n * sz; scal[k] = pool + k * n * sz; }
  memset(pool, 0, (size_t)(nsrc + 1) * n * sz);
  for (k = 0; k < nsrc; k++) fill(pool + k * n * sz, n, t);
  t0 = now_s();
  do {
    cc__reduce_n(pool + nsrc * n * sz, srcs, nsrc, n, (cc_dtype)t, op, op == CC__OP_PREMUL ? scal : NULL);
    iters++;
    t1 = now_s();
  } while (t1 - t0 < 0.3);
  printf("# throughput %-26s %6.2f GB/s of output (%d sources, 1M elements)\n", what,
         (double)iters * (double)(n * sz) / (t1 - t0) / 1e9, nsrc);
}

int main(int argc, char **argv) {
  unsigned char *pool = (unsigned char *)malloc(40 * ((size_t)1 << 20));
  int t, op;
  (void)argv;
  if (!pool) { printf("FAIL: reduce setup: out of memory\n"); return 1; }
  test_half_conversions();
  test_bf16_conversions();
  test_names_and_rules();
  test_refusals(pool);
  for (t = 0; t < CC_DTYPE_COUNT; t++)
    for (op = 0; op < 9; op++)
      if (allowed(t, op)) test_reduce_pair(t, op, pool);
  bench("float32 sum", CC_FLOAT32, CC_SUM, 2, pool);
  if (argc > 1) {   /* any argument: the other kernels too */
    bench("float32 sum", CC_FLOAT32, CC_SUM, 8, pool);
    bench("float32 max", CC_FLOAT32, CC_MAX, 2, pool);
    bench("float32 premul_sum", CC_FLOAT32, CC__OP_PREMUL, 2, pool);
    bench("float64 sum", CC_FLOAT64, CC_SUM, 2, pool);
    bench("bfloat16 sum", CC_BFLOAT16, CC_SUM, 2, pool);
    bench("float16 sum", CC_FLOAT16, CC_SUM, 2, pool);
    bench("int32 sum", CC_INT32, CC_SUM, 2, pool);
    bench("int8 sum", CC_INT8, CC_SUM, 2, pool);
    bench("int64 min", CC_INT64, CC_MIN, 2, pool);
    bench("complex64 prod", CC_COMPLEX64, CC_PROD, 2, pool);
  }
  free(pool);
  return g_failed;
}
