/* test_vcoll - the variable-size collectives: gather_v, all_gather_v,
 * scatter_v, all_to_all_v.
 *
 * World sizes 1..8. Per-rank counts are irregular: some ranks contribute
 * nothing, one contributes more than 1 MiB, or all are zero (NULL buffers),
 * or only one rank sends. Displacements leave gaps between the blocks, and
 * some layouts place the blocks in reverse rank order; receive buffers start
 * filled with a sentinel, and the gaps must keep it. Root-only arguments are
 * NULL on the other ranks in half of the cases. Each rank checks its own
 * results bitwise; one PASS/FAIL line per (collective, world size).
 *
 *   test_vcoll            everything
 *   test_vcoll 3 8        only world sizes 3 and 8
 *   CC_TEST_QUICK=1       large blocks only at sizes 3 and 8 */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"
#include "test_ref.h"

#define MAXR TR_MAXR

enum { V_GATHER, V_ALL_GATHER, V_SCATTER, V_ALL_TO_ALL, V_COUNT };
static const char *const v_names[V_COUNT] = {"gather_v", "all_gather_v", "scatter_v",
                                              "all_to_all_v"};

enum { P_IRREGULAR, P_LARGE, P_ZERO, P_ONE, P_COUNT };
static const char *const p_names[P_COUNT] = {"irregular", "large", "all-zero", "one-sender"};

static const cc_dtype v_types[] = {CC_FLOAT32, CC_INT8, CC_COMPLEX128, CC_FLOAT16, CC_UINT64};
#define N_TYPES (sizeof v_types / sizeof v_types[0])

typedef struct world_arg {
  tr_table *tab;
  int quick;
} world_arg;

typedef struct vcase {
  int k, pattern, layout, root, null_nonroot;
  cc_dtype t;
  uint64_t seed;
} vcase;

/* Elements rank r contributes (gather_v, all_gather_v, scatter_v). */
static size_t count_of(const vcase *cs, int n, int r) {
  uint64_t h = tu_hash3(cs->seed, 11, (uint64_t)r);
  switch (cs->pattern) {
  case P_IRREGULAR: return r % 3 == 1 ? 0 : (size_t)(h % 3000) + 1;
  case P_LARGE:
    if (r == n / 2) return tr_big_block(cs->t);
    return r % 3 == 1 ? 0 : (size_t)(h % 3000) + 1;
  case P_ONE: return r == n - 1 ? 5 : 0;
  default: return 0;
  }
}

/* Elements rank r sends to rank j (all_to_all_v). */
static size_t pair_count(const vcase *cs, int n, int r, int j) {
  uint64_t h = tu_hash4(cs->seed, 12, (uint64_t)r, (uint64_t)j);
  switch (cs->pattern) {
  case P_IRREGULAR: return (r + 2 * j) % 3 == 0 ? 0 : (size_t)(h % 2000) + 1;
  case P_LARGE:
    if (r == 0 && j == n - 1) return tr_big_block(cs->t);
    return (r + 2 * j) % 3 == 0 ? 0 : (size_t)(h % 2000) + 1;
  case P_ONE: return r == n - 1 && j == 0 ? 7 : 0;
  default: return 0;
  }
}

typedef struct ctx {
  tr_ctx t;
  world_arg *arg;
} ctx;

static void *xalloc(size_t bytes) { return bytes ? tr_buf_alloc(bytes) : NULL; }

static void check_image(ctx *x, const vcase *cs, const char *what, const void *got,
                        const void *want, size_t elems, size_t bytes) {
  char m[300];
  if (tr_compare(got, want, elems, cs->t, m, sizeof m))
    tr_fail(&x->t, "%s: %s (sentinel 0xa5.. marks gaps that must stay untouched)", what, m);
  if (!tr_buf_guards_ok(got, bytes))
    tr_fail(&x->t, "%s: bytes written outside the buffer (guard band changed)", what);
}

