/* test_collectives - every collective against a plain reference.
 *
 * For world sizes 1..8 (one cc_spawn per size, every case inside it): broadcast,
 * reduce, all_reduce, gather, all_gather, scatter, reduce_scatter, all_to_all
 * and barrier; every dtype; for the reductions every op the dtype allows;
 * counts 0 (NULL buffers), 1, 7, 4099 and a large odd count above 1 MiB per
 * rank for a representative subset; in place and out of place; roots 0 and
 * size-1. Each rank checks its own results bitwise against a reference
 * computed here from the same deterministic inputs (test_ref.h), checks that
 * send buffers, root-only buffers of other ranks and guard bands around every
 * buffer are left alone, and records failures in memory shared with this
 * process, which prints one PASS/FAIL line per (collective, world size).
 * A short pass repeats a subset over the TCP transport (CC_TRANSPORT=tcp) at
 * world sizes 2 and 3. In the quick tier (CC_TEST_TIER=quick: make test) the
 * worlds of 1 to 4 ranks only.
 *
 *   test_collectives            everything
 *   test_collectives 3 8        only world sizes 3 and 8
 *   CC_TEST_QUICK=1             fewer large cases (sanitizer builds)
 *   CC_TEST_VERBOSE=1           timings per group and per large case on stderr */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"
#include "test_ref.h"

#define MAXR TR_MAXR

enum {
  K_BROADCAST, K_REDUCE, K_ALL_REDUCE, K_GATHER, K_ALL_GATHER, K_SCATTER,
  K_REDUCE_SCATTER, K_ALL_TO_ALL, K_BARRIER, K_RULES, K_COUNT
};
static const char *const k_names[K_COUNT] = {
  "broadcast", "reduce", "all_reduce", "gather", "all_gather", "scatter",
  "reduce_scatter", "all_to_all", "barrier", "dtype_op_rules"};

#define BARRIER_ROUNDS 24

typedef struct world_arg {
  tr_table *tab;
  int quick;
  int tcp; /* the short pass over TCP */
} world_arg;

typedef struct ctx {
  tr_ctx t;       /* rank, size, result table, current case label */
  world_arg *arg;
} ctx;

typedef struct tcase {
  int k;
  cc_dtype t;
  cc_op op;
  size_t count;
  int inplace;
  int root;
  int null_nonroot; /* pass NULL for root-only buffers on other ranks */
  uint64_t seed;
} tcase;

#define fail(x, cs, ...) ((void)(cs), tr_fail(&(x)->t, __VA_ARGS__))

static int check_rc(ctx *x, const tcase *cs, cc_result rc) {
  (void)cs;
  return tr_ok(&x->t, rc, k_names[cs->k]);
}

static void check_eq(ctx *x, const tcase *cs, const char *what, const void *got,
                     const void *want, size_t n) {
  char m[300];
  if (tr_compare(got, want, n, cs->t, m, sizeof m)) fail(x, cs, "%s: %s", what, m);
}

static void check_guards(ctx *x, const tcase *cs, const char *what, const void *p,
                         size_t bytes) {
  if (!tr_buf_guards_ok(p, bytes))
    fail(x, cs, "%s: bytes written outside the buffer (guard band changed)", what);
}

static void check_untouched(ctx *x, const tcase *cs, const char *what, const void *p,
                            size_t bytes) {
  size_t i;
  if (!p) return;
  i = tr_first_not_sentinel(p, bytes);
  if (i < bytes) fail(x, cs, "%s: written at byte %zu although it is not used here", what, i);
}

/* out-of-place send buffer: must be unchanged */
static void check_same(ctx *x, const tcase *cs, const char *what, const void *p,
                       const void *orig, size_t bytes) {
  if (p && orig && bytes && memcmp(p, orig, bytes) != 0)
    fail(x, cs, "%s: changed by the call (it is only read)", what);
}

static void *xalloc(size_t bytes) { return bytes ? tr_buf_alloc(bytes) : NULL; }
static void *xdup(const void *p, size_t bytes) {
  void *q;
  if (!p || !bytes) return NULL;
  q = malloc(bytes);
  if (q) memcpy(q, p, bytes);
  return q;
}

static double g_call_t0, g_call_t; /* verbose timing of the last reduction call */

