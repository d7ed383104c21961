/* net_probe.c - one rank of a job that may span hosts, for tests/multihost/test_multihost.sh
 * and tests/test_ccrun_nnodes.sh. Joins with cc_comm_init(&c, NULL) (rank, size
 * and rendezvous from the environment: ccrun, mpirun or RANK/WORLD_SIZE/
 * MASTER_ADDR/MASTER_PORT) and uses the public API only.
 *
 *     net_probe all [hold MS]   every collective, checked against references
 *     net_probe die RANK        RANK kills itself; the others report the error
 *     net_probe hang            all_reduce in a loop until an error
 *     net_probe token           init and one barrier; report the outcome
 *     net_probe diein COLL RANK RANK kills itself while rank 0 waits on it in COLL
 *
 * all     Every collective (barrier, broadcast, reduce, all_reduce, gather,
 *         all_gather, scatter, reduce_scatter, all_to_all and the four _v
 *         variants with uneven counts, one of them 0), a send/recv ring in a
 *         group, receives from any source (cc_recv_any: every rank's messages
 *         to rank 0, sources and each sender's order checked, blocking and in
 *         a group with a request), an asynchronous group (cc_group_end(c,
 *         &req), cc_wait), and a
 *         cc_comm_split into even and odd ranks with an all_reduce on each half.
 *         Counts 0, 1, 7, 1000 and 3 MiB of float32; int32, float32, float64,
 *         float16 and bfloat16 with sum, prod, min, max and avg (float types).
 *         Inputs are small integers, a deterministic function of rank and index,
 *         chosen so that every partial result is exact in every dtype: the
 *         references, computed here in double from the known inputs, are then
 *         exact whatever order the library reduces in. Receive buffers carry
 *         guard bytes, and the gaps between _v blocks, that must stay untouched.
 *         A float32 sum of inexact values (0.1f * (rank+1) * (i % 13)) must give
 *         every rank the same bits: each rank hashes its result and the hashes
 *         are all-gathered and compared.
 *         Rank 0 prints `info: size N local_size L` (L: ranks on rank 0's host)
 *         and one `PASS: net_probe: SECTION ...` or `FAIL: ...` line per section
 *         (the failure counts of all ranks are summed first); a rank whose own
 *         checks fail prints up to 5 `FAIL: ... (rank R)` lines per section. A
 *         call that returns an error prints `FAIL: ...` with
 *         cc_comm_last_error and exits 1 at once. Exit 0 when every check on
 *         every rank passed, else 1. With `hold MS`, every rank prints
 *         `ready: rank R` after the first barrier and waits MS milliseconds
 *         before the checks (so that a test can poke at the ports meanwhile).
 * die     After one all_reduce and a barrier every rank prints `ready: rank R`;
 *         500 ms after the barrier rank RANK prints `die: rank RANK` and raises
 *         SIGKILL, while the others run all_reduce in a loop. They ignore
 *         SIGTERM (so that ccrun, stopping a dead rank's siblings, does not end
 *         them before they report) and print
 *             result: CODE in MS ms: MESSAGE
 *         with CODE the name part of cc_strerror, MS the time since the planned
 *         death, MESSAGE cc_comm_last_error(c); exit 3 (4 when no error came
 *         within 30 s).
 * hang    As die without a victim: after `ready: rank R`, all_reduce in a loop
 *         until a call fails (a test cuts the network meanwhile); the same
 *         `result:` line, MS counted from `ready`; exit 3 (4 after 60 s).
 * diein   COLL is gather, recv, recv_any or all_to_all. After an all_reduce and a
 *         barrier, every rank prints `ready: rank R`; 500 ms later rank RANK
 *         prints `die: rank RANK` and raises SIGKILL, while rank 0 waits on it in
 *         COLL (gather rooted at 0 of 64 KiB per rank; a recv from RANK; a
 *         cc_recv_any; an all_to_all of 64 KiB per pair) and the other ranks make
 *         the same call (recv: they make none, so that only rank 0 waits on RANK;
 *         recv_any: they destroy their communicator at the time of the death,
 *         so that no rank that could send is left). Each survivor prints the `result:` line of that call
 *         (MS since the planned death), then ignores SIGTERM long enough to be
 *         read, and exits 3 (4 when the call succeeded).
 * token   cc_comm_init and one barrier; `result: CC_OK in MS ms: ...` and exit 0,
 *         or the error (of init: cc_comm_last_error(NULL)) and exit 3.
 * In every mode a failed cc_comm_init prints the `result:` line of that error
 * (and, in `all`, a FAIL line too) and exits 3.
 *
 * Built into BUILD/probes, not BUILD/tests: it is no test on its own. */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LARGE ((size_t)3 * 1024 * 1024 / 4) /* 3 MiB of float32 */
#define GUARD 64                             /* bytes after a receive buffer */
#define SENTINEL 0xA5
#define MAX_DETAIL 5                         /* FAIL lines per rank and section */

static cc_comm *g_c;
static int g_rank, g_size;
static const char *g_section = "init";
static int g_fails, g_printed, g_any_failed;

/* ------------------------------------------------------------ helpers */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms) {
  struct timespec ts;
  if (ms <= 0) return;
  ts.tv_sec = (time_t)(ms / 1000);
  ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000) * 1e6);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* "CC_ERR_TIMEOUT: a peer did not ..." -> "CC_ERR_TIMEOUT" */
static void code_name(cc_result r, char *out, size_t cap) {
  const char *s = cc_strerror(r);
  size_t n = strcspn(s, ":");
  if (n >= cap) n = cap - 1;
  memcpy(out, s, n);
  out[n] = 0;
}

static void result_line(cc_result r, double ms, const char *msg) {
  char name[64];
  code_name(r, name, sizeof name);
  printf("result: %s in %.0f ms: %s\n", name, ms, msg && *msg ? msg : "(no message)");
  fflush(stdout);
}

/* A check failed on this rank. */
static void bad(const char *fmt, ...) {
  va_list ap;
  g_fails++;
  if (g_printed++ >= MAX_DETAIL) return;
  printf("FAIL: net_probe: %s: ", g_section);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf(" (rank %d)\n", g_rank);
  fflush(stdout);
}

/* A call failed: the communicator is gone, so report and stop. */
static void must(cc_result r, const char *call) {
  char name[64];
  if (r == CC_OK) return;
  code_name(r, name, sizeof name);
  printf("FAIL: net_probe: %s: %s returned %s: %s (rank %d)\n", g_section, call, name,
         cc_comm_last_error(g_c), g_rank);
  fflush(stdout);
  exit(1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    printf("FAIL: net_probe: out of memory for %zu bytes (rank %d)\n", n, g_rank);
    exit(1);
  }
  return p;
}

/* A receive buffer of `bytes` (NULL when 0), filled with the sentinel, with
 * GUARD sentinel bytes after it. */
static unsigned char *rbuf(size_t bytes) {
  unsigned char *p;
  if (bytes == 0) return NULL;
  p = (unsigned char *)xmalloc(bytes + GUARD);
  memset(p, SENTINEL, bytes + GUARD);
  return p;
}

