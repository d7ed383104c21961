/* test_split_group - communicator splitting, point to point, groups and
 * asynchronous requests.
 *
 *   split    cc_comm_split by even/odd color, with keys reversing the order,
 *            with equal keys, with CC_UNDEFINED (*out set to NULL), a split of
 *            a split, large colors; rank, size, local rank and size of each;
 *            collectives on the split communicators interleaved with
 *            collectives on the parent; destroy, then the parent still works;
 *            repeated split/destroy
 *   p2p      blocking cc_send/cc_recv outside groups: pairs both ways, small,
 *            zero-length and large (3 MiB) messages, a relay chain
 *   groups   a ring exchange of 5 MiB messages in one group (both directions
 *            too), sends to self received later in the same group, several
 *            tags between a pair received out of tag order (by tag, in order
 *            per tag), every rank to every rank in one group, a collective in
 *            a group with sends, nested groups, empty groups
 *   async    cc_group_end(c, &req) with an all_reduce and sends: compute, poll
 *            cc_test, cc_wait; calls made while a request is pending run after
 *            it (a blocking all_reduce on the same buffer sees the first
 *            result); two pending requests waited in reverse order
 *
 * World sizes 1, 2, 3, 4, 5, 7, 8; one PASS/FAIL line per (group, size). */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"
#include "test_ref.h"

enum { G_SPLIT, G_P2P, G_GROUPS, G_ASYNC, G_COUNT };
static const char *const g_names[G_COUNT] = {"split", "p2p", "groups", "async"};
static const char *const g_cover[G_COUNT] = {
  "even/odd, reversed keys, equal keys, CC_UNDEFINED, nested split, large colors; rank/size/"
  "local rank/size; all_reduce (incl. 300001 floats), all_gather, broadcast, reduce_scatter, "
  "barrier on the splits interleaved with the parent; destroy; 10 split/destroy cycles",
  "blocking send/recv in pairs both ways: 0, 7 and 3 MiB messages; a relay chain",
  "5 MiB ring (one and both directions), self sends received later, 4 messages on 2 tags "
  "received out of tag order, all-to-all of sends, all_reduce + ring in one group, nested and "
  "empty groups",
  "group_end with a request: all_reduce + ring while computing, cc_test polling, cc_wait; a "
  "blocking all_reduce issued while pending sees the finished result; two requests waited in "
  "reverse order; empty async group"};

typedef tr_world world_arg;

typedef struct ctx {
  tr_ctx t;
  world_arg *arg;
} ctx;

#define OK(call, what) tr_ok(&x->t, (call), (what))

/* ------------------------------------------------------------ split */

/* Check the communicator s made from the world by color/key: its members
 * are `members[0..m)` (world ranks, in their order in s). */
static void check_members(ctx *x, cc_comm *s, const int *members, int m, const char *what) {
  int me = x->t.rank, pos = -1, i, *got;
  int32_t mine = me;
  for (i = 0; i < m; i++)
    if (members[i] == me) pos = i;
  if (!s) {
    tr_fail(&x->t, "%s: no communicator returned", what);
    return;
  }
  if (cc_comm_size(s) != m || cc_comm_rank(s) != pos) {
    tr_fail(&x->t, "%s: rank %d of %d, want rank %d of %d", what, cc_comm_rank(s),
            cc_comm_size(s), pos, m);
    return;
  }
  if (cc_comm_local_rank(s) != pos || cc_comm_local_size(s) != m)
    tr_fail(&x->t, "%s: local rank %d of %d, want %d of %d (one host)", what,
            cc_comm_local_rank(s), cc_comm_local_size(s), pos, m);
  got = (int *)malloc(sizeof(int32_t) * (size_t)m);
  if (!got) return;
  if (OK(cc_all_gather(s, &mine, got, 1, CC_INT32), "all_gather on the split")) {
    for (i = 0; i < m; i++)
      if (got[i] != members[i]) {
        tr_fail(&x->t, "%s: all_gather of world ranks: [%d] = %d, want %d", what, i, got[i],
                members[i]);
        break;
      }
  }
  free(got);
}

static int64_t sum_of(const int *v, int m) {
  int64_t s = 0;
  int i;
  for (i = 0; i < m; i++) s += v[i];
  return s;
}

/* The communicators that run_split makes from the world, and the world ranks
 * in each of them, in their order there. */
typedef struct splits {
  cc_comm *eo, *rv, *eq, *un, *ne, *big;
  int eo_m[TR_MAXR], rv_m[TR_MAXR], eq_m[TR_MAXR], un_m[TR_MAXR], ne_m[TR_MAXR], big_m[TR_MAXR];
  int n_eo, n_un, n_ne, n_big;
} splits;

/* The world reports this rank, the world size, and one host. */
static void check_world(ctx *x) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank;
  tr_label(&x->t, "world rank/size/local n=%d", n);
  if (cc_comm_rank(c) != me || cc_comm_size(c) != n || cc_comm_local_rank(c) != me ||
      cc_comm_local_size(c) != n)
    tr_fail(&x->t, "world: rank %d size %d local %d/%d", cc_comm_rank(c), cc_comm_size(c),
            cc_comm_local_rank(c), cc_comm_local_size(c));
}

/* Split the world by even/odd rank, in one color with keys reversing the
 * order, and in one color with equal keys; check the members of each. */