/* tr_reference with a one-entry memo: the large cases of reduce and
 * all_reduce (in and out of place) share their inputs, so the reference,
 * which dominates their run time, is computed once. */
static struct {
  int valid, kind, n;
  cc_dtype t;
  cc_op op;
  uint64_t seed;
  size_t first, count;
  unsigned char *buf;
} g_memo;

static void reference(void *want, const tcase *cs, int kind, int n, size_t first) {
  size_t bytes = cs->count * tr_size(cs->t);
  if (cs->count <= 4099) {
    tr_reference(want, cs->t, cs->op, kind, cs->seed, n, first, cs->count);
    return;
  }
  if (g_memo.valid && g_memo.kind == kind && g_memo.n == n && g_memo.t == cs->t &&
      g_memo.op == cs->op && g_memo.seed == cs->seed && g_memo.first == first &&
      g_memo.count == cs->count) {
    memcpy(want, g_memo.buf, bytes);
    return;
  }
  tr_reference(want, cs->t, cs->op, kind, cs->seed, n, first, cs->count);
  free(g_memo.buf);
  g_memo.valid = 0;
  g_memo.buf = (unsigned char *)malloc(bytes);
  if (!g_memo.buf) return;
  memcpy(g_memo.buf, want, bytes);
  g_memo.valid = 1;
  g_memo.kind = kind;
  g_memo.n = n;
  g_memo.t = cs->t;
  g_memo.op = cs->op;
  g_memo.seed = cs->seed;
  g_memo.first = first;
  g_memo.count = cs->count;
}

static int gen_kind(cc_op op) { return op == CC_PROD ? TR_GEN_NEAR_ONE : TR_GEN_ANY; }

/* ------------------------------------------------------------ the cases */

static void run_broadcast(ctx *x, tcase *cs) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es;
  int kind = TR_GEN_ANY;
  unsigned char *buf = (unsigned char *)xalloc(bytes);
  unsigned char *want = (unsigned char *)xalloc(bytes);
  cc_result rc;
  if (cnt && (!buf || !want)) { fail(x, cs, "out of memory"); goto out; }
  if (x->t.rank == cs->root) tr_fill(buf, cs->t, kind, cs->seed, cs->root, 0, cnt);
  tr_fill(want, cs->t, kind, cs->seed, cs->root, 0, cnt);
  rc = cc_broadcast(x->t.c, buf, cnt, cs->t, cs->root);
  if (!check_rc(x, cs, rc)) goto out;
  check_eq(x, cs, "buf", buf, want, cnt);
  check_guards(x, cs, "buf", buf, bytes);
out:
  tr_buf_free(buf);
  tr_buf_free(want);
}

/* reduce (root >= 0) or all_reduce (root < 0) */
static void run_reduce(ctx *x, tcase *cs, int all) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es;
  int kind = gen_kind(cs->op), is_root = all || x->t.rank == cs->root;
  unsigned char *send = (unsigned char *)xalloc(bytes), *recv = NULL, *orig = NULL;
  unsigned char *want = NULL;
  cc_result rc;
  if (cnt && !send) { fail(x, cs, "out of memory"); goto out; }
  tr_fill(send, cs->t, kind, cs->seed, x->t.rank, 0, cnt);
  if (cs->inplace)
    recv = send;
  else if (is_root || !cs->null_nonroot)
    recv = (unsigned char *)xalloc(bytes);
  if (!cs->inplace || !is_root) orig = (unsigned char *)xdup(send, bytes);
  if (is_root) {
    want = (unsigned char *)xalloc(bytes);
    reference(want, cs, kind, x->t.n, 0);
  }
  g_call_t0 = tu_now();
  if (all)
    rc = cc_all_reduce(x->t.c, send, recv, cnt, cs->t, cs->op);
  else
    rc = cc_reduce(x->t.c, send, recv, cnt, cs->t, cs->op, cs->root);
  g_call_t = tu_now() - g_call_t0;
  if (!check_rc(x, cs, rc)) goto out;
  if (is_root) {
    check_eq(x, cs, "recvbuf", recv, want, cnt);
  } else {
    if (!cs->inplace) check_untouched(x, cs, "recvbuf of a non-root rank", recv, bytes);
  }
  check_same(x, cs, cs->inplace ? "buffer of a non-root rank" : "sendbuf", send, orig, bytes);
  check_guards(x, cs, "sendbuf", send, bytes);
  if (recv != send) check_guards(x, cs, "recvbuf", recv, bytes);
