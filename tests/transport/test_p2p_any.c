/* test_p2p_any.c - receives from any source: cc_recv_any and
   cc_recv(..., CC_ANY_SOURCE, tag), at 2, 3 and 4 ranks, on the transport
   the environment picks (tests/transport/test_tcp_suites.sh runs it again with
   CC_TRANSPORT=tcp; net_probe's `all` covers jobs spread over hosts).

     any.order     every other rank sends 40 small (tag 5) and then 3 large
                   (192 KiB, more than a ring holds; tag 15) messages to rank
                   0, which receives
                   them all from any source: each reported source is the
                   rank the payload names, each sender's messages arrive in
                   the order it sent them, none is lost or doubled
     any.fair      the ranks but the last send 100 messages each to rank 0,
                   then the last rank sends one, and rank 0, which made no
                   call meanwhile (the messages wait in its links), receives
                   them all: the last rank's message is among the first
                   receives (a receive from any source reads the links in
                   turn), where reading them always from rank 1 on would give
                   it last. (Messages a rank has already taken in, in an
                   earlier call, go in the order they came.)
     any.group     in one group rank 0 receives from every rank (itself too)
                   from any source, with cc_group_end(c, &req): each source
                   is known once cc_wait returned, the set is every rank; and
                   the same with cc_group_end(c, NULL)
     any.posted    rank 1 sends A then B with one tag; rank 0 posts, in one
                   group, a receive from any source and then a cc_recv from
                   rank 1: the first takes A, the second B (receives match in
                   the order they were posted)
     any.plain     cc_recv(..., CC_ANY_SOURCE, tag) receives, without a source
     any.args      a negative tag, a NULL buffer, peer -5: CC_ERR_INVALID_ARG
                   with *source CC_UNDEFINED, and the communicator still works
     any.mismatch  rank 1 sends 5 elements with tag 6, rank 0 receives 4 from
                   any source: CC_ERR_MISMATCH naming rank 1 on rank 0, and
                   rank 1's next call fails too
     any.timeout   rank 0 waits for tag 9 from any source, nobody sends
                   (CC_TIMEOUT=1; the others wait 3 s before a barrier):
                   CC_ERR_TIMEOUT after about a second, the message naming
                   the tag and "any rank"; the others' barrier fails
     any.lost2     2 ranks: rank 1 is killed while rank 0 waits from any
                   source: CC_ERR_PEER_LOST naming rank 1, long before the
                   timeout (30 s)
     any.lost3     3 ranks: rank 1 is killed while rank 0 waits from any
                   source; rank 2 sends afterwards: rank 0 receives it (a rank
                   that is gone cannot be the sender, the others still can);
                   rank 2 then leaves, and rank 0's next receive from any
                   source fails with CC_ERR_PEER_LOST naming ranks 1 and 2

   The lost cases start their ranks as ccrun does (fork, RANK, WORLD_SIZE,
   CC_JOB_ID, cc_comm_init): cc_spawn would stop the survivors when a rank
   dies. */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXR 8
#define NSMALL 40
#define NLARGE 3
#define LARGE ((size_t)48 << 10)       /* uint32 elements: 192 KiB */
#define NFLOOD 100

/* What the ranks report to this process. */
struct rep {
  int code[MAXR], code2[MAXR];         /* the call under test, and a later one */
  int src[MAXR][16];
  double secs[MAXR];
  char err[MAXR][320], err2[MAXR][320];
  int order[MAXR * NFLOOD + 8];        /* any.fair: the sources, in the order received */
  int bad[MAXR];                       /* checks a rank made itself: failures */
  int flooded, go;                     /* any.fair: the order of its steps */
  char why[MAXR][200];
};
static struct rep *sh;

static uint32_t word(int from, int k, size_t i) {
  return (uint32_t)(from * 2654435761u) ^ (uint32_t)(k * 40503u) ^ (uint32_t)(i * 2246822519u);
}

static void fill(uint32_t *b, size_t n, int from, int k) {
  size_t i;
  b[0] = (uint32_t)from;
  b[1] = (uint32_t)k;
  for (i = 2; i < n; i++) b[i] = word(from, k, i);
}