static void check_untouched(ctx *x, const char *what, const void *p, size_t bytes) {
  size_t i;
  if (!p) return;
  i = tr_first_not_sentinel(p, bytes);
  if (i < bytes) tr_fail(&x->t, "%s: written at byte %zu although it is not used here", what, i);
  if (!tr_buf_guards_ok(p, bytes))
    tr_fail(&x->t, "%s: bytes written outside the buffer (guard band changed)", what);
}

/* gather_v (all == 0) and all_gather_v (all == 1) */
static void run_gather_v(ctx *x, const vcase *cs, int all) {
  int n = x->t.n, me = x->t.rank, r, is_root = all || me == cs->root;
  size_t es = tr_size(cs->t), counts[MAXR] = {0}, displs[MAXR] = {0}, total, mine;
  unsigned char *send, *recv = NULL, *want = NULL, *orig;
  size_t *rc_arg = counts, *dp_arg = displs;
  cc_result rc;
  for (r = 0; r < n; r++) counts[r] = count_of(cs, n, r);
  total = tr_layout(cs->layout, cs->seed, n, counts, displs, 21);
  mine = counts[me];
  send = (unsigned char *)xalloc(mine * es);
  tr_fill(send, cs->t, TR_GEN_ANY, cs->seed, me, 0, mine);
  orig = (unsigned char *)xalloc(mine * es);
  if (mine) memcpy(orig, send, mine * es);
  if (is_root || !cs->null_nonroot) recv = (unsigned char *)xalloc(total * es);
  if (!is_root && cs->null_nonroot) rc_arg = dp_arg = NULL;
  if (is_root) {
    want = (unsigned char *)xalloc(total * es);
    for (r = 0; r < n; r++)
      tr_fill(want + displs[r] * es, cs->t, TR_GEN_ANY, cs->seed, r, 0, counts[r]);
  }
  if (all)
    rc = cc_all_gather_v(x->t.c, send, mine, recv, rc_arg, dp_arg, cs->t);
  else
    rc = cc_gather_v(x->t.c, send, mine, recv, rc_arg, dp_arg, cs->t, cs->root);
  if (!tr_ok(&x->t, rc, v_names[cs->k])) goto out;
  if (is_root)
    check_image(x, cs, "recvbuf", recv, want, total, total * es);
  else
    check_untouched(x, "recvbuf of a non-root rank", recv, total * es);
  if (mine && memcmp(send, orig, mine * es) != 0) tr_fail(&x->t, "sendbuf changed by the call");
out:
  tr_buf_free(send);
  tr_buf_free(orig);
  tr_buf_free(recv);
  tr_buf_free(want);
}

static void run_scatter_v(ctx *x, const vcase *cs) {
  int n = x->t.n, me = x->t.rank, r, is_root = me == cs->root;
  size_t es = tr_size(cs->t), counts[MAXR] = {0}, displs[MAXR] = {0}, total, mine;
  unsigned char *send = NULL, *orig = NULL, *recv, *want;
  size_t *sc_arg = counts, *dp_arg = displs;
  cc_result rc;
  for (r = 0; r < n; r++) counts[r] = count_of(cs, n, r);
  total = tr_layout(cs->layout, cs->seed, n, counts, displs, 22);
  mine = counts[me];
  if (is_root) {
    /* the whole buffer holds data, the gaps too: only the blocks may travel */
    send = (unsigned char *)xalloc(total * es);
    tr_fill(send, cs->t, TR_GEN_ANY, cs->seed, cs->root, 0, total);
    orig = (unsigned char *)xalloc(total * es);
    if (total) memcpy(orig, send, total * es);
  } else if (!cs->null_nonroot) {
    send = (unsigned char *)xalloc(total * es);
  } else {
    sc_arg = dp_arg = NULL;
  }
  recv = (unsigned char *)xalloc(mine * es);
  want = (unsigned char *)xalloc(mine * es);
  tr_fill(want, cs->t, TR_GEN_ANY, cs->seed, cs->root, displs[me], mine);
  rc = cc_scatter_v(x->t.c, send, sc_arg, dp_arg, recv, mine, cs->t, cs->root);
  if (!tr_ok(&x->t, rc, "scatter_v")) goto out;
  check_image(x, cs, "recvbuf", recv, want, mine, mine * es);
  if (is_root) {
    if (total && memcmp(send, orig, total * es) != 0) tr_fail(&x->t, "sendbuf changed by the call");
  } else {
    check_untouched(x, "sendbuf of a non-root rank", send, total * es);
  }
out:
  tr_buf_free(send);
  tr_buf_free(orig);
  tr_buf_free(recv);
  tr_buf_free(want);
}