out:
  if (recv != send) tr_buf_free(recv);
  tr_buf_free(send);
  tr_buf_free(want);
  free(orig);
}

static void run_gather(ctx *x, tcase *cs, int all) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es, tot = bytes * (size_t)x->t.n;
  int kind = TR_GEN_ANY, is_root = all || x->t.rank == cs->root, r;
  unsigned char *send = NULL, *recv = NULL, *want = NULL, *orig = NULL;
  cc_result rc;
  if (is_root || !cs->null_nonroot) recv = (unsigned char *)xalloc(tot);
  if (cs->inplace && is_root) {
    if (recv) {
      send = recv + (size_t)x->t.rank * bytes;
      tr_fill(send, cs->t, kind, cs->seed, x->t.rank, 0, cnt);
    }
  } else {
    send = (unsigned char *)xalloc(bytes);
    tr_fill(send, cs->t, kind, cs->seed, x->t.rank, 0, cnt);
    orig = (unsigned char *)xdup(send, bytes);
  }
  if (cnt && (!recv || !send) && is_root) { fail(x, cs, "out of memory"); goto out; }
  if (is_root) {
    want = (unsigned char *)xalloc(tot);
    for (r = 0; r < x->t.n; r++) tr_fill(want + (size_t)r * bytes, cs->t, kind, cs->seed, r, 0, cnt);
  }
  if (all)
    rc = cc_all_gather(x->t.c, send, recv, cnt, cs->t);
  else
    rc = cc_gather(x->t.c, send, recv, cnt, cs->t, cs->root);
  if (!check_rc(x, cs, rc)) goto out;
  if (is_root)
    check_eq(x, cs, "recvbuf", recv, want, cnt * (size_t)x->t.n);
  else
    check_untouched(x, cs, "recvbuf of a non-root rank", recv, tot);
  if (orig) check_same(x, cs, "sendbuf", send, orig, bytes);
  check_guards(x, cs, "recvbuf", recv, tot);
  if (orig) check_guards(x, cs, "sendbuf", send, bytes);
out:
  if (!(cs->inplace && is_root)) tr_buf_free(send);
  tr_buf_free(recv);
  tr_buf_free(want);
  free(orig);
}

static void run_scatter(ctx *x, tcase *cs) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es, tot = bytes * (size_t)x->t.n;
  int kind = TR_GEN_ANY, is_root = x->t.rank == cs->root, inplace = cs->inplace && is_root;
  unsigned char *send = NULL, *recv = NULL, *want = NULL, *orig = NULL;
  cc_result rc;
  if (is_root || !cs->null_nonroot) send = (unsigned char *)xalloc(tot);
  if (is_root) tr_fill(send, cs->t, kind, cs->seed, cs->root, 0, cnt * (size_t)x->t.n);
  orig = (unsigned char *)xdup(send, tot);
  if (inplace)
    recv = send ? send + (size_t)x->t.rank * bytes : NULL;
  else
    recv = (unsigned char *)xalloc(bytes);
  want = (unsigned char *)xalloc(bytes);
  tr_fill(want, cs->t, kind, cs->seed, cs->root, (size_t)x->t.rank * cnt, cnt);
  if (cnt && (!recv || !want || (is_root && !send))) { fail(x, cs, "out of memory"); goto out; }
  rc = cc_scatter(x->t.c, send, recv, cnt, cs->t, cs->root);
  if (!check_rc(x, cs, rc)) goto out;
  check_eq(x, cs, "recvbuf", recv, want, cnt);
  if (is_root)
    check_same(x, cs, "sendbuf", send, orig, tot);
  else
    check_untouched(x, cs, "sendbuf of a non-root rank", send, tot);
  check_guards(x, cs, "sendbuf", send, tot);
  if (!inplace) check_guards(x, cs, "recvbuf", recv, bytes);
out:
  if (!inplace) tr_buf_free(recv);
  tr_buf_free(send);
  tr_buf_free(want);
  free(orig);
}