/* p + off, without arithmetic on NULL (the buffers of count 0). */
static unsigned char *at(unsigned char *p, size_t off) { return p ? p + off : NULL; }

static void check_guard(const unsigned char *p, size_t bytes, const char *what) {
  size_t i;
  if (!p) return;
  for (i = 0; i < GUARD; i++)
    if (p[bytes + i] != SENTINEL) {
      bad("%s: wrote past the end of the receive buffer (byte %zu after it)", what, i);
      return;
    }
}

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Payload bytes of a data-movement test: byte j of the message that `src`
 * sends to `dst` in test `salt`. */
static unsigned char pbyte(int src, int dst, unsigned salt, size_t j) {
  return (unsigned char)(mix64(((uint64_t)salt << 48) ^ ((uint64_t)(unsigned)src << 32) ^
                               ((uint64_t)(unsigned)dst << 16) ^ (uint64_t)(j / 8)) >>
                         (8 * (j % 8)));
}

static void fill_payload(unsigned char *p, size_t bytes, int src, int dst, unsigned salt) {
  size_t j;
  for (j = 0; j < bytes; j++) p[j] = pbyte(src, dst, salt, j);
}

/* Compare `bytes` at p with the payload of (src, dst, salt). */
static void check_payload(const unsigned char *p, size_t bytes, int src, int dst, unsigned salt,
                          const char *what) {
  size_t j;
  for (j = 0; j < bytes; j++)
    if (p[j] != pbyte(src, dst, salt, j)) {
      bad("%s: byte %zu of %zu (from rank %d) is 0x%02x, expected 0x%02x", what, j, bytes, src,
          p[j], pbyte(src, dst, salt, j));
      return;
    }
}

static void check_untouched(const unsigned char *p, size_t bytes, const char *what) {
  size_t j;
  for (j = 0; j < bytes; j++)
    if (p[j] != SENTINEL) {
      bad("%s: byte %zu of a gap between blocks was written", what, j);
      return;
    }
}

/* ------------------------------------------------------------ dtypes */

static size_t esize(cc_dtype t) {
  switch (t) {
  case CC_FLOAT16: case CC_BFLOAT16: return 2;
  case CC_INT32: case CC_FLOAT32: return 4;
  case CC_FLOAT64: case CC_UINT64: return 8;
  default: return 0;
  }
}

static const char *tname(cc_dtype t) {
  switch (t) {
  case CC_INT32: return "int32";
  case CC_FLOAT32: return "float32";
  case CC_FLOAT64: return "float64";
  case CC_FLOAT16: return "float16";
  case CC_BFLOAT16: return "bfloat16";
  default: return "?";
  }
}

static const char *oname(cc_op op) {
  switch (op) {
  case CC_SUM: return "sum";
  case CC_PROD: return "prod";
  case CC_MIN: return "min";
  case CC_MAX: return "max";
  case CC_AVG: return "avg";
  default: return "?";
  }
}

static void probe_bug(double v, const char *t) {
  printf("FAIL: net_probe: internal: %g is not exact in %s (rank %d)\n", v, t, g_rank);
  exit(1);
}

/* The float16 bits of v, which must be exactly representable (a normal number
 * or zero): sign, 5 exponent bits (bias 15), 10 fraction bits. */
static uint16_t f16_bits(double v) {
  uint16_t s = (uint16_t)(v < 0 ? 0x8000u : 0u);
  double a = fabs(v), m, f;
  int e;
  if (a == 0) return s;
  m = frexp(a, &e);                 /* a = m * 2^e, m in [0.5, 1) */
  f = (m * 2 - 1) * 1024;           /* a = (1 + f/1024) * 2^(e-1) */
  if (e + 14 < 1 || e + 14 > 30 || f != floor(f)) probe_bug(v, "float16");
  return (uint16_t)(s | (uint16_t)((e + 14) << 10) | (uint16_t)f);
}

/* The bfloat16 bits of v: the top half of its float32 bits, the rest zero. */
static uint16_t bf16_bits(double v) {
  float x = (float)v;
  uint32_t u;
  if ((double)x != v) probe_bug(v, "bfloat16");
  memcpy(&u, &x, 4);
  if (u & 0xffffu) probe_bug(v, "bfloat16");
  return (uint16_t)(u >> 16);
}

/* Element i of buf (dtype t) := v, exactly. */
static void put(cc_dtype t, void *buf, size_t i, double v) {
  unsigned char *p = (unsigned char *)buf + i * esize(t);
  int32_t i32;
  float f32;
  uint16_t h;
  switch (t) {
  case CC_INT32: i32 = (int32_t)v; memcpy(p, &i32, 4); break;
  case CC_FLOAT32:
    f32 = (float)v;
    if ((double)f32 != v) probe_bug(v, "float32");
    memcpy(p, &f32, 4);
    break;
  case CC_FLOAT64: memcpy(p, &v, 8); break;
  case CC_FLOAT16: h = f16_bits(v); memcpy(p, &h, 2); break;
  case CC_BFLOAT16: h = bf16_bits(v); memcpy(p, &h, 2); break;
  default: probe_bug(v, "an untested dtype");
  }
}

static void describe(cc_dtype t, const unsigned char *e, char *out, size_t cap) {
  size_t k, n = esize(t);
  int w = snprintf(out, cap, "0x");
  for (k = n; k-- > 0 && w > 0 && (size_t)w < cap;)   /* little endian: high byte last */
    w += snprintf(out + w, cap - (size_t)w, "%02x", e[k]);
}

/* ------------------------------------------------------------ inputs and references */

/* Rank r's element i for op: small integers, exact in every tested dtype. */
static double input(cc_op op, int r, size_t i) {
  int n = g_size;
  switch (op) {
  case CC_SUM: return (double)((int)(((size_t)r * 7 + i * 3) % 11) - 5);
  case CC_PROD:                    /* +-1 and 2: products are signed powers of 2 */
    if (((size_t)r + i) % 7 == 0) return 2;
    return ((size_t)r * 3 + i) % 5 == 0 ? -1 : 1;
  case CC_MIN: case CC_MAX: return (double)((int)(((size_t)r * 13 + i * 5) % 17) - 8);
  case CC_AVG: {                   /* a(i) + s(r, i), the s summing to 0: avg = a(i) */
    double a = (double)((int)(i % 9) - 4), s = 0;
    int j;
    if (r < n - 1) return a + (double)(((size_t)r + i) % 3);
    for (j = 0; j < n - 1; j++) s += (double)(((size_t)j + i) % 3);
    return a - s;
  }
  default: return 0;
  }
}

/* The reduction of element i over ranks [first, first + n) stepping by step. */
static double reference(cc_op op, size_t i, int first, int n, int step) {
  double acc = input(op, first, i);
  int k;
  for (k = 1; k < n; k++) {
    double x = input(op, first + k * step, i);
    switch (op) {
    case CC_SUM: case CC_AVG: acc += x; break;
    case CC_PROD: acc *= x; break;
    case CC_MIN: acc = x < acc ? x : acc; break;
    case CC_MAX: acc = x > acc ? x : acc; break;
    default: break;
    }
  }
  return op == CC_AVG ? acc / n : acc;
}

