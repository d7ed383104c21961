/* test_direct - the arena's direct paths: large messages read from the peers'
 * buffers with one copy (cross-memory attach), and symmetric memory from
 * cc_mem_alloc read and written in place.
 *
 * CC_SHM_DIRECT_BYTES=1 sends every call that can go direct down the direct
 * path, so small counts exercise it; a few counts span several fold pieces.
 * CC_SHM_CMA=1 (off by default) turns cross-memory attach on, but where said.
 * Every result is compared bitwise with test_ref.h's reference.
 *
 *   cma.nN       worlds of 2, 3, 4: broadcast, reduce, all_reduce,
 *                reduce_scatter, gather, all_gather, scatter, all_to_all x
 *                every dtype (x every op the dtype allows, a user op and
 *                premul_sum for the reductions), in place and out of place,
 *                on plain buffers; the ranks agreed on cross-memory attach
 *   sym.nN       the same on buffers inside cc_mem_alloc memory, at offsets
 *                that differ from rank to rank; the peers' buffers were used
 *                mapped (no copy)
 *   rules.nN     cc_mem_free refuses memory that is not from cc_mem_alloc, a
 *                double free, and memory a pending request uses (then frees it
 *                once the request is done); cc_mem_alloc on a split
 *                communicator; memory of one communicator used by another
 *   nocma        CC_SHM_CMA=0: the same calls, right, through the arena; with
 *                symmetric memory still direct (mapped)
 *   eperm        the ranks drop CAP_SYS_PTRACE and become non-dumpable, so
 *                process_vm_readv is refused (EPERM): every rank logs one INFO
 *                line, and the calls are right, through the arena
 *   peer_lost    a rank dies after publishing its buffers, while its peer
 *                reads them (cross-memory attach, and mapped): CC_ERR_PEER_LOST
 *                naming it, never CC_OK or a crash
 *   mismatch     ranks that free different allocations: CC_ERR_MISMATCH
 *   differ       settings that differ between the ranks (set by hand on one
 *                rank): another CC_SHM_DIRECT_BYTES; CC_SHM_CMA=auto on rank
 *                0 only, whose timings send the calls through the arena
 *                without asking: CC_ERR_MISMATCH on both ranks naming the
 *                settings, no wrong element before it
 *   tcp          CC_TRANSPORT=tcp: cc_mem_alloc gives plain memory, and
 *                collectives on it are right
 *   auto.policy  CC_SHM_CMA=auto's choice (cc__tune_step, cc__tune_note) on
 *                made-up timings: the learning order, the faster way kept,
 *                the slower one tried ever more rarely (at most 1024 calls
 *                apart), a change of the faster way followed, the way in use
 *                half again slower: the other tried at once (within the 16
 *                calls the arena's way goes without asking), a way that
 *                could not be taken counted as endless
 *   auto.nN      CC_SHM_CMA=auto on worlds of 2 and 3 (2 under CC_TEST_QUICK): the matrix right;
 *                then 600 all_gathers over three size classes, every element
 *                checked, while rank 0's timings are overwritten so that the
 *                faster way flips every 150 calls: every rank held the same
 *                state of every class after every call (a hash), rank 0
 *                changed ways, and the slower way took under half of the calls;
 *                auto.log: with CC_DEBUG=INFO rank 0 logged every choice,
 *                and each line gives the way chosen as the faster, with the
 *                figures the choice compared (a switch after one call of the
 *                other way: that call's rate, not the median of its last
 *                three, which still holds calls from before the flip)
 *
 *   CC_TEST_QUICK=1   fewer ops and dtypes (sanitizer builds) */
#define _GNU_SOURCE
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"
#include "test_ref.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

enum { G_CMA, G_SYM, G_RULES, G_AUTO, G_COUNT };
static const char *const g_names[G_COUNT] = {"cma", "sym", "rules", "auto"};
static const char *const g_cover[G_COUNT] = {
  "8 collectives x dtypes x ops, in place and out, plain buffers, one copy",
  "8 collectives x dtypes x ops, in place and out, cc_mem_alloc buffers at per-rank offsets",
  "cc_mem_free refusals, split communicator, memory of another communicator",
  "600 all_gathers, 3 size classes, the faster way flipped every 150 calls: right, ways agreed"};

enum { K_BCAST, K_REDUCE, K_ALLRED, K_RS, K_GATHER, K_ALLGATHER, K_SCATTER, K_A2A, K_N };
static const char *const k_names[K_N] = {"broadcast", "reduce", "all_reduce", "reduce_scatter",
                                          "gather", "all_gather", "scatter", "all_to_all"};

#define OP_USER (-10)    /* a user op that sums float64 */
#define OP_PREMUL (-11)  /* premul_sum, float32 */

typedef struct world {
  tr_table *tab;
  int quick;
  int sym;   /* 1: run the matrix on cc_mem_alloc memory only; 0: plain only; 2: both */
  int expect_cma; /* 1: the ranks must agree on cross-memory attach; 0: must not; -1: either */
} world;

static world g_world;

static void user_sum(void *inout, const void *in, size_t count, cc_dtype t, void *u) {
  size_t i;
  (void)u;
  (void)t;
  for (i = 0; i < count; i++) ((double *)inout)[i] += ((const double *)in)[i];
}

/* The buffers of one case: sym: inside the rank's allocation, at offsets that
   depend on the rank; else heap memory. */
typedef struct bufs {
  unsigned char *mem;     /* cc_mem_alloc'd */
  size_t mem_bytes;
  unsigned char *heap_s, *heap_r;
} bufs;

static unsigned char *buf_send(bufs *b, int sym, int rank) {
  return sym ? b->mem + 64 + 192 * (size_t)rank : b->heap_s;
}
static unsigned char *buf_recv(bufs *b, int sym, int rank, int n) {
  return sym ? b->mem + b->mem_bytes / 2 + 128 * (size_t)(n - rank) : b->heap_r;
}

static int is_reduction(int k) { return k == K_REDUCE || k == K_ALLRED || k == K_RS; }

/* One case of the matrix: what it calls, its buffers, and the op and scalars it uses. */
typedef struct dcase {
  int k, opk, inplace, kind, root;
  cc_dtype t;
  cc_op op;
  size_t count, es, one;
  uint64_t seed;
  unsigned char *sb, *rb, *want;   /* rb: where the result lands (moved in place) */
  unsigned char scal[TR_MAXR][16]; /* premul_sum's scalars, one per rank */
} dcase;