static void run_reduce_scatter(ctx *x, tcase *cs) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es, tot = bytes * (size_t)x->t.n;
  int kind = gen_kind(cs->op);
  unsigned char *send = (unsigned char *)xalloc(tot), *recv, *want, *orig = NULL;
  cc_result rc;
  tr_fill(send, cs->t, kind, cs->seed, x->t.rank, 0, cnt * (size_t)x->t.n);
  if (cs->inplace) {
    recv = send ? send + (size_t)x->t.rank * bytes : NULL;
  } else {
    recv = (unsigned char *)xalloc(bytes);
    orig = (unsigned char *)xdup(send, tot);
  }
  want = (unsigned char *)xalloc(bytes);
  if (cnt && (!send || !recv || !want)) { fail(x, cs, "out of memory"); goto out; }
  reference(want, cs, kind, x->t.n, (size_t)x->t.rank * cnt);
  g_call_t0 = tu_now();
  rc = cc_reduce_scatter(x->t.c, send, recv, cnt, cs->t, cs->op);
  g_call_t = tu_now() - g_call_t0;
  if (!check_rc(x, cs, rc)) goto out;
  check_eq(x, cs, "recvbuf", recv, want, cnt);
  if (!cs->inplace) {
    check_same(x, cs, "sendbuf", send, orig, tot);
    check_guards(x, cs, "recvbuf", recv, bytes);
  }
  check_guards(x, cs, "sendbuf", send, tot);
out:
  if (!cs->inplace) tr_buf_free(recv);
  tr_buf_free(send);
  tr_buf_free(want);
  free(orig);
}

static void run_all_to_all(ctx *x, tcase *cs) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es, tot = bytes * (size_t)x->t.n;
  int kind = TR_GEN_ANY, r;
  unsigned char *send = (unsigned char *)xalloc(tot), *recv, *want, *orig = NULL;
  cc_result rc;
  tr_fill(send, cs->t, kind, cs->seed, x->t.rank, 0, cnt * (size_t)x->t.n);
  if (cs->inplace) {
    recv = send;
  } else {
    recv = (unsigned char *)xalloc(tot);
    orig = (unsigned char *)xdup(send, tot);
  }
  want = (unsigned char *)xalloc(tot);
  if (cnt && (!send || !recv || !want)) { fail(x, cs, "out of memory"); goto out; }
  /* block r of my result is block `rank` of rank r's input */
  for (r = 0; r < x->t.n; r++)
    tr_fill(want + (size_t)r * bytes, cs->t, kind, cs->seed, r, (size_t)x->t.rank * cnt, cnt);
  rc = cc_all_to_all(x->t.c, send, recv, cnt, cs->t);
  if (!check_rc(x, cs, rc)) goto out;
  check_eq(x, cs, "recvbuf", recv, want, cnt * (size_t)x->t.n);
  if (!cs->inplace) {
    check_same(x, cs, "sendbuf", send, orig, tot);
    check_guards(x, cs, "recvbuf", recv, tot);
  }
  check_guards(x, cs, "sendbuf", send, tot);
out:
  if (!cs->inplace) tr_buf_free(recv);
  tr_buf_free(send);
  tr_buf_free(want);
  free(orig);
}

static int is_reduction(int k);