static void split_by_keys(ctx *x, splits *sp) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, i;

  /* even/odd, key = rank */
  tr_label(&x->t, "split color=rank%%2 key=rank n=%d", n);
  for (i = 0; i < n; i++)
    if (i % 2 == me % 2) sp->eo_m[sp->n_eo++] = i;
  if (OK(cc_comm_split(c, me % 2, me, &sp->eo), "cc_comm_split"))
    check_members(x, sp->eo, sp->eo_m, sp->n_eo, "even/odd");

  /* one color, keys reversing the order */
  tr_label(&x->t, "split color=0 key=size-rank n=%d", n);
  for (i = 0; i < n; i++) sp->rv_m[i] = n - 1 - i;
  if (OK(cc_comm_split(c, 0, n - me, &sp->rv), "cc_comm_split")) check_members(x, sp->rv, sp->rv_m, n, "reversed");

  /* equal keys: the parent's order */
  tr_label(&x->t, "split color=7 key=0 n=%d", n);
  for (i = 0; i < n; i++) sp->eq_m[i] = i;
  if (OK(cc_comm_split(c, 7, 0, &sp->eq), "cc_comm_split")) check_members(x, sp->eq, sp->eq_m, n, "equal keys");
}

/* Split with CC_UNDEFINED as rank 0's color: rank 0 takes part in nothing
 * and gets NULL, the others get a communicator without rank 0. */
static void split_without_rank0(ctx *x, splits *sp) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, i;
  tr_label(&x->t, "split color=CC_UNDEFINED on rank 0 n=%d", n);
  for (i = 1; i < n; i++) sp->un_m[sp->n_un++] = i;
  sp->un = (cc_comm *)&sp->un_m; /* must be overwritten with NULL on rank 0 */
  if (OK(cc_comm_split(c, me == 0 ? CC_UNDEFINED : 3, me, &sp->un), "cc_comm_split")) {
    if (me == 0) {
      if (sp->un != NULL) tr_fail(&x->t, "CC_UNDEFINED: *out is %p, want NULL", (void *)sp->un);
      sp->un = NULL;
    } else {
      check_members(x, sp->un, sp->un_m, sp->n_un, "without rank 0");
    }
  } else {
    sp->un = NULL;
  }
}

/* Split into three groups by large colors, with keys from a hash. */
static void split_large_colors(ctx *x, splits *sp) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, i, j, k, keys[TR_MAXR], *big_m = sp->big_m;
  tr_label(&x->t, "split color=1000000+rank%%3 hashed keys n=%d", n);
  for (i = 0; i < n; i++) keys[i] = (int)(tu_hash2(99, (uint64_t)i) % 1000);
  for (i = 0; i < n; i++)
    if (i % 3 == me % 3) big_m[sp->n_big++] = i;
  /* order by (key, rank) */
  for (j = 1; j < sp->n_big; j++)
    for (k = j; k > 0 && (keys[big_m[k]] < keys[big_m[k - 1]] ||
                          (keys[big_m[k]] == keys[big_m[k - 1]] && big_m[k] < big_m[k - 1]));
         k--) {
      int tmp = big_m[k];
      big_m[k] = big_m[k - 1];
      big_m[k - 1] = tmp;
    }
  if (OK(cc_comm_split(c, 1000000 + me % 3, keys[me], &sp->big), "cc_comm_split"))
    check_members(x, sp->big, big_m, sp->n_big, "large colors");
}

/* Split the even/odd split again by sub-rank parity, keys reversed. */
static void split_nested(ctx *x, splits *sp) {
  int n = x->t.n, i;
  tr_label(&x->t, "nested split n=%d", n);
  if (sp->eo) {
    int sr = cc_comm_rank(sp->eo);
    for (i = sp->n_eo - 1; i >= 0; i--)
      if (i % 2 == sr % 2) sp->ne_m[sp->n_ne++] = sp->eo_m[i];
    if (OK(cc_comm_split(sp->eo, sr % 2, -sr, &sp->ne), "cc_comm_split of a split"))
      check_members(x, sp->ne, sp->ne_m, sp->n_ne, "nested");
  }
}

/* A reduce_scatter on the split without rank 0. */
static void reduce_scatter_without_rank0(ctx *x, const splits *sp) {
  int me = x->t.rank, m = sp->n_un, k;
  int64_t *in = (int64_t *)malloc(sizeof(int64_t) * (size_t)m * 3), out[3];
  if (!in) return;
  for (k = 0; k < m * 3; k++) in[k] = (int64_t)k * me;
  if (OK(cc_reduce_scatter(sp->un, in, out, 3, CC_INT64, CC_SUM), "reduce_scatter on un")) {
    int r = cc_comm_rank(sp->un);
    for (k = 0; k < 3; k++)
      if (out[k] != (int64_t)(r * 3 + k) * sum_of(sp->un_m, sp->n_un))
        tr_fail(&x->t, "reduce_scatter on the split without rank 0: [%d] = %lld", k,
                (long long)out[k]);
  }
  free(in);
}

/* A large all_reduce on the even/odd split: the chunked path. */
static void large_all_reduce_even_odd(ctx *x, const splits *sp) {
  int me = x->t.rank, i;
  size_t big_n = 300001, j;
  float *fb = (float *)malloc(sizeof(float) * big_n);
  if (!fb) return;
  for (j = 0; j < big_n; j++) fb[j] = (float)((j + (size_t)me) % 64);
  if (OK(cc_all_reduce(sp->eo, fb, fb, big_n, CC_FLOAT32, CC_SUM), "large all_reduce on even/odd")) {
    for (j = 0; j < big_n; j++) {
      float want = 0;
      for (i = 0; i < sp->n_eo; i++) want += (float)((j + (size_t)sp->eo_m[i]) % 64);
      if (fb[j] != want) {
        tr_fail(&x->t, "large all_reduce on even/odd: [%zu] = %g, want %g", j, (double)fb[j],
                (double)want);
        break;
      }
    }
  }
  free(fb);
}