/* the payload's sender and number, or -1 when its words are not fill's */
static int check(const uint32_t *b, size_t n, int *from, int *k) {
  size_t i;
  *from = (int)b[0];
  *k = (int)b[1];
  for (i = 2; i < n; i++)
    if (b[i] != word(*from, *k, i)) return -1;
  return 0;
}

static void bad(int me, const char *fmt, ...) {
  va_list ap;
  if (sh->bad[me]++) return;
  va_start(ap, fmt);
  vsnprintf(sh->why[me], sizeof sh->why[me], fmt, ap);
  va_end(ap);
}

static void copy_err(char *dst, size_t n, const char *src) { snprintf(dst, n, "%s", src ? src : "(NULL)"); }

/* ---------------------------------------------------------------- any.order */

static int receive_all(cc_comm *c, size_t len, int per, int tag, const char *what) {
  int me = cc_comm_rank(c), n = cc_comm_size(c), i, src, from, k, next[MAXR];
  uint32_t *b = (uint32_t *)malloc(len * 4);
  memset(next, 0, sizeof next);
  for (i = 0; i < per * (n - 1); i++) {
    memset(b, 0, len * 4);
    if (cc_recv_any(c, b, len, CC_UINT32, tag, &src) != CC_OK) {
      bad(me, "%s: receive %d: %s", what, i, cc_comm_last_error(c));
      break;
    }
    if (check(b, len, &from, &k) != 0 || from != src || src < 1 || src >= n) {
      bad(me, "%s: receive %d: source %d, payload from %d number %d (damaged or not from the source)", what, i, src,
          from, k);
      break;
    }
    if (k != next[src]) {
      bad(me, "%s: receive %d: message %d of rank %d came when %d was due (order of one sender)", what, i, k, src,
          next[src]);
      break;
    }
    next[src]++;
  }
  for (i = 1; i < n && !sh->bad[me]; i++)
    if (next[i] != per) bad(me, "%s: %d messages from rank %d, not %d", what, next[i], i, per);
  free(b);
  return 0;
}

static int order_main(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), k;
  uint32_t small[8], *big = (uint32_t *)malloc(LARGE * 4);
  (void)arg;
  if (me == 0) {
    receive_all(c, 8, NSMALL, 5, "small");
    if (!sh->bad[0]) receive_all(c, LARGE, NLARGE, 15, "large");
  } else {
    for (k = 0; k < NSMALL; k++) {
      fill(small, 8, me, k);
      if (cc_send(c, small, 8, CC_UINT32, 0, 5) != CC_OK) bad(me, "send: %s", cc_comm_last_error(c));
    }
    for (k = 0; k < NLARGE; k++) {
      fill(big, LARGE, me, k);
      if (cc_send(c, big, LARGE, CC_UINT32, 0, 15) != CC_OK) bad(me, "send large: %s", cc_comm_last_error(c));
    }
  }
  free(big);
  if (cc_barrier(c) != CC_OK) bad(me, "barrier: %s", cc_comm_last_error(c));
  return 0;
}

/* ---------------------------------------------------------------- any.fair */

static void await_count(int *p, int want) {
  while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < want) tu_sleep_us(1000);
}