static void run_case(ctx *x, tcase *cs) {
  int red = is_reduction(cs->k);
  double t0;
  tr_label(&x->t, "%s %s%s%s count=%zu %s%s root=%d n=%d", k_names[cs->k],
           tr_dtype_name(cs->t), red ? "/" : "", red ? tr_op_name(cs->op) : "", cs->count,
           cs->inplace ? "in-place" : "out-of-place",
           cs->null_nonroot ? " (NULL root-only buffers elsewhere)" : "", cs->root, x->t.n);
  /* inputs differ from case to case, except that the large reductions of one
   * dtype/op share theirs (see reference()) */
  if (cs->count > 4099 && red)
    cs->seed = tu_hash4(1000 + (uint64_t)cs->t, (uint64_t)cs->op * 7 + 1, cs->count,
                        (uint64_t)x->t.n);
  else
    cs->seed = tu_hash4((uint64_t)cs->k * 131 + (uint64_t)cs->t, (uint64_t)cs->op * 7 + 1,
                        cs->count,
                        (uint64_t)(cs->inplace * 64 + cs->root + 1) * 977 + (uint64_t)x->t.n);
  t0 = tu_now();
  switch (cs->k) {
  case K_BROADCAST: run_broadcast(x, cs); break;
  case K_REDUCE: run_reduce(x, cs, 0); break;
  case K_ALL_REDUCE: run_reduce(x, cs, 1); break;
  case K_GATHER: run_gather(x, cs, 0); break;
  case K_ALL_GATHER: run_gather(x, cs, 1); break;
  case K_SCATTER: run_scatter(x, cs); break;
  case K_REDUCE_SCATTER: run_reduce_scatter(x, cs); break;
  case K_ALL_TO_ALL: run_all_to_all(x, cs); break;
  default: break;
  }
  if (x->t.rank == 0 && cs->count > 4099 && getenv("CC_TEST_VERBOSE") && red)
    fprintf(stderr, "    %s: %.3f s (the call %.3f s)\n", x->t.label, tu_now() - t0, g_call_t);
}

/* ------------------------------------------------------------ the matrix */

static const size_t small_counts[] = {0, 1, 7, 4099};
#define N_SMALL 4

typedef struct pair { cc_dtype t; cc_op op; } pair;
static const pair large_pairs[] = {
  {CC_FLOAT32, CC_SUM}, {CC_FLOAT16, CC_SUM}, {CC_INT64, CC_SUM},
  {CC_FLOAT64, CC_MAX}, {CC_BFLOAT16, CC_AVG}, {CC_COMPLEX128, CC_PROD},
  {CC_UINT8, CC_BXOR}};
#define N_LARGE_PAIRS (sizeof large_pairs / sizeof large_pairs[0])
static const cc_dtype large_move_types[] = {CC_FLOAT32, CC_INT8, CC_COMPLEX128};
#define N_LARGE_MOVE 3

/* Large reduction pairs run at world size n: float32/sum always, the others
 * spread over the sizes 2, 3, 4, 7, 8 so that each runs somewhere. */
static int large_pair_here(size_t li, int n, int reduced) {
  static const unsigned masks[MAXR + 1] = {0, 0, 1u << 2 | 1u << 5, 1u << 1 | 1u << 6,
                                           1u << 3 | 1u << 4, 0, 0, 1u << 2, 1u << 4 | 1u << 1};
  if (li == 0) return 1;
  if (reduced || n < 0 || n > MAXR) return 0;
  return (masks[n] >> li) & 1u;
}

static int is_reduction(int k) {
  return k == K_REDUCE || k == K_ALL_REDUCE || k == K_REDUCE_SCATTER;
}
static int has_root(int k) {
  return k == K_BROADCAST || k == K_REDUCE || k == K_GATHER || k == K_SCATTER;
}
static int has_inplace(int k) { return k != K_BROADCAST; }

/* Which world sizes run the large counts. */
static int large_sizes(int n, int quick) {
  if (quick) return n == 3 || n == 8;
  return n == 2 || n == 3 || n == 4 || n == 7 || n == 8;
}