/* One round of collectives on all the splits, interleaved with the parent. */
static void interleaved_round(ctx *x, const splits *sp, int round) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, i;
  int64_t v, s;
  tr_label(&x->t, "interleaved collectives round %d n=%d", round, n);
  v = me;
  if (OK(cc_all_reduce(c, &v, &s, 1, CC_INT64, CC_SUM), "all_reduce on the world") &&
      s != (int64_t)n * (n - 1) / 2)
    tr_fail(&x->t, "world all_reduce: %lld", (long long)s);
  if (sp->eo) {
    v = me + round;
    if (OK(cc_all_reduce(sp->eo, &v, &s, 1, CC_INT64, CC_SUM), "all_reduce on even/odd") &&
        s != sum_of(sp->eo_m, sp->n_eo) + (int64_t)round * sp->n_eo)
      tr_fail(&x->t, "even/odd all_reduce: %lld, want %lld", (long long)s,
              (long long)(sum_of(sp->eo_m, sp->n_eo) + (int64_t)round * sp->n_eo));
  }
  if (sp->rv) {
    /* root 0 of rv is world rank n-1 */
    v = cc_comm_rank(sp->rv) == 0 ? 1000 + round : -1;
    if (OK(cc_broadcast(sp->rv, &v, 1, CC_INT64, 0), "broadcast on reversed") && v != 1000 + round)
      tr_fail(&x->t, "reversed broadcast: %lld", (long long)v);
  }
  if (sp->ne) {
    v = me;
    if (OK(cc_all_reduce(sp->ne, &v, &s, 1, CC_INT64, CC_MAX), "all_reduce on nested")) {
      int64_t want = -1;
      for (i = 0; i < sp->n_ne; i++)
        if (sp->ne_m[i] > want) want = sp->ne_m[i];
      if (s != want) tr_fail(&x->t, "nested all_reduce max: %lld, want %lld", (long long)s, (long long)want);
    }
  }
  if (sp->un) reduce_scatter_without_rank0(x, sp);
  if (sp->eq) OK(cc_barrier(sp->eq), "barrier on equal keys");
  if (sp->eo && round == 1) large_all_reduce_even_odd(x, sp);
  if (sp->big) OK(cc_barrier(sp->big), "barrier on large colors");
  OK(cc_barrier(c), "barrier on the world");
}

/* Destroy the splits; then the parent still works. */
static void destroy_splits(ctx *x, const splits *sp) {
  int n = x->t.n;
  int64_t v = 1, s = 0;
  tr_label(&x->t, "destroy the splits n=%d", n);
  if (sp->ne) OK(cc_comm_destroy(sp->ne), "cc_comm_destroy");
  if (sp->eo) OK(cc_comm_destroy(sp->eo), "cc_comm_destroy");
  if (sp->rv) OK(cc_comm_destroy(sp->rv), "cc_comm_destroy");
  if (sp->eq) OK(cc_comm_destroy(sp->eq), "cc_comm_destroy");
  if (sp->un) OK(cc_comm_destroy(sp->un), "cc_comm_destroy");
  if (sp->big) OK(cc_comm_destroy(sp->big), "cc_comm_destroy");
  if (OK(cc_all_reduce(x->t.c, &v, &s, 1, CC_INT64, CC_SUM), "all_reduce after destroying splits") &&
      s != n)
    tr_fail(&x->t, "world all_reduce after destroy: %lld", (long long)s);
}

/* Ten cycles of split, an all_reduce on the split, destroy. */
static void split_use_destroy_cycles(ctx *x) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, i;
  tr_label(&x->t, "10 split/use/destroy cycles n=%d", n);
  for (i = 0; i < 10; i++) {
    cc_comm *t = NULL;
    int64_t v = 1, s = 0;
    int color = (me + i) % 2;
    if (!OK(cc_comm_split(c, color, me, &t), "cc_comm_split")) break;
    if (t && OK(cc_all_reduce(t, &v, &s, 1, CC_INT64, CC_SUM), "all_reduce")) {
      int64_t want = 0, r;
      for (r = 0; r < n; r++) want += (r + i) % 2 == color;
      if (s != want) tr_fail(&x->t, "cycle %d: all_reduce gave %lld, want %lld", i, (long long)s, (long long)want);
    }
    if (t) OK(cc_comm_destroy(t), "cc_comm_destroy");
  }
}

static void run_split(ctx *x) {
  splits sp;
  int round;
  memset(&sp, 0, sizeof sp);
  check_world(x);
  split_by_keys(x, &sp);
  split_without_rank0(x, &sp);
  split_large_colors(x, &sp);
  split_nested(x, &sp);
  for (round = 0; round < 4; round++) interleaved_round(x, &sp, round);
  destroy_splits(x, &sp);
  split_use_destroy_cycles(x);
}

/* ------------------------------------------------------------ p2p */