static void run_all_to_all_v(ctx *x, const vcase *cs) {
  int n = x->t.n, me = x->t.rank, j, r, null_bufs;
  size_t es = tr_size(cs->t);
  size_t scounts[MAXR] = {0}, sdispls[MAXR] = {0}, rcounts[MAXR] = {0}, rdispls[MAXR] = {0};
  size_t their_counts[MAXR] = {0}, their_displs[MAXR] = {0}, stotal, rtotal;
  unsigned char *send, *orig, *recv, *want;
  cc_result rc;
  for (j = 0; j < n; j++) {
    scounts[j] = pair_count(cs, n, me, j);
    rcounts[j] = pair_count(cs, n, j, me);
  }
  stotal = tr_layout(cs->layout, cs->seed, n, scounts, sdispls, 100 + (uint64_t)me);
  rtotal = tr_layout(cs->layout, cs->seed, n, rcounts, rdispls, 200 + (uint64_t)me);
  send = (unsigned char *)xalloc(stotal * es);
  tr_fill(send, cs->t, TR_GEN_ANY, cs->seed, me, 0, stotal);
  orig = (unsigned char *)xalloc(stotal * es);
  if (stotal) memcpy(orig, send, stotal * es);
  recv = (unsigned char *)xalloc(rtotal * es);
  want = (unsigned char *)xalloc(rtotal * es);
  /* block from rank j: what j placed for me in its send buffer */
  for (j = 0; j < n; j++) {
    for (r = 0; r < n; r++) their_counts[r] = pair_count(cs, n, j, r);
    tr_layout(cs->layout, cs->seed, n, their_counts, their_displs, 100 + (uint64_t)j);
    tr_fill(want + rdispls[j] * es, cs->t, TR_GEN_ANY, cs->seed, j, their_displs[me], rcounts[j]);
  }
  /* nothing moves: NULL buffers, with displacements that point past 0 */
  null_bufs = cs->pattern == P_ZERO && cs->layout == TR_L_REVERSED;
  rc = cc_all_to_all_v(x->t.c, null_bufs ? NULL : send, scounts, sdispls, null_bufs ? NULL : recv,
                       rcounts, rdispls, cs->t);
  if (!tr_ok(&x->t, rc, null_bufs ? "all_to_all_v (NULL buffers, counts 0)" : "all_to_all_v")) goto out;
  check_image(x, cs, "recvbuf", recv, want, rtotal, rtotal * es);
  if (stotal && memcmp(send, orig, stotal * es) != 0) tr_fail(&x->t, "sendbuf changed by the call");
out:
  tr_buf_free(send);
  tr_buf_free(orig);
  tr_buf_free(recv);
  tr_buf_free(want);
}

static void run_case(ctx *x, vcase *cs) {
  tr_label(&x->t, "%s %s counts=%s layout=%s root=%d%s n=%d", v_names[cs->k],
           tr_dtype_name(cs->t), p_names[cs->pattern], tr_layout_name(cs->layout), cs->root,
           cs->null_nonroot ? " (NULL root-only args elsewhere)" : "", x->t.n);
  cs->seed = tu_hash4((uint64_t)cs->k + 1, (uint64_t)cs->t * 16 + (uint64_t)cs->pattern,
                      (uint64_t)cs->layout * 64 + (uint64_t)cs->root, (uint64_t)x->t.n);
  switch (cs->k) {
  case V_GATHER: run_gather_v(x, cs, 0); break;
  case V_ALL_GATHER: run_gather_v(x, cs, 1); break;
  case V_SCATTER: run_scatter_v(x, cs); break;
  default: run_all_to_all_v(x, cs); break;
  }
}