static void *make_input(cc_dtype t, cc_op op, int r, size_t first, size_t count) {
  unsigned char *p;
  size_t i;
  if (count == 0) return NULL;
  p = (unsigned char *)xmalloc(count * esize(t));
  for (i = 0; i < count; i++) put(t, p, i, input(op, r, first + i));
  return p;
}

/* got[0..count) must equal the reduction (over all ranks) of elements
 * first..first+count, bit for bit. */
static void check_reduced(const unsigned char *got, cc_dtype t, cc_op op, size_t first,
                          size_t count, const char *what) {
  unsigned char want[8];
  char gs[40], ws[40];
  size_t i, es = esize(t);
  for (i = 0; i < count; i++) {
    put(t, want, 0, reference(op, first + i, 0, g_size, 1));
    if (memcmp(got + i * es, want, es) != 0) {
      describe(t, got + i * es, gs, sizeof gs);
      describe(t, want, ws, sizeof ws);
      bad("%s: element %zu of %zu is %s, expected %s (= %g)", what, i, count, gs, ws,
          reference(op, first + i, 0, g_size, 1));
      return;
    }
  }
}

/* ------------------------------------------------------------ sections */

/* After a section: every rank learns how many checks failed anywhere; rank 0
 * prints the verdict. */
static void section_end(const char *covered) {
  int32_t mine[2], all[2];
  mine[0] = g_fails;
  mine[1] = g_fails > 0;
  must(cc_all_reduce(g_c, mine, all, 2, CC_INT32, CC_SUM), "all_reduce (failure counts)");
  if (all[0] > 0) g_any_failed = 1;
  if (g_rank == 0) {
    if (all[0] == 0)
      printf("PASS: net_probe: %s: %s (%d ranks)\n", g_section, covered, g_size);
    else
      printf("FAIL: net_probe: %s: %d check(s) failed on %d rank(s) of %d: %s\n", g_section,
             (int)all[0], (int)all[1], g_size, covered);
    fflush(stdout);
  }
  g_fails = g_printed = 0;
}

static const size_t counts[] = {0, 1, 7, 1000, LARGE};
#define NCOUNTS (sizeof counts / sizeof counts[0])

static void sec_barrier(void) {
  int i;
  g_section = "barrier";
  for (i = 0; i < 3; i++) must(cc_barrier(g_c), "barrier");
  section_end("3 barriers");
}

/* all_reduce, reduce, reduce_scatter over every count, dtype and op. */
static void sec_reduce(void) {
  static const cc_dtype types[] = {CC_INT32, CC_FLOAT32, CC_FLOAT64, CC_FLOAT16, CC_BFLOAT16};
  static const cc_op ops[] = {CC_SUM, CC_PROD, CC_MIN, CC_MAX, CC_AVG};
  char what[256];
  size_t ci, ti, oi;
  int calls = 0;
  g_section = "reductions";
  for (ci = 0; ci < NCOUNTS; ci++) {
    size_t n = counts[ci];
    for (ti = 0; ti < sizeof types / sizeof types[0]; ti++)
      for (oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
        cc_dtype t = types[ti];
        cc_op op = ops[oi];
        unsigned char *in, *out;
        if (op == CC_AVG && t == CC_INT32) continue;
        if (n == LARGE && !((t == CC_FLOAT32 && op == CC_SUM) || (t == CC_FLOAT16 && op == CC_SUM) ||
                            (t == CC_INT32 && op == CC_MAX) || (t == CC_FLOAT64 && op == CC_AVG) ||
                            (t == CC_BFLOAT16 && op == CC_PROD)))
          continue;
        snprintf(what, sizeof what, "all_reduce %s %s count %zu", tname(t), oname(op), n);
        in = (unsigned char *)make_input(t, op, g_rank, 0, n);
        out = rbuf(n * esize(t));
        must(cc_all_reduce(g_c, in, out, n, t, op), what);
        check_reduced(out, t, op, 0, n, what);
        check_guard(out, n * esize(t), what);
        free(in);
        free(out);
        calls++;
      }
    {                                  /* in place */
      unsigned char *io = (unsigned char *)make_input(CC_FLOAT64, CC_SUM, g_rank, 0, n);
      snprintf(what, sizeof what, "all_reduce in place float64 sum count %zu", n);
      must(cc_all_reduce(g_c, io, io, n, CC_FLOAT64, CC_SUM), what);
      check_reduced(io, CC_FLOAT64, CC_SUM, 0, n, what);
      free(io);
      calls++;
    }
    for (ti = 0; ti < 2; ti++) {       /* reduce to a root that moves with the count */
      cc_dtype t = ti ? CC_INT32 : CC_FLOAT16;
      cc_op op = ti ? CC_MIN : CC_SUM;
      int root = (int)((n + ti) % (size_t)g_size);
      unsigned char *in = (unsigned char *)make_input(t, op, g_rank, 0, n);
      unsigned char *out = g_rank == root ? rbuf(n * esize(t)) : NULL;
      snprintf(what, sizeof what, "reduce %s %s count %zu root %d", tname(t), oname(op), n, root);
      must(cc_reduce(g_c, in, out, n, t, op, root), what);
      if (g_rank == root) {
        check_reduced(out, t, op, 0, n, what);
        check_guard(out, n * esize(t), what);
      }
      free(in);
      free(out);
      calls++;
    }
    for (ti = 0; ti < 2; ti++) {       /* reduce_scatter: n per rank (n/size when large) */
      cc_dtype t = ti ? CC_BFLOAT16 : CC_FLOAT32;
      cc_op op = ti ? CC_MAX : CC_SUM;
      size_t per = n == LARGE ? n / (size_t)g_size : n;
      unsigned char *in = (unsigned char *)make_input(t, op, g_rank, 0, per * (size_t)g_size);
      unsigned char *out = rbuf(per * esize(t));
      snprintf(what, sizeof what, "reduce_scatter %s %s count %zu", tname(t), oname(op), per);
      must(cc_reduce_scatter(g_c, in, out, per, t, op), what);
      check_reduced(out, t, op, per * (size_t)g_rank, per, what);
      check_guard(out, per * esize(t), what);
      free(in);
      free(out);
      calls++;
    }
  }
  snprintf(what, sizeof what,
           "%d all_reduce/reduce/reduce_scatter calls: counts 0 1 7 1000 %zu, int32 float32 "
           "float64 float16 bfloat16 x sum prod min max avg",
           calls, LARGE);
  section_end(what);
}

static uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* A float32 sum of inexact values: every rank must hold the same bits. */
static void sec_bitwise(void) {
  static const size_t ns[] = {1000, LARGE};
  size_t k, i;
  int r;
  g_section = "identical bits";
  for (k = 0; k < 2; k++) {
    size_t n = ns[k];
    float *in = (float *)xmalloc(n * 4), *out = (float *)xmalloc(n * 4);
    uint64_t h, *all = (uint64_t *)xmalloc(sizeof(uint64_t) * (size_t)g_size);
    int fold_equal = 1;
    for (i = 0; i < n; i++) in[i] = 0.1f * (float)(g_rank + 1) * (float)(i % 13);
    must(cc_all_reduce(g_c, in, out, n, CC_FLOAT32, CC_SUM), "all_reduce float32 sum (inexact)");
    h = fnv1a(out, n * 4);
    must(cc_all_gather(g_c, &h, all, 1, CC_UINT64), "all_gather of the result hashes");
    for (r = 0; r < g_size; r++)
      if (all[r] != h) {
        bad("all_reduce float32 sum of %zu inexact values: rank %d's result hashes to %016llx, "
            "this rank's to %016llx",
            n, r, (unsigned long long)all[r], (unsigned long long)h);
        break;
      }
    /* Informational: README documents a left fold in rank order. */
    for (i = 0; i < n && fold_equal; i++) {
      float acc = 0.1f * 1.0f * (float)(i % 13);
      for (r = 1; r < g_size; r++) acc += 0.1f * (float)(r + 1) * (float)(i % 13);
      if (memcmp(&acc, &out[i], 4) != 0) fold_equal = 0;
    }
    if (g_rank == 0) {
      printf("info: float32 sum of %zu inexact values: hash %016llx, %s the rank-order left fold\n",
             n, (unsigned long long)h, fold_equal ? "equal to" : "NOT equal to");
      fflush(stdout);
    }
    free(in);
    free(out);
    free(all);
  }
  section_end("all_reduce float32 sum of 0.1f*(rank+1)*(i%13), counts 1000 and 3 MiB: the same "
              "bits on every rank");
}

/* broadcast of n float64 from root size-1; returns the number of calls made. */
static int move_broadcast(size_t n, unsigned salt) {
  char what[256];
  unsigned char *b;
  int root = g_size - 1;
  size_t bytes = n * 8;
  b = rbuf(bytes);
  if (g_rank == root) fill_payload(b, bytes, root, -1, salt);
  snprintf(what, sizeof what, "broadcast float64 count %zu root %d", n, root);
  must(cc_broadcast(g_c, b, n, CC_FLOAT64, root), what);
  check_payload(b, bytes, root, -1, salt, what);
  check_guard(b, bytes, what);
  free(b);
  return 1;
}

/* A receive of one block of `bytes` from every rank, in rank order: rank r's
   holds its payload to `to`, and the guard after the last is untouched. */
static void check_blocks(unsigned char *rcv, size_t bytes, int to, unsigned salt, const char *what) {
  int r;
  for (r = 0; r < g_size; r++) check_payload(at(rcv, bytes * (size_t)r), bytes, r, to, salt, what);
  check_guard(rcv, bytes * (size_t)g_size, what);
}

/* gather of per int32 per rank to root 0; returns the number of calls made. */
static int move_gather(size_t per, unsigned salt) {
  char what[256];
  unsigned char *s, *rcv;
  size_t N = (size_t)g_size;
  size_t bytes = per * 4;
  s = rbuf(bytes);
  fill_payload(s, bytes, g_rank, 0, salt + 1000);
  rcv = g_rank == 0 ? rbuf(bytes * N) : NULL;
  snprintf(what, sizeof what, "gather int32 count %zu root 0", per);
  must(cc_gather(g_c, s, rcv, per, CC_INT32, 0), what);
  if (g_rank == 0) check_blocks(rcv, bytes, 0, salt + 1000, what);
  free(s);
  free(rcv);
  return 1;
}

/* all_gather of per float16 per rank, out of place, then in place; returns the
 * number of calls made. */
static int move_all_gather(size_t per, unsigned salt) {
  char what[256];
  unsigned char *s, *rcv;
  size_t N = (size_t)g_size;
  size_t bytes = per * 2;
  s = rbuf(bytes);
  fill_payload(s, bytes, g_rank, -2, salt + 2000);
  rcv = rbuf(bytes * N);
  snprintf(what, sizeof what, "all_gather float16 count %zu", per);
  must(cc_all_gather(g_c, s, rcv, per, CC_FLOAT16), what);
  check_blocks(rcv, bytes, -2, salt + 2000, what);
  if (rcv) {
    memset(rcv, SENTINEL, bytes * N);
    fill_payload(at(rcv, bytes * (size_t)g_rank), bytes, g_rank, -2, salt + 2000);
  }
  snprintf(what, sizeof what, "all_gather in place float16 count %zu", per);
  must(cc_all_gather(g_c, rcv ? at(rcv, bytes * (size_t)g_rank) : NULL, rcv, per, CC_FLOAT16), what);
  check_blocks(rcv, bytes, -2, salt + 2000, what);
  free(s);
  free(rcv);
  return 2;
}

/* scatter of per float32 per rank from root size-1; returns the number of calls made. */
static int move_scatter(size_t per, unsigned salt) {
  char what[256];
  unsigned char *s, *rcv;
  int r;
  size_t N = (size_t)g_size;
  int root = g_size - 1;
  size_t bytes = per * 4;
  s = g_rank == root ? rbuf(bytes * N) : NULL;
  if (s)
    for (r = 0; r < g_size; r++) fill_payload(at(s, bytes * (size_t)r), bytes, root, r, salt + 3000);
  rcv = rbuf(bytes);
  snprintf(what, sizeof what, "scatter float32 count %zu root %d", per, root);
  must(cc_scatter(g_c, s, rcv, per, CC_FLOAT32, root), what);
  check_payload(rcv, bytes, root, g_rank, salt + 3000, what);
  check_guard(rcv, bytes, what);
  free(s);
  free(rcv);
  return 1;
}

/* all_to_all of int32, then of float16, n per pair (n/size/size when large);
 * returns the number of calls made. */
static int move_all_to_all(size_t n, unsigned salt) {
  char what[256];
  unsigned char *s, *rcv;
  int r, k, calls = 0;
  size_t N = (size_t)g_size;
  for (k = 0; k < 2; k++) {
    cc_dtype t = k ? CC_FLOAT16 : CC_INT32;
    size_t each = n == LARGE ? n / N / N : n;
    size_t bytes = each * esize(t);
    s = rbuf(bytes * N);
    for (r = 0; r < g_size; r++)
      if (s) fill_payload(at(s, bytes * (size_t)r), bytes, g_rank, r, salt + 4000 + (unsigned)k);
    rcv = rbuf(bytes * N);
    snprintf(what, sizeof what, "all_to_all %s count %zu", tname(t), each);
    must(cc_all_to_all(g_c, s, rcv, each, t), what);
    check_blocks(rcv, bytes, g_rank, salt + 4000 + (unsigned)k, what);
    free(s);
    free(rcv);
    calls++;
  }
  return calls;
}