/* The user op or premul_sum a case asks for, into *made: 0 when its creation failed. */
static int case_make_op(tr_ctx *x, dcase *d, cc_op *made) {
  int j;
  if (d->opk == OP_USER && !tr_ok(x, cc_op_create(x->c, user_sum, NULL, made), "cc_op_create")) return 0;
  if (d->opk == OP_PREMUL) {
    for (j = 0; j < x->n; j++) { float s = 0.5f + (float)j; memcpy(d->scal[j], &s, 4); }
    if (!tr_ok(x, cc_op_create_premul_sum(x->c, d->t, d->scal[x->rank], made), "cc_op_create_premul_sum")) return 0;
  }
  return 1;
}

/* The reference of a reduction's count elements from element `first` on. */
static void case_reduced(tr_ctx *x, const dcase *d, size_t first) {
  if (d->opk == OP_PREMUL) {
    size_t i;
    for (i = 0; i < d->count; i++)
      tr_premul_reference(d->want + i * d->es, d->t, d->kind, d->seed, x->n, first + i,
                          (const unsigned char (*)[16])d->scal);
  } else {
    tr_reference(d->want, d->t, d->op >= CC_OP_BUILTIN_COUNT ? CC_SUM : d->op, d->kind, d->seed, x->n, first,
                 d->count);
  }
}

/* Fill the inputs, make the call, compute what the result must be. */
static cc_result case_call(tr_ctx *x, dcase *d) {
  cc_comm *c = x->c;
  int n = x->n, me = x->rank, root = d->root, k = d->k, kind = d->kind, j;
  cc_dtype t = d->t;
  size_t count = d->count, one = d->one;
  uint64_t seed = d->seed;
  unsigned char *sb = d->sb, *rb = d->rb, *want = d->want;
  cc_result rc = CC_OK;
  switch (k) {
  case K_BCAST:
    if (me == root) tr_fill(rb, t, kind, seed, root, 0, count);
    rc = cc_broadcast(c, rb, count, t, root);
    tr_fill(want, t, kind, seed, root, 0, count);
    break;
  case K_REDUCE: case K_ALLRED: {
    unsigned char *s = d->inplace ? rb : sb;
    tr_fill(s, t, kind, seed, me, 0, count);
    rc = k == K_REDUCE ? cc_reduce(c, s, rb, count, t, d->op, root) : cc_all_reduce(c, s, rb, count, t, d->op);
    case_reduced(x, d, 0);
    break;
  }
  case K_RS:                           /* in place, recvbuf is block `me` of sendbuf */
    tr_fill(sb, t, kind, seed, me, 0, (size_t)n * count);
    if (d->inplace) d->rb = rb = sb + (size_t)me * one;
    rc = cc_reduce_scatter(c, sb, rb, count, t, d->op);
    case_reduced(x, d, (size_t)me * count);
    break;
  case K_GATHER: case K_ALLGATHER: {
    unsigned char *s = d->inplace && (k == K_ALLGATHER || me == root) ? rb + (size_t)me * one : sb;
    tr_fill(s, t, kind, seed, me, 0, count);
    rc = k == K_GATHER ? cc_gather(c, s, rb, count, t, root) : cc_all_gather(c, s, rb, count, t);
    for (j = 0; j < n; j++) tr_fill(want + (size_t)j * one, t, kind, seed, j, 0, count);
    break;
  }
  case K_SCATTER: {
    unsigned char *r = d->inplace && me == root ? sb + (size_t)me * one : rb;
    if (me == root) tr_fill(sb, t, kind, seed, root, 0, (size_t)n * count);
    rc = cc_scatter(c, sb, r, count, t, root);
    d->rb = r;
    tr_fill(want, t, kind, seed, root, (size_t)me * count, count);
    break;
  }
  case K_A2A: {
    unsigned char *s = d->inplace ? rb : sb;
    tr_fill(s, t, kind, seed, me, 0, (size_t)n * count);
    rc = cc_all_to_all(c, s, rb, count, t);
    for (j = 0; j < n; j++) tr_fill(want + (size_t)j * one, t, kind, seed, j, (size_t)me * count, count);
    break;
  }
  default: break;
  }
  return rc;
}

/* One case: fill, call, check. */
static void run_case(tr_ctx *x, bufs *b, int sym, int k, cc_dtype t, int opk, size_t count, int inplace,
                     uint64_t seed) {
  int n = x->n, me = x->rank;
  size_t all;
  cc_op made = -1;
  cc_result rc;
  dcase d;
  d.k = k;
  d.t = t;
  d.opk = opk;
  d.count = count;
  d.inplace = inplace;
  d.seed = seed;
  d.root = n - 1;
  d.es = tr_size(t);
  d.one = count * d.es;
  all = d.one * (size_t)n;
  d.sb = buf_send(b, sym, me);
  d.rb = buf_recv(b, sym, me, n);
  d.op = opk >= 0 ? opk : CC_SUM;
  d.kind = opk == CC_PROD || opk == OP_PREMUL ? TR_GEN_NEAR_ONE : TR_GEN_ANY;
  tr_label(x, "%s %s %s count %zu %s%s", k_names[k], tr_dtype_name(t),
           opk == OP_USER ? "user" : opk == OP_PREMUL ? "premul_sum" : is_reduction(k) ? tr_op_name(d.op) : "-",
           count, inplace ? "in place" : "out of place", sym ? " (cc_mem_alloc)" : "");
  d.want = (unsigned char *)malloc(all + 16);
  if (!d.want) { tr_fail(x, "malloc"); return; }
  if (!case_make_op(x, &d, &made)) goto out;
  if (made >= 0) d.op = made;
  memset(d.rb, 0xA5, k == K_RS || k == K_SCATTER ? d.one : all);
  rc = case_call(x, &d);
  if (!tr_ok(x, rc, k_names[k])) goto out;
  {
    size_t len = k == K_GATHER || k == K_ALLGATHER || k == K_A2A ? (size_t)n * count : count;
    char m[300];
    if ((k != K_REDUCE && k != K_GATHER) || me == d.root)
      if (tr_compare(d.rb, d.want, len, t, m, sizeof m)) tr_fail(x, "%s", m);
  }
out:
  if (made >= 0) cc_op_destroy(x->c, made);
  free(d.want);
}

