/* test_fence.c - the two fences of the shared-memory wait (docs/shm.md, "the
   asymmetric fence"). A rank that sleeps adds itself to the segment's
   sleepers and checks again; a rank that publishes stores, then reads the
   sleepers. Where every rank of the segment registered for Linux's
   membarrier (and ranks do not outnumber CPUs) the publisher stores with a
   plain release and the sleeper runs the fence for both; elsewhere both fence.
   Each case runs rounds in which a rank that another one waits for comes
   late, once that one went to sleep on the bell (it waits until it sees a
   sleeper), so that the round publishes to a sleeper: small broadcasts,
   gathers and scatters (the queued calls, whose roots run ahead),
   all_reduces and barriers, every element checked. The cases:
     registered  2 ranks on 2 CPUs: the asymmetric fence, on every rank alike
     mixed       a communicator split after rank 1 lost membarrier (a seccomp
                 filter): rank 0 registered, rank 1 could not; both fence
     refused     the first communicator again, membarrier now failing on rank
                 1 after it registered: its sleeps are short naps, data right
     oversub     one rank more than CPUs: both fence
   On TCP (tests/transport/test_tcp_suites.sh) there is no segment: the
   rounds run and are checked, the fences are not looked at. */
#define _GNU_SOURCE
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"

#include "forbid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#define ROUNDS 2000
#define COUNT 2                          /* int32 elements a rank: 8 bytes, as the small calls measured */

struct outcome {
  int asym[2];                           /* c->shm->seg.asym on ranks 0 and 1, -1: not shared memory */
  int asleep;                            /* rounds whose late rank saw a peer asleep (atomic) */
  int filtered;                          /* rank 1's filter is in place */
  char err[512];
};
static struct outcome *out;

/* membarrier fails with ENOSYS from now on in every thread of this process. */
static int forbid_membarrier(void) {
#ifdef SYS_membarrier
  return tu_forbid_syscall(SYS_membarrier);
#else
  errno = ENOSYS;
  return -1;
#endif
}

/* Whether this kernel offers the global expedited membarrier (asked here,
   not through cc.h). */
static int have_membarrier(void) {
#ifdef SYS_membarrier
  long q = syscall(SYS_membarrier, 0, 0, 0);   /* MEMBARRIER_CMD_QUERY */
  return q > 0 && (q & 2);                     /* MEMBARRIER_CMD_GLOBAL_EXPEDITED */
#else
  return 0;
#endif
}

static int32_t value(int round, int part, size_t i) {
  return (int32_t)((uint32_t)round * 2654435761u ^ (uint32_t)part * 40503u ^ (uint32_t)i * 2246822519u);
}

static int shm_world(const cc_comm *c) {
  return c->shm && c->shm->hdr && !c->net;
}

/* The late rank's wait: until some peer sleeps on the bell (at most 50 ms). */
static int await_sleeper(const cc_comm *c) {
  double t0 = tu_now();
  if (!shm_world(c)) {
    tu_sleep_us(1000);
    return 0;
  }
  while (tu_now() - t0 < 0.05) {
    if (__atomic_load_n(&c->shm->hdr->sleepers, __ATOMIC_ACQUIRE) > 0) return 1;
    tu_sleep_us(20);
  }
  return 0;
}

static int say(cc_comm *c, const char *fmt, int round, size_t i, long got, long want) {
  char msg[200];
  snprintf(msg, sizeof msg, fmt, round, i, got, want);
  snprintf(out->err, sizeof out->err, "rank %d: %s", cc_comm_rank(c), msg);
  return 1;
}

/* ROUNDS rounds; in each, a rank that another waits for comes late: a
   broadcast's or scatter's root, a rank that a gather's root waits for, any
   rank of an all_reduce or barrier. */
static int rounds(cc_comm *c) {
  int me = cc_comm_rank(c), n = cc_comm_size(c), r, j;
  int32_t s[COUNT * 8], v[COUNT * 8];
  size_t i;
  for (r = 0; r < ROUNDS; r++) {
    int kind = r % 5, root = (r / 5) % n, late = kind == 0 || kind == 2 ? root : kind == 1 ? (root + 1) % n : r % n;
    cc_result rc;
    if (me == late && await_sleeper(c)) __atomic_add_fetch(&out->asleep, 1, __ATOMIC_RELAXED);
    memset(v, 0x5a, sizeof v);
    if (kind == 0) {
      if (me == root) for (i = 0; i < COUNT; i++) v[i] = value(r, 0, i);
      rc = cc_broadcast(c, v, COUNT, CC_INT32, root);
    } else if (kind == 1) {
      for (i = 0; i < COUNT; i++) s[i] = value(r, me, i);
      rc = cc_gather(c, s, v, COUNT, CC_INT32, root);
    } else if (kind == 2) {
      if (me == root) for (j = 0; j < n; j++) for (i = 0; i < COUNT; i++) s[(size_t)j * COUNT + i] = value(r, j, i);
      rc = cc_scatter(c, s, v, COUNT, CC_INT32, root);
    } else if (kind == 3) {
      for (i = 0; i < COUNT; i++) s[i] = value(r, me, i) & 0xffff;
      rc = cc_all_reduce(c, s, v, COUNT, CC_INT32, CC_SUM);
    } else {
      rc = cc_barrier(c);
    }
    if (rc != CC_OK) {
      snprintf(out->err, sizeof out->err, "rank %d: round %d: %s", me, r, cc_comm_last_error(c));
      return 1;
    }
    for (i = 0; i < COUNT; i++) {
      long want;
      if (kind == 0) want = value(r, 0, i);
      else if (kind == 2) want = value(r, me, i);
      else if (kind == 3) for (want = 0, j = 0; j < n; j++) want += value(r, j, i) & 0xffff;
      else continue;
      if (v[i] != want) return say(c, "round %d: element %zu is %ld, expected %ld", r, i, v[i], want);
    }
    if (kind == 1 && me == root)
      for (i = 0; i < COUNT * (size_t)n; i++)
        if (v[i] != value(r, (int)(i / COUNT), i % COUNT))
          return say(c, "round %d: gathered element %zu is %ld, expected %ld", r, i, v[i],
                     value(r, (int)(i / COUNT), i % COUNT));
  }
  return 0;
}