/* broadcast, gather, all_gather, scatter, all_to_all: payload bytes. */
static void sec_move(void) {
  char what[256];
  size_t ci;
  int calls = 0;
  unsigned salt = 100;
  g_section = "data movement";
  for (ci = 0; ci < NCOUNTS; ci++) {
    size_t n = counts[ci];
    size_t per = n == LARGE ? n / (size_t)g_size : n;   /* per rank, for *gather/scatter/to_all */
    salt++;
    calls += move_broadcast(n, salt);
    calls += move_gather(per, salt);
    calls += move_all_gather(per, salt);
    calls += move_scatter(per, salt);
    calls += move_all_to_all(n, salt);
  }
  snprintf(what, sizeof what,
           "%d broadcast/gather/all_gather (also in place)/scatter/all_to_all calls, counts 0 1 7 "
           "1000 and 3 MiB",
           calls);
  section_end(what);
}

/* Element count of rank r's block in the _v tests: uneven, 0 for r % 3 == 1. */
static size_t vcount(int r, size_t k) { return r % 3 == 1 ? 0 : k * (size_t)(r + 1); }
/* all_to_all_v: elements src sends to dst. */
static size_t a2a_count(int src, int dst, size_t k) {
  return (src + 2 * dst) % 3 == 0 ? 0 : k * (size_t)(1 + (src + dst) % 3);
}

/* The layout of one round of the _v tests: the gather/scatter blocks (cnt at
 * dsp, total elements in all) and this rank's all_to_all_v send and receive
 * blocks, each with gaps between the blocks. */
struct vlayout {
  size_t k, total, stotal, rtotal;
  size_t *cnt, *dsp, *scnt, *sdsp, *rcnt, *rdsp;
};

/* Lays out the blocks for k: 3-element gaps before each gather/scatter block,
 * 2 before each send block, 5 before each receive block. */
static void v_layout(struct vlayout *L, size_t k) {
  size_t total = 0, stotal = 0, rtotal = 0;
  int r;
  L->k = k;
  for (r = 0; r < g_size; r++) {     /* blocks with 3-element gaps between them */
    L->cnt[r] = vcount(r, k);
    L->dsp[r] = total + 3;
    total = L->dsp[r] + L->cnt[r];
    L->scnt[r] = a2a_count(g_rank, r, k);
    L->sdsp[r] = stotal + 2;
    stotal = L->sdsp[r] + L->scnt[r];
    L->rcnt[r] = a2a_count(r, g_rank, k);
    L->rdsp[r] = rtotal + 5;
    rtotal = L->rdsp[r] + L->rcnt[r];
  }
  L->total = total;
  L->stotal = stotal;
  L->rtotal = rtotal;
}

/* A v receive: rank r's block of cnt[r] elements of es bytes at dsp[r] holds
   its payload to `to`, the gaps before each block and the guard after the
   last are untouched. */
static void check_v_blocks(const unsigned char *rcv, const size_t *cnt, const size_t *dsp, size_t total, size_t es,
                           int to, unsigned salt, const char *what) {
  size_t prev = 0;
  int r;
  for (r = 0; r < g_size; r++) {
    check_untouched(rcv + prev * es, (dsp[r] - prev) * es, what);
    check_payload(rcv + dsp[r] * es, cnt[r] * es, r, to, salt, what);
    prev = dsp[r] + cnt[r];
  }
  check_guard(rcv, total * es, what);
}

/* gather_v, int32, root size-1. */
static void v_gather(const struct vlayout *L, unsigned salt) {
  const size_t *cnt = L->cnt, *dsp = L->dsp;
  size_t k = L->k, total = L->total;
  char what[256];
  unsigned char *s, *rcv;
  int root = g_size - 1;
  size_t mine = cnt[g_rank] * 4;
  s = rbuf(mine);
  fill_payload(s, mine, g_rank, root, salt);
  rcv = g_rank == root ? rbuf(total * 4) : NULL;
  snprintf(what, sizeof what, "gather_v int32 k %zu root %d", k, root);
  must(cc_gather_v(g_c, s, cnt[g_rank], rcv, cnt, dsp, CC_INT32, root), what);
  if (rcv) check_v_blocks(rcv, cnt, dsp, total, 4, root, salt, what);
  free(s);
  free(rcv);
}

/* all_gather_v, float16. */
static void v_all_gather(const struct vlayout *L, unsigned salt) {
  const size_t *cnt = L->cnt, *dsp = L->dsp;
  size_t k = L->k, total = L->total;
  char what[256];
  unsigned char *s, *rcv;
  size_t mine = cnt[g_rank] * 2;
  s = rbuf(mine);
  fill_payload(s, mine, g_rank, -1, salt + 1);
  rcv = rbuf(total * 2);
  snprintf(what, sizeof what, "all_gather_v float16 k %zu", k);
  must(cc_all_gather_v(g_c, s, cnt[g_rank], rcv, cnt, dsp, CC_FLOAT16), what);
  check_v_blocks(rcv, cnt, dsp, total, 2, -1, salt + 1, what);
  free(s);
  free(rcv);
}

/* scatter_v, float64, root 0. */
static void v_scatter(const struct vlayout *L, unsigned salt) {
  const size_t *cnt = L->cnt, *dsp = L->dsp;
  size_t k = L->k, total = L->total;
  char what[256];
  unsigned char *s, *rcv;
  int r;
  size_t mine = cnt[g_rank] * 8;
  s = g_rank == 0 ? rbuf(total * 8) : NULL;
  if (s)
    for (r = 0; r < g_size; r++) fill_payload(s + dsp[r] * 8, cnt[r] * 8, 0, r, salt + 2);
  rcv = rbuf(mine);
  snprintf(what, sizeof what, "scatter_v float64 k %zu root 0", k);
  must(cc_scatter_v(g_c, s, cnt, dsp, rcv, cnt[g_rank], CC_FLOAT64, 0), what);
  check_payload(rcv, mine, 0, g_rank, salt + 2, what);
  check_guard(rcv, mine, what);
  free(s);
  free(rcv);
}

/* all_to_all_v, int32. */
static void v_all_to_all(const struct vlayout *L, unsigned salt) {
  const size_t *scnt = L->scnt, *sdsp = L->sdsp, *rcnt = L->rcnt, *rdsp = L->rdsp;
  size_t k = L->k, stotal = L->stotal, rtotal = L->rtotal;
  char what[256];
  unsigned char *s, *rcv;
  int r;
  s = rbuf(stotal * 4);
  for (r = 0; r < g_size; r++) fill_payload(s + sdsp[r] * 4, scnt[r] * 4, g_rank, r, salt + 3);
  rcv = rbuf(rtotal * 4);
  snprintf(what, sizeof what, "all_to_all_v int32 k %zu", k);
  must(cc_all_to_all_v(g_c, s, scnt, sdsp, rcv, rcnt, rdsp, CC_INT32), what);
  check_v_blocks(rcv, rcnt, rdsp, rtotal, 4, g_rank, salt + 3, what);
  free(s);
  free(rcv);
}

