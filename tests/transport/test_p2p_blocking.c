/* test_p2p_blocking.c - blocking cc_send / cc_recv outside any group, where
   every rank sends first and receives afterwards: a ring of large messages,
   and two ranks sending to each other at once. Each message is far larger
   than a channel's ring (64 KiB), so a send can only finish if the receiving
   rank takes the bytes in while it is itself blocked in its own send. Checks
   the data, the per-tag order, and that nothing waits for the timeout.
   Then messages that arrive long before their receive, with
   CC_MAX_UNEXPECTED=1M: a frame no receive wants stays in its link (a ring;
   over TCP the socket, its header read) until one does, instead of in memory
   of the receiver's own: a late receive of 8 MiB, and a root whose
   broadcasts of 4 MiB run ahead of a slow receiver, both succeed with the
   right data where holding them would fail with CC_ERR_NO_MEMORY. While the
   late message waits parked, its receiver waits 300 ms for another rank:
   that wait must sleep, not spin (less than half of it in CPU time). Last,
   broadcasts at 4 and 8 ranks of sizes around the tree / chain bound, and
   over TCP the tree's shape itself: a receiver that the tree feeds from the
   root finishes while rank 1 has not yet entered the call. */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define BIG ((size_t)3 << 20)            /* bytes per large message */

static uint32_t value(int from, int tag, size_t i) {
  return (uint32_t)(from * 2654435761u) ^ (uint32_t)(tag * 40503u) ^ (uint32_t)(i * 2246822519u);
}

static int check(const uint32_t *buf, size_t n, int from, int tag, const char *what, int rank) {
  size_t i;
  for (i = 0; i < n; i++)
    if (buf[i] != value(from, tag, i)) {
      fprintf(stderr, "rank %d: %s: element %zu from rank %d tag %d is %u, expected %u\n", rank, what, i, from,
              tag, buf[i], value(from, tag, i));
      return 1;
    }
  return 0;
}

static int fill_send(cc_comm *c, uint32_t *buf, size_t n, int to, int tag) {
  size_t i;
  for (i = 0; i < n; i++) buf[i] = value(cc_comm_rank(c), tag, i);
  return cc_send(c, buf, n, CC_UINT32, to, tag) != CC_OK;
}

/* Every rank sends BIG to rank+1, then receives from rank-1: a ring of
   blocking calls, three rounds. */
static int ring(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), n = cc_comm_size(c), round;
  size_t cnt = BIG / 4;
  uint32_t *s = (uint32_t *)malloc(BIG), *r = (uint32_t *)malloc(BIG);
  (void)arg;
  for (round = 0; round < 3; round++) {
    if (fill_send(c, s, cnt, (me + 1) % n, round)) {
      fprintf(stderr, "rank %d: send: %s\n", me, cc_comm_last_error(c));
      return 1;
    }
    if (cc_recv(c, r, cnt, CC_UINT32, (me + n - 1) % n, round) != CC_OK) {
      fprintf(stderr, "rank %d: recv: %s\n", me, cc_comm_last_error(c));
      return 1;
    }
    if (check(r, cnt, (me + n - 1) % n, round, "ring", me)) return 1;
  }
  free(s);
  free(r);
  return cc_barrier(c) != CC_OK;
}

/* Ranks 0 and 1 both send a large message with tag 7, then a small one with
   tag 8, then receive them in the other order (8 first). */
static int crossed(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), peer = 1 - me;
  size_t cnt = BIG / 4;
  uint32_t *s = (uint32_t *)malloc(BIG), *r = (uint32_t *)malloc(BIG), small_s[16], small_r[16];
  (void)arg;
  if (fill_send(c, s, cnt, peer, 7) || fill_send(c, small_s, 16, peer, 8)) {
    fprintf(stderr, "rank %d: send: %s\n", me, cc_comm_last_error(c));
    return 1;
  }
  if (cc_recv(c, small_r, 16, CC_UINT32, peer, 8) != CC_OK || cc_recv(c, r, cnt, CC_UINT32, peer, 7) != CC_OK) {
    fprintf(stderr, "rank %d: recv: %s\n", me, cc_comm_last_error(c));
    return 1;
  }
  if (check(small_r, 16, peer, 8, "crossed small", me) || check(r, cnt, peer, 7, "crossed large", me)) return 1;
  free(s);
  free(r);
  return cc_barrier(c) != CC_OK;
}