static void fill_msg(void *buf, cc_dtype t, size_t count, int from, int to, int tag) {
  tr_fill(buf, t, TR_GEN_ANY, tu_hash3(5150, (uint64_t)tag, (uint64_t)to), from, 0, count);
}
static void check_msg(ctx *x, const void *buf, cc_dtype t, size_t count, int from, int to, int tag,
                      const char *what) {
  unsigned char *want;
  char m[300];
  if (!count) return;
  want = (unsigned char *)malloc(count * tr_size(t));
  if (!want) return;
  fill_msg(want, t, count, from, to, tag);
  if (tr_compare(buf, want, count, t, m, sizeof m))
    tr_fail(&x->t, "%s (from %d tag %d): %s", what, from, tag, m);
  free(want);
}

static void run_p2p(ctx *x) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, peer = me ^ 1, k;
  size_t big = (3u << 20) / 4 + 1; /* floats: a bit over 3 MiB */
  float *sb = (float *)malloc(sizeof(float) * big), *rb = (float *)malloc(sizeof(float) * big);
  if (!sb || !rb) {
    tr_fail(&x->t, "out of memory");
    goto out;
  }
  if (peer < n) {
    static const struct { size_t count; cc_dtype t; } msgs[] = {
      {7, CC_INT32}, {0, CC_FLOAT32}, {1, CC_INT8}, {4099, CC_COMPLEX128}, {0, CC_INT64}};
    size_t mi;
    for (mi = 0; mi < sizeof msgs / sizeof msgs[0] + 1; mi++) {
      size_t cnt = mi < sizeof msgs / sizeof msgs[0] ? msgs[mi].count : big;
      cc_dtype t = mi < sizeof msgs / sizeof msgs[0] ? msgs[mi].t : CC_FLOAT32;
      void *s = cnt ? (void *)sb : NULL, *r = cnt ? (void *)rb : NULL;
      int tag = (int)mi + 10;
      tr_label(&x->t, "blocking pair %d<->%d %zu x %s n=%d", me & ~1, (me & ~1) + 1, cnt,
               tr_dtype_name(t), n);
      if (cnt * tr_size(t) > sizeof(float) * big) continue;
      fill_msg(sb, t, cnt, me, peer, tag);
      if (cnt) memset(rb, 0, cnt * tr_size(t));
      if (me % 2 == 0) {
        if (!OK(cc_send(c, s, cnt, t, peer, tag), "cc_send")) break;
        if (!OK(cc_recv(c, r, cnt, t, peer, tag), "cc_recv")) break;
      } else {
        if (!OK(cc_recv(c, r, cnt, t, peer, tag), "cc_recv")) break;
        if (!OK(cc_send(c, s, cnt, t, peer, tag), "cc_send")) break;
      }
      check_msg(x, rb, t, cnt, peer, me, tag, "received");
    }
  }
  OK(cc_barrier(c), "barrier");

  /* relay: rank 0 sends 1 MiB to 1, which passes it to 2, ... */
  tr_label(&x->t, "relay chain of 1 MiB n=%d", n);
  {
    size_t cnt = (1u << 20) / 4;
    if (me == 0) fill_msg(sb, CC_FLOAT32, cnt, 0, 0, 77);
    if (me > 0) {
      if (OK(cc_recv(c, sb, cnt, CC_FLOAT32, me - 1, 77), "cc_recv"))
        check_msg(x, sb, CC_FLOAT32, cnt, 0, 0, 77, "relayed");
    }
    if (me + 1 < n) OK(cc_send(c, sb, cnt, CC_FLOAT32, me + 1, 77), "cc_send");
  }

  /* several small messages one way, then received in order */
  tr_label(&x->t, "5 blocking messages on one tag, in order n=%d", n);
  if (peer < n) {
    for (k = 0; k < 5; k++) {
      int32_t v[3];
      v[0] = me;
      v[1] = k;
      v[2] = 42;
      if (me % 2 == 0) {
        if (!OK(cc_send(c, v, 3, CC_INT32, peer, 3), "cc_send")) break;
      } else {
        if (!OK(cc_recv(c, v, 3, CC_INT32, peer, 3), "cc_recv")) break;
        if (v[0] != peer || v[1] != k || v[2] != 42) {
          tr_fail(&x->t, "message %d: got (%d, %d, %d), want (%d, %d, 42)", k, v[0], v[1], v[2],
                  peer, k);
          break;
        }
      }
    }
  }
  OK(cc_barrier(c), "barrier");
out:
  free(sb);
  free(rb);
}

/* ------------------------------------------------------------ groups */

/* The buffers of run_groups, big floats each, and this rank's ring
 * neighbours. */
typedef struct group_bufs {
  float *s1, *s2, *r1, *r2;
  size_t big;
  int next, prev;
} group_bufs;

/* A ring of big floats, one direction, in one group. */
static void group_ring(ctx *x, const group_bufs *b) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, next = b->next, prev = b->prev;
  size_t big = b->big;
  float *s1 = b->s1, *r1 = b->r1;
  tr_label(&x->t, "ring of %zu floats in one group n=%d", big, n);
  fill_msg(s1, CC_FLOAT32, big, me, next, 1);
  memset(r1, 0, sizeof(float) * big);
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    OK(cc_send(c, s1, big, CC_FLOAT32, next, 1), "cc_send");
    OK(cc_recv(c, r1, big, CC_FLOAT32, prev, 1), "cc_recv");
    if (OK(cc_group_end(c, NULL), "cc_group_end")) check_msg(x, r1, CC_FLOAT32, big, prev, me, 1, "ring");
  }
}