static void run_matrix(ctx *x, int k) {
  int n = x->t.n, quick = x->arg->quick, tcp = x->arg->tcp;
  int roots[2], nroots = 1, ri, ip, ci, t, op, variant = 0;
  size_t li;
  tcase cs;
  roots[0] = 0;
  if (has_root(k) && n > 1) roots[nroots++] = n - 1;
  memset(&cs, 0, sizeof cs);
  cs.k = k;
  /* counts 0, 1, 7, 4099: every dtype (and op), in and out of place, both roots */
  for (t = 0; t < CC_DTYPE_COUNT; t++) {
    for (op = 0; op < (is_reduction(k) ? CC_OP_BUILTIN_COUNT : 1); op++) {
      if (is_reduction(k) && !tr_valid_pair((cc_dtype)t, op)) continue;
      for (ci = 0; ci < N_SMALL; ci++) {
        if (tcp && ci == N_SMALL - 1 && (t % 3) != 0) continue;
        for (ip = 0; ip < (has_inplace(k) ? 2 : 1); ip++) {
          for (ri = 0; ri < nroots; ri++) {
            cs.t = (cc_dtype)t;
            cs.op = op;
            cs.count = small_counts[ci];
            cs.inplace = ip;
            cs.root = roots[ri];
            cs.null_nonroot = (int)(tu_mix64((uint64_t)variant++) & 1);
            run_case(x, &cs);
          }
        }
      }
    }
  }
  if (!large_sizes(n, quick) && !(tcp && n == 3)) return;
  /* the large counts: a representative subset, spread over the world sizes
   * (float32/sum everywhere), alternating the other choices */
  if (is_reduction(k)) {
    for (li = 0; li < N_LARGE_PAIRS; li++) {
      if (!large_pair_here(li, n, quick || tcp)) continue;
      for (ip = 0; ip < 2; ip++) {
        if (k != K_ALL_REDUCE && ip != (int)((li + (size_t)n) & 1)) continue;
        cs.t = large_pairs[li].t;
        cs.op = large_pairs[li].op;
        /* reduce_scatter: size * count elements per rank in all */
        cs.count = k == K_REDUCE_SCATTER ? ((tr_large_count(cs.t) / (size_t)n) | 1)
                                         : tr_large_count(cs.t);
        cs.inplace = ip;
        cs.root = roots[(li / 2) % (size_t)nroots];
        cs.null_nonroot = (int)(li & 1);
        run_case(x, &cs);
      }
    }
  } else {
    li = (size_t)n % N_LARGE_MOVE;
    if (quick || tcp) li = 0;
    for (ip = 0; ip < (has_inplace(k) ? 2 : 1); ip++) {
      cs.t = large_move_types[li];
      cs.op = CC_SUM;
      /* all_to_all moves count elements to every peer: keep it near 1 MiB per rank */
      cs.count = k == K_ALL_TO_ALL ? ((tr_large_count(cs.t) / (size_t)n) | 1) : tr_large_count(cs.t);
      cs.inplace = ip;
      cs.root = roots[(size_t)ip % (size_t)nroots];
      cs.null_nonroot = ip;
      run_case(x, &cs);
    }
  }
}

static void run_barrier(ctx *x) {
  int k;
  int64_t v;
  tcase cs;
  memset(&cs, 0, sizeof cs);
  cs.k = K_BARRIER;
  for (k = 0; k < BARRIER_ROUNDS; k++) {
    tr_label(&x->t, "barrier round %d n=%d", k, x->t.n);
    /* one rank comes late: nobody may leave before it has arrived */
    if (x->t.rank == k % x->t.n) tu_sleep_us(k < 4 ? 20000 : 1000);
    __atomic_add_fetch(&x->arg->tab->scratch[k], 1, __ATOMIC_SEQ_CST);
    if (!check_rc(x, &cs, cc_barrier(x->t.c))) return;
    v = __atomic_load_n(&x->arg->tab->scratch[k], __ATOMIC_SEQ_CST);
    if (v != x->t.n) fail(x, &cs, "left the barrier when %d of %d ranks had arrived", (int)v, x->t.n);
  }
}

/* Invalid dtype/op pairs are refused (CC_ERR_INVALID_ARG) on every rank and
 * leave the communicator usable; cc_dtype_size matches the element sizes. */
