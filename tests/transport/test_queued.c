/* test_queued.c - small broadcasts, scatters and gathers, which on one host
   go queued through the rings (docs/shm.md): a root that runs far ahead of
   its receivers, more than the rings hold; roots that change from call to
   call, with arena calls between; a user message ahead of a collective frame
   in the same ring; a root that leaves once its frames are sent; and the
   mismatches that only a queued call can make (two ranks each taking itself
   for the root, calls in another order); and two races of the wait, made
   to happen on every run through cc.h's test seam (a rank that leaves, or
   fails and leaves, while its peer is between two checks). Each received
   byte is checked against a formula of (call, element); on every transport
   (tests/run.sh runs it again with CC_TRANSPORT=tcp, where nothing is
   queued and the same results must hold). */
#define _POSIX_C_SOURCE 200809L
/* cc.h's test seam (queued.race_*): this rank stops at the named place once
   it is armed, while the other rank does what the race needs. */
struct cc_comm;
static void seam(const char *where, const struct cc_comm *c);
#define CC__TEST_SEAM(where, c) seam(#where, c)
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALLS 3000
#define MAXC  1000                       /* int32 elements: 4000 bytes, under CC_SHM_QUEUE_BYTES */

static int32_t value(int call, int part, size_t i) {
  return (int32_t)((uint32_t)call * 2654435761u ^ (uint32_t)part * 40503u ^ (uint32_t)i * 2246822519u);
}

static int tcp(void) {
  const char *t = getenv("CC_TRANSPORT");
  return t && !strcmp(t, "tcp");
}

static int bad(cc_comm *c, int call, const char *what, size_t i, int32_t got, int32_t want) {
  fprintf(stderr, "rank %d: call %d: %s: element %zu is %d, expected %d\n", cc_comm_rank(c), call, what, i, got, want);
  return 1;
}

/* CALLS calls: first 300 broadcasts of MAXC from rank 0, while rank 1
   sleeps (they fill the rings, many times over: the root waits for room);
   then broadcast, scatter, gather in turn, the root moving, counts from 1 to
   MAXC / n, an all_reduce every 500. */
static int stream(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), n = cc_comm_size(c), call, j;
  int32_t *s = (int32_t *)malloc(sizeof(int32_t) * MAXC), *r = (int32_t *)malloc(sizeof(int32_t) * MAXC);
  static const size_t counts[] = {1, 7, 64, 250};
  (void)arg;
  if (me == 1) tu_sleep_us(100000);
  for (call = 0; call < CALLS; call++) {
    int kind = call < 300 ? 0 : call % 3, root = call < 300 ? 0 : (call / 3) % n;
    size_t cnt = call < 300 ? MAXC : counts[call % 4] * (kind == 0 ? 4 : 1), i;
    cc_result rc;
    if (cnt * (size_t)n > MAXC) cnt = MAXC / (size_t)n;
    memset(r, 0x5a, sizeof(int32_t) * MAXC);
    if (kind == 0) {                     /* broadcast */
      if (me == root) for (i = 0; i < cnt; i++) r[i] = value(call, 0, i);
      rc = cc_broadcast(c, r, cnt, CC_INT32, root);
    } else if (kind == 1) {              /* scatter: part j to rank j */
      if (me == root) for (j = 0; j < n; j++) for (i = 0; i < cnt; i++) s[(size_t)j * cnt + i] = value(call, j, i);
      rc = cc_scatter(c, s, r, cnt, CC_INT32, root);
    } else {                             /* gather: rank j's part */
      for (i = 0; i < cnt; i++) s[i] = value(call, me, i);
      rc = cc_gather(c, s, r, cnt, CC_INT32, root);
    }
    if (rc != CC_OK) {
      fprintf(stderr, "rank %d: call %d: %s\n", me, call, cc_comm_last_error(c));
      return 1;
    }
    if (kind == 0) {
      for (i = 0; i < cnt; i++) if (r[i] != value(call, 0, i)) return bad(c, call, "broadcast", i, r[i], value(call, 0, i));
    } else if (kind == 1) {
      for (i = 0; i < cnt; i++) if (r[i] != value(call, me, i)) return bad(c, call, "scatter", i, r[i], value(call, me, i));
    } else if (me == root) {
      for (i = 0; i < cnt * (size_t)n; i++)
        if (r[i] != value(call, (int)(i / cnt), i % cnt)) return bad(c, call, "gather", i, r[i], value(call, (int)(i / cnt), i % cnt));
    }
    if (call % 500 == 499) {
      int32_t x = me + 1;
      if (cc_all_reduce(c, &x, &x, 1, CC_INT32, CC_SUM) != CC_OK || x != n * (n + 1) / 2) {
        fprintf(stderr, "rank %d: call %d: all_reduce gave %d (%s)\n", me, call, x, cc_comm_last_error(c));
        return 1;
      }
    }
  }
  free(s);
  free(r);
  return cc_barrier(c) != CC_OK;
}