static void note_asym(const cc_comm *c) {
  int me = cc_comm_rank(c);
  if (me < 2) out->asym[me] = shm_world(c) ? c->shm->seg.asym : -1;
}

static int registered(cc_comm *c, void *arg) {
  (void)arg;
  note_asym(c);
  return rounds(c);
}

/* Rank 1 loses membarrier; a split builds a new segment (mixed), then the
   first communicator runs again (refused). */
static int mixed(cc_comm *c, void *arg) {
  cc_comm *d = NULL;
  int which = *(const int *)arg, rc;
  if (cc_comm_rank(c) == 1) {
    if (forbid_membarrier() != 0) {
      snprintf(out->err, sizeof out->err, "rank 1: cannot install the seccomp filter: %s", strerror(errno));
      return 2;
    }
    out->filtered = 1;
  }
  if (cc_barrier(c) != CC_OK) return 1;
  if (which == 1) {
    note_asym(c);
    return rounds(c);
  }
  if (cc_comm_split(c, 0, cc_comm_rank(c), &d) != CC_OK) {
    snprintf(out->err, sizeof out->err, "rank %d: split: %s", cc_comm_rank(c), cc_comm_last_error(c));
    return 1;
  }
  note_asym(d);
  rc = rounds(d);
  cc_comm_destroy(d);
  return rc;
}

static void reset(void) {
  memset(out, 0, sizeof *out);
  out->asym[0] = out->asym[1] = -2;
}

/* What the ranks' asym flags should be: want, or -1 (not shared memory). */
static int flags_are(int want) {
  if (out->asym[0] == -1 && out->asym[1] == -1) return 1;
  return out->asym[0] == want && out->asym[1] == want;
}

static void check(const char *name, int rc, int want, const char *fence, double t0) {
  int shm = !(out->asym[0] == -1 && out->asym[1] == -1);
  if (rc != 0) {
    tu_fail(name, "%s", out->err[0] ? out->err : cc_comm_last_error(NULL));
  } else if (!flags_are(want)) {
    tu_fail(name, "ranks 0 and 1 took the %s fence %d and %d, wanted %d on both", "asymmetric", out->asym[0],
            out->asym[1], want);
  } else if (shm && out->asleep == 0) {
    tu_fail(name, "in no round did the late rank see a peer asleep: the sleep path was not run");
  } else if (shm) {
    tu_pass(name, "%s; %d rounds of 8-byte broadcast, gather, scatter, all_reduce, barrier, each with one rank "
            "late (it saw a peer asleep in %d): every element right (%.2f s)", fence, ROUNDS, out->asleep,
            tu_now() - t0);
  } else {
    tu_pass(name, "no segment (TCP): %d rounds with one rank late, every element right (%.2f s)", ROUNDS,
            tu_now() - t0);
  }
}

int main(void) {
  int two = cc__ncpus() >= 2, mb = have_membarrier(), which, rc;
  double t0;
  tu_default_timeout("30");
  out = (struct outcome *)tu_shared_alloc(sizeof *out);
  if (!out) {
    tu_fail("fence", "no shared memory for the outcomes");
    return 1;
  }
  if (!two) {
    tu_skip("fence.registered", "one CPU: ranks outnumber CPUs, no asymmetric fence to test");
  } else {
    reset();
    t0 = tu_now();
    rc = tu_spawn(2, registered, NULL);
    check("fence.registered", rc, mb, mb ? "both ranks registered: the asymmetric fence"
                                         : "no global expedited membarrier here: both ranks fence", t0);
  }
  for (which = 0; which < 2; which++) {
    const char *name = which == 0 ? "fence.mixed" : "fence.refused";
    reset();
    t0 = tu_now();
    rc = tu_spawn(2, mixed, &which);
    if (!out->filtered) {
      tu_skip(name, "%s", out->err[0] ? out->err : "the seccomp filter was not installed");
      continue;
    }
    if (which == 0)
      check(name, rc, 0, "rank 0 registered, rank 1 could not: both fence", t0);
    else
      check(name, rc, two && mb, "both registered, then membarrier failed on rank 1: it naps instead", t0);
  }
  reset();
  t0 = tu_now();
  rc = tu_spawn(cc__ncpus() + 1, registered, NULL);
  check("fence.oversub", rc, 0, "ranks outnumber CPUs: both fence", t0);
  return tu_exit_code();
}