static void run_rules(ctx *x) {
  unsigned char a[16 * 8], b[16 * 8];
  int t, op;
  cc_result rc;
  tcase cs;
  memset(&cs, 0, sizeof cs);
  cs.k = K_RULES;
  memset(a, 0, sizeof a);
  for (t = 0; t < CC_DTYPE_COUNT; t++) {
    cs.t = (cc_dtype)t;
    tr_label(&x->t, "cc_dtype_size(%s)", tr_dtype_name(cs.t));
    if (cc_dtype_size(cs.t) != tr_size(cs.t))
      fail(x, &cs, "returned %zu, want %zu", cc_dtype_size(cs.t), tr_size(cs.t));
    for (op = 0; op < CC_OP_BUILTIN_COUNT; op++) {
      if (tr_valid_pair(cs.t, op)) continue;
      cs.op = op;
      tr_label(&x->t, "all_reduce %s/%s (invalid pair) n=%d",
               tr_dtype_name(cs.t), tr_op_name(op), x->t.n);
      rc = cc_all_reduce(x->t.c, a, b, 3, cs.t, op);
      if (rc != CC_ERR_INVALID_ARG)
        fail(x, &cs, "returned %s, want CC_ERR_INVALID_ARG", cc_strerror(rc));
      tr_label(&x->t, "reduce %s/%s (invalid pair) n=%d",
               tr_dtype_name(cs.t), tr_op_name(op), x->t.n);
      rc = cc_reduce(x->t.c, a, b, 3, cs.t, op, 0);
      if (rc != CC_ERR_INVALID_ARG)
        fail(x, &cs, "returned %s, want CC_ERR_INVALID_ARG", cc_strerror(rc));
      tr_label(&x->t, "reduce_scatter %s/%s (invalid pair) n=%d",
               tr_dtype_name(cs.t), tr_op_name(op), x->t.n);
      rc = cc_reduce_scatter(x->t.c, a, b, 1, cs.t, op);
      if (rc != CC_ERR_INVALID_ARG)
        fail(x, &cs, "returned %s, want CC_ERR_INVALID_ARG", cc_strerror(rc));
    }
  }
  /* still usable */
  {
    int32_t v = x->t.rank + 1, s = 0;
    tr_label(&x->t, "all_reduce int32/sum after refused calls n=%d", x->t.n);
    cs.t = CC_INT32;
    if (check_rc(x, &cs, cc_all_reduce(x->t.c, &v, &s, 1, CC_INT32, CC_SUM)) &&
        s != x->t.n * (x->t.n + 1) / 2)
      fail(x, &cs, "got %d, want %d", (int)s, x->t.n * (x->t.n + 1) / 2);
  }
}

static int rank_main(cc_comm *c, void *argp) {
  ctx x;
  int k;
  memset(&x, 0, sizeof x);
  tr_ctx_init(&x.t, c, ((world_arg *)argp)->tab);
  x.arg = (world_arg *)argp;
  for (k = 0; k < K_COUNT; k++) {
    double t0 = tu_now();
    if (!tr_group_begin(&x.t, k)) return 99;
    if (k == K_BARRIER)
      run_barrier(&x);
    else if (k == K_RULES)
      run_rules(&x);
    else
      run_matrix(&x, k);
    tr_group_end(&x.t);
    if (x.t.rank == 0 && getenv("CC_TEST_VERBOSE"))
      fprintf(stderr, "  %s n=%d: %.2f s\n", k_names[k], x.t.n, tu_now() - t0);
  }
  return tr_failed_any(&x.t, K_COUNT);
}

/* ------------------------------------------------------------ the parent */

static void coverage(char *out, size_t cap, int k, int n, int quick, int tcp) {
  size_t li, m = 0;
  int large = large_sizes(n, quick) || (tcp && n == 3);
  if (k == K_BARRIER) {
    snprintf(out, cap, "%d rounds, one late rank each", BARRIER_ROUNDS);
    return;
  }
  if (k == K_RULES) {
    snprintf(out, cap, "invalid dtype/op pairs refused by all_reduce, reduce, reduce_scatter; "
             "cc_dtype_size");
    return;
  }
  m += (size_t)snprintf(out + m, cap - m, "%s x counts 0,1,7,4099%s%s%s",
                        is_reduction(k) ? "68 dtype/op pairs" : "12 dtypes",
                        tcp ? " (4099 for 4 dtypes)" : "",
                        has_inplace(k) ? " x in/out of place" : "",
                        has_root(k) && n > 1 ? " x roots 0,size-1" : "");
  if (large && m < cap) {
    m += (size_t)snprintf(out + m, cap - m, "; large (>1 MiB/rank):");
    if (is_reduction(k)) {
      for (li = 0; li < N_LARGE_PAIRS && m < cap; li++)
        if (large_pair_here(li, n, quick || tcp))
          m += (size_t)snprintf(out + m, cap - m, " %s/%s", tr_dtype_name(large_pairs[li].t),
                                tr_op_name(large_pairs[li].op));
    } else {
      li = (quick || tcp) ? 0 : (size_t)n % N_LARGE_MOVE;
      m += (size_t)snprintf(out + m, cap - m, " %s", tr_dtype_name(large_move_types[li]));
    }
  }
}