static int fair_main(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), n = cc_comm_size(c), k, src, from, i, total = (n - 2) * NFLOOD + 1;
  uint32_t b[4];
  (void)arg;
  /* in this order, told through this process's memory, not through rank 0
     (whose calls would take in the messages): the flood, the last rank's
     message, then rank 0's receives */
  if (me > 0 && me < n - 1) {
    for (k = 0; k < NFLOOD; k++) {
      fill(b, 4, me, k);
      if (cc_send(c, b, 4, CC_UINT32, 0, 3) != CC_OK) bad(me, "send: %s", cc_comm_last_error(c));
    }
    __atomic_add_fetch(&sh->flooded, 1, __ATOMIC_RELEASE);
  }
  if (me == n - 1) {
    await_count(&sh->flooded, n - 2);
    fill(b, 4, me, 0);
    if (cc_send(c, b, 4, CC_UINT32, 0, 3) != CC_OK) bad(me, "send: %s", cc_comm_last_error(c));
    __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
  }
  if (me == 0) {
    await_count(&sh->go, 1);
    for (i = 0; i < total; i++) {
      if (cc_recv_any(c, b, 4, CC_UINT32, 3, &src) != CC_OK) {
        bad(me, "receive %d: %s", i, cc_comm_last_error(c));
        break;
      }
      if (check(b, 4, &from, &k) != 0 || from != src) {
        bad(me, "receive %d: source %d, payload from %d", i, src, from);
        break;
      }
      sh->order[i] = src;
    }
  }
  if (cc_barrier(c) != CC_OK) bad(me, "barrier: %s", cc_comm_last_error(c));
  return 0;
}

/* ---------------------------------------------------------------- any.group */

static int group_main(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), n = cc_comm_size(c), i, round, from, k;
  uint32_t out[6], in[MAXR][6];
  (void)arg;
  for (round = 0; round < 2; round++) {
    fill(out, 6, me, round);
    if (me != 0 && cc_send(c, out, 6, CC_UINT32, 0, 11) != CC_OK) bad(me, "send: %s", cc_comm_last_error(c));
    if (me == 0) {
      cc_request *req = NULL;
      cc_result r;
      cc_group_begin(c);
      cc_send(c, out, 6, CC_UINT32, 0, 11);   /* to itself */
      for (i = 0; i < n; i++) cc_recv_any(c, in[i], 6, CC_UINT32, 11, &sh->src[round][i]);
      if (round == 0) {
        r = cc_group_end(c, &req);
        if (r == CC_OK) r = cc_wait(req);
      } else {
        r = cc_group_end(c, NULL);
      }
      if (r != CC_OK) bad(me, "group %d: %s", round, cc_comm_last_error(c));
      for (i = 0; i < n && r == CC_OK; i++)
        if (check(in[i], 6, &from, &k) != 0 || from != sh->src[round][i] || k != round)
          bad(me, "group %d: receive %d: source %d, payload from %d number %d", round, i, sh->src[round][i], from, k);
    }
    if (cc_barrier(c) != CC_OK) bad(me, "barrier: %s", cc_comm_last_error(c));
  }
  return 0;
}

/* ---------------------------------------------------------------- any.posted, any.plain, any.args */

static int posted_main(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), from, k, src = -7;
  uint32_t a[4], b[4];
  cc_result r;
  (void)arg;
  if (me == 1) {
    fill(a, 4, 1, 0);
    fill(b, 4, 1, 1);
    if (cc_send(c, a, 4, CC_UINT32, 0, 2) != CC_OK || cc_send(c, b, 4, CC_UINT32, 0, 2) != CC_OK)
      bad(me, "send: %s", cc_comm_last_error(c));
  }
  if (me == 0) {
    cc_group_begin(c);
    cc_recv_any(c, a, 4, CC_UINT32, 2, &src);
    cc_recv(c, b, 4, CC_UINT32, 1, 2);
    if (cc_group_end(c, NULL) != CC_OK) bad(me, "posted: %s", cc_comm_last_error(c));
    else if (check(a, 4, &from, &k) || from != 1 || k != 0 || src != 1)
      bad(me, "posted: the receive from any source (posted first) got message %d of rank %d, source %d", k, from, src);
    else if (check(b, 4, &from, &k) || from != 1 || k != 1)
      bad(me, "posted: the cc_recv from rank 1 got message %d of rank %d", k, from);
  }
  if (cc_barrier(c) != CC_OK) bad(me, "barrier: %s", cc_comm_last_error(c));
  /* plain: cc_recv with CC_ANY_SOURCE, from the last rank */
  if (me == cc_comm_size(c) - 1) {
    fill(a, 4, me, 7);
    if (cc_send(c, a, 4, CC_UINT32, 0, 4) != CC_OK) bad(me, "plain send: %s", cc_comm_last_error(c));
  }
  if (me == 0) {
    memset(b, 0, sizeof b);
    r = cc_recv(c, b, 4, CC_UINT32, CC_ANY_SOURCE, 4);
    if (r != CC_OK) bad(me, "plain: %s", cc_comm_last_error(c));
    else if (check(b, 4, &from, &k) || from != cc_comm_size(c) - 1 || k != 7)
      bad(me, "plain: got message %d of rank %d", k, from);
  }
  /* args: refused on the calling rank, and nothing else happens */
  if (me == 0) {
    src = 5;
    r = cc_recv_any(c, a, 4, CC_UINT32, -1, &src);
    sh->code[0] = r;
    sh->src[0][0] = src;
    copy_err(sh->err[0], sizeof sh->err[0], cc_comm_last_error(c));
    src = 5;
    r = cc_recv_any(c, NULL, 4, CC_UINT32, 1, &src);
    sh->code[1] = r;
    sh->src[0][1] = src;
    copy_err(sh->err[1], sizeof sh->err[1], cc_comm_last_error(c));
    r = cc_recv(c, a, 4, CC_UINT32, -5, 1);
    sh->code[2] = r;
    copy_err(sh->err[2], sizeof sh->err[2], cc_comm_last_error(c));
  }
  a[0] = 1;
  r = cc_all_reduce(c, a, a, 1, CC_UINT32, CC_SUM);
  if (r != CC_OK || a[0] != (uint32_t)cc_comm_size(c)) bad(me, "all_reduce after the refused calls: %s", cc_comm_last_error(c));
  return 0;
}