/* A ring in both directions at once, receives posted first. */
static void group_bidirectional_ring(ctx *x, const group_bufs *b) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, next = b->next, prev = b->prev;
  size_t big = b->big;
  float *s1 = b->s1, *s2 = b->s2, *r1 = b->r1, *r2 = b->r2;
  tr_label(&x->t, "bidirectional ring of %zu floats in one group n=%d", big, n);
  fill_msg(s1, CC_FLOAT32, big, me, next, 2);
  fill_msg(s2, CC_FLOAT32, big, me, prev, 2);
  memset(r1, 0, sizeof(float) * big);
  memset(r2, 0, sizeof(float) * big);
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    /* with 1 or 2 ranks both receives match one peer and one tag: in order */
    OK(cc_recv(c, r1, big, CC_FLOAT32, prev, 2), "cc_recv");
    OK(cc_recv(c, r2, big, CC_FLOAT32, next, 2), "cc_recv");
    OK(cc_send(c, s1, big, CC_FLOAT32, next, 2), "cc_send");
    OK(cc_send(c, s2, big, CC_FLOAT32, prev, 2), "cc_send");
    if (OK(cc_group_end(c, NULL), "cc_group_end")) {
      check_msg(x, r1, CC_FLOAT32, big, prev, me, 2, "from prev");
      check_msg(x, r2, CC_FLOAT32, big, next, me, 2, "from next");
    }
  }
}

/* Sends to self, received later in the same group, in the other order. */
static void group_self_sends(ctx *x, const group_bufs *b) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank;
  size_t big = b->big;
  float *s1 = b->s1, *s2 = b->s2, *r1 = b->r1, *r2 = b->r2;
  tr_label(&x->t, "sends to self, received later in the group n=%d", n);
  fill_msg(s1, CC_FLOAT32, big, me, me, 3);
  fill_msg(s2, CC_FLOAT32, 5, me, me, 4);
  memset(r1, 0, sizeof(float) * big);
  memset(r2, 0, sizeof(float) * 5);
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    OK(cc_send(c, s1, big, CC_FLOAT32, me, 3), "cc_send to self");
    OK(cc_send(c, s2, 5, CC_FLOAT32, me, 4), "cc_send to self");
    OK(cc_recv(c, r2, 5, CC_FLOAT32, me, 4), "cc_recv from self");
    OK(cc_recv(c, r1, big, CC_FLOAT32, me, 3), "cc_recv from self");
    if (OK(cc_group_end(c, NULL), "cc_group_end")) {
      check_msg(x, r1, CC_FLOAT32, big, me, me, 3, "large from self");
      check_msg(x, r2, CC_FLOAT32, 5, me, me, 4, "small from self");
    }
  }
}

/* Tags: A(t1, large) B(t2, small) C(t1, small) D(t2, large) received as B A D C. */
static void group_tags_out_of_order(ctx *x, const group_bufs *b) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, peer = me ^ 1;
  size_t big = b->big, la = (2u << 20) / 4 + 3, lb = 9, lc = 5, ld = (3u << 19) / 4 + 1;
  float *sa = b->s1, *sbb = b->s2, *sc = b->s2 + 16, *sd = b->s2 + 64;
  float *ra = b->r1, *rb = b->r2, *rc = b->r2 + 16, *rd = b->r2 + 64;
  tr_label(&x->t, "4 messages on 2 tags, received out of tag order n=%d", n);
  if (peer >= n) return;
  fill_msg(sa, CC_FLOAT32, la, me, peer, 11);
  fill_msg(sbb, CC_FLOAT32, lb, me, peer, 12);
  fill_msg(sc, CC_FLOAT32, lc, me, peer, 13);
  fill_msg(sd, CC_FLOAT32, ld, me, peer, 14);
  memset(b->r1, 0, sizeof(float) * big);
  memset(b->r2, 0, sizeof(float) * big);
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    /* both ranks send A B C D and receive B A D C */
    OK(cc_send(c, sa, la, CC_FLOAT32, peer, 1), "cc_send A");
    OK(cc_send(c, sbb, lb, CC_FLOAT32, peer, 2), "cc_send B");
    OK(cc_send(c, sc, lc, CC_FLOAT32, peer, 1), "cc_send C");
    OK(cc_send(c, sd, ld, CC_FLOAT32, peer, 2), "cc_send D");
    OK(cc_recv(c, rb, lb, CC_FLOAT32, peer, 2), "cc_recv B");
    OK(cc_recv(c, ra, la, CC_FLOAT32, peer, 1), "cc_recv A");
    OK(cc_recv(c, rd, ld, CC_FLOAT32, peer, 2), "cc_recv D");
    OK(cc_recv(c, rc, lc, CC_FLOAT32, peer, 1), "cc_recv C");
    if (OK(cc_group_end(c, NULL), "cc_group_end")) {
      check_msg(x, ra, CC_FLOAT32, la, peer, me, 11, "A (tag 1, first)");
      check_msg(x, rb, CC_FLOAT32, lb, peer, me, 12, "B (tag 2, first)");
      check_msg(x, rc, CC_FLOAT32, lc, peer, me, 13, "C (tag 1, second)");
      check_msg(x, rd, CC_FLOAT32, ld, peer, me, 14, "D (tag 2, second)");
    }
  }
}