static int large_here(int n, int quick) { return quick ? (n == 3 || n == 8) : 1; }

static void run_group(ctx *x, int k) {
  int n = x->t.n, roots[2], nroots = 1, ri, p, l, variant = 0;
  size_t ti;
  vcase cs;
  roots[0] = 0;
  if ((k == V_GATHER || k == V_SCATTER) && n > 1) roots[nroots++] = n - 1;
  memset(&cs, 0, sizeof cs);
  cs.k = k;
  for (ti = 0; ti < N_TYPES; ti++) {
    for (p = 0; p < P_COUNT; p++) {
      for (l = 0; l < TR_L_COUNT; l++) {
        /* the large blocks for two dtype/layout pairs only */
        if (p == P_LARGE && !((ti == 0 && l == TR_L_GAPS) || (ti == 1 && l == TR_L_REVERSED) ||
                              (ti == 2 && l == TR_L_PACKED)))
          continue;
        if (p == P_LARGE && !large_here(n, x->arg->quick)) continue;
        for (ri = 0; ri < nroots; ri++) {
          cs.t = v_types[ti];
          cs.pattern = p;
          cs.layout = l;
          cs.root = roots[ri];
          cs.null_nonroot = (int)(tu_mix64((uint64_t)variant++) & 1);
          run_case(x, &cs);
        }
      }
    }
  }
}

static int rank_main(cc_comm *c, void *argp) {
  ctx x;
  int k;
  memset(&x, 0, sizeof x);
  x.arg = (world_arg *)argp;
  tr_ctx_init(&x.t, c, x.arg->tab);
  for (k = 0; k < V_COUNT; k++) {
    if (!tr_group_begin(&x.t, k)) return 99;
    run_group(&x, k);
    tr_group_end(&x.t);
  }
  return tr_failed_any(&x.t, V_COUNT);
}

static void run_world(int n, int quick) {
  static world_arg arg;
  tr_table *tab = (tr_table *)tu_shared_alloc(sizeof(tr_table));
  int rc, k;
  double t0 = tu_now();
  char name[64], cov[300];
  if (!tab) {
    tu_fail("vcoll.setup", "cannot map shared memory");
    return;
  }
  arg.tab = tab;
  arg.quick = quick;
  rc = tu_spawn(n, rank_main, &arg);
  for (k = 0; k < V_COUNT; k++) {
    snprintf(name, sizeof name, "vcoll.%s.n%d", v_names[k], n);
    snprintf(cov, sizeof cov,
             "float32,int8,complex128,float16,uint64 x counts irregular-with-zeros, all-zero, "
             "one-sender%s x layouts packed, gaps, reversed%s",
             large_here(n, quick) ? ", >1 MiB block (3 dtypes)" : "",
             (k == V_GATHER || k == V_SCATTER) && n > 1 ? " x roots 0,size-1" : "");
    tr_report_group(tab, n, k, name, cov, rc);
  }
  if (rc != 0) {
    snprintf(name, sizeof name, "vcoll.spawn.n%d", n);
    tu_fail(name, "cc_spawn returned %d (%s)", rc, cc_comm_last_error(NULL));
  }
  fprintf(stderr, "vcoll: world size %d took %.2f s\n", n, tu_now() - t0);
  tu_shared_free(tab, sizeof(tr_table));
}

int main(int argc, char **argv) {
  int quick = tu_quick(), n, i, want[MAXR + 1];
  double t0 = tu_now();
  tu_default_timeout("60");
  memset(want, 0, sizeof want);
  for (i = 1; i < argc; i++) {
    n = atoi(argv[i]);
    if (n >= 1 && n <= MAXR) want[n] = 1;
  }
  for (n = 1; n <= MAXR; n++)
    if (argc == 1 || want[n]) run_world(n, quick);
  fprintf(stderr, "test_vcoll: %.2f s\n", tu_now() - t0);
  return tu_exit_code();
}