/* ---------------------------------------------------------------- any.mismatch, any.timeout */

static int mismatch_main(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), src = -7;
  uint32_t b[5] = {1, 2, 3, 4, 5};
  (void)arg;
  if (me == 1) {
    sh->code[me] = cc_send(c, b, 5, CC_UINT32, 0, 6);
    copy_err(sh->err[me], sizeof sh->err[me], cc_comm_last_error(c));
  } else if (me == 0) {
    sh->code[me] = cc_recv_any(c, b, 4, CC_UINT32, 6, &src);
    sh->src[0][0] = src;
    copy_err(sh->err[me], sizeof sh->err[me], cc_comm_last_error(c));
  }
  sh->code2[me] = cc_barrier(c);
  copy_err(sh->err2[me], sizeof sh->err2[me], cc_comm_last_error(c));
  return 0;
}

static int timeout_main(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), src = -7;
  uint32_t b[4];
  double t0 = tu_now();
  (void)arg;
  if (me == 0) {
    sh->code[me] = cc_recv_any(c, b, 4, CC_UINT32, 9, &src);
    sh->src[0][0] = src;
  } else {                             /* not waiting meanwhile: their own timeout would come first */
    tu_sleep_us(3000000);
    sh->code[me] = cc_barrier(c);
  }
  sh->secs[me] = tu_now() - t0;
  copy_err(sh->err[me], sizeof sh->err[me], cc_comm_last_error(c));
  return 0;
}

/* ---------------------------------------------------------------- any.lost: ranks as ccrun starts them */

typedef void (*body_fn)(cc_comm *c, int me);

static void sleep_until(double t) {
  double d = t - tu_now();
  if (d > 0) tu_sleep_us((long)(d * 1e6));
}

static void lost2_body(cc_comm *c, int me) {
  uint32_t b[4];
  int src = -7;
  double t0;
  if (cc_barrier(c) != CC_OK) bad(me, "barrier: %s", cc_comm_last_error(c));
  t0 = tu_now();
  if (me == 1) {
    tu_sleep_us(300000);
    raise(SIGKILL);
  }
  sh->code[me] = cc_recv_any(c, b, 4, CC_UINT32, 1, &src);
  sh->secs[me] = tu_now() - t0 - 0.3;
  sh->src[0][0] = src;
  copy_err(sh->err[me], sizeof sh->err[me], cc_comm_last_error(c));
}