static void run_world(int n, int quick, int tcp) {
  static world_arg arg;
  tr_table *tab = (tr_table *)tu_shared_alloc(sizeof(tr_table));
  int rc, k;
  double t0;
  char name[96], cov[600];
  if (!tab) {
    tu_fail("collectives.setup", "cannot map shared memory");
    return;
  }
  arg.tab = tab;
  arg.quick = quick;
  arg.tcp = tcp;
  if (tcp) setenv("CC_TRANSPORT", "tcp", 1);
  t0 = tu_now();
  rc = tu_spawn(n, rank_main, &arg);
  if (tcp) unsetenv("CC_TRANSPORT");
  for (k = 0; k < K_COUNT; k++) {
    snprintf(name, sizeof name, "collectives.%s%s.n%d", tcp ? "tcp." : "", k_names[k], n);
    coverage(cov, sizeof cov, k, n, quick, tcp);
    tr_report_group(tab, n, k, name, cov, rc);
  }
  snprintf(name, sizeof name, "collectives.%sspawn.n%d", tcp ? "tcp." : "", n);
  if (rc != 0) tu_fail(name, "cc_spawn returned %d (%s)", rc, cc_comm_last_error(NULL));
  fprintf(stderr, "collectives: %sworld size %d took %.2f s\n", tcp ? "tcp " : "", n,
          tu_now() - t0);
  tu_shared_free(tab, sizeof(tr_table));
}

/* 1: a one-rank communicator over TCP can be made; 0: the build has no TCP
 * transport; -1: something else failed. */
static int tcp_available(void) {
  cc_config cfg;
  cc_comm *c = NULL;
  cc_result r;
  cc_config_init(&cfg);
  cfg.rank = 0;
  cfg.world_size = 1;
  cfg.transport = "tcp";
  r = cc_comm_init(&c, &cfg);
  if (r == CC_OK) {
    cc_comm_destroy(c);
    return 1;
  }
  if (r != CC_ERR_UNSUPPORTED)
    fprintf(stderr, "collectives: one-rank cc_comm_init over tcp: %s (%s)\n", cc_strerror(r),
            cc_comm_last_error(NULL));
  return r == CC_ERR_UNSUPPORTED ? 0 : -1;
}

int main(int argc, char **argv) {
  int quick = tu_quick(), n, i;
  int want[MAXR + 1];
  double t0 = tu_now();
  tu_default_timeout("60");
  memset(want, 0, sizeof want);
  if (argc > 1) {
    for (i = 1; i < argc; i++) {
      n = atoi(argv[i]);
      if (n >= 1 && n <= MAXR) want[n] = 1;
    }
  } else {
    for (n = 1; n <= MAXR; n++) want[n] = 1;
  }
  if (argc == 1 && tu_quick_tier()) {  /* make test: worlds 1 to 4; make check: all */
    for (n = 5; n <= MAXR; n++) want[n] = 0;
    tu_skip("collectives.quick", "worlds of 5 to %d ranks: the quick tier runs 1 to 4 (make check runs them)", MAXR);
  }
  if (argc == 1 && tu_tsan()) {        /* see tu_tsan */
    char left[32];
    for (n = TU_TSAN_MAX_WORLD + 1; n <= MAXR; n++) want[n] = 0;
    snprintf(left, sizeof left, "%d to %d", TU_TSAN_MAX_WORLD + 1, MAXR);
    tu_tsan_skip("collectives", left);
  }
  for (n = 1; n <= MAXR; n++)
    if (want[n]) run_world(n, quick, 0);
  /* a shorter pass over TCP, where the build has it */
  if (argc == 1 || want[2] || want[3]) {
    int tcp = tcp_available();
    if (tcp > 0) {                     /* two world sizes, as on shared memory */
      if (argc == 1 || want[2]) run_world(2, quick, 1);
      if (argc == 1 || want[3]) run_world(3, quick, 1);
    } else {
      tu_skip("collectives.tcp", "%s", tcp == 0 ? "this build has no TCP transport "
              "(cc_comm_init with transport \"tcp\" returned CC_ERR_UNSUPPORTED)"
              : "cannot tell whether TCP works: a one-rank cc_comm_init over tcp failed");
    }
  }
  fprintf(stderr, "test_collectives: %.2f s\n", tu_now() - t0);
  return tu_exit_code();
}
