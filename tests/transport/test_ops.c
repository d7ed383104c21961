/* test_ops - reduction ops made at run time: cc_op_create_premul_sum and
 * cc_op_create, with all_reduce (in and out of place), reduce (roots 0 and
 * size-1) and reduce_scatter, and cc_op_destroy.
 *
 *   premul     float32, float64, float16, bfloat16, int32, complex64; each rank
 *              its own scalar, and one scalar everywhere; counts 0, 1, 7, 4099
 *              and 300007 (float32). Reference: sum over ranks in rank order
 *              of (scalar_r * x_r), float16/bfloat16 in float32 rounded once.
 *   user       "the value of largest magnitude" (float32, float64; one op for
 *              both), a saturating uint8 sum, and an int64 sum that counts its
 *              calls through its user pointer (it must be called, with that
 *              pointer and the dtype of the call, over at least
 *              (size-1)*count elements in all).
 *   invalid    a destroyed op, ops never created, destroying twice, a premul
 *              op on another dtype: CC_ERR_INVALID_ARG on every rank, and the
 *              communicator still works afterwards.
 *
 * One PASS/FAIL line per (group, world size). */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"
#include "test_ref.h"

enum { G_PREMUL, G_USER, G_INVALID, G_COUNT };
static const char *const g_names[G_COUNT] = {"premul_sum", "user_ops", "invalid_ops"};

typedef tr_world world_arg;

typedef struct ctx {
  tr_ctx t;
  world_arg *arg;
} ctx;

/* ------------------------------------------------------------ the calls */

enum { C_ALL_REDUCE, C_ALL_REDUCE_INPLACE, C_REDUCE, C_REDUCE_SCATTER, C_COUNT };
static const char *const c_names[C_COUNT] = {"all_reduce", "all_reduce(in place)", "reduce",
                                             "reduce_scatter"};

/* Reference of one element of the result: ref(i) for the global index i. */
typedef void (*ref_fn)(void *out, size_t index, const void *env);

/* Run collective `which` with `op` on inputs tr_fill(seed, rank) (size*count for
 * reduce_scatter) and check rank's result against ref. */
static void run_call(ctx *x, int which, cc_op op, cc_dtype t, size_t count, int root, int kind,
                     uint64_t seed, ref_fn ref, const void *env) {
  int n = x->t.n, me = x->t.rank, is_root = which != C_REDUCE || me == root;
  size_t es = tr_size(t), in_n = which == C_REDUCE_SCATTER ? count * (size_t)n : count;
  size_t first = which == C_REDUCE_SCATTER ? count * (size_t)me : 0, i;
  unsigned char *send = count ? (unsigned char *)tr_buf_alloc(in_n * es) : NULL;
  unsigned char *recv = NULL, *want = NULL;
  char m[300];
  cc_result rc;
  tr_fill(send, t, kind, seed, me, 0, in_n);
  if (which == C_ALL_REDUCE_INPLACE)
    recv = send;
  else if (count)
    recv = (unsigned char *)tr_buf_alloc(count * es);
  if (is_root && count) {
    want = (unsigned char *)malloc(count * es);
    for (i = 0; i < count; i++) ref(want + i * es, first + i, env);
  }
  switch (which) {
  case C_ALL_REDUCE: case C_ALL_REDUCE_INPLACE:
    rc = cc_all_reduce(x->t.c, send, recv, count, t, op);
    break;
  case C_REDUCE: rc = cc_reduce(x->t.c, send, recv, count, t, op, root); break;
  default: rc = cc_reduce_scatter(x->t.c, send, recv, count, t, op); break;
  }
  if (!tr_ok(&x->t, rc, c_names[which])) goto out;
  if (is_root && tr_compare(recv, want, count, t, m, sizeof m)) tr_fail(&x->t, "result: %s", m);
  if (recv && !tr_buf_guards_ok(recv, count * es))
    tr_fail(&x->t, "bytes written outside recvbuf");
out:
  if (recv != send) tr_buf_free(recv);
  tr_buf_free(send);
  free(want);
}

/* ------------------------------------------------------------ premul_sum */

typedef struct premul_env {
  cc_dtype t;
  int kind, n, same;
  uint64_t seed;
} premul_env;