static void lost3_body(cc_comm *c, int me) {
  uint32_t b[4];
  int src = -7, from, k;
  double t0;
  if (cc_barrier(c) != CC_OK) bad(me, "barrier: %s", cc_comm_last_error(c));
  t0 = tu_now();
  if (me == 1) {
    tu_sleep_us(200000);
    raise(SIGKILL);
  }
  if (me == 2) {                       /* after rank 1's death (and rank 0 has noticed it: 100 ms) */
    sleep_until(t0 + 0.8);
    fill(b, 4, 2, 0);
    sh->code[me] = cc_send(c, b, 4, CC_UINT32, 0, 1);
    copy_err(sh->err[me], sizeof sh->err[me], cc_comm_last_error(c));
    return;                            /* and leaves: cc_comm_destroy, exit */
  }
  sh->code[me] = cc_recv_any(c, b, 4, CC_UINT32, 1, &src);
  sh->src[0][0] = src;
  copy_err(sh->err[me], sizeof sh->err[me], cc_comm_last_error(c));
  if (sh->code[me] == CC_OK && (check(b, 4, &from, &k) || from != 2)) bad(me, "the message came from %d", from);
  t0 = tu_now();
  sh->code2[me] = cc_recv_any(c, b, 4, CC_UINT32, 1, &src);
  sh->secs[me] = tu_now() - t0;
  sh->src[0][1] = src;
  copy_err(sh->err2[me], sizeof sh->err2[me], cc_comm_last_error(c));
}

/* n ranks, forked; each runs body with a communicator; returns when all have
   ended (SIGKILL after 40 s). */
static void launch(int n, body_fn body) {
  pid_t pid[MAXR];
  char v[64], id[33];
  int r, st;
  unsigned seed = (unsigned)getpid() ^ (unsigned)(tu_now() * 1e6);
  double end;
  for (r = 0; r < 32; r++) {
    seed = seed * 1103515245u + 12345u;
    id[r] = "0123456789abcdef"[(seed >> 16) & 15];
  }
  id[32] = 0;
  fflush(stdout);
  fflush(stderr);
  for (r = 0; r < n; r++) {
    pid[r] = fork();
    if (pid[r] == 0) {
      cc_comm *c = NULL;
      snprintf(v, sizeof v, "%d", r);
      setenv("RANK", v, 1);
      setenv("LOCAL_RANK", v, 1);
      snprintf(v, sizeof v, "%d", n);
      setenv("WORLD_SIZE", v, 1);
      setenv("LOCAL_WORLD_SIZE", v, 1);
      setenv("CC_JOB_ID", id, 1);
      setenv("CC_TIMEOUT", "30", 1);
      if (cc_comm_init(&c, NULL) != CC_OK) {
        bad(r, "cc_comm_init: %s", cc_comm_last_error(NULL));
        _exit(3);
      }
      body(c, r);
      cc_comm_destroy(c);
      _exit(0);
    }
  }
  end = tu_now() + 40;
  for (r = 0; r < n; r++) {
    while (waitpid(pid[r], &st, WNOHANG) == 0) {
      if (tu_now() > end) {
        kill(pid[r], SIGKILL);
        bad(r, "still ran after 40 s (killed)");
      }
      tu_sleep_us(10000);
    }
  }
}

/* ---------------------------------------------------------------- judging */

static void reset(void) { memset(sh, 0, sizeof *sh); }

static int clean(int n, char *why, size_t len) {
  int r;
  for (r = 0; r < n; r++)
    if (sh->bad[r]) {
      snprintf(why, len, "rank %d: %s", r, sh->why[r]);
      return 0;
    }
  return 1;
}

static const char *name_of(int code) {
  static char b[4][48];
  static int i;
  char *p = b[i++ % 4];
  const char *s = cc_strerror((cc_result)code);
  snprintf(p, sizeof b[0], "%.*s", (int)strcspn(s, ":"), s);
  return p;
}

/* msg names rank r: "rank R" not followed by another digit */
static int names_rank(const char *msg, int r) {
  char pat[32];
  int n = snprintf(pat, sizeof pat, "rank %d", r);
  const char *p = msg;
  while ((p = strstr(p, pat)) != NULL) {
    if (p[n] < '0' || p[n] > '9') return 1;
    p += n;
  }
  return 0;
}