static void sec_v(void) {
  static const size_t ks[] = {1, 7, 1000, 0};
  char what[256];
  size_t ki, N = (size_t)g_size;
  struct vlayout L;
  int calls = 0;
  unsigned salt = 5000;
  L.cnt = (size_t *)xmalloc(sizeof(size_t) * N);
  L.dsp = (size_t *)xmalloc(sizeof(size_t) * N);
  L.scnt = (size_t *)xmalloc(sizeof(size_t) * N);
  L.sdsp = (size_t *)xmalloc(sizeof(size_t) * N);
  L.rcnt = (size_t *)xmalloc(sizeof(size_t) * N);
  L.rdsp = (size_t *)xmalloc(sizeof(size_t) * N);
  g_section = "v variants";
  for (ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
    salt += 10;
    v_layout(&L, ks[ki] ? ks[ki] : LARGE / (N * (N + 1)));
    v_gather(&L, salt);
    v_all_gather(&L, salt);
    v_scatter(&L, salt);
    v_all_to_all(&L, salt);
    calls += 4;                        /* one call each */
  }
  free(L.cnt); free(L.dsp); free(L.scnt); free(L.sdsp); free(L.rcnt); free(L.rdsp);
  snprintf(what, sizeof what,
           "%d gather_v/all_gather_v/scatter_v/all_to_all_v calls, uneven counts with zeros, "
           "gaps between blocks",
           calls);
  section_end(what);
}

/* send/recv in groups: a ring one way, then both ways. */
static void sec_p2p(void) {
  static const size_t ns[] = {1, 1000, LARGE};
  size_t k;
  int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  char what[256];
  g_section = "send/recv";
  for (k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    size_t bytes = ns[k] * 4;
    unsigned salt = 6000 + (unsigned)k * 10;
    unsigned char *s1 = rbuf(bytes), *s2 = rbuf(bytes), *r1 = rbuf(bytes), *r2 = rbuf(bytes);
    fill_payload(s1, bytes, g_rank, next, salt);
    snprintf(what, sizeof what, "ring in a group, float32 count %zu", ns[k]);
    must(cc_group_begin(g_c), "group_begin");
    must(cc_send(g_c, s1, ns[k], CC_FLOAT32, next, 5), "send (ring)");
    must(cc_recv(g_c, r1, ns[k], CC_FLOAT32, prev, 5), "recv (ring)");
    must(cc_group_end(g_c, NULL), what);
    check_payload(r1, bytes, prev, g_rank, salt, what);
    check_guard(r1, bytes, what);

    /* Both directions, one tag: with 2 ranks next == prev, and the per-pair,
       per-tag order decides which message is which. */
    memset(r1, SENTINEL, bytes + GUARD);
    fill_payload(s1, bytes, g_rank, next, salt + 1);
    fill_payload(s2, bytes, g_rank, prev, salt + 2);
    snprintf(what, sizeof what, "ring both ways in a group, float32 count %zu", ns[k]);
    must(cc_group_begin(g_c), "group_begin");
    must(cc_send(g_c, s1, ns[k], CC_FLOAT32, next, 6), "send (to next)");
    must(cc_send(g_c, s2, ns[k], CC_FLOAT32, prev, 6), "send (to prev)");
    must(cc_recv(g_c, r1, ns[k], CC_FLOAT32, prev, 6), "recv (from prev)");
    must(cc_recv(g_c, r2, ns[k], CC_FLOAT32, next, 6), "recv (from next)");
    must(cc_group_end(g_c, NULL), what);
    check_payload(r1, bytes, prev, g_rank, salt + 1, what);
    check_payload(r2, bytes, next, g_rank, salt + 2, what);
    check_guard(r1, bytes, what);
    check_guard(r2, bytes, what);
    free(s1); free(s2); free(r1); free(r2);
  }
  section_end("ring one way and both ways in groups, float32 counts 1, 1000, 3 MiB");
}

/* Receives from any source: every rank (rank 0 too, to itself) sends 8
   messages of 4000 bytes with one tag, one of 3 MiB with another, and one
   more with a third; rank 0 takes them all with cc_recv_any, the last ones in
   one group with a request: each source names the sender of the payload,
   each sender's messages come in the order it sent them, none is missing. */
static void sec_any(void) {
  enum { K = 8 };
  size_t small = 4000, i;
  int j, src, seq[64], n = g_size < 64 ? g_size : 64, srcs[64];
  unsigned char *s = rbuf(LARGE * 4), *r = rbuf(LARGE * 4), *rs[64];
  char what[160];
  cc_request *req = NULL;
  g_section = "any source";
  for (j = 0; j < K; j++) {
    fill_payload(s, small, g_rank, 0, 8000 + (unsigned)j);
    must(cc_send(g_c, s, small, CC_UINT8, 0, 12), "send (to rank 0)");
  }
  fill_payload(s, LARGE * 4, g_rank, 0, 8100);
  must(cc_send(g_c, s, LARGE, CC_FLOAT32, 0, 13), "send (3 MiB to rank 0)");
  if (g_rank == 0) {
    memset(seq, 0, sizeof seq);
    for (i = 0; i < (size_t)g_size * K; i++) {
      must(cc_recv_any(g_c, r, small, CC_UINT8, 12, &src), "recv_any");
      if (src < 0 || src >= n) { bad("receive %zu: source %d", i, src); break; }
      snprintf(what, sizeof what, "receive %zu from any source (rank %d's message %d)", i, src, seq[src]);
      check_payload(r, small, src, 0, 8000 + (unsigned)seq[src], what);
      seq[src]++;
    }
    for (j = 0; j < n; j++)
      if (seq[j] != K) bad("%d messages from rank %d, not %d", seq[j], j, K);
    memset(seq, 0, sizeof seq);
    for (j = 0; j < g_size; j++) {
      must(cc_recv_any(g_c, r, LARGE, CC_FLOAT32, 13, &src), "recv_any (3 MiB)");
      if (src < 0 || src >= n || seq[src]++) { bad("3 MiB receive %d: source %d (again?)", j, src); break; }
      check_payload(r, LARGE * 4, src, 0, 8100, "3 MiB from any source");
      check_guard(r, LARGE * 4, "3 MiB from any source");
    }
  }
  fill_payload(s, 1000, g_rank, 0, 8200);
  if (g_rank != 0) must(cc_send(g_c, s, 1000, CC_UINT8, 0, 14), "send (to rank 0, third tag)");
  if (g_rank == 0) {
    must(cc_group_begin(g_c), "group_begin");
    must(cc_send(g_c, s, 1000, CC_UINT8, 0, 14), "send to itself (queued)");
    for (j = 0; j < n; j++) {
      rs[j] = rbuf(1000);
      must(cc_recv_any(g_c, rs[j], 1000, CC_UINT8, 14, &srcs[j]), "recv_any (queued)");
    }
    must(cc_group_end(g_c, &req), "group_end with a request");
    must(cc_wait(req), "wait");
    memset(seq, 0, sizeof seq);
    for (j = 0; j < n; j++) {
      if (srcs[j] < 0 || srcs[j] >= n || seq[srcs[j]]++) { bad("queued receive %d: source %d (again?)", j, srcs[j]); continue; }
      check_payload(rs[j], 1000, srcs[j], 0, 8200, "queued receive from any source");
      free(rs[j]);
    }
  }
  free(s);
  free(r);
  section_end("cc_recv_any: 8 messages from every rank, in each sender's order; 3 MiB from each; in a group with a request");
}