/* Every rank to every rank (self included) in one group, sizes differ per pair. */
static void group_all_to_all(ctx *x, const group_bufs *b) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, j;
  size_t off_s[TR_MAXR], off_r[TR_MAXR], len_s[TR_MAXR], len_r[TR_MAXR], ps = 0, pr = 0;
  float *s1 = b->s1, *r1 = b->r1;
  tr_label(&x->t, "all-to-all of sends in one group n=%d", n);
  for (j = 0; j < n; j++) {
    len_s[j] = (size_t)(tu_hash3(31, (uint64_t)me, (uint64_t)j) % 60000);
    len_r[j] = (size_t)(tu_hash3(31, (uint64_t)j, (uint64_t)me) % 60000);
    off_s[j] = ps;
    off_r[j] = pr;
    ps += len_s[j];
    pr += len_r[j];
  }
  if (ps > b->big || pr > b->big) return;
  for (j = 0; j < n; j++) fill_msg(s1 + off_s[j], CC_FLOAT32, len_s[j], me, j, 20);
  memset(r1, 0, sizeof(float) * pr);
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    for (j = 0; j < n; j++) OK(cc_recv(c, r1 + off_r[j], len_r[j], CC_FLOAT32, j, 20), "cc_recv");
    for (j = 0; j < n; j++) OK(cc_send(c, s1 + off_s[j], len_s[j], CC_FLOAT32, j, 20), "cc_send");
    if (OK(cc_group_end(c, NULL), "cc_group_end"))
      for (j = 0; j < n; j++) check_msg(x, r1 + off_r[j], CC_FLOAT32, len_r[j], j, me, 20, "all-to-all");
  }
}

/* A collective and sends in one group: the collective runs first. */
static void group_all_reduce_and_ring(ctx *x, const group_bufs *b) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, next = b->next, prev = b->prev, j;
  int64_t v[5], w[5];
  float *s1 = b->s1, *r1 = b->r1;
  tr_label(&x->t, "all_reduce and a ring in one group n=%d", n);
  for (j = 0; j < 5; j++) v[j] = me * 10 + j;
  fill_msg(s1, CC_FLOAT32, 1000, me, next, 30);
  memset(r1, 0, sizeof(float) * 1000);
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    OK(cc_recv(c, r1, 1000, CC_FLOAT32, prev, 30), "cc_recv");
    OK(cc_all_reduce(c, v, w, 5, CC_INT64, CC_SUM), "all_reduce in a group");
    OK(cc_send(c, s1, 1000, CC_FLOAT32, next, 30), "cc_send");
    if (OK(cc_group_end(c, NULL), "cc_group_end")) {
      check_msg(x, r1, CC_FLOAT32, 1000, prev, me, 30, "ring with all_reduce");
      for (j = 0; j < 5; j++)
        if (w[j] != (int64_t)10 * n * (n - 1) / 2 + (int64_t)n * j) {
          tr_fail(&x->t, "all_reduce in a group: [%d] = %lld", j, (long long)w[j]);
          break;
        }
    }
  }
}

/* Nested groups: only the outer end runs the work. */
static void group_nested(ctx *x, const group_bufs *b) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, next = b->next, prev = b->prev;
  float *s1 = b->s1, *r1 = b->r1, *r2 = b->r2;
  tr_label(&x->t, "nested groups n=%d", n);
  fill_msg(s1, CC_FLOAT32, 3000, me, next, 40);
  tr_fill(r1, CC_FLOAT32, TR_GEN_ANY, 1, 1, 0, 3000);
  memcpy(r2, r1, sizeof(float) * 3000);
  if (OK(cc_group_begin(c), "cc_group_begin (outer)")) {
    OK(cc_group_begin(c), "cc_group_begin (inner)");
    OK(cc_send(c, s1, 3000, CC_FLOAT32, next, 40), "cc_send");
    OK(cc_recv(c, r1, 3000, CC_FLOAT32, prev, 40), "cc_recv");
    OK(cc_group_end(c, NULL), "cc_group_end (inner)");
    if (memcmp(r1, r2, sizeof(float) * 3000) != 0)
      tr_fail(&x->t, "the inner cc_group_end already ran the receive");
    if (OK(cc_group_end(c, NULL), "cc_group_end (outer)"))
      check_msg(x, r1, CC_FLOAT32, 3000, prev, me, 40, "nested group");
  }
}

/* Many small messages with distinct tags in one group, received in reverse tag order. */
static void group_many_tags(ctx *x, const group_bufs *b) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, next = b->next, prev = b->prev, tag;
  int32_t sv[64], rv[64];
  tr_label(&x->t, "64 tags to next in one group n=%d", n);
  for (tag = 0; tag < 64; tag++) {
    sv[tag] = me * 1000 + tag;
    rv[tag] = -1;
  }
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    for (tag = 63; tag >= 0; tag--) OK(cc_recv(c, &rv[tag], 1, CC_INT32, prev, 100 + tag), "cc_recv");
    for (tag = 0; tag < 64; tag++) OK(cc_send(c, &sv[tag], 1, CC_INT32, next, 100 + tag), "cc_send");
    if (OK(cc_group_end(c, NULL), "cc_group_end"))
      for (tag = 0; tag < 64; tag++)
        if (rv[tag] != prev * 1000 + tag) {
          tr_fail(&x->t, "tag %d: got %d, want %d", 100 + tag, rv[tag], prev * 1000 + tag);
          break;
        }
  }
}