/* Rank 0 sends rank 1 a user message, then broadcasts; rank 1 takes the
   broadcast first (the message waits in its queue), then the message. */
static int p2p_first(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), i;
  int32_t msg[16], b[16];
  (void)arg;
  for (i = 0; i < 16; i++) { msg[i] = value(-1, 0, (size_t)i); b[i] = me == 0 ? value(-2, 0, (size_t)i) : 0; }
  if (me == 0 && cc_send(c, msg, 16, CC_INT32, 1, 5) != CC_OK) return 1;
  if (me == 1) tu_sleep_us(20000);
  if (cc_broadcast(c, b, 16, CC_INT32, 0) != CC_OK) {
    fprintf(stderr, "rank %d: broadcast: %s\n", me, cc_comm_last_error(c));
    return 1;
  }
  for (i = 0; i < 16; i++) if (b[i] != value(-2, 0, (size_t)i)) return bad(c, 0, "broadcast", (size_t)i, b[i], value(-2, 0, (size_t)i));
  if (me == 1) {
    memset(msg, 0, sizeof msg);
    if (cc_recv(c, msg, 16, CC_INT32, 0, 5) != CC_OK) return 1;
    for (i = 0; i < 16; i++) if (msg[i] != value(-1, 0, (size_t)i)) return bad(c, 1, "message", (size_t)i, msg[i], value(-1, 0, (size_t)i));
  }
  return cc_barrier(c) != CC_OK;
}

/* Queued receives, then messages through the same ring, in turn: rank 1
   takes rank 0's broadcasts the short way, which gives the ring's bytes
   back only a quarter of the ring at a time; the messages after them are
   read by the engine, which must start where the broadcasts ended, not
   where the ring's tail last stood. 40 rounds of 1 to 30 broadcasts and 1 to
   3 messages, every element checked. */
static int lag_then_p2p(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), round, call = 0, k, i;
  int32_t b[8], msg[64];
  (void)arg;
  for (round = 0; round < 40; round++) {
    int nb = 1 + (round * 7) % 30, nm = 1 + round % 3;
    for (k = 0; k < nb; k++, call++) {
      for (i = 0; i < 8; i++) b[i] = me == 0 ? value(call, 0, (size_t)i) : 0;
      if (cc_broadcast(c, b, 8, CC_INT32, 0) != CC_OK) {
        fprintf(stderr, "rank %d: broadcast %d: %s\n", me, call, cc_comm_last_error(c));
        return 1;
      }
      for (i = 0; i < 8; i++) if (b[i] != value(call, 0, (size_t)i)) return bad(c, call, "broadcast", (size_t)i, b[i], value(call, 0, (size_t)i));
    }
    for (k = 0; k < nm; k++) {
      if (me == 0) {
        for (i = 0; i < 64; i++) msg[i] = value(round, k + 1, (size_t)i);
        if (cc_send(c, msg, 64, CC_INT32, 1, 9) != CC_OK) return 1;
      } else {
        memset(msg, 0, sizeof msg);
        if (cc_recv(c, msg, 64, CC_INT32, 0, 9) != CC_OK) {
          fprintf(stderr, "rank 1: message %d of round %d: %s\n", k, round, cc_comm_last_error(c));
          return 1;
        }
        for (i = 0; i < 64; i++)
          if (msg[i] != value(round, k + 1, (size_t)i)) return bad(c, round, "message", (size_t)i, msg[i], value(round, k + 1, (size_t)i));
      }
    }
  }
  return cc_barrier(c) != CC_OK;
}

/* The root broadcasts 50 times and returns (cc_spawn destroys its
   communicator); the others start 100 ms later and must still get all 50. */
static int root_leaves(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), call, i;
  int32_t b[8];
  (void)arg;
  if (me != 0) tu_sleep_us(100000);
  for (call = 0; call < 50; call++) {
    for (i = 0; i < 8; i++) b[i] = me == 0 ? value(call, 0, (size_t)i) : 0;
    if (cc_broadcast(c, b, 8, CC_INT32, 0) != CC_OK) {
      fprintf(stderr, "rank %d: broadcast %d: %s\n", me, call, cc_comm_last_error(c));
      return 1;
    }
    for (i = 0; i < 8; i++) if (b[i] != value(call, 0, (size_t)i)) return bad(c, call, "broadcast", (size_t)i, b[i], value(call, 0, (size_t)i));
  }
  return 0;
}