/* cc_group_end(c, &req): an all_reduce and a ring run while this rank computes. */
static void sec_async(void) {
  size_t n = 1000, i;
  int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size, done = 0, polls = 0;
  unsigned char *in = (unsigned char *)make_input(CC_FLOAT32, CC_SUM, g_rank, 0, n);
  unsigned char *out = rbuf(n * 4), *s = rbuf(n * 8), *r = rbuf(n * 8);
  cc_request *req = NULL;
  double busy = 0;
  g_section = "async group";
  fill_payload(s, n * 8, g_rank, next, 7000);
  must(cc_group_begin(g_c), "group_begin");
  must(cc_all_reduce(g_c, in, out, n, CC_FLOAT32, CC_SUM), "all_reduce (queued)");
  must(cc_send(g_c, s, n, CC_FLOAT64, next, 9), "send (queued)");
  must(cc_recv(g_c, r, n, CC_FLOAT64, prev, 9), "recv (queued)");
  must(cc_group_end(g_c, &req), "group_end with a request");
  for (i = 0; i < 200000; i++) busy += (double)i * 0.5;   /* compute meanwhile */
  if (busy < 0) bad("arithmetic");                       /* keeps the loop */
  must(cc_test(req, &done), "test");
  while (!done && polls++ < 1000) {
    sleep_ms(1);
    must(cc_test(req, &done), "test");
  }
  must(cc_wait(req), "wait");
  check_reduced(out, CC_FLOAT32, CC_SUM, 0, n, "async all_reduce float32 sum count 1000");
  check_guard(out, n * 4, "async all_reduce");
  check_payload(r, n * 8, prev, g_rank, 7000, "async ring float64 count 1000");
  check_guard(r, n * 8, "async ring");
  free(in); free(out); free(s); free(r);
  section_end("all_reduce + send/recv ring in cc_group_end(c, &req), cc_test, cc_wait");
}

/* cc_comm_split into even and odd ranks, then an all_reduce on each half. */
static void sec_split(void) {
  cc_comm *sub = NULL;
  int color = g_rank % 2, want_size = color ? g_size / 2 : (g_size + 1) / 2;
  int32_t x = g_rank + 1, sum = 0, want = 0;
  size_t n = 1000, i;
  int r;
  unsigned char *in, *out;
  char gs[40], ws[40];
  g_section = "split";
  must(cc_comm_split(g_c, color, g_rank, &sub), "comm_split (even/odd)");
  if (!sub) {
    bad("comm_split with color %d gave no communicator", color);
    section_end("cc_comm_split even/odd");
    return;
  }
  if (cc_comm_size(sub) != want_size || cc_comm_rank(sub) != g_rank / 2)
    bad("split: rank %d of %d in the %s half, expected rank %d of %d", cc_comm_rank(sub),
        cc_comm_size(sub), color ? "odd" : "even", g_rank / 2, want_size);
  must(cc_all_reduce(sub, &x, &sum, 1, CC_INT32, CC_SUM), "all_reduce on the split communicator");
  for (r = color; r < g_size; r += 2) want += r + 1;
  if (sum != want) bad("all_reduce int32 sum on the %s half: %d, expected %d", color ? "odd" : "even",
                       (int)sum, (int)want);
  /* float32 sum of the world inputs of this half's members */
  in = (unsigned char *)make_input(CC_FLOAT32, CC_SUM, g_rank, 0, n);
  out = rbuf(n * 4);
  must(cc_all_reduce(sub, in, out, n, CC_FLOAT32, CC_SUM), "all_reduce float32 on the split communicator");
  for (i = 0; i < n; i++) {
    unsigned char w[4];
    put(CC_FLOAT32, w, 0, reference(CC_SUM, i, color, want_size, 2));
    if (memcmp(out + i * 4, w, 4) != 0) {
      describe(CC_FLOAT32, out + i * 4, gs, sizeof gs);
      describe(CC_FLOAT32, w, ws, sizeof ws);
      bad("all_reduce float32 sum count 1000 on the %s half: element %zu is %s, expected %s",
          color ? "odd" : "even", i, gs, ws);
      break;
    }
  }
  check_guard(out, n * 4, "split all_reduce");
  free(in);
  free(out);
  must(cc_comm_destroy(sub), "comm_destroy (split)");
  section_end("cc_comm_split even/odd: sizes, ranks, all_reduce int32 and float32 on each half");
}

/* ------------------------------------------------------------ modes */

static int init_or_report(int all_mode) {
  double t0 = now_ms();
  cc_config cfg;
  cc_result r;
  cc_config_init(&cfg);
  cfg.init_method = getenv("NET_PROBE_INIT");   /* e.g. file:///PATH (NULL: env://) */
  r = cc_comm_init(&g_c, &cfg);
  if (r != CC_OK) {
    const char *msg = cc_comm_last_error(NULL);
    char name[64];
    code_name(r, name, sizeof name);
    if (all_mode) {
      printf("FAIL: net_probe: cc_comm_init returned %s: %s\n", name, msg);
    }
    result_line(r, now_ms() - t0, msg);
    return 0;
  }
  g_rank = cc_comm_rank(g_c);
  g_size = cc_comm_size(g_c);
  return 1;
}

static int mode_all(double hold_ms) {
  if (!init_or_report(1)) return 3;
  if (g_rank == 0) {
    printf("info: size %d local_size %d\n", g_size, cc_comm_local_size(g_c));
    fflush(stdout);
  }
  if (hold_ms > 0) {
    g_section = "hold";
    must(cc_barrier(g_c), "barrier");
    printf("ready: rank %d\n", g_rank);
    fflush(stdout);
    sleep_ms(hold_ms);
  }
  sec_barrier();
  sec_reduce();
  sec_bitwise();
  sec_move();
  sec_v();
  sec_p2p();
  sec_any();
  sec_async();
  sec_split();
  g_section = "destroy";
  must(cc_comm_destroy(g_c), "comm_destroy");
  return g_any_failed ? 1 : 0;
}