/* The scalar of rank r, as a double pair (re, im), exactly representable in t. */
static void premul_scalar(const premul_env *e, int r, double *re, double *im) {
  *im = 0;
  if (e->same) {
    *re = e->t == CC_INT32 ? 3.0 : 1.5;
    if (e->t == CC_COMPLEX64) *im = -1.25;
  } else if (e->t == CC_INT32) {
    *re = (double)(r + 1);
  } else {
    *re = 0.75 * (double)(r + 1); /* rank+1, scaled so the products round */
    if (e->t == CC_COMPLEX64) *im = 0.5 - 0.25 * (double)r;
  }
}

static void premul_scalar_bytes(const premul_env *e, int r, void *out) {
  double re, im;
  premul_scalar(e, r, &re, &im);
  switch (e->t) {
  case CC_INT32: { int32_t v = (int32_t)re; memcpy(out, &v, 4); break; }
  case CC_COMPLEX64: { float z[2]; z[0] = (float)re; z[1] = (float)im; memcpy(out, z, 8); break; }
  default: tr_store_real(out, e->t, re); break;
  }
}

static void premul_ref(void *out, size_t index, const void *envp) {
  const premul_env *e = (const premul_env *)envp;
  unsigned char scal[64][16];
  int r;
  for (r = 0; r < e->n && r < 64; r++) premul_scalar_bytes(e, r, scal[r]);
  tr_premul_reference(out, e->t, e->kind, e->seed, e->n, index, (const unsigned char (*)[16])scal);
}

static void run_premul(ctx *x) {
  static const cc_dtype types[] = {CC_FLOAT32, CC_FLOAT64, CC_FLOAT16, CC_BFLOAT16, CC_INT32,
                                   CC_COMPLEX64};
  static const size_t counts[] = {0, 1, 7, 4099, 300007};
  size_t ti, ci;
  int same, which, n = x->t.n, k = 0;
  premul_env e;
  unsigned char s[16];
  cc_op op;
  for (ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    for (same = 0; same < 2; same++) {
      memset(&e, 0, sizeof e);
      e.t = types[ti];
      e.n = n;
      e.same = same;
      e.kind = TR_GEN_ANY;
      premul_scalar_bytes(&e, x->t.rank, s);
      tr_label(&x->t, "cc_op_create_premul_sum(%s, %s scalar) n=%d", tr_dtype_name(e.t),
               same ? "one" : "per-rank", n);
      if (!tr_ok(&x->t, cc_op_create_premul_sum(x->t.c, e.t, s, &op), "cc_op_create_premul_sum"))
        continue;
      for (ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        if (counts[ci] > 4099 && (e.t != CC_FLOAT32 || same)) continue;
        for (which = 0; which < C_COUNT; which++) {
          int root = (k++ & 1) ? n - 1 : 0;
          size_t cnt = counts[ci];
          if (which == C_REDUCE_SCATTER && cnt > 4099) cnt = (cnt / (size_t)n) | 1;
          e.seed = tu_hash4(77, (uint64_t)e.t, (uint64_t)same * 8 + (uint64_t)which, cnt);
          tr_label(&x->t, "%s premul_sum %s (%s scalar) count=%zu root=%d n=%d", c_names[which],
                   tr_dtype_name(e.t), same ? "one" : "per-rank", cnt, root, n);
          run_call(x, which, op, e.t, cnt, root, e.kind, e.seed, premul_ref, &e);
        }
      }
      tr_label(&x->t, "cc_op_destroy(premul_sum %s) n=%d", tr_dtype_name(e.t), n);
      tr_ok(&x->t, cc_op_destroy(x->t.c, op), "cc_op_destroy");
    }
  }
}

/* Calls long enough to take several shared-memory phases, each followed at
 * once by a call with another op: every rank's scalar must hold for the
 * whole call. Exact inputs (small integers), so the reference is plain. */