/* Every collective x dtype x op, in place and out, on one kind of buffer. */
static void run_matrix(tr_ctx *x, bufs *b, int sym, int quick) {
  static const cc_dtype quick_dt[] = {CC_INT8, CC_FLOAT16, CC_FLOAT32, CC_COMPLEX128};
  int k, d, o, ip, ndt = quick ? (int)(sizeof quick_dt / sizeof quick_dt[0]) : CC_DTYPE_COUNT;
  uint64_t seed = 1000u * (uint64_t)x->n + (uint64_t)sym;
  for (k = 0; k < K_N; k++)
    for (d = 0; d < ndt; d++) {
      cc_dtype t = quick ? quick_dt[d] : (cc_dtype)d;
      size_t count = 777 + (size_t)d;
      for (ip = 0; ip < 2; ip++) {
        if (!is_reduction(k)) {
          run_case(x, b, sym, k, t, -1, count, ip, ++seed);
          continue;
        }
        for (o = 0; o < CC_OP_BUILTIN_COUNT; o++) {
          if (!tr_valid_pair(t, o) || (quick && o != CC_SUM && o != CC_MAX)) continue;
          run_case(x, b, sym, k, t, o, count, ip, ++seed);
        }
        if (t == CC_FLOAT64) run_case(x, b, sym, k, t, OP_USER, count, ip, ++seed);
        if (t == CC_FLOAT32) run_case(x, b, sym, k, t, OP_PREMUL, count, ip, ++seed);
      }
    }
  /* several fold pieces (256 KiB each) and pieces that end mid-element row */
  for (ip = 0; ip < 2; ip++) {
    run_case(x, b, sym, K_ALLRED, CC_FLOAT32, CC_SUM, 200003, ip, ++seed);
    run_case(x, b, sym, K_REDUCE, CC_FLOAT16, CC_MAX, 150001, ip, ++seed);
    run_case(x, b, sym, K_RS, CC_FLOAT64, CC_SUM, 70001, ip, ++seed);
    run_case(x, b, sym, K_ALLGATHER, CC_UINT8, -1, 300001, ip, ++seed);
    run_case(x, b, sym, K_A2A, CC_INT32, -1, 70001, ip, ++seed);
  }
}

/* Memory of the matrix: big enough for the largest case of the largest world. */
#define MEM_BYTES ((size_t)8 << 20)

static int matrix_main(cc_comm *c, void *arg) {
  world *w = (world *)arg;
  tr_ctx x;
  bufs b;
  int g, j, sym;
  tr_ctx_init(&x, c, w->tab);
  memset(&b, 0, sizeof b);
  b.mem_bytes = MEM_BYTES;
  b.heap_s = (unsigned char *)malloc(MEM_BYTES / 2);
  b.heap_r = (unsigned char *)malloc(MEM_BYTES / 2);
  for (sym = w->sym == 1 ? 1 : 0; sym <= (w->sym ? 1 : 0); sym++) {
    g = sym ? G_SYM : G_CMA;
    if (!tr_group_begin(&x, g)) return 1;
    if (sym && !tr_ok(&x, cc_mem_alloc(c, MEM_BYTES, (void **)&b.mem), "cc_mem_alloc")) { tr_group_end(&x); continue; }
    run_matrix(&x, &b, sym, w->quick);
    if (sym) {                /* the peers' parts were mapped: pb points into them */
      tr_label(&x, "the last call used the peers' buffers in place");
      for (j = 0; j < x.n; j++)
        if (j != x.rank && (!c->direct.pb || (!c->direct.pb[j].s && !c->direct.pb[j].r))) tr_fail(&x, "rank %d's buffers were not mapped", j);
      if (!tr_ok(&x, cc_mem_free(c, b.mem), "cc_mem_free")) {}
    } else if (x.rank == 0) {
      w->tab->scratch[0] = 10 + c->direct.cma;   /* what the ranks agreed on: the parent judges it */
      w->tab->scratch[1] = 10 + c->direct.cma_mine;
    }
    tr_group_end(&x);
  }
  free(b.heap_s);
  free(b.heap_r);
  return tr_failed_any(&x, G_COUNT);
}

/* ---------------------------------------------------------------- CC_SHM_CMA=auto */

/* CC_SHM_CMA=auto's settings, the defaults (CC_SHM_TUNE_*), unless a case
   changes them. */
static cc__settings pset;
static void policy_defaults(void) {
  memset(&pset, 0, sizeof pset);
  pset.tune_first = 16; pset.tune_most = 1024; pset.tune_ask = 16; pset.tune_gain = 10; pset.tune_drift = 50;
}

/* One call of a class as cc__tuned_run makes it, on made-up timings: cost[w]
   ns per byte each way. Returns the way it went. */
static int policy_call(cc__tune *t, int prior, const float cost[2], int *chose) {
  *chose = 0;
  if (!t->way && t->wait) {
    t->wait--;
    t->want = t->ran = 0;
  } else {
    t->want = t->ran = (uint8_t)cc__tune_step(&pset, t, prior, chose);
  }
  cc__tune_note(t, cost[t->ran]);
  return t->ran;
}