static double cpu_s(void) {            /* this process's CPU time, user and system */
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* Rank 0 sends 8 MiB to rank 1 while rank 1 waits for a word from rank 2,
   which comes 300 ms later; then rank 1 receives the 8 MiB. */
static int late(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c);
  size_t cnt = ((size_t)8 << 20) / 4;
  uint32_t *b = (uint32_t *)malloc(cnt * 4), w = 0;
  cc_result r = CC_OK;
  (void)arg;
  if (me == 0) {
    if (fill_send(c, b, cnt, 1, 5)) r = CC_ERR_SYSTEM;
  } else if (me == 1) {
    double cpu = cpu_s(), t0 = tu_now();
    r = cc_recv(c, &w, 1, CC_UINT32, 2, 6);
    cpu = cpu_s() - cpu;
    t0 = tu_now() - t0;
    if (r == CC_OK && cpu > 0.5 * t0 && t0 > 0.1) {
      fprintf(stderr, "rank 1: late: %.3f s of CPU in a wait of %.3f s beside a parked frame: the wait spins\n", cpu,
              t0);
      r = CC_ERR_SYSTEM;
    }
    if (r == CC_OK && (r = cc_recv(c, b, cnt, CC_UINT32, 0, 5)) == CC_OK)
      r = w != 42 || check(b, cnt, 0, 5, "late", me) ? CC_ERR_SYSTEM : CC_OK;
  } else if (me == 2) {
    w = 42;
    tu_sleep_us(300000);
    r = cc_send(c, &w, 1, CC_UINT32, 1, 6);
  }
  if (r != CC_OK) fprintf(stderr, "rank %d: late: %s\n", me, cc_comm_last_error(c));
  free(b);
  return r != CC_OK || cc_barrier(c) != CC_OK;
}

/* Rank 0 broadcasts 4 MiB three times (different data) while rank 1 enters
   its first broadcast 300 ms late. */
static int ahead(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), k;
  size_t cnt = ((size_t)4 << 20) / 4, i;
  uint32_t *b = (uint32_t *)malloc(cnt * 4);
  (void)arg;
  if (me == 1) tu_sleep_us(300000);
  for (k = 0; k < 3; k++) {
    for (i = 0; i < cnt; i++) b[i] = me == 0 ? value(0, k, i) : 0;
    if (cc_broadcast(c, b, cnt, CC_UINT32, 0) != CC_OK) {
      fprintf(stderr, "rank %d: broadcast %d: %s\n", me, k, cc_comm_last_error(c));
      return 1;
    }
    if (check(b, cnt, 0, k, "ahead", me)) return 1;
  }
  free(b);
  return cc_barrier(c) != CC_OK;
}

/* Broadcasts of sizes around the point where a broadcast over TCP goes by a
   binomial tree rather than a chain of 1 MiB pieces (1 MiB at 4 ranks, 2 MiB
   at 8), from three roots, back to back, every element checked. */
static int shapes(cc_comm *c, void *arg) {
  static const size_t bytes[] = {(64u << 10) + 4, 1u << 20, (1u << 20) + 4, 2u << 20, (2u << 20) + 4, (3u << 20) + 8};
  int me = cc_comm_rank(c), n = cc_comm_size(c), roots[3], k, j;
  size_t cnt, i;
  uint32_t *b = (uint32_t *)malloc(bytes[5]);
  (void)arg;
  roots[0] = 0; roots[1] = n - 1; roots[2] = n / 2;
  if (!b) return 1;
  for (k = 0; k < 6; k++)
    for (j = 0; j < 3; j++) {
      cnt = bytes[k] / 4;
      for (i = 0; i < cnt; i++) b[i] = me == roots[j] ? value(roots[j], k * 3 + j, i) : 0;
      if (cc_broadcast(c, b, cnt, CC_UINT32, roots[j]) != CC_OK) {
        fprintf(stderr, "rank %d: broadcast of %zu bytes from %d: %s\n", me, bytes[k], roots[j], cc_comm_last_error(c));
        free(b);
        return 1;
      }
      if (check(b, cnt, roots[j], k * 3 + j, "shapes", me)) { free(b); return 1; }
    }
  free(b);
  return cc_barrier(c) != CC_OK;
}

/* Over TCP a broadcast of 1 MiB at 4 ranks (2 MiB at 8) goes by the binomial
   tree, in which rank n/2 takes the data straight from root 0; by the chain
   it would wait for rank 1 to pass it on. Rank 1 enters the broadcast only
   once rank n/2 says (in memory the ranks share) that it has finished, or
   after 10 s, which counts as the failure: every rank still finishes, with
   the data checked. */
typedef struct tree_arg { int *done; size_t bytes; } tree_arg;

static int tree_shape(cc_comm *c, void *arg) {
  tree_arg *a = (tree_arg *)arg;
  int me = cc_comm_rank(c), n = cc_comm_size(c), waited = 0, bad;
  size_t cnt = a->bytes / 4, i;
  uint32_t *b = (uint32_t *)malloc(a->bytes);
  if (!b) return 1;
  for (i = 0; i < cnt; i++) b[i] = me == 0 ? value(0, 40, i) : 0;
  if (me == 1)
    while (!__atomic_load_n(a->done, __ATOMIC_ACQUIRE) && waited < 10000) { tu_sleep_us(1000); waited++; }
  if (cc_broadcast(c, b, cnt, CC_UINT32, 0) != CC_OK) {
    fprintf(stderr, "rank %d: broadcast of %zu bytes: %s\n", me, a->bytes, cc_comm_last_error(c));
    free(b);
    return 1;
  }
  if (me == n / 2) __atomic_store_n(a->done, 1, __ATOMIC_RELEASE);
  bad = check(b, cnt, 0, 40, "tree", me);
  free(b);
  if (me == 1 && waited >= 10000) {
    fprintf(stderr, "rank 1: rank %d did not finish its broadcast while rank 1 stayed out of it for 10 s: "
            "its data did not come from the root\n", n / 2);
    bad = 1;
  }
  return (cc_barrier(c) != CC_OK) | bad;
}