static void run_premul_phases(ctx *x) {
  int n = x->t.n, me = x->t.rank, it, which, r;
  size_t cnt, maxcnt = 90001, i, first;
  double sc = (double)(me + 1), z = 1, *send, *recv, want;
  cc_op op;
  cc_result rc;
  tr_label(&x->t, "premul_sum float64 several phases n=%d", n);
  if (!tr_ok(&x->t, cc_op_create_premul_sum(x->t.c, CC_FLOAT64, &sc, &op),
             "cc_op_create_premul_sum"))
    return;
  send = (double *)malloc(sizeof(double) * maxcnt * (size_t)n);
  recv = (double *)malloc(sizeof(double) * maxcnt * (size_t)n);
  if (!send || !recv) {
    tr_fail(&x->t, "out of memory");
    free(send);
    free(recv);
    return;
  }
  for (i = 0; i < maxcnt * (size_t)n; i++) send[i] = (double)(i % 5 + (size_t)me);
  for (it = 0; it < 6; it++) {
    which = it & 1 ? C_ALL_REDUCE : C_REDUCE_SCATTER;
    cnt = 70001 + 10000 * (size_t)(it / 2); /* varies the number of phases */
    tr_label(&x->t, "%s premul_sum float64 (scalar rank+1) count=%zu, then all_reduce/sum at once, "
             "round %d n=%d", c_names[which], cnt, it, n);
    if (which == C_REDUCE_SCATTER)
      rc = cc_reduce_scatter(x->t.c, send, recv, cnt, CC_FLOAT64, op);
    else
      rc = cc_all_reduce(x->t.c, send, recv, cnt, CC_FLOAT64, op);
    /* right away, a call whose descriptor carries no scalar */
    tr_ok(&x->t, cc_all_reduce(x->t.c, &z, &z, 1, CC_FLOAT64, CC_SUM), "all_reduce");
    if (!tr_ok(&x->t, rc, c_names[which])) break;
    first = which == C_REDUCE_SCATTER ? cnt * (size_t)me : 0;
    for (i = 0; i < cnt; i++) {
      want = 0;
      for (r = 0; r < n; r++) want += (double)(r + 1) * (double)((first + i) % 5 + (size_t)r);
      if (recv[i] != want) {
        tr_fail(&x->t, "[%zu] = %.17g, want %.17g (every rank's scalar times its input, summed)", i,
                recv[i], want);
        break;
      }
    }
  }
  free(send);
  free(recv);
  tr_label(&x->t, "cc_op_destroy n=%d", n);
  tr_ok(&x->t, cc_op_destroy(x->t.c, op), "cc_op_destroy");
}

/* ------------------------------------------------------------ user ops */

#define USER_MAGIC 0x5ca1ab1eu

typedef struct user_state {
  unsigned magic;
  long calls, elems, bad_dtype;
  cc_dtype expect;
} user_state;

/* the element of largest magnitude (float32 and float64) */
static void op_maxabs(void *inout, const void *in, size_t count, cc_dtype t, void *user) {
  user_state *u = (user_state *)user;
  size_t i;
  if (!u || u->magic != USER_MAGIC) { /* the user pointer must be ours */
    fprintf(stderr, "test_ops: user fn called with user=%p, not the pointer given\n", user);
    abort();
  }
  u->calls++;
  u->elems += (long)count;
  if (t != u->expect) u->bad_dtype++;
  if (t == CC_FLOAT32) {
    float *a = (float *)inout;
    const float *b = (const float *)in;
    for (i = 0; i < count; i++)
      if (fabsf(b[i]) > fabsf(a[i])) a[i] = b[i];
  } else if (t == CC_FLOAT64) {
    double *a = (double *)inout;
    const double *b = (const double *)in;
    for (i = 0; i < count; i++)
      if (fabs(b[i]) > fabs(a[i])) a[i] = b[i];
  }
}

/* uint8 sum saturating at 255 */
static void op_satadd(void *inout, const void *in, size_t count, cc_dtype t, void *user) {
  user_state *u = (user_state *)user;
  uint8_t *a = (uint8_t *)inout;
  const uint8_t *b = (const uint8_t *)in;
  size_t i;
  if (!u || u->magic != USER_MAGIC) {
    fprintf(stderr, "test_ops: user fn called with user=%p, not the pointer given\n", user);
    abort();
  }
  u->calls++;
  u->elems += (long)count;
  if (t != CC_UINT8) u->bad_dtype++;
  for (i = 0; i < count; i++) a[i] = (uint8_t)(a[i] + b[i] > 255 ? 255 : a[i] + b[i]);
}

/* int64 wrapping sum */
static void op_count_sum(void *inout, const void *in, size_t count, cc_dtype t, void *user) {
  user_state *u = (user_state *)user;
  uint64_t *a = (uint64_t *)inout;
  const uint64_t *b = (const uint64_t *)in;
  size_t i;
  if (!u || u->magic != USER_MAGIC) {
    fprintf(stderr, "test_ops: user fn called with user=%p, not the pointer given\n", user);
    abort();
  }
  u->calls++;
  u->elems += (long)count;
  if (t != CC_INT64) u->bad_dtype++;
  for (i = 0; i < count; i++) a[i] += b[i];
}

typedef struct user_env {
  cc_dtype t;
  int which_op; /* 0 maxabs, 1 satadd, 2 count_sum */
  int n;
  uint64_t seed;
} user_env;