/* ---------------------------------------------------------------- races, on demand */

/* Two races that CI's runs found in the wait (cc__wait_alive), each now made
   to happen every time with cc.h's seam: rank 0 waits for rank 1 in a
   barrier; 20 ms into the wait, just before it asks whether rank 1 lives,
   the seam holds rank 0 for 400 ms (it has already found the wait not over
   and no failure posted). Meanwhile rank 1, 100 ms late, does its part and
   leaves (race_left: the barrier), or posts a failure and leaves
   (race_failed: cc_comm_abort); either way cc_spawn then destroys its
   communicator and the process exits.
   Rank 0 then finds rank 1 gone. The barrier must end as rank 1 left it:
   CC_OK, not CC_ERR_PEER_LOST (d2f03af), or the failure rank 1 posted,
   CC_ERR_ABORTED, not its leaving (638f22d). Over TCP the frame or the
   abort comes before the end of the stream, so the seam changes nothing
   there, and the outcome must be the same. */
static int seam_armed;                 /* this process: hold at the next wait_alive */
static int seam_hits;

static void seam(const char *where, const struct cc_comm *c) {
  (void)c;
  if (!seam_armed || strcmp(where, "wait_alive") != 0) return;
  seam_armed = 0;
  seam_hits++;
  tu_sleep_us(400000);
}

struct race_out { int code, hits; char err[CC__ERR_BYTES]; };
static struct race_out *race;

static int race_rank(cc_comm *c, void *arg) {
  int failed = *(const int *)arg, me = cc_comm_rank(c);
  cc_result r;
  if (cc_barrier(c) != CC_OK) return 1;
  if (me == 1) {
    tu_sleep_us(100000);
    if (failed) cc_comm_abort(c);
    else if (cc_barrier(c) != CC_OK) return 1;
    return 0;                          /* cc_spawn destroys the communicator and exits */
  }
  seam_armed = 1;
  seam_hits = 0;
  r = cc_barrier(c);
  seam_armed = 0;
  race[0].code = r;
  race[0].hits = seam_hits;
  snprintf(race[0].err, sizeof race[0].err, "%s", cc_comm_last_error(c));
  return 0;
}

static void case_race(int failed) {
  const char *name = failed ? "queued.race_failed" : "queued.race_left";
  int want = failed ? CC_ERR_ABORTED : CC_OK, rc;
  double t0 = tu_now();
  memset(race, 0, sizeof *race);
  race[0].code = -1;
  rc = tu_spawn(2, race_rank, &failed);
  if (race[0].code == want && (race[0].hits == 1 || tcp()) &&
      (!failed || strstr(race[0].err, "rank 1 called cc_comm_abort")))
    tu_pass(name, "rank 1 %s while rank 0 was held before its liveness check: rank 0's barrier %s (%d hold, %.2f s)",
            failed ? "aborted and exited" : "passed the barrier and left", cc_strerror((cc_result)want), race[0].hits,
            tu_now() - t0);
  else
    tu_fail(name, "rank 0's barrier returned %s (%s), wanted %s; the seam held it %d time(s); cc_spawn %d",
            race[0].code < 0 ? "nothing" : cc_strerror((cc_result)race[0].code), race[0].err,
            cc_strerror((cc_result)want), race[0].hits, rc);
}

/* ---------------------------------------------------------------- mismatches */

struct outcome { int code1, code2; char err[CC__ERR_BYTES]; };
static struct outcome *out;

enum { MM_REORDER, MM_TWO_ROOTS, MM_SCATTER_ROOTS, MM_KINDS };
static const char *const mm_names[MM_KINDS] = {
    "rank 0 broadcasts then all_reduces, rank 1 the other way round",
    "gather: ranks 0 and 1 each say it is the root",
    "scatter: rank 1 says root 1, the others root 0",
};

static int mismatch(cc_comm *c, void *arg) {
  int kind = *(const int *)arg, me = cc_comm_rank(c);
  int32_t a[8] = {0}, g[64] = {0};
  float x = 1.0f;
  cc_result r1 = CC_OK, r2;
  if (cc_barrier(c) != CC_OK) return 1;
  switch (kind) {
  case MM_REORDER:
    if (me == 0) {
      r1 = cc_broadcast(c, a, 8, CC_INT32, 0);
      if (r1 == CC_OK) r1 = cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM);
    } else {
      r1 = cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM);
      if (r1 == CC_OK) r1 = cc_broadcast(c, a, 8, CC_INT32, 0);
    }
    break;
  case MM_TWO_ROOTS:
    r1 = cc_gather(c, a, g, 8, CC_INT32, me == 1 ? 1 : 0);
    break;
  default:
    r1 = cc_scatter(c, g, a, 8, CC_INT32, me == 1 ? 1 : 0);
    break;
  }
  r2 = cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM);
  out[me].code1 = r1;
  out[me].code2 = r2;
  snprintf(out[me].err, sizeof out[me].err, "%s", cc_comm_last_error(c));
  return 0;
}