static void run_world(int n) {
  char name[64], why[400];
  int rc, i, pos, ok;
  if (n >= 2) {
    reset();
    snprintf(name, sizeof name, "any.order.%d", n);
    rc = tu_spawn(n, order_main, NULL);
    ok = rc == 0 && clean(n, why, sizeof why);
    if (ok) tu_pass(name, "%d small and %d large messages per sender, sources and order right", NSMALL, NLARGE);
    else tu_fail(name, "%s", rc ? "cc_spawn failed" : why);
  }
  if (n >= 3) {
    reset();
    snprintf(name, sizeof name, "any.fair.%d", n);
    rc = tu_spawn(n, fair_main, NULL);
    ok = rc == 0 && clean(n, why, sizeof why);
    for (pos = -1, i = 0; ok && i < (n - 2) * NFLOOD + 1; i++)
      if (sh->order[i] == n - 1) { pos = i; break; }
    if (ok && pos >= 0 && pos < 2 * (n - 1))
      tu_pass(name, "the last rank's message was receive %d of %d, behind %d queued from the others", pos + 1,
              (n - 2) * NFLOOD + 1, (n - 2) * NFLOOD);
    else if (ok)
      tu_fail(name, "the last rank's message was receive %d of %d: passed over (the first 8 sources: %d %d %d %d %d %d %d %d)",
              pos + 1, (n - 2) * NFLOOD + 1, sh->order[0], sh->order[1], sh->order[2], sh->order[3], sh->order[4],
              sh->order[5], sh->order[6], sh->order[7]);
    else
      tu_fail(name, "%s", rc ? "cc_spawn failed" : why);
  }
  reset();
  snprintf(name, sizeof name, "any.group.%d", n);
  rc = tu_spawn(n, group_main, NULL);
  ok = rc == 0 && clean(n, why, sizeof why);
  if (ok) {
    int seen[2][MAXR], round;
    memset(seen, 0, sizeof seen);
    for (round = 0; round < 2; round++)
      for (i = 0; i < n; i++)
        if (sh->src[round][i] >= 0 && sh->src[round][i] < n) seen[round][sh->src[round][i]]++;
    for (round = 0; round < 2; round++)
      for (i = 0; i < n; i++)
        if (seen[round][i] != 1) ok = 0;
  }
  if (ok) tu_pass(name, "sources after cc_wait and after cc_group_end(c, NULL): every rank once, itself too");
  else tu_fail(name, "%s", rc ? "cc_spawn failed" : sh->why[0][0] ? why : "the sources are not every rank once");
  if (n >= 2) {
    reset();
    snprintf(name, sizeof name, "any.posted.%d", n);
    rc = tu_spawn(n, posted_main, NULL);
    ok = rc == 0 && clean(n, why, sizeof why);
    if (!ok) {
      tu_fail(name, "%s", rc ? "cc_spawn failed" : why);
    } else {
      tu_pass(name, "posting order; cc_recv(CC_ANY_SOURCE) (any.plain) receives");
      snprintf(name, sizeof name, "any.args.%d", n);
      ok = sh->code[0] == CC_ERR_INVALID_ARG && strstr(sh->err[0], "tag -1") && sh->src[0][0] == CC_UNDEFINED &&
           sh->code[1] == CC_ERR_INVALID_ARG && strstr(sh->err[1], "NULL") && sh->src[0][1] == CC_UNDEFINED &&
           sh->code[2] == CC_ERR_INVALID_ARG && strstr(sh->err[2], "-5");
      if (ok) tu_pass(name, "\"%s\"; \"%s\"; \"%s\"; then an all_reduce works", sh->err[0], sh->err[1], sh->err[2]);
      else tu_fail(name, "%s (%s, source %d); %s (%s, source %d); %s (%s)", name_of(sh->code[0]), sh->err[0],
                   sh->src[0][0], name_of(sh->code[1]), sh->err[1], sh->src[0][1], name_of(sh->code[2]), sh->err[2]);
    }
  }
}