static void user_ref(void *out, size_t index, const void *envp) {
  const user_env *e = (const user_env *)envp;
  unsigned char x[16];
  double best = 0, v;
  uint64_t sum = 0;
  unsigned sat = 0;
  int r;
  for (r = 0; r < e->n; r++) {
    tr_gen_at(x, e->t, TR_GEN_ANY, e->seed, r, index);
    if (e->which_op == 0) {
      if (e->t == CC_FLOAT32) {
        float f;
        memcpy(&f, x, 4);
        v = f;
      } else {
        memcpy(&v, x, 8);
      }
      if (r == 0 || fabs(v) > fabs(best)) best = v;
    } else if (e->which_op == 1) {
      sat += x[0];
      if (sat > 255) sat = 255;
    } else {
      uint64_t w;
      memcpy(&w, x, 8);
      sum += w;
    }
  }
  if (e->which_op == 0) {
    if (e->t == CC_FLOAT32) {
      float f = (float)best;
      memcpy(out, &f, 4);
    } else {
      memcpy(out, &best, 8);
    }
  } else if (e->which_op == 1) {
    uint8_t b = (uint8_t)sat;
    memcpy(out, &b, 1);
  } else {
    memcpy(out, &sum, 8);
  }
}

static void run_user(ctx *x) {
  static const size_t counts[] = {0, 1, 7, 4099, 300007};
  user_state st_abs, st_sat, st_cnt;
  cc_op op_abs, op_sat, op_cnt;
  user_env e;
  int n = x->t.n, which, k = 0, o;
  size_t ci;
  memset(&st_abs, 0, sizeof st_abs);
  memset(&st_sat, 0, sizeof st_sat);
  memset(&st_cnt, 0, sizeof st_cnt);
  st_abs.magic = st_sat.magic = st_cnt.magic = USER_MAGIC;
  tr_label(&x->t, "cc_op_create x3 n=%d", n);
  if (!tr_ok(&x->t, cc_op_create(x->t.c, op_maxabs, &st_abs, &op_abs), "cc_op_create") ||
      !tr_ok(&x->t, cc_op_create(x->t.c, op_satadd, &st_sat, &op_sat), "cc_op_create") ||
      !tr_ok(&x->t, cc_op_create(x->t.c, op_count_sum, &st_cnt, &op_cnt), "cc_op_create"))
    return;
  if (op_abs == op_sat || op_sat == op_cnt || op_abs == op_cnt ||
      (op_abs >= 0 && op_abs < CC_OP_BUILTIN_COUNT))
    tr_fail(&x->t, "op handles not distinct from each other and the builtins: %d %d %d",
            op_abs, op_sat, op_cnt);
  for (o = 0; o < 4; o++) {
    memset(&e, 0, sizeof e);
    e.n = n;
    e.which_op = o == 3 ? 0 : o;
    e.t = o == 0 ? CC_FLOAT32 : o == 1 ? CC_UINT8 : o == 2 ? CC_INT64 : CC_FLOAT64;
    st_abs.expect = e.t;
    for (ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
      if (counts[ci] > 4099 && o != 0) continue;
      for (which = 0; which < C_COUNT; which++) {
        int root = (k++ & 1) ? n - 1 : 0;
        size_t cnt = counts[ci];
        long calls0 = st_cnt.calls, elems0 = st_cnt.elems;
        cc_op op = e.which_op == 0 ? op_abs : e.which_op == 1 ? op_sat : op_cnt;
        if (which == C_REDUCE_SCATTER && cnt > 4099) cnt = (cnt / (size_t)n) | 1;
        e.seed = tu_hash4(78, (uint64_t)o, (uint64_t)which, cnt);
        tr_label(&x->t, "%s user op %s %s count=%zu root=%d n=%d", c_names[which],
                 o == 1 ? "saturating-add" : o == 2 ? "counting-sum" : "max-magnitude",
                 tr_dtype_name(e.t), cnt, root, n);
        run_call(x, which, op, e.t, cnt, root, TR_GEN_ANY, e.seed, user_ref, &e);
        if (o == 2 && n > 1 && cnt > 0) {
          /* the counting op ran on (size-1)*count elements at least, over all ranks */
          int64_t mine[2], all[2];
          mine[0] = st_cnt.calls - calls0;
          mine[1] = st_cnt.elems - elems0;
          if (tr_ok(&x->t, cc_all_reduce(x->t.c, mine, all, 2, CC_INT64, CC_SUM),
                    "all_reduce of the call counts")) {
            int64_t need = (int64_t)(n - 1) * (int64_t)cnt;
            if (which == C_REDUCE_SCATTER) need *= n; /* size*count elements reduced */
            if (all[0] < 1 || all[1] < need)
              tr_fail(&x->t, "user fn called %lld times over %lld elements in all; want >= 1 "
                      "and >= %lld elements", (long long)all[0], (long long)all[1],
                      (long long)need);
          }
        }
      }
    }
  }
  tr_label(&x->t, "user fn dtype argument n=%d", n);
  if (st_abs.bad_dtype || st_sat.bad_dtype || st_cnt.bad_dtype)
    tr_fail(&x->t, "user fn got the wrong dtype %ld/%ld/%ld times", st_abs.bad_dtype,
            st_sat.bad_dtype, st_cnt.bad_dtype);
  tr_label(&x->t, "cc_op_destroy x3 n=%d", n);
  tr_ok(&x->t, cc_op_destroy(x->t.c, op_abs), "cc_op_destroy");
  tr_ok(&x->t, cc_op_destroy(x->t.c, op_sat), "cc_op_destroy");
  tr_ok(&x->t, cc_op_destroy(x->t.c, op_cnt), "cc_op_destroy");
}