/* Loop all_reduce until an error; `victim` >= 0 dies 500 ms after the barrier. */
static int mode_loop(int victim, double limit_ms) {
  int32_t x[1000], y[1000];
  double t0;
  size_t i;
  cc_result r;
  if (!init_or_report(0)) return 3;
  g_section = "loop";
  for (i = 0; i < 1000; i++) x[i] = g_rank + (int32_t)i;
  r = cc_all_reduce(g_c, x, y, 1000, CC_INT32, CC_SUM);
  if (r == CC_OK) r = cc_barrier(g_c);
  t0 = now_ms();
  if (r != CC_OK) {
    result_line(r, 0, cc_comm_last_error(g_c));
    return 3;
  }
  printf("ready: rank %d\n", g_rank);
  fflush(stdout);
  if (victim >= 0) t0 += 500;           /* the planned death */
  if (g_rank == victim) {
    sleep_ms(t0 - now_ms());
    printf("die: rank %d\n", g_rank);
    fflush(stdout);
    raise(SIGKILL);
  }
  signal(SIGTERM, SIG_IGN);
  for (;;) {
    r = cc_all_reduce(g_c, x, y, 1000, CC_INT32, CC_SUM);
    if (r != CC_OK) break;
    if (now_ms() - t0 > limit_ms) {
      printf("result: none after %.0f ms: every all_reduce succeeded\n", now_ms() - t0);
      fflush(stdout);
      return 4;
    }
  }
  result_line(r, now_ms() - t0, cc_comm_last_error(g_c));
  return 3;
}

/* diein COLL VICTIM: see the top of the file. */
static int mode_diein(const char *coll, int victim) {
  const size_t per = 16384;            /* float32: 64 KiB per rank or pair */
  float *x, *y, one = 1;
  double t0;
  cc_result r;
  int src = -1;
  if (strcmp(coll, "gather") && strcmp(coll, "recv") && strcmp(coll, "recv_any") && strcmp(coll, "all_to_all"))
    return 2;
  if (!init_or_report(0)) return 3;
  g_section = "diein";
  x = (float *)xmalloc(per * (size_t)g_size * sizeof(float));
  y = (float *)xmalloc(per * (size_t)g_size * sizeof(float));
  memset(x, 0, per * (size_t)g_size * sizeof(float));
  r = cc_all_reduce(g_c, &one, &one, 1, CC_FLOAT32, CC_SUM);
  if (r == CC_OK) r = cc_barrier(g_c);
  t0 = now_ms() + 500;                 /* the planned death */
  if (r != CC_OK) {
    result_line(r, 0, cc_comm_last_error(g_c));
    return 3;
  }
  printf("ready: rank %d\n", g_rank);
  fflush(stdout);
  if (g_rank == victim) {
    sleep_ms(t0 - now_ms());
    printf("die: rank %d\n", g_rank);
    fflush(stdout);
    raise(SIGKILL);
  }
  signal(SIGTERM, SIG_IGN);
  if (!strcmp(coll, "gather")) r = cc_gather(g_c, x, y, per, CC_FLOAT32, 0);
  else if (!strcmp(coll, "recv") && g_rank != 0) {  /* only rank 0 waits on the victim */
    sleep_ms(1500);
    printf("result: idle: rank %d made no call\n", g_rank);
    return 3;
  } else if (!strcmp(coll, "recv")) r = cc_recv(g_c, y, per, CC_FLOAT32, victim, 7);
  else if (!strcmp(coll, "recv_any") && g_rank != 0) {   /* the others leave: then no rank that could send is left */
    sleep_ms(t0 - now_ms());
    cc_comm_destroy(g_c);
    printf("result: left: rank %d destroyed its communicator\n", g_rank);
    return 3;
  } else if (!strcmp(coll, "recv_any")) r = cc_recv_any(g_c, y, per, CC_FLOAT32, 7, &src);
  else r = cc_all_to_all(g_c, x, y, per, CC_FLOAT32);
  /* a non-root of gather may finish its send before the death: learn of it */
  while (r == CC_OK && now_ms() - t0 < 30000) r = cc_barrier(g_c);
  result_line(r, now_ms() - t0, r == CC_OK ? "the call succeeded" : cc_comm_last_error(g_c));
  sleep_ms(300);
  free(x);
  free(y);
  return r == CC_OK ? 4 : 3;
}

static int mode_token(void) {
  double t0 = now_ms();
  cc_result r;
  if (!init_or_report(0)) return 3;
  r = cc_barrier(g_c);
  result_line(r, now_ms() - t0, r == CC_OK ? "init and barrier succeeded" : cc_comm_last_error(g_c));
  if (r == CC_OK) cc_comm_destroy(g_c);
  return r == CC_OK ? 0 : 3;
}

/* mismatch KIND: rank 1 makes a call that does not match rank 0's: 1 another
   op (all_reduce max against sum), 2 another collective (broadcast against
   all_reduce), 3 another count (large), 4, 5, 6 another op (sum against max)
   at counts 39218, 75534, 119728 (a call identified by a short hash of its
   arguments would take these for the same call). Exit 0 when this rank got
   CC_ERR_MISMATCH. */
static int mode_mismatch(int kind) {
  static float x[300000], y[300000];
  cc_result r;
  double t0 = now_ms();
  int odd;
  if (!init_or_report(0)) return 3;
  odd = g_rank == 1;
  if (kind == 1) r = cc_all_reduce(g_c, x, y, 1000, CC_FLOAT32, odd ? CC_MAX : CC_SUM);
  else if (kind == 2) r = odd ? cc_broadcast(g_c, x, 1000, CC_FLOAT32, 0) : cc_all_reduce(g_c, x, y, 1000, CC_FLOAT32, CC_SUM);
  else if (kind == 3) r = cc_all_reduce(g_c, x, y, odd ? 300000 : 299999, CC_FLOAT32, CC_SUM);
  else {
    static const size_t colliding[3] = {39218, 75534, 119728};
    size_t i, n = colliding[(kind - 4) % 3];
    for (i = 0; i < n; i++) x[i] = (float)(g_rank + 1 + (i % 2));
    r = cc_all_reduce(g_c, x, y, n, CC_FLOAT32, odd ? CC_MAX : CC_SUM);
    if (r == CC_OK) printf("data: y[0] = %g, y[n-1] = %g\n", y[0], y[n - 1]);
  }
  result_line(r, now_ms() - t0, r == CC_OK ? "the mismatched call succeeded" : cc_comm_last_error(g_c));
  cc_comm_destroy(g_c);
  return r == CC_ERR_MISMATCH ? 0 : 3;
}

static int usage(const char *prog) {
  fprintf(stderr, "usage: %s all [hold MS] | die RANK | diein gather|recv|all_to_all RANK | hang | token | "
          "mismatch 1..6\n", prog);
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage(argv[0]);
  if (strcmp(argv[1], "all") == 0) {
    if (argc == 2) return mode_all(0);
    if (argc == 4 && strcmp(argv[2], "hold") == 0) return mode_all(atof(argv[3]));
    return usage(argv[0]);
  }
  if (strcmp(argv[1], "die") == 0 && argc == 3) return mode_loop(atoi(argv[2]), 30000);
  if (strcmp(argv[1], "diein") == 0 && argc == 4) {
    int r = mode_diein(argv[2], atoi(argv[3]));
    return r == 2 ? usage(argv[0]) : r;
  }
  if (strcmp(argv[1], "hang") == 0 && argc == 2) return mode_loop(-1, 60000);
  if (strcmp(argv[1], "token") == 0 && argc == 2) return mode_token();
  if (strcmp(argv[1], "mismatch") == 0 && argc == 3) return mode_mismatch(atoi(argv[2]));
  return usage(argv[0]);
}