static void run_groups(ctx *x) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank;
  group_bufs b;
  b.next = (me + 1) % n;
  b.prev = (me + n - 1) % n;
  b.big = (5u << 20) / 4 + 1; /* floats: a bit over 5 MiB */
  b.s1 = (float *)malloc(sizeof(float) * b.big);
  b.s2 = (float *)malloc(sizeof(float) * b.big);
  b.r1 = (float *)malloc(sizeof(float) * b.big);
  b.r2 = (float *)malloc(sizeof(float) * b.big);
  if (!b.s1 || !b.s2 || !b.r1 || !b.r2) {
    tr_fail(&x->t, "out of memory");
    goto out;
  }
  group_ring(x, &b);
  group_bidirectional_ring(x, &b);
  group_self_sends(x, &b);
  group_tags_out_of_order(x, &b);
  group_all_to_all(x, &b);
  group_all_reduce_and_ring(x, &b);
  group_nested(x, &b);

  /* empty groups */
  tr_label(&x->t, "empty groups n=%d", n);
  if (OK(cc_group_begin(c), "cc_group_begin")) OK(cc_group_end(c, NULL), "cc_group_end (empty)");

  group_many_tags(x, &b);
out:
  free(b.s1);
  free(b.s2);
  free(b.r1);
  free(b.r2);
}

/* ------------------------------------------------------------ async */

/* cc_test reports done within 2 s (its bookkeeping may trail the work a
 * little; the work itself is checked through the data). */
static int test_soon(ctx *x, cc_request *req) {
  double t0 = tu_now();
  int d = 0;
  while (OK(cc_test(req, &d), "cc_test") && !d && tu_now() - t0 < 2.0) tu_sleep_us(200);
  return d;
}

/* The buffers of run_async (a and b hold cnt doubles, s1 and r1 ring floats)
 * and this rank's ring neighbours. */
typedef struct async_bufs {
  double *a, *b;
  float *s1, *r1;
  size_t cnt, ring;
  int next, prev;
} async_bufs;

/* Compute while req runs, then poll cc_test until it reports done, for at
 * most 50 s from the start of the computation. Returns what cc_test said. */
static int compute_then_poll(ctx *x, cc_request *req) {
  double t0, busy = 0, acc = 0;
  long polls = 0;
  int done = 0;
  size_t j;
  t0 = tu_now();
  for (j = 0; j < 2000000; j++) acc += (double)(j % 13) * 0.5;
  busy = tu_now() - t0;
  (void)acc;
  while (!done) {
    if (!OK(cc_test(req, &done), "cc_test")) break;
    polls++;
    if (tu_now() - t0 > 50) {
      tr_fail(&x->t, "cc_test still not done after 50 s");
      break;
    }
    if (!done) tu_sleep_us(100);
  }
  (void)busy;
  (void)polls;
  return done;
}

/* An all_reduce and a ring in the background while this rank computes,
 * polled with cc_test, then cc_wait. */
static void async_compute_and_poll(ctx *x, const async_bufs *ab) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, next = ab->next, prev = ab->prev, r;
  size_t cnt = ab->cnt, ring = ab->ring, j;
  double *a = ab->a, *b = ab->b;
  float *s1 = ab->s1, *r1 = ab->r1;
  cc_request *req = NULL;
  tr_label(&x->t, "async all_reduce + ring, cc_test polling n=%d", n);
  for (j = 0; j < cnt; j++) a[j] = (double)((j * 7 + (size_t)me) % 1000);
  fill_msg(s1, CC_FLOAT32, ring, me, next, 50);
  memset(r1, 0, sizeof(float) * ring);
  if (!OK(cc_group_begin(c), "cc_group_begin")) return;
  OK(cc_all_reduce(c, a, b, cnt, CC_FLOAT64, CC_SUM), "all_reduce");
  OK(cc_send(c, s1, ring, CC_FLOAT32, next, 50), "cc_send");
  OK(cc_recv(c, r1, ring, CC_FLOAT32, prev, 50), "cc_recv");
  if (!OK(cc_group_end(c, &req), "cc_group_end(&req)")) return;
  if (!req) {
    tr_fail(&x->t, "cc_group_end(c, &req) gave no request");
  } else {
    int done = compute_then_poll(x, req);
    if (OK(cc_wait(req), "cc_wait") && done) {
      for (j = 0; j < cnt; j++) {
        double want = 0;
        for (r = 0; r < n; r++) want += (double)((j * 7 + (size_t)r) % 1000);
        if (b[j] != want) {
          tr_fail(&x->t, "async all_reduce: [%zu] = %g, want %g", j, b[j], want);
          break;
        }
      }
      check_msg(x, r1, CC_FLOAT32, ring, prev, me, 50, "async ring");
    }
  }
}

/* Issue order: a blocking all_reduce issued while an async one on the same
 * buffer is pending runs after it, and then the pending one is done. */