/* ------------------------------------------------------------ invalid ops */

static void expect_invalid(ctx *x, cc_result rc, const char *what) {
  if (rc != CC_ERR_INVALID_ARG)
    tr_fail(&x->t, "%s returned %s, want CC_ERR_INVALID_ARG", what, cc_strerror(rc));
}

/* all_reduce, reduce, reduce_scatter with op on t: all refused */
static void expect_refused(ctx *x, cc_op op, cc_dtype t) {
  unsigned char a[16 * 8], b[16 * 8];
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  expect_invalid(x, cc_all_reduce(x->t.c, a, b, 3, t, op), "all_reduce");
  expect_invalid(x, cc_reduce(x->t.c, a, b, 3, t, op, x->t.n - 1), "reduce");
  expect_invalid(x, cc_reduce_scatter(x->t.c, a, b, 1, t, op), "reduce_scatter");
}

static void still_works(ctx *x) {
  int64_t v = x->t.rank + 1, s = 0;
  int64_t want = (int64_t)x->t.n * (x->t.n + 1) / 2;
  if (tr_ok(&x->t, cc_all_reduce(x->t.c, &v, &s, 1, CC_INT64, CC_SUM), "all_reduce afterwards") &&
      s != want)
    tr_fail(&x->t, "all_reduce afterwards gave %lld, want %lld", (long long)s, (long long)want);
}