static void policy_unit(void) {
  static const float cma_fast[2] = {2.0f, 1.0f}, arena_fast[2] = {1.0f, 2.0f};
  cc__tune t;
  int i, chose, way, seq[4], ok, changes, slow, slow_before = 0, last_try = -1, gap_max = 0, prev;
  policy_defaults();
  /* learning: the prior way twice, the other twice */
  for (way = 0; way < 2; way++) {
    memset(&t, 0, sizeof t);
    for (i = 0; i < 4; i++) seq[i] = policy_call(&t, way, cma_fast, &chose);
    ok = seq[0] == way && seq[1] == way && seq[2] == !way && seq[3] == !way && t.every == 0;
    (void)policy_call(&t, way, cma_fast, &chose);
    ok = ok && chose && t.way == 1;
    if (ok) tu_pass(way ? "direct.auto.policy.learn_prior1" : "direct.auto.policy.learn_prior0",
                    "ways %d %d %d %d, then cross-memory attach (faster)", seq[0], seq[1], seq[2], seq[3]);
    else tu_fail(way ? "direct.auto.policy.learn_prior1" : "direct.auto.policy.learn_prior0",
                 "ways %d %d %d %d, chose %d, way %d", seq[0], seq[1], seq[2], seq[3], chose, t.way);
  }
  /* 20000 calls, the arena faster for the first 10000, then cross-memory attach */
  memset(&t, 0, sizeof t);
  changes = slow = 0;
  for (i = 0; i < 20000; i++) {
    const float *cost = i < 10000 ? arena_fast : cma_fast;
    way = policy_call(&t, 1, cost, &chose);
    changes += chose && i > 4;
    if (cost[way] > 1.5f) {
      slow++;
      slow_before += i < 10000;
      if (last_try >= 0 && i - last_try > gap_max) gap_max = i - last_try;
      last_try = i;
    }
    if (i == 9999 && (t.way != 0 || t.every != 1024)) break;
  }
  if (i == 20000 && t.way == 1 && changes == 1 && slow_before <= 30 && slow - slow_before <= 1024 + 30 &&
      gap_max <= 1025 && t.every >= 512)
    tu_pass("direct.auto.policy.follow", "20000 calls, the faster way flipped at 10000: %d change, %d calls the slower "
            "way before the flip and %d after, tries at most %d calls apart", changes, slow_before, slow - slow_before,
            gap_max);
  else
    tu_fail("direct.auto.policy.follow", "stopped at %d: way %d every %u, %d changes, %d + %d slow calls, gap %d", i,
            t.way, t.every, changes, slow_before, slow - slow_before, gap_max);
  /* the way in use gets three times slower: the other is tried at once */
  memset(&t, 0, sizeof t);
  for (i = 0; i < 3000; i++) {
    static const float slower[2] = {3.0f, 2.0f};
    way = policy_call(&t, 0, i < 2000 ? arena_fast : slower, &chose);
    if (i >= 2000 && t.way == 1) break;
  }
  if (i >= 2000 && i <= 2000 + (int)pset.tune_ask + 3)   /* the arena's way asks every 16th call */
    tu_pass("direct.auto.policy.slower", "the arena three times slower from call 2000: cross-memory attach taken at "
            "call %d", i);
  else
    tu_fail("direct.auto.policy.slower", "the arena three times slower from call 2000: still the arena at %d", i);
  /* a way that cannot be taken (want 1, ran 0) loses */
  memset(&t, 0, sizeof t);
  for (i = 0; i < 8; i++) {
    if (!t.way && t.wait) { t.wait--; t.want = t.ran = 0; }
    else t.want = (uint8_t)cc__tune_step(&pset, &t, 1, &chose);
    t.ran = 0;                         /* as an in-place all_to_all: always through the arena */
    cc__tune_note(&t, 5.0f);
  }
  if (t.every && t.way == 0 && cc__tune_est(&t, 1) > 1e29f)
    tu_pass("direct.auto.policy.cannot", "a way the calls could not take counted as endless: the arena kept");
  else
    tu_fail("direct.auto.policy.cannot", "way %d every %u best(1) %g", t.way, t.every, (double)cc__tune_est(&t, 1));
  /* a try of 4 calls (the stores' chooser: plain first, no learning) is judged
     by its slowest call but the first: a way whose first call of a try is fast
     and the next ones slow is kept out; one fast throughout is taken */
  memset(&t, 0, sizeof t);
  t.tries = 4;
  t.every = t.left = pset.tune_first;
  t.ref = 1e30f;
  for (i = 0, changes = 0, prev = 0; i < 3000; i++) {
    if (!t.way && t.wait) { t.wait--; t.want = t.ran = 0; chose = 0; }
    else t.want = t.ran = (uint8_t)cc__tune_step(&pset, &t, 0, &chose);
    cc__tune_note(&t, t.ran == 0 ? 1.0f : i >= 1500 || prev == 0 ? 0.5f : 3.0f);
    prev = t.ran;
    changes += chose && i < 1500;
    if (i == 1499 && t.every < 512) break;
  }
  if (i == 3000 && changes == 0 && t.way == 1)
    tu_pass("direct.auto.policy.try4", "tries of 4 calls: a way fast only on a try's first call kept out for 1500 "
            "calls, taken once fast throughout");
  else
    tu_fail("direct.auto.policy.try4", "stopped at %d: %d changes before call 1500, way %d, every %u", i, changes,
            t.way, t.every);
  /* the settings are the tuner's: CC_SHM_TUNE_MOST=64 keeps tries at most 64
     calls apart, CC_SHM_TUNE_GAIN=60 keeps a way that a try beats by less */
  policy_defaults();
  pset.tune_most = 64;
  memset(&t, 0, sizeof t);
  for (i = 0; i < 3000; i++) (void)policy_call(&t, 0, arena_fast, &chose);
  ok = t.every == 64;
  policy_defaults();
  pset.tune_gain = 60;
  memset(&t, 0, sizeof t);
  for (i = 0; i < 3000; i++) (void)policy_call(&t, 0, i < 10 ? arena_fast : cma_fast, &chose);
  if (ok && t.way == 0)
    tu_pass("direct.auto.policy.settings", "CC_SHM_TUNE_MOST=64: tries 64 calls apart; CC_SHM_TUNE_GAIN=60: a way "
            "twice as fast (50%% less time) is not taken");
  else
    tu_fail("direct.auto.policy.settings", "CC_SHM_TUNE_MOST=64: every %u (want 64); CC_SHM_TUNE_GAIN=60: way %d "
            "(want the arena kept)", t.every, t.way);
}

#define AUTO_CALLS 600

static int world_n(int n, world *w);

static uint64_t fnv(uint64_t h, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h;
}

/* scratch: [0..3] each rank's hash of the classes' states; [4] rank 0's way
   changes; [5] its calls the slower way; [6] calls that asked; [7] c->cma. */
static int auto_main(cc_comm *c, void *arg) {
  static const size_t counts[3] = {16, 2000, 70001};
  world *w = (world *)arg;
  tr_ctx x;
  int i, j, me = cc_comm_rank(c), n = cc_comm_size(c);
  uint64_t h = 14695981039346656037ull;
  int32_t *sb = (int32_t *)malloc(70001 * 4), *rb = (int32_t *)malloc(70001 * 4 * (size_t)n);
  tr_ctx_init(&x, c, w->tab);
  if (!tr_group_begin(&x, G_AUTO)) return 1;
  for (i = 0; i < AUTO_CALLS && sb && rb; i++) {
    size_t cnt = counts[i % 3], e;
    int cma_faster = (i / 150) % 2 == 0, old_way;
    cc__call k;
    cc__tune *t;
    memset(&k, 0, sizeof k);
    k.coll = CC__ALL_GATHER;
    k.count = cnt;
    k.t = CC_INT32;
    t = cc__tune_of(c, &k);
    old_way = t ? t->way : -1;
    for (e = 0; e < cnt; e++) sb[e] = (int32_t)(e * 31 + (size_t)me * 1000003 + (size_t)i);
    tr_label(&x, "all_gather call %d, count %zu", i, cnt);
    if (!tr_ok(&x, cc_all_gather(c, sb, rb, cnt, CC_INT32), "cc_all_gather")) break;
    for (j = 0; j < n; j++)
      for (e = 0; e < cnt; e++)
        if (rb[(size_t)j * cnt + e] != (int32_t)(e * 31 + (size_t)j * 1000003 + (size_t)i)) {
          tr_fail(&x, "element %zu of rank %d's part: %d", e, j, (int)rb[(size_t)j * cnt + e]);
          j = n;
          break;
        }
    if (!t) continue;
    h = fnv(fnv(h, t->way), t->wait);
    if (me == 0 && t->ran < 2) {       /* made-up timings: the faster way flips every 150 calls */
      t->ns[t->ran][0] = (t->ran == 1) == cma_faster ? 1.0f : 3.0f;
      w->tab->scratch[4] += old_way >= 0 && t->way != old_way && t->every;
      w->tab->scratch[5] += (t->ran == 1) != cma_faster;
      w->tab->scratch[6] += t->way || t->ran || t->want;
    }
  }
  w->tab->scratch[me] = (int64_t)h;
  if (me == 0) w->tab->scratch[7] = c->direct.cma;
  free(sb);
  free(rb);
  tr_group_end(&x);
  return tr_failed_any(&x, G_COUNT);
}