int main(void) {
  int n, quick = tu_quick();
  char why[400];
  sh = (struct rep *)tu_shared_alloc(sizeof *sh);
  if (!sh) {
    tu_fail("any", "no shared memory");
    return 1;
  }
  tu_default_timeout("60");
  for (n = 1; n <= 4; n++) run_world(n);

  /* any.mismatch */
  reset();
  tu_spawn(2, mismatch_main, NULL);
  if (sh->code[0] == CC_ERR_MISMATCH && names_rank(sh->err[0], 1) && strstr(sh->err[0], "tag 6") &&
      sh->src[0][0] == CC_UNDEFINED && sh->code2[1] != CC_OK)
    tu_pass("any.mismatch", "rank 0: \"%s\"; rank 1's barrier: %s", sh->err[0], name_of(sh->code2[1]));
  else
    tu_fail("any.mismatch", "rank 0: %s \"%s\" (source %d); rank 1: send %s, barrier %s \"%s\"", name_of(sh->code[0]),
            sh->err[0], sh->src[0][0], name_of(sh->code[1]), name_of(sh->code2[1]), sh->err2[1]);

  /* any.timeout */
  reset();
  setenv("CC_TIMEOUT", "1", 1);
  tu_spawn(quick ? 2 : 3, timeout_main, NULL);
  setenv("CC_TIMEOUT", "60", 1);
  if (sh->code[0] == CC_ERR_TIMEOUT && strstr(sh->err[0], "tag 9 from any rank") && sh->secs[0] > 0.9 &&
      sh->secs[0] < 20 && sh->code[1] != CC_OK && sh->src[0][0] == CC_UNDEFINED)
    tu_pass("any.timeout", "after %.1f s: \"%s\"; rank 1: %s", sh->secs[0], sh->err[0], name_of(sh->code[1]));
  else
    tu_fail("any.timeout", "rank 0 after %.1f s: %s \"%s\" (source %d); rank 1: %s \"%s\"", sh->secs[0],
            name_of(sh->code[0]), sh->err[0], sh->src[0][0], name_of(sh->code[1]), sh->err[1]);

  /* any.lost2 */
  reset();
  launch(2, lost2_body);
  if (clean(1, why, sizeof why) && sh->code[0] == CC_ERR_PEER_LOST && names_rank(sh->err[0], 1) && sh->secs[0] < 10)
    tu_pass("any.lost2", "%.2f s after the kill: \"%s\"", sh->secs[0], sh->err[0]);
  else
    tu_fail("any.lost2", "%s after %.2f s: \"%s\"%s%s", name_of(sh->code[0]), sh->secs[0], sh->err[0],
            sh->bad[0] ? "; " : "", sh->bad[0] ? sh->why[0] : "");

  /* any.lost3 */
  reset();
  launch(3, lost3_body);
  if (clean(1, why, sizeof why) && sh->code[0] == CC_OK && sh->src[0][0] == 2 && sh->code[2] == CC_OK &&
      sh->code2[0] == CC_ERR_PEER_LOST && names_rank(sh->err2[0], 1) && names_rank(sh->err2[0], 2) &&
      sh->src[0][1] == CC_UNDEFINED && sh->secs[0] < 10)
    tu_pass("any.lost3", "rank 2's message received after rank 1 died; once rank 2 left too, after %.2f s: \"%s\"",
            sh->secs[0], sh->err2[0]);
  else
    tu_fail("any.lost3", "first receive %s (source %d) \"%s\"; rank 2's send %s \"%s\"; second receive %s after %.2f s "
            "(source %d) \"%s\"%s%s", name_of(sh->code[0]), sh->src[0][0], sh->err[0], name_of(sh->code[2]), sh->err[2],
            name_of(sh->code2[0]), sh->secs[0], sh->src[0][1], sh->err2[0], sh->bad[0] ? "; " : "",
            sh->bad[0] ? sh->why[0] : "");
  return tu_exit_code();
}