static void run_invalid(ctx *x) {
  user_state st;
  cc_op op, pm;
  float one = 1.0f;
  int n = x->t.n;
  static const cc_op never[] = {-1, -7, CC_OP_BUILTIN_COUNT, CC_OP_BUILTIN_COUNT + 57, 1000,
                                1 << 20, 0x7fffffff};
  size_t i;
  memset(&st, 0, sizeof st);
  st.magic = USER_MAGIC;
  st.expect = CC_INT64;

  for (i = 0; i < sizeof never / sizeof never[0]; i++) {
    tr_label(&x->t, "never-created op %d n=%d", never[i], n);
    expect_refused(x, never[i], CC_INT64);
    expect_invalid(x, cc_op_destroy(x->t.c, never[i]), "cc_op_destroy");
  }
  tr_label(&x->t, "after never-created ops n=%d", n);
  still_works(x);

  tr_label(&x->t, "destroyed user op n=%d", n);
  if (tr_ok(&x->t, cc_op_create(x->t.c, op_count_sum, &st, &op), "cc_op_create")) {
    tr_ok(&x->t, cc_op_destroy(x->t.c, op), "cc_op_destroy");
    expect_refused(x, op, CC_INT64);
    expect_invalid(x, cc_op_destroy(x->t.c, op), "a second cc_op_destroy");
    if (st.calls) tr_fail(&x->t, "the destroyed op's function was called");
    still_works(x);
  }

  tr_label(&x->t, "premul_sum(float32) on other dtypes n=%d", n);
  if (tr_ok(&x->t, cc_op_create_premul_sum(x->t.c, CC_FLOAT32, &one, &pm),
            "cc_op_create_premul_sum")) {
    expect_refused(x, pm, CC_FLOAT64);
    expect_refused(x, pm, CC_FLOAT16);
    expect_refused(x, pm, CC_INT32);
    still_works(x);
    /* and it still works on float32 */
    {
      float v = (float)(x->t.rank + 1), s = 0;
      if (tr_ok(&x->t, cc_all_reduce(x->t.c, &v, &s, 1, CC_FLOAT32, pm), "all_reduce float32") &&
          s != (float)(n * (n + 1) / 2))
        tr_fail(&x->t, "premul_sum(1.0) all_reduce gave %g, want %d", (double)s, n * (n + 1) / 2);
    }
    tr_ok(&x->t, cc_op_destroy(x->t.c, pm), "cc_op_destroy");
    tr_label(&x->t, "destroyed premul_sum op n=%d", n);
    expect_refused(x, pm, CC_FLOAT32);
    still_works(x);
  }

  tr_label(&x->t, "bad op creation arguments n=%d", n);
  expect_invalid(x, cc_op_create(x->t.c, NULL, NULL, &op), "cc_op_create(fn NULL)");
  expect_invalid(x, cc_op_create(x->t.c, op_count_sum, &st, NULL), "cc_op_create(out NULL)");
  expect_invalid(x, cc_op_create_premul_sum(x->t.c, CC_FLOAT32, NULL, &op),
                 "cc_op_create_premul_sum(scalar NULL)");
  expect_invalid(x, cc_op_create_premul_sum(x->t.c, CC_DTYPE_COUNT, &one, &op),
                 "cc_op_create_premul_sum(bad dtype)");
  still_works(x);

  /* many ops alive at once, then all destroyed */
  tr_label(&x->t, "64 ops alive at once n=%d", n);
  {
    cc_op ops[64];
    int k, made = 0;
    for (k = 0; k < 64; k++) {
      float sc = (float)(k + 1);
      cc_result rc = (k & 1) ? cc_op_create(x->t.c, op_count_sum, &st, &ops[k])
                             : cc_op_create_premul_sum(x->t.c, CC_FLOAT32, &sc, &ops[k]);
      if (!tr_ok(&x->t, rc, "cc_op_create")) break;
      made++;
    }
    if (made == 64) {
      /* the last premul op multiplies by 63 */
      float v = 1.0f, s = 0;
      if (tr_ok(&x->t, cc_all_reduce(x->t.c, &v, &s, 1, CC_FLOAT32, ops[62]), "all_reduce") &&
          s != (float)(63 * n))
        tr_fail(&x->t, "premul_sum(63) of 1.0 gave %g, want %d", (double)s, 63 * n);
    }
    for (k = 0; k < made; k++) tr_ok(&x->t, cc_op_destroy(x->t.c, ops[k]), "cc_op_destroy");
    still_works(x);
  }
}

/* ------------------------------------------------------------ driver */

static int rank_main(cc_comm *c, void *argp) {
  ctx x;
  int g;
  memset(&x, 0, sizeof x);
  x.arg = (world_arg *)argp;
  tr_ctx_init(&x.t, c, x.arg->tab);
  for (g = 0; g < G_COUNT; g++) {
    if (!tr_group_begin(&x.t, g)) return 99;
    if (g == G_PREMUL) {
      run_premul(&x);
      run_premul_phases(&x);
    } else if (g == G_USER)
      run_user(&x);
    else
      run_invalid(&x);
    tr_group_end(&x.t);
  }
  return tr_failed_any(&x.t, G_COUNT);
}

static const char *const g_cover[G_COUNT] = {
  "float32,float64,float16,bfloat16,int32,complex64 x per-rank and one scalar x all_reduce "
  "(in/out of place), reduce (roots 0,size-1), reduce_scatter x counts 0,1,7,4099,300007(float32); "
  "float64 calls of several phases, each followed at once by another call",
  "max-magnitude float32/float64, saturating uint8 sum, counting int64 sum (user pointer, dtype, "
  "call count) x all_reduce, reduce, reduce_scatter x counts 0,1,7,4099,300007(float32)",
  "never-created, destroyed, destroyed twice, premul on another dtype, bad create args, 64 live "
  "ops: CC_ERR_INVALID_ARG and the communicator still works"};

int main(int argc, char **argv) {
  static const int sizes[] = {1, 2, 3, 4, 5, 7, 8};
  tu_default_timeout("60");
  return tr_run_worlds("ops", sizes, sizeof sizes / sizeof sizes[0], argc > 1 ? atoi(argv[1]) : 0,
                       rank_main, g_names, g_cover, G_COUNT);
}