static int spawn_capture(int n, cc_main_fn fn, void *arg, const char *grep, int *lines, int *bad);

static void auto_worlds(world *w) {
  int n, rc, j, same, lines, bad;
  char name[64];
  setenv("CC_SHM_CMA", "auto", 1);
  for (n = 2; n <= (tu_quick() ? 2 : 3); n++) {   /* the sanitizer runs: 2 ranks */
    w->sym = 0;
    w->quick = 1;
    rc = world_n(n, w);
    snprintf(name, sizeof name, "direct.auto.matrix.n%d", n);
    tr_report_group(w->tab, n, G_CMA, name, "CC_SHM_CMA=auto: 8 collectives x dtypes, right", rc);
    w->tab = (tr_table *)tu_shared_alloc(sizeof(tr_table));
    setenv("CC_DEBUG", "INFO", 1);     /* rank 0 logs every choice: direct.auto.log */
    rc = spawn_capture(n, auto_main, w, "(CC_SHM_CMA=auto)", &lines, &bad);
    unsetenv("CC_DEBUG");
    snprintf(name, sizeof name, "direct.auto.n%d", n);
    tr_report_group(w->tab, n, G_AUTO, name, g_cover[G_AUTO], rc);
    snprintf(name, sizeof name, "direct.auto.log.n%d", n);
    if (w->tab->scratch[7] != 1)
      tu_skip(name, "process_vm_readv is not allowed here: nothing to choose");
    else if (lines >= w->tab->scratch[4] && bad == 0)
      tu_pass(name, "%d choices logged, each with the way chosen faster than the other, as the choice compared them", lines);
    else
      tu_fail(name, "%d choice lines for %d changes of way; %d say the way chosen is not the faster", lines,
              (int)w->tab->scratch[4], bad);
    snprintf(name, sizeof name, "direct.auto.agreed.n%d", n);
    for (j = 1, same = 1; j < n; j++) same &= w->tab->scratch[j] == w->tab->scratch[0];
    if (w->tab->scratch[7] != 1)
      tu_skip(name, "process_vm_readv is not allowed here (c->cma %d): nothing to choose", (int)w->tab->scratch[7]);
    else if (same && w->tab->scratch[4] >= 3 && w->tab->scratch[5] <= AUTO_CALLS / 2)
      tu_pass(name, "every rank held the same state after every call; %d changes of way, %d of %d calls the slower way",
              (int)w->tab->scratch[4], (int)w->tab->scratch[5], AUTO_CALLS);
    else
      tu_fail(name, "states %s; %d changes of way (want >= 3), %d of %d calls the slower way", same ? "agreed" : "DIFFER",
              (int)w->tab->scratch[4], (int)w->tab->scratch[5], AUTO_CALLS);
  }
  setenv("CC_SHM_CMA", "1", 1);
  w->quick = tu_quick();
}

/* ---------------------------------------------------------------- rules */

static void expect_refused(tr_ctx *x, cc_result rc, const char *need) {
  const char *e = cc_comm_last_error(x->c);
  if (rc != CC_ERR_INVALID_ARG) tr_fail(x, "returned %s, expected CC_ERR_INVALID_ARG", cc_strerror(rc));
  else if (!strstr(e, need) || !strstr(e, "mem_free")) tr_fail(x, "message \"%s\" lacks \"%s\"", e, need);
}

static int rules_main(cc_comm *c, void *arg) {
  world *w = (world *)arg;
  tr_ctx x;
  int n = cc_comm_size(c), me = cc_comm_rank(c);
  float *p = NULL, *q = NULL, *sp = NULL, heap[8];
  cc_request *req = NULL;
  cc_comm *sub = NULL;
  size_t i;
  tr_ctx_init(&x, c, w->tab);
  if (!tr_group_begin(&x, G_RULES)) return 1;

  tr_label(&x, "cc_mem_free of heap memory");
  expect_refused(&x, cc_mem_free(c, heap), "not memory from cc_mem_alloc");

  tr_label(&x, "cc_mem_alloc, zeroed and page-aligned");
  if (!tr_ok(&x, cc_mem_alloc(c, 4096 * 3 + 8 * (size_t)me, (void **)&p), "cc_mem_alloc")) goto done;
  if ((uintptr_t)p % 4096) tr_fail(&x, "%p is not page-aligned", (void *)p);
  for (i = 0; i < 3072; i++) if (p[i] != 0.0f) { tr_fail(&x, "not zeroed at %zu", i); break; }

  tr_label(&x, "cc_mem_free while a request uses it, then after cc_wait");
  for (i = 0; i < 3072; i++) p[i] = (float)(me + 1);
  if (tr_ok(&x, cc_group_begin(c), "cc_group_begin")) {
    cc_all_reduce(c, p, p, 3072, CC_FLOAT32, CC_SUM);
    if (tr_ok(&x, cc_group_end(c, &req), "cc_group_end")) {
      cc_result rc = cc_mem_free(c, p + 100);
      if (rc != CC_ERR_INVALID_ARG) tr_fail(&x, "an inner pointer was not refused (%s)", cc_strerror(rc));
      rc = cc_mem_free(c, p);
      /* the request may have finished already: then the free is fine */
      if (rc == CC_ERR_INVALID_ARG) {
        expect_refused(&x, rc, "in use by a request");
        tr_ok(&x, cc_wait(req), "cc_wait");
        req = NULL;
        rc = cc_mem_free(c, p);
      }
      if (!tr_ok(&x, rc, "cc_mem_free after the request")) goto done;
      if (req) tr_ok(&x, cc_wait(req), "cc_wait");
    }
  }
  tr_label(&x, "cc_mem_free twice");
  expect_refused(&x, cc_mem_free(c, p), "not memory from cc_mem_alloc");

  tr_label(&x, "symmetric memory on a split communicator");
  if (tr_ok(&x, cc_comm_split(c, me % 2, me, &sub), "cc_comm_split") && sub) {
    int sn = cc_comm_size(sub), sr = cc_comm_rank(sub);
    if (tr_ok(&x, cc_mem_alloc(sub, 1 << 20, (void **)&sp), "cc_mem_alloc(sub)")) {
      float *in = sp + 1000 + 16 * (size_t)sr, *out = sp + 100000;
      for (i = 0; i < 50000; i++) in[i] = (float)(i % 97) + (float)cc_comm_rank(c);
      if (tr_ok(&x, cc_all_reduce(sub, in, out, 50000, CC_FLOAT32, CC_SUM), "all_reduce(sub)")) {
        float base = 0;
        int r2;
        for (r2 = me % 2; r2 < n; r2 += 2) base += (float)r2;
        for (i = 0; i < 50000; i++)
          if (out[i] != (float)(i % 97) * (float)sn + base) { tr_fail(&x, "sub all_reduce wrong at %zu", i); break; }
        if (sn > 1 && (!sub->direct.pb || !sub->direct.pb[(sr + 1) % sn].s)) tr_fail(&x, "the peer's sendbuf was not mapped");
      }
      tr_label(&x, "memory of the split communicator in a collective of the parent");
      if (!tr_ok(&x, cc_mem_alloc(c, 1 << 20, (void **)&q), "cc_mem_alloc(world)")) goto done;
      for (i = 0; i < 60000; i++) in[i] = (float)me;
      if (tr_ok(&x, cc_all_gather(c, in, q, 60000 / (size_t)n, CC_FLOAT32), "all_gather(world)")) {
        for (i = 0; i < 60000 / (size_t)n * (size_t)n; i++)
          if (q[i] != (float)(i / (60000 / (size_t)n))) { tr_fail(&x, "world all_gather wrong at %zu", i); break; }
      }
      tr_ok(&x, cc_mem_free(c, q), "cc_mem_free(world)");
      tr_label(&x, "cc_mem_free of the split's memory on the parent");
      expect_refused(&x, cc_mem_free(c, sp), "not memory from cc_mem_alloc");
      tr_ok(&x, cc_mem_free(sub, sp), "cc_mem_free(sub)");
    }
    tr_label(&x, "memory left to cc_comm_destroy");
    tr_ok(&x, cc_mem_alloc(sub, 12345, (void **)&sp), "cc_mem_alloc(sub) again");
    cc_comm_destroy(sub);
  }
done:
  tr_group_end(&x);
  return tr_failed_any(&x, G_COUNT);
}