static void async_blocking_while_pending(ctx *x) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank;
  int64_t v[1001];
  int64_t s = (int64_t)n * (n + 1) / 2;
  size_t j;
  cc_request *req = NULL;
  tr_label(&x->t, "blocking all_reduce issued while an async one is pending n=%d", n);
  for (j = 0; j < 1001; j++) v[j] = (me + 1) * (int64_t)(j + 1);
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    OK(cc_all_reduce(c, v, v, 1001, CC_INT64, CC_SUM), "all_reduce (async)");
    if (OK(cc_group_end(c, &req), "cc_group_end(&req)") && req) {
      /* runs after the pending one: sums the sums */
      if (OK(cc_all_reduce(c, v, v, 1001, CC_INT64, CC_SUM), "all_reduce (blocking)")) {
        for (j = 0; j < 1001; j++)
          if (v[j] != (int64_t)n * s * (int64_t)(j + 1)) {
            tr_fail(&x->t, "[%zu] = %lld, want %lld (size * the first result)", j,
                    (long long)v[j], (long long)((int64_t)n * s * (int64_t)(j + 1)));
            break;
          }
      }
      if (!test_soon(x, req))
        tr_fail(&x->t, "cc_test: the pending request is not done although a call issued after "
                "it has returned");
      OK(cc_wait(req), "cc_wait");
    }
  }
}

/* Two pending requests, waited in reverse order. */
static void async_two_requests(ctx *x) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, k;
  int64_t p[3], q[3], pp[3], qq[3];
  cc_request *req = NULL, *req2 = NULL;
  tr_label(&x->t, "two pending requests waited in reverse order n=%d", n);
  for (k = 0; k < 3; k++) {
    p[k] = me + k;
    q[k] = me * k;
  }
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    OK(cc_all_reduce(c, p, pp, 3, CC_INT64, CC_MAX), "all_reduce");
    OK(cc_group_end(c, &req), "cc_group_end(&req)");
  }
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    OK(cc_all_reduce(c, q, qq, 3, CC_INT64, CC_SUM), "all_reduce");
    OK(cc_group_end(c, &req2), "cc_group_end(&req2)");
  }
  if (req2 && OK(cc_wait(req2), "cc_wait(second)")) {
    for (k = 0; k < 3; k++)
      if (qq[k] != (int64_t)k * n * (n - 1) / 2) tr_fail(&x->t, "second request: [%d] = %lld", k, (long long)qq[k]);
    if (req && !test_soon(x, req))
      tr_fail(&x->t, "the first request is not done although the second (issued later) is");
  }
  if (req && OK(cc_wait(req), "cc_wait(first)")) {
    for (k = 0; k < 3; k++)
      if (pp[k] != n - 1 + k) tr_fail(&x->t, "first request: [%d] = %lld", k, (long long)pp[k]);
  }
}

/* A ring in an async group, then cc_wait straight away, no cc_test. */
static void async_ring_wait_at_once(ctx *x, const async_bufs *ab) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank, next = ab->next, prev = ab->prev;
  size_t ring = ab->ring;
  float *s1 = ab->s1, *r1 = ab->r1;
  cc_request *req = NULL;
  tr_label(&x->t, "async ring then cc_wait at once n=%d", n);
  fill_msg(s1, CC_FLOAT32, ring, me, next, 60);
  memset(r1, 0, sizeof(float) * ring);
  if (OK(cc_group_begin(c), "cc_group_begin")) {
    OK(cc_recv(c, r1, ring, CC_FLOAT32, prev, 60), "cc_recv");
    OK(cc_send(c, s1, ring, CC_FLOAT32, next, 60), "cc_send");
    if (OK(cc_group_end(c, &req), "cc_group_end(&req)") && req && OK(cc_wait(req), "cc_wait"))
      check_msg(x, r1, CC_FLOAT32, ring, prev, me, 60, "async ring");
  }
}

static void run_async(ctx *x) {
  cc_comm *c = x->t.c;
  int n = x->t.n, me = x->t.rank;
  cc_request *req = NULL;
  async_bufs ab;
  ab.next = (me + 1) % n;
  ab.prev = (me + n - 1) % n;
  ab.cnt = 200001;
  ab.ring = (1u << 20) / 4;
  ab.a = (double *)malloc(sizeof(double) * ab.cnt);
  ab.b = (double *)malloc(sizeof(double) * ab.cnt);
  ab.s1 = (float *)malloc(sizeof(float) * ab.ring);
  ab.r1 = (float *)malloc(sizeof(float) * ab.ring);
  if (!ab.a || !ab.b || !ab.s1 || !ab.r1) {
    tr_fail(&x->t, "out of memory");
    goto out;
  }
  async_compute_and_poll(x, &ab);
  async_blocking_while_pending(x);
  async_two_requests(x);

  /* an empty group with a request */
  tr_label(&x->t, "empty async group n=%d", n);
  if (OK(cc_group_begin(c), "cc_group_begin") && OK(cc_group_end(c, &req), "cc_group_end(&req)")) {
    if (req) OK(cc_wait(req), "cc_wait (empty group)");
  }

  async_ring_wait_at_once(x, &ab);
  OK(cc_barrier(c), "barrier");
out:
  free(ab.a);
  free(ab.b);
  free(ab.s1);
  free(ab.r1);
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
    switch (g) {
    case G_SPLIT: run_split(&x); break;
    case G_P2P: run_p2p(&x); break;
    case G_GROUPS: run_groups(&x); break;
    default: run_async(&x); break;
    }
    tr_group_end(&x.t);
  }
  return tr_failed_any(&x.t, G_COUNT);
}

int main(int argc, char **argv) {
  static const int sizes[] = {1, 2, 3, 4, 5, 7, 8};
  tu_default_timeout("60");
  return tr_run_worlds("split_group", sizes, sizeof sizes / sizeof sizes[0], argc > 1 ? atoi(argv[1]) : 0,
                       rank_main, g_names, g_cover, G_COUNT);
}