/* The tree's shape at n ranks (TCP only: shared memory's broadcast begins
   with every rank's descriptor, so every rank waits for rank 1 there). */
static void run_tree_shape(int n) {
  const char *tr = getenv("CC_TRANSPORT");
  char name[64];
  tree_arg a;
  double t0;
  snprintf(name, sizeof name, "p2p.broadcast_tree.n%d", n);
  if (!tr || strcmp(tr, "tcp") != 0) {
    tu_skip(name, "the shape of the broadcast over TCP (CC_TRANSPORT=tcp runs it)");
    return;
  }
  if (n > TU_TSAN_MAX_WORLD && tu_tsan()) {
    tu_skip(name, "world %d under ThreadSanitizer (test_util.h: TU_TSAN_MAX_WORLD)", n);
    return;
  }
  a.bytes = n == 4 ? (size_t)1 << 20 : (size_t)2 << 20;
  if (!(a.done = (int *)tu_shared_alloc(sizeof(int)))) {
    tu_fail(name, "no shared memory for the flag");
    return;
  }
  t0 = tu_now();
  if (tu_spawn(n, tree_shape, &a) == 0)
    tu_pass(name, "a broadcast of %zu MiB from rank 0: rank %d had it while rank 1 was not in the call "
            "(the binomial tree), data right (%.2f s)", a.bytes >> 20, n / 2, tu_now() - t0);
  else
    tu_fail(name, "rank %d could not finish a broadcast of %zu MiB without rank 1, or wrong data: not the "
            "tree (%s)", n / 2, a.bytes >> 20, cc_comm_last_error(NULL));
  tu_shared_free(a.done, sizeof(int));
}

int main(void) {
  static const int sizes[] = {2, 3, 5}, wide[] = {4, 8};
  size_t i;
  char name[64];
  double t0;
  setenv("CC_TIMEOUT", "20", 1);         /* a regression fails in 20 s, not 600 */
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    snprintf(name, sizeof name, "p2p.blocking_ring.n%d", sizes[i]);
    t0 = tu_now();
    if (tu_spawn(sizes[i], ring, NULL) == 0)
      tu_pass(name, "3 rounds of send %zu MiB to rank+1, then recv from rank-1, outside a group (%.2f s)",
              BIG >> 20, tu_now() - t0);
    else
      tu_fail(name, "the ring of blocking sends failed (%s)", cc_comm_last_error(NULL));
  }
  t0 = tu_now();
  if (tu_spawn(2, crossed, NULL) == 0)
    tu_pass("p2p.blocking_crossed", "both ranks send %zu MiB (tag 7) and 64 B (tag 8), then receive tag 8 "
            "first (%.2f s)", BIG >> 20, tu_now() - t0);
  else
    tu_fail("p2p.blocking_crossed", "crossed blocking sends failed (%s)", cc_comm_last_error(NULL));
  for (i = 0; i < 2; i++) {
    snprintf(name, sizeof name, "p2p.broadcast_shapes.n%d", wide[i]);
    if (wide[i] > TU_TSAN_MAX_WORLD && tu_tsan()) {
      tu_skip(name, "world %d under ThreadSanitizer (test_util.h: TU_TSAN_MAX_WORLD)", wide[i]);
      continue;
    }
    t0 = tu_now();
    if (tu_spawn(wide[i], shapes, NULL) == 0)
      tu_pass(name, "broadcasts of 64 KiB+4, 1 MiB, 1 MiB+4, 2 MiB, 2 MiB+4, 3 MiB+8 from roots 0, %d, %d, back "
              "to back: right (%.2f s)", wide[i] - 1, wide[i] / 2, tu_now() - t0);
    else
      tu_fail(name, "broadcasts around the tree / chain bound failed (%s)", cc_comm_last_error(NULL));
  }
  run_tree_shape(4);
  run_tree_shape(8);
  setenv("CC_MAX_UNEXPECTED", "1M", 1);
  t0 = tu_now();
  if (tu_spawn(3, late, NULL) == 0)
    tu_pass("p2p.late_receive", "8 MiB sent 300 ms before its receive, CC_MAX_UNEXPECTED=1M: right, the wait "
            "beside it asleep (%.2f s)",
            tu_now() - t0);
  else
    tu_fail("p2p.late_receive", "a message sent before its receive was posted failed (%s)", cc_comm_last_error(NULL));
  t0 = tu_now();
  if (tu_spawn(2, ahead, NULL) == 0)
    tu_pass("p2p.broadcast_ahead", "3 broadcasts of 4 MiB, the receiver 300 ms late, CC_MAX_UNEXPECTED=1M: right "
            "(%.2f s)", tu_now() - t0);
  else
    tu_fail("p2p.broadcast_ahead", "broadcasts ahead of their receiver failed (%s)", cc_comm_last_error(NULL));
  unsetenv("CC_MAX_UNEXPECTED");
  return tu_exit_code();
}