/* ---------------------------------------------------------------- single worlds */

static int drop_ptrace(void) {
  struct __user_cap_header_struct h;
  struct __user_cap_data_struct d[2];
  memset(&h, 0, sizeof h);
  h.version = _LINUX_CAPABILITY_VERSION_3;
  if (syscall(SYS_capget, &h, d) != 0) return -1;
  d[0].effective &= ~(1u << CAP_SYS_PTRACE);
  d[0].permitted &= ~(1u << CAP_SYS_PTRACE);
  d[0].inheritable &= ~(1u << CAP_SYS_PTRACE);
  if (syscall(SYS_capset, &h, d) != 0) return -1;
  return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

typedef struct single {
  int mode;              /* 0 eperm, 1 peer_lost (plain), 2 peer_lost (cc_mem_alloc), 3 mismatch */
  int cma, cma_mine, rc[TR_MAXR], dropped[TR_MAXR];
  long wrong[TR_MAXR];
  char err[TR_MAXR][CC__ERR_BYTES];
} single;

static int eperm_main(cc_comm *c, void *arg) {
  single *s = (single *)arg;
  int me = cc_comm_rank(c), n = cc_comm_size(c);
  size_t count = 100000, i;
  float *a = (float *)malloc(count * 4), *r = (float *)malloc(count * 4 * (size_t)n);
  s->dropped[me] = drop_ptrace() == 0;
  cc_barrier(c);
  for (i = 0; i < count; i++) a[i] = (float)(i % 13 + (size_t)me);
  s->rc[me] = cc_all_reduce(c, a, r, count, CC_FLOAT32, CC_SUM);
  for (i = 0; i < count; i++)
    if (r[i] != (float)((i % 13) * (size_t)n) + (float)(n * (n - 1) / 2)) s->wrong[me]++;
  if (s->rc[me] == CC_OK) s->rc[me] = cc_all_gather(c, a, r, count, CC_FLOAT32);
  for (i = 0; i < count * (size_t)n; i++)
    if (r[i] != (float)((i % count) % 13 + i / count)) s->wrong[me]++;
  if (me == 0) { s->cma = c->direct.cma; s->cma_mine = c->direct.cma_mine; }
  snprintf(s->err[me], sizeof s->err[me], "%s", cc_comm_last_error(c));
  free(a);
  free(r);
  return 0;
}

static int lost_main(cc_comm *c, void *arg) {
  single *s = (single *)arg;
  int me = cc_comm_rank(c), sym = s->mode == 2;
  size_t count = (size_t)4 << 20, i;    /* 16 MiB of float per rank */
  float *a = NULL, *r = NULL;
  if (sym) {
    if (cc_mem_alloc(c, count * 4, (void **)&a) != CC_OK || cc_mem_alloc(c, count * 8, (void **)&r) != CC_OK) {
      s->rc[me] = -1;
      return 1;
    }
  } else {
    a = (float *)malloc(count * 4);
    r = (float *)malloc(count * 8);
  }
  for (i = 0; i < count; i++) a[i] = 1.0f;
  cc_barrier(c);
  if (me == 1) {                     /* publish its buffers, then die while rank 0 reads them */
    cc__call k;
    int go = 0;
    cc__call_init(&k, CC__ALL_GATHER, a, r, count, CC_FLOAT32, 0, 0);
    c->seq++;
    cc__ident_of(&k, &c->cur);
    cc__direct_begin(c, &k, NULL, &go);
    tu_sleep_us(1000);
    _exit(9);
  }
  s->rc[0] = cc_all_gather(c, a, r, count, CC_FLOAT32);
  snprintf(s->err[0], sizeof s->err[0], "%s", cc_comm_last_error(c));
  return 0;
}

/* Settings that differ between the ranks (made here by hand on rank 1):
   mode 4, rank 1 never goes direct (another CC_SHM_DIRECT_BYTES); mode 5,
   rank 1 does not choose by measuring (CC_SHM_CMA=1 there) while rank 0
   does, and its timings say the arena is faster, so that it goes through
   the arena without asking. Every call is right or fails with
   CC_ERR_MISMATCH on every rank; wrong[]: elements wrong in calls that
   returned CC_OK. */
static int differ_main(cc_comm *c, void *arg) {
  single *s = (single *)arg;
  int me = cc_comm_rank(c), i, j;
  size_t cnt = 1024, e;
  int32_t sb[1024], rb[2048];
  if (me == 1 && s->mode == 4) c->set.direct_bytes = (size_t)1 << 40;
  if (me == 1 && s->mode == 5) {
    free(c->direct.tune);
    c->direct.tune = NULL;
  }
  s->rc[me] = CC_OK;
  for (i = 0; i < 200 && s->rc[me] == CC_OK; i++) {
    cc__call k;
    cc__tune *t;
    for (e = 0; e < cnt; e++) sb[e] = (int32_t)(e + (size_t)me * 7919 + (size_t)i);
    s->rc[me] = cc_all_gather(c, sb, rb, cnt, CC_INT32);
    if (s->rc[me] != CC_OK) break;
    for (j = 0; j < 2; j++)
      for (e = 0; e < cnt; e++) s->wrong[me] += rb[(size_t)j * cnt + e] != (int32_t)(e + (size_t)j * 7919 + (size_t)i);
    memset(&k, 0, sizeof k);
    k.coll = CC__ALL_GATHER;
    k.count = cnt;
    k.t = CC_INT32;
    if (me == 0 && (t = cc__tune_of(c, &k)) != NULL && t->ran < 2) t->ns[t->ran][0] = t->ran ? 3.0f : 1.0f;
  }
  s->cma = c->direct.cma;
  snprintf(s->err[me], sizeof s->err[me], "%s", cc_comm_last_error(c));
  return 0;
}

/* Settings that differ between the ranks (differ_main); a hang would be a
   failure: a short timeout. */
static void differ_worlds(void) {
  single *s;
  int r;
  char name[64];
  setenv("CC_TIMEOUT", "30", 1);
  for (r = 4; r <= 5; r++) {
    s = (single *)tu_shared_alloc(sizeof(single));
    s->mode = r;
    if (r == 5) setenv("CC_SHM_CMA", "auto", 1);
    (void)tu_spawn(2, differ_main, s);
    setenv("CC_SHM_CMA", "1", 1);
    snprintf(name, sizeof name, "direct.differ.%s", r == 4 ? "direct_bytes" : "auto_one_rank");
    if (r == 5 && s->cma != 1)
      tu_skip(name, "process_vm_readv is not allowed here: nothing to choose");
    else if (s->rc[0] == CC_ERR_MISMATCH && s->rc[1] == CC_ERR_MISMATCH && !s->wrong[0] && !s->wrong[1] &&
             strstr(s->err[0], "differ between the ranks"))
      tu_pass(name, "CC_ERR_MISMATCH on both ranks, no wrong element before it: %s", s->err[0]);
    else
      tu_fail(name, "%s / %s, %ld + %ld wrong: %s", s->rc[0] >= 0 ? cc_strerror((cc_result)s->rc[0]) : "?",
              s->rc[1] >= 0 ? cc_strerror((cc_result)s->rc[1]) : "?", s->wrong[0], s->wrong[1], s->err[0]);
  }
  unsetenv("CC_TIMEOUT");
}

static int mismatch_main(cc_comm *c, void *arg) {
  single *s = (single *)arg;
  int me = cc_comm_rank(c);
  void *p1 = NULL, *p2 = NULL;
  if (cc_mem_alloc(c, 4096, &p1) != CC_OK || cc_mem_alloc(c, 4096, &p2) != CC_OK) { s->rc[me] = -1; return 0; }
  s->rc[me] = cc_mem_free(c, me == 0 ? p1 : p2);
  snprintf(s->err[me], sizeof s->err[me], "%s", cc_comm_last_error(c));
  return 0;
}

static int tcp_main(cc_comm *c, void *arg) {
  single *s = (single *)arg;
  int me = cc_comm_rank(c), n = cc_comm_size(c);
  size_t count = 300000, i;
  float *a = NULL, *r = NULL;
  s->rc[me] = cc_mem_alloc(c, count * 4, (void **)&a);
  if (s->rc[me] == CC_OK) s->rc[me] = cc_mem_alloc(c, count * 4, (void **)&r);
  if (s->rc[me] != CC_OK) { snprintf(s->err[me], sizeof s->err[me], "%s", cc_comm_last_error(c)); return 0; }
  for (i = 0; i < count; i++) a[i] = (float)(i % 7 + (size_t)me);
  s->rc[me] = cc_all_reduce(c, a, r, count, CC_FLOAT32, CC_SUM);
  for (i = 0; i < count; i++)
    if (r[i] != (float)((i % 7) * (size_t)n) + (float)(n * (n - 1) / 2)) s->wrong[me]++;
  if (s->rc[me] == CC_OK) s->rc[me] = cc_mem_free(c, a);
  if (s->rc[me] == CC_OK) s->rc[me] = cc_mem_free(c, r);
  snprintf(s->err[me], sizeof s->err[me], "%s", cc_comm_last_error(c));
  return 0;
}

/* A choice's log line ("...: cross-memory attach, 4.10 GB/s against 2.05
   (CC_SHM_CMA=auto)") whose way chosen is not the faster of the two. */
static int choice_bad(const char *line) {
  const char *p = strstr(line, " GB/s against ");
  double chosen, other;
  while (p && p > line && p[-1] != ' ') p--;
  if (!p || sscanf(p, "%lf GB/s against %lf", &chosen, &other) != 2) return 1;
  return !(chosen > other);
}

/* Run fn in a world of n with stderr into a file; returns the spawn status and
   the number of lines of that stderr that hold `grep` (when not NULL), and
   (bad, when not NULL) how many of them are choices whose way is not the
   faster one. */
static int spawn_capture(int n, cc_main_fn fn, void *arg, const char *grep, int *lines, int *bad) {
  char path[] = "/tmp/cc-test-direct-XXXXXX", line[1024];
  int fd = mkstemp(path), saved, rc;
  FILE *f;
  *lines = 0;
  if (bad) *bad = 0;
  if (fd < 0) return tu_spawn(n, fn, arg);
  fflush(stderr);
  saved = dup(2);
  dup2(fd, 2);
  rc = tu_spawn(n, fn, arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  if ((f = fopen(path, "r")) != NULL) {
    while (fgets(line, sizeof line, f)) {
      if (grep && strstr(line, grep)) {
        (*lines)++;
        if (bad && choice_bad(line)) {
          (*bad)++;
          fputs(line, stderr);
        }
      }
      else if (!strstr(line, "INFO") && !strstr(line, "comm_init")) fputs(line, stderr);   /* anything unexpected */
    }
    fclose(f);
  }
  unlink(path);
  return rc;
}

static int world_n(int n, world *w) {
  int rc;
  w->tab = (tr_table *)tu_shared_alloc(sizeof(tr_table));
  if (!w->tab) { tu_fail("direct.setup", "cannot map shared memory"); return -1; }
  rc = tu_spawn(n, matrix_main, w);
  return rc;
}

/* process_vm_readv refused (eperm_main) */
static void eperm_world(void) {
  single *s;
  int rc, r, lines;
  s = (single *)tu_shared_alloc(sizeof(single));
  setenv("CC_DEBUG", "INFO", 1);
  rc = spawn_capture(3, eperm_main, s, "cannot read rank", &lines, NULL);
  unsetenv("CC_DEBUG");
  if (!s->dropped[0] || s->cma_mine == 1) {
    tu_skip("direct.eperm", "could not take cross-memory attach away (capset: %d, probe %d)", s->dropped[0], s->cma_mine);
  } else {
    int ok = rc == 0 && s->cma == 0 && lines == 3;
    for (r = 0; r < 3; r++) ok = ok && s->rc[r] == CC_OK && s->wrong[r] == 0;
    if (ok) tu_pass("direct.eperm", "process_vm_readv refused: one INFO line per rank, results right through the arena");
    else tu_fail("direct.eperm", "spawn %d, cma %d, INFO lines %d (want 3), rank 0: %s, %ld wrong (%s)", rc, s->cma,
                 lines, cc_strerror((cc_result)s->rc[0]), s->wrong[0], s->err[0]);
  }
}

/* different allocations freed (mismatch_main) */
static void mismatch_world(void) {
  single *s;
  s = (single *)tu_shared_alloc(sizeof(single));
  (void)tu_spawn(2, mismatch_main, s);
  if (s->rc[0] == CC_ERR_MISMATCH && s->rc[1] == CC_ERR_MISMATCH && strstr(s->err[0], "mem_free(allocation #"))
    tu_pass("direct.mismatch", "%s", s->err[0]);
  else
    tu_fail("direct.mismatch", "%s / %s: %s", cc_strerror((cc_result)s->rc[0]), cc_strerror((cc_result)s->rc[1]), s->err[0]);
}

int main(void) {
  static const int sizes[] = {2, 3, 4};
  size_t si;
  int rc, r;
  char name[96];
  single *s;
  world *w = &g_world;
  setenv("CC_SHM_DIRECT_BYTES", "1", 1);
  setenv("CC_SHM_CMA", "1", 1);          /* these worlds test it; auto_worlds the default, auto */
  w->quick = tu_quick();

  for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int n = sizes[si], g;
    w->sym = 2;
    w->expect_cma = 1;
    rc = world_n(n, w);
    if (rc < 0) break;
    for (g = G_CMA; g <= G_SYM; g++) {
      snprintf(name, sizeof name, "direct.%s.n%d", g_names[g], n);
      tr_report_group(w->tab, n, g, name, g_cover[g], rc);
    }
    snprintf(name, sizeof name, "direct.cma_agreed.n%d", n);
    if (w->tab->scratch[0] == 11) tu_pass(name, "every rank reads its peers' buffers by cross-memory attach");
    else if (w->tab->scratch[1] == 10) tu_skip(name, "process_vm_readv is not allowed here: the arena took over");
    else tu_fail(name, "c->cma %ld, c->cma_mine %ld", (long)w->tab->scratch[0] - 10, (long)w->tab->scratch[1] - 10);
    if (n == 2 || n == 4) {
      w->tab = (tr_table *)tu_shared_alloc(sizeof(tr_table));
      rc = tu_spawn(n, rules_main, w);
      snprintf(name, sizeof name, "direct.rules.n%d", n);
      tr_report_group(w->tab, n, G_RULES, name, g_cover[G_RULES], rc);
    }
  }

  policy_unit();
  auto_worlds(w);

  /* CC_SHM_CMA=0: plain buffers through the arena, symmetric memory still direct */
  setenv("CC_SHM_CMA", "0", 1);
  w->sym = 2;
  w->expect_cma = 0;
  w->quick = 1;
  rc = world_n(3, w);
  tr_report_group(w->tab, 3, G_CMA, "direct.nocma.plain.n3", "CC_SHM_CMA=0: through the arena, right", rc);
  tr_report_group(w->tab, 3, G_SYM, "direct.nocma.sym.n3", "CC_SHM_CMA=0: cc_mem_alloc memory still mapped", rc);
  if (w->tab->scratch[0] == 10) tu_pass("direct.nocma.agreed", "no rank used cross-memory attach");
  else tu_fail("direct.nocma.agreed", "c->cma %ld", (long)w->tab->scratch[0] - 10);
  setenv("CC_SHM_CMA", "1", 1);
  w->quick = tu_quick();

  eperm_world();

  /* a rank dies while its peer reads its buffers */
  setenv("CC_SPAWN_GRACE_MS", "5000", 1);
  for (r = 1; r <= 2; r++) {
    s = (single *)tu_shared_alloc(sizeof(single));
    s->mode = r;
    rc = tu_spawn(2, lost_main, s);
    snprintf(name, sizeof name, "direct.peer_lost.%s", r == 1 ? "cma" : "mapped");
    if (s->rc[0] == CC_ERR_PEER_LOST && strstr(s->err[0], "rank 1") && rc != 0)
      tu_pass(name, "rank 0: %s", s->err[0]);
    else
      tu_fail(name, "rank 0 got %s (%s), spawn %d", s->rc[0] >= 0 ? cc_strerror((cc_result)s->rc[0]) : "setup failure",
              s->err[0], rc);
  }
  unsetenv("CC_SPAWN_GRACE_MS");

  mismatch_world();
  differ_worlds();

  /* TCP: plain memory */
  s = (single *)tu_shared_alloc(sizeof(single));
  setenv("CC_TRANSPORT", "tcp", 1);
  rc = tu_spawn(2, tcp_main, s);
  unsetenv("CC_TRANSPORT");
  if (rc == 0 && s->rc[0] == CC_OK && s->rc[1] == CC_OK && !s->wrong[0] && !s->wrong[1])
    tu_pass("direct.tcp", "cc_mem_alloc memory over CC_TRANSPORT=tcp: all_reduce right, freed");
  else
    tu_fail("direct.tcp", "spawn %d: %s / %s, %ld wrong: %s", rc, cc_strerror((cc_result)s->rc[0]),
            cc_strerror((cc_result)s->rc[1]), s->wrong[0] + s->wrong[1], s->err[0]);
  return tu_exit_code();
}