/* Every rank fails, with CC_ERR_MISMATCH in this call or its next one (on
   TCP, where two roots of a gather both wait to receive, by the timeout). */
static void case_mismatch(int kind, int n) {
  char name[160];
  int r, ok = 1, rc;
  double t0 = tu_now(), d;
  char why[1024] = "";
  memset(out, 0, sizeof(struct outcome) * 8);
  snprintf(name, sizeof name, "queued.mismatch/%s (n=%d)", mm_names[kind], n);
  rc = tu_spawn(n, mismatch, &kind);
  d = tu_now() - t0;
  for (r = 0; r < n; r++) {
    int want = tcp() && kind == MM_TWO_ROOTS ? CC_ERR_TIMEOUT : CC_ERR_MISMATCH;
    int c1 = out[r].code1, c2 = out[r].code2;
    int good = (c1 == want || c1 == CC_ERR_MISMATCH) ? c2 == CC_ERR_ABORTED
               : c1 == CC_OK && (c2 == want || c2 == CC_ERR_MISMATCH);
    if (!good) {
      ok = 0;
      snprintf(why + strlen(why), sizeof why - strlen(why), "rank %d: %s then %s (%s); ", r,
               cc_strerror((cc_result)c1), cc_strerror((cc_result)c2), out[r].err);
    }
  }
  if (rc != 0) { ok = 0; snprintf(why + strlen(why), sizeof why - strlen(why), "cc_spawn returned %d", rc); }
  if (ok && d > (tcp() && kind == MM_TWO_ROOTS ? 10.0 : 5.0)) { ok = 0; snprintf(why, sizeof why, "took %.1f s", d); }
  if (ok) tu_pass(name, "every rank fails in this call or the next, none with data (%.2f s; rank 0: %s)", d, out[0].err);
  else tu_fail(name, "%s", why);
}

int main(void) {
  static const int sizes[] = {2, 3, 4};
  char name[96];
  size_t i;
  int k;
  double t0;
  setenv("CC_TIMEOUT", "20", 0);
  out = (struct outcome *)tu_shared_alloc(sizeof(struct outcome) * 8);
  if (!out) { tu_fail("queued", "no shared memory for the outcomes"); return 1; }
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    snprintf(name, sizeof name, "queued.stream (n=%d)", sizes[i]);
    t0 = tu_now();
    if (tu_spawn(sizes[i], stream, NULL) == 0)
      tu_pass(name, "%d broadcasts, scatters and gathers of 4 B to 4000 B, the first 300 (1.2 MB) from one root "
              "while a receiver sleeps, then the root moving: every element right (%.2f s)", CALLS, tu_now() - t0);
    else
      tu_fail(name, "%s", cc_comm_last_error(NULL));
  }
  t0 = tu_now();
  if (tu_spawn(2, p2p_first, NULL) == 0)
    tu_pass("queued.p2p_first", "a user message ahead of the broadcast's frame: both arrive whole (%.2f s)", tu_now() - t0);
  else
    tu_fail("queued.p2p_first", "%s", cc_comm_last_error(NULL));
  t0 = tu_now();
  if (tu_spawn(2, lag_then_p2p, NULL) == 0)
    tu_pass("queued.lag_then_p2p", "40 rounds of queued broadcasts, then messages through the same ring: every "
            "element right (%.2f s)", tu_now() - t0);
  else
    tu_fail("queued.lag_then_p2p", "%s", cc_comm_last_error(NULL));
  t0 = tu_now();
  if (tu_spawn(3, root_leaves, NULL) == 0)
    tu_pass("queued.root_leaves", "the root's 50 broadcasts reach ranks that start after it left (%.2f s)", tu_now() - t0);
  else
    tu_fail("queued.root_leaves", "%s", cc_comm_last_error(NULL));
  race = (struct race_out *)tu_shared_alloc(sizeof(struct race_out));
  if (!race) { tu_fail("queued.race", "no shared memory for the outcome"); return 1; }
  case_race(0);
  case_race(1);
  if (tcp()) setenv("CC_TIMEOUT", "3", 1);
  for (k = 0; k < MM_KINDS; k++) case_mismatch(k, 3);
  return tu_exit_code();
}
