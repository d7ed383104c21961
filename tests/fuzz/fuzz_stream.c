/* tests/fuzz/fuzz_stream.c - libFuzzer target: the message engine's receive
   path on a TCP link (cc__rx_pull with cc__rx_begin/cc__rx_end, the
   unexpected queue, failure reports, the checks of a collective's frames
   against the run's call, a stream cut short) under the engine's loop, fed
   the fuzzer's bytes as what rank 1 sent.

   Rank 0 of a two-rank communicator built by hand as cc__mesh_build leaves it
   for CC_TRANSPORT=tcp (peers[1] a CC__LINK_TCP link on one end of a
   socketpair with its stage, peers[0] CC__LINK_SELF, c->net with two groups,
   c->hdr the net's own failure word, c->seq and c->cur the collective
   running) runs one set of messages; the input goes into the other end.
   Input: a mode byte, a setup byte, then the stream.
     mode & 0x80   whole: the stream is written at once and its end (shutdown)
                   follows, then cc__engine_run itself runs the messages (with
                   every byte and the end already there, nothing it does
                   depends on timing: a wait can only be a bug, and ends in
                   CC_ERR_TIMEOUT after 2 s, which the model never predicts).
                   Should the socket not take it all, the pieces' loop below
                   runs instead, with the pieces the socket took.
                   Else pieces of pseudo-random sizes (1..24 bytes, or with
                   mode & 0x20 1..4096, and so after the first 512 pieces;
                   mode & 0x1f seeds them), and after each the turns of
                   cc__engine_run's loop (fz_step: cc__start, cc__run_send,
                   cc__run_recv, cc__start, cc__run_check, as it calls them) until one
                   makes no progress, so frames split anywhere; then the end
                   of the stream, and the turns again.
     mode & 0x40   dynamic: messages become live as receives complete (a
                   callback, as the pipelined collectives do), else a fixed
                   set of live messages.
     setup & 1     the run's call is gather_v (counts are not compared), else
                   all_reduce;
     setup & 2     a send to rank 1 that the socket cannot take is live, and
                   first: the run never completes, no other send to rank 1
                   goes out, and no failure report follows its part of a frame;
     setup & 4     the call's entry comes first (cc__ready's cc__engine_poll
                   and failure check) and reads what arrived first: the whole
                   stream, or the first piece, with no receive started.
   Longer streams (an unexpected message of 2.5 MiB, whose buffer grows as
   its bytes arrive) run once at start (LLVMFuzzerInitialize).

   Checks, besides ASan/UBSan/LeakSanitizer, against a model of the protocol
   written here (model_run; the same for both sets and every way of feeding):
   - the result; the failure word (c->hdr: code and rank of the first failure
     posted); c->failed; the failure report sent back to rank 1 (code, rank,
     message), then the link shut. Failures: a malformed header (CC_ERR_SYSTEM,
     rank 1); a failure report (posted with its code and rank; it ends the run
     only if the run's messages are not all done when the reader runs out of
     bytes; a malformed one CC_ERR_SYSTEM, rank 1); a collective's frame of
     another call number or identity, or a frame whose size differs from its
     receive's (CC_ERR_MISMATCH, rank 0); a stream that ends in a header, in a
     payload a receive waits for, or while the run still needs rank 1
     (CC_ERR_PEER_LOST, rank 1), or in a payload nobody waits for (posted);
   - each message's state (live, started, done, matched, bytes moved) and each
     receive's buffer, also as it was when its callback came;
   - the callbacks: exactly one per completed receive, in the model's order;
   - what stayed queued (tag, size, call, data), in order, and in rank 0's own
     queue; how far into the stream the run read (every byte that arrives is
     read, up to where the run ended or a frame is parked), what its stage holds ahead (the
     stream's next bytes) and where the reader stands (between frames, in a
     header, in a payload: the bytes so far, in the receive or the queued
     message it fills, or nowhere while the frame is parked);
   - what rank 0 sent to rank 1: the sends' frames in order (a collective's
     header carrying the run's number and call), then after a failure the
     failure report.
   The model: frames are read in order, as they arrive; each goes to the
   oldest started receive from rank 1 that waits for its tag (which first
   takes an older queued message of the tag, if any) and must agree with it
   (size; a collective's number and call), else it is queued and given to the
   first started receive of its tag that waits; but a frame with a payload
   that no receive takes, read while the run wants nothing from rank 1 (no
   receive from it waits, no send waits) and before the reader saw the
   stream's end, is parked: its payload stays in the socket, the reader stops
   there as for want of bytes, and goes on (the frame matched again) once the
   run wants rank 1's frames, or once it sees the stream's end (when all the
   rest has arrived); a receive, once started, takes the oldest queued
   message of its tag; callbacks may make messages live,
   which start when the reader runs out of bytes, where the run also ends
   once all its messages are done (the messages made live by the last
   completions start before the end is judged). */
#include "fuzz_util.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define N 13
#define SEQ 7                          /* the number of the run's collective */
#define BLOCKED ((size_t)1 << 20)      /* a send the socket cannot take */
#define MAXLEN ((size_t)1 << 17)       /* longest stream tried */
#define MAXQ (MAXLEN / FZ_FRAME + 2)   /* a stream of empty frames */
#define MAXB (MAXLEN + 2)              /* places where the reader ran out of bytes */
#define MAXORDER (4 * N)

typedef struct msgdef {
  int is_send, peer, tag;
  size_t bytes;
  int live;                            /* at the start (slot 0: with setup & 2) */
  int then;                            /* dynamic: the message made live when this receive completes, or -1 */
} msgdef;

/* The fixed set: two receives of tag 5 (taken in order), a collective's
   receive large enough to be read straight into its buffer, an empty one,
   sends, and receives that rank 1's frames must never reach. */
static const msgdef fixed_set[N] = {
  {1, 1, 6, BLOCKED, 0, -1},           /* the send that blocks (setup & 2) */
  {0, 1, 5, 8, 1, -1},
  {0, 1, CC__TAG_COLL, 5000, 1, -1},
  {0, 1, 5, 8, 1, -1},
  {0, 1, 9, 0, 1, -1},
  {1, 1, 5, 8, 1, -1},
  {0, 1, 7, 4, 0, -1},                 /* never live */
  {1, 0, 7, 4, 1, -1},                 /* a send to itself ... */
  {0, 0, 7, 4, 1, -1},                 /* ... and its receive: rank 1's tag 7 never lands here */
  {0, 1, 3, 100, 1, -1},
  {0, 1, 0, 4096, 1, -1},
  {1, 1, CC__TAG_COLL, 16, 1, -1},     /* its header carries the call */
  {0, 1, 12, 3, 0, -1},                /* never live */
};

/* The dynamic set: chains like the pipelined collectives'. A message made
   live comes after every live one of its tag (receives match in the order
   they were posted), and sends to rank 1 become live in index order. What
   arrives for a receive not yet started waits in the queue. */
static const msgdef dyn_set[N] = {
  {1, 1, 6, BLOCKED, 0, -1},
  {0, 1, 5, 8, 1, 3},                  /* tag 5: 1, then 3, then 4 */
  {0, 1, CC__TAG_COLL, 4096, 1, 5},
  {0, 1, 5, 8, 0, 4},
  {0, 1, 5, 8, 0, 10},
  {0, 1, CC__TAG_COLL, 4096, 0, 11},
  {0, 1, 9, 0, 1, 7},
  {0, 1, 9, 16, 0, 12},
  {1, 0, 11, 4, 1, -1},                /* to itself ... */
  {0, 0, 11, 4, 1, -1},                /* ... and back */
  {1, 1, 5, 8, 0, -1},                 /* live once 4 completes */
  {0, 1, 3, 100, 0, -1},               /* live once 5 completes */
  {1, 1, CC__TAG_COLL, 16, 0, -1},     /* live once 7 completes */
};

static unsigned char fz_pattern(int i, size_t k) {   /* byte k of send i's payload */
  return (unsigned char)(0x41 + 17 * i + 3 * k);
}

static int fz_is_v(int coll) {
  return coll == CC__GATHER_V || coll == CC__ALL_GATHER_V || coll == CC__SCATTER_V || coll == CC__ALL_TO_ALL_V;
}

/* ------------------------------------------------------------------ the model */

typedef struct mq {
  fz_frame f;
  const unsigned char *data;
} mq;

typedef struct model {
  const msgdef *d;
  int dynamic;
  int polling;                         /* the call's entry reads (nothing started) until the first stop */
  int eof;                             /* the reader saw the stream end */
  int ending;                          /* ... or that it will (poll() said rank 1 shut its side): no frame is parked */
  int parked;                          /* the frame being read is parked: its header read, its payload left */
  cc__ident id;                        /* the run's call */
  const unsigned char *s;
  size_t len;
  const size_t *bound;                 /* where the reader stopped for want of bytes */
  int nbound, bi;
  int live[N], started[N], done[N], matched[N];
  size_t moved[N];
  unsigned char *buf[N];               /* what each receive's buffer must hold (a send's: its payload) */
  mq *q1;                              /* rank 1's queue */
  int nq1;
  mq q0[N];                            /* its own */
  int nq0;
  int order[MAXORDER], norder;         /* the completions, in order */
  int sent[N], nsent;                  /* sends to rank 1 written whole, in order */
  int partial;                         /* then the blocked one, in part */
  cc_result result;
  int posted;                          /* the failure word: the first failure posted */
  cc_result pcode;
  int pwho;
  int propagated;                      /* the abort frame sent to rank 1 */
  cc_result xcode;
  int xwho, xtext;                     /* xtext: its message is the failure word's */
  size_t consumed;                     /* bytes of the stream the reader took */
  int stop;                            /* where it stands: 0 between frames, 1 in a header, 2 in a payload */
  size_t fpos, hend;                   /* the frame it stands in */
  int target;                          /* ... and the receive that frame fills, or -1 */
  fz_frame cur;
} model;

/* Post a failure to the failure word (the first one stays). */
static void m_post(model *M, cc_result code, int who) {
  if (M->posted) return;
  M->posted = 1;
  M->pcode = code;
  M->pwho = who;
}

/* Fail the communicator now: post, tell rank 1, end the run with code. -1. */
static int m_fail_all(model *M, cc_result code, int who) {
  int first = !M->posted;
  m_post(M, code, who);
  if (!M->propagated) {
    M->propagated = 1;
    M->xcode = code;
    M->xwho = who;
    M->xtext = first;
  }
  M->result = code;
  return -1;
}

/* End the run with the failure the word holds (passed on to rank 1). -1. */
static int m_take_fail(model *M) {
  if (!M->propagated) {
    M->propagated = 1;
    M->xcode = M->pcode;
    M->xwho = M->pwho;
    M->xtext = 1;
  }
  M->result = M->pcode;
  return -1;
}

static int m_alldone(const model *M) {
  int i;
  for (i = 0; i < N; i++)
    if (M->live[i] && !M->done[i]) return 0;
  return 1;
}

/* The run looks at where it stands: -1 when it ended (all done: CC_OK,
   however the word reads; else a failure posted ends it). */
static int m_check(model *M) {
  if (m_alldone(M)) {
    M->result = CC_OK;
    return -1;
  }
  return M->posted ? m_take_fail(M) : 0;
}

/* Does the run want rank 1's next frame (cc__rx_wanted)? While a receive
   from rank 1 waits, or a send of the run does. */
static int m_wanted(const model *M) {
  int i;
  for (i = 0; i < N; i++)
    if (M->live[i] && M->started[i] && !M->done[i] && (M->d[i].is_send || M->d[i].peer == 1)) return 1;
  return 0;
}

/* Does frame f agree with receive i? The run is a collective's: its frames
   carry its number and call. */
static int m_fits(const model *M, const fz_frame *f, int i) {
  if (f->tag == CC__TAG_COLL) {
    if (f->seq != SEQ) return 0;
    if (f->coll != M->id.coll || f->dtype != M->id.dtype || f->op != M->id.op || f->root != M->id.root) return 0;
    if (!fz_is_v(M->id.coll) && f->count != M->id.count) return 0;
  }
  return f->bytes == M->d[i].bytes;
}

static void m_complete(model *M, int i) {
  M->done[i] = 1;
  M->moved[i] = M->d[i].bytes;
  FZ_CHECK(M->norder < MAXORDER);
  M->order[M->norder++] = i;
  if (M->dynamic && M->d[i].then >= 0) M->live[M->d[i].then] = 1;
}

/* Receive i takes the oldest queued message of its tag, if there is one. */
static int m_take(model *M, int i) {
  mq *q = M->d[i].peer == 0 ? M->q0 : M->q1;
  int *nq = M->d[i].peer == 0 ? &M->nq0 : &M->nq1, k;
  for (k = 0; k < *nq; k++) {
    if (q[k].f.tag != M->d[i].tag) continue;
    if (!m_fits(M, &q[k].f, i)) return m_fail_all(M, CC_ERR_MISMATCH, 0);
    if (M->d[i].bytes) memcpy(M->buf[i], q[k].data, M->d[i].bytes);
    memmove(&q[k], &q[k + 1], sizeof *q * (size_t)(*nq - k - 1));
    (*nq)--;
    m_complete(M, i);
    return 0;
  }
  return 0;
}

static int m_eligible(const model *M, int i, int peer, int tag) {
  return !M->d[i].is_send && M->live[i] && M->started[i] && !M->done[i] && !M->matched[i] && M->d[i].peer == peer &&
         M->d[i].tag == tag;
}

/* A message joined a queue: the first started receive of its tag that waits takes the oldest. */
static int m_deliver(model *M, int peer, int tag) {
  int i;
  for (i = 0; i < N; i++)
    if (m_eligible(M, i, peer, tag)) return m_take(M, i);
  return 0;
}

static void m_header(const model *M, int i, fz_frame *f) {
  memset(f, 0, sizeof *f);
  f->tag = M->d[i].tag;
  f->bytes = M->d[i].bytes;
  if (f->tag == CC__TAG_COLL) {
    f->seq = SEQ;
    f->count = M->id.count;
    f->op = M->id.op;
    f->root = M->id.root;
    f->coll = M->id.coll;
    f->dtype = M->id.dtype;
  }
}

/* Start what is live, in index order: a send to itself queues a copy; a
   receive takes from its queue. Again while that makes more live. */
static int m_start(model *M) {
  int i, again = 1;
  while (again) {
    again = 0;
    for (i = 0; i < N; i++) {
      const msgdef *d = &M->d[i];
      if (!M->live[i] || M->started[i]) continue;
      M->started[i] = 1;
      if (d->is_send) {
        if (d->peer == 0) {
          FZ_CHECK(M->nq0 < N);
          m_header(M, i, &M->q0[M->nq0].f);
          M->q0[M->nq0++].data = M->buf[i];
          M->done[i] = 1;
          M->moved[i] = d->bytes;
          again = 1;
          if (m_deliver(M, 0, d->tag) < 0) return -1;
        }
        continue;
      }
      if (m_take(M, i) < 0) return -1;
      if (M->done[i]) again = 1;
    }
  }
  return 0;
}

/* The sends to rank 1, one frame at a time and in index order: each goes
   whole into the socket, but the one that blocks (and all behind it). Once
   rank 1's stream ended, a send to it is lost; a failure posted before
   (rank 1's own report, say) is the one the run ends with
   (cc__lost_send). */
static int m_sends(model *M) {
  int i, j;
  for (i = 0; i < N; i++) {
    int first = 1;
    if (!M->live[i] || !M->started[i] || !M->d[i].is_send || M->done[i] || M->d[i].peer != 1) continue;
    for (j = 0; j < i; j++)
      if (M->live[j] && M->started[j] && M->d[j].is_send && !M->done[j] && M->d[j].peer == 1) first = 0;
    if (!first) continue;
    if (M->eof) return M->posted ? m_take_fail(M) : m_fail_all(M, CC_ERR_PEER_LOST, 1);
    if (M->d[i].bytes == BLOCKED) {
      M->partial = 1;
      continue;
    }
    M->done[i] = 1;
    M->moved[i] = M->d[i].bytes;
    M->sent[M->nsent++] = i;
  }
  return 0;
}

/* A turn of the run's loop: start what became live, write the sends. */
static int m_turn(model *M) {
  if (m_start(M) < 0) return -1;
  return m_sends(M);
}

/* The reader stopped (for want of bytes, or at a parked frame). In a run,
   what the last completions made live starts before the run looks (the
   engine's second cc__start of a turn); at the call's entry a failure posted
   fails it before anything starts; then a turn, and a look. -1 when the run
   ended. */
static int m_stop(model *M) {
  if (!M->polling && m_start(M) < 0) return -1;
  M->polling = 0;
  if (m_check(M) < 0 || m_turn(M) < 0 || m_check(M) < 0) return -1;
  return 0;
}

/* The reader ran out of bytes somewhere before position q (the first such
   place counts: nothing happens at the others): there the run looks at where
   it stands, takes a turn, and looks again. -1 when the run ended. */
static int m_stops_before(model *M, size_t q) {
  size_t b = 0;
  int hit = 0;
  while (M->bi < M->nbound && M->bound[M->bi] < q) {
    if (!hit) b = M->bound[M->bi];
    hit = 1;
    M->bi++;
  }
  if (!hit) return 0;
  M->consumed = b;
  return m_stop(M);
}

/* The run ended with the reader in the frame at fpos: how far, and what the
   receive it fills holds. */
static void m_partial(model *M) {
  if (M->consumed < M->hend) {
    M->stop = M->consumed > M->fpos ? 1 : 0;
    return;
  }
  M->stop = 2;
  if (M->target >= 0) {
    size_t got = M->consumed - M->hend;
    if (got) memcpy(M->buf[M->target], M->s + M->hend, got);
    M->moved[M->target] = got;
  }
}

/* The stream ended between frames. */
static void m_end(model *M) {
  M->eof = 1;
  if (M->polling) {                    /* the call's entry read it all: it fails, or the run starts */
    M->polling = 0;
    if (M->posted) {
      m_take_fail(M);
      return;
    }
    if (m_turn(M) < 0) return;
  }
  /* messages made live by the last completions start (and take what is
     queued for them) before the end of the stream counts against them (the
     engine's loop starts them between its reads and its check) */
  if (m_turn(M) < 0) return;
  if (m_check(M) < 0) return;
  m_fail_all(M, CC_ERR_PEER_LOST, 1);
}

/* The oldest started receive from rank 1 of frame f's tag that waits takes
   it (*t; an older queued message of the tag goes first), if any. -1 when
   the run failed. */
static int m_match(model *M, const fz_frame *f, int *t) {
  int i;
  *t = -1;
  if (f->tag == CC__TAG_ABORT || f->tag == CC__TAG_BYE) return 0;
  for (i = 0; i < N; i++) {
    if (!m_eligible(M, i, 1, f->tag)) continue;
    if (m_take(M, i) < 0) return -1;
    if (M->done[i]) continue;
    if (!m_fits(M, f, i)) return m_fail_all(M, CC_ERR_MISMATCH, 0);
    *t = i;
    M->matched[i] = 1;
    M->moved[i] = 0;
    return 0;
  }
  return 0;
}

/* The stream ended where nothing waits for what it cut short (in a header, or
   in a payload nobody waits for yet): posted. At the call's entry the call
   fails at once; else a turn, and the run ends at its look. */
static void m_lost_unwaited(model *M) {
  M->eof = 1;
  m_post(M, CC_ERR_PEER_LOST, 1);
  if (M->polling) {                    /* the call's entry read it: the call fails at once */
    M->polling = 0;
    m_take_fail(M);
    return;
  }
  if (m_turn(M) < 0) return;
  FZ_CHECK(m_check(M) < 0);
}

/* The stream ends before the header at pos does: between frames, or in the
   header. */
static void m_short_header(model *M, size_t pos) {
  if (m_stops_before(M, M->len + 1) < 0) { m_partial(M); return; }
  M->consumed = M->len;
  if (M->len > pos) {                  /* in a header: posted, as in a payload nobody waits for */
    M->stop = 1;
    m_lost_unwaited(M);
  } else {
    m_end(M);
  }
}

/* Frame f, which no receive takes, is parked: its payload stays in the
   socket. The run stops here as for want of bytes; a receive that starts then
   takes the frame (*t); else it stays until the run ends, or until the
   stream's end is seen (all the rest has arrived by then: no more stops), and
   is read as before. -1 when the run ended. */
static int m_park(model *M, const fz_frame *f, int *t) {
  M->parked = 1;
  M->stop = 2;
  if (m_stop(M) < 0) { m_partial(M); return -1; }
  if (!m_wanted(M)) {
    M->bi = M->nbound;
    M->ending = 1;
  }
  if (m_match(M, f, t) < 0) return -1;  /* (a failure leaves it parked) */
  M->parked = 0;
  return 0;
}

/* Frame f is held unexpected: it counts against CC_MAX_UNEXPECTED at its
   header. -1 (the run failed) when the queues have no room for it. */
static int m_hold(model *M, const fz_frame *f, int was_parked) {
  uint64_t held = 0, lim = (uint64_t)1 << 30, k = f->bytes + 128;
  int i;
  for (i = 0; i < M->nq1; i++) held += M->q1[i].f.bytes + 128;
  for (i = 0; i < M->nq0; i++) held += M->q0[i].f.bytes + 128;
  if (k > lim || held > lim - k) {
    if (was_parked) {                  /* refused when it was to leave the socket */
      M->stop = 2;
      M->parked = 1;
    }
    m_fail_all(M, CC_ERR_NO_MEMORY, 1);
    return -1;
  }
  return 0;
}

/* The stream ends in the payload of the frame being read, which receive t
   waits for (or nobody, t < 0). */
static void m_short_payload(model *M, int t) {
  if (m_stops_before(M, M->len + 1) < 0) { m_partial(M); return; }
  M->consumed = M->len;
  m_partial(M);
  if (t >= 0) {                        /* a receive waits for it: rank 1 is lost */
    m_fail_all(M, CC_ERR_PEER_LOST, 1);
    return;
  }
  m_lost_unwaited(M);                  /* nobody waits for it yet: posted */
}

/* Frame f's payload arrived whole: receive t completes, or a failure report
   is posted, or the message is queued. -1 when the run ended. */
static int m_payload(model *M, const fz_frame *f, int t) {
  if (t >= 0) {
    if (f->bytes) memcpy(M->buf[t], M->s + M->hend, (size_t)f->bytes);
    m_complete(M, t);
  } else if (f->tag == CC__TAG_ABORT) {  /* a failure report: posted, the run reads on */
    uint32_t code = fz_le32(M->s + M->hend);
    if (code == 0 || code == (uint32_t)CC_ERR_INVALID_ARG || code >= (uint32_t)CC_RESULT_COUNT) {
      m_fail_all(M, CC_ERR_SYSTEM, 1);
      return -1;
    }
    m_post(M, (cc_result)code, (int32_t)fz_le32(M->s + M->hend + 4));
  } else if (f->tag == CC__TAG_BYE) {  /* a farewell: noted, the stream's end follows */
  } else {
    FZ_CHECK(M->nq1 < (int)MAXQ);
    M->q1[M->nq1].f = *f;
    M->q1[M->nq1++].data = M->s + M->hend;
    if (m_deliver(M, 1, f->tag) < 0) return -1;
  }
  return 0;
}

/* What the run makes of stream s, as the protocol says. Every byte that
   arrives is read, but a parked frame's payload; the run ends when all its messages are done (at the
   next place the reader runs out of bytes), or fails. */
static void model_run(model *M) {
  size_t pos = 0;
  M->result = CC_OK;
  M->target = -1;
  if (!M->polling && m_turn(M) < 0) return;
  for (;;) {
    fz_frame f;
    uint64_t bytes;
    int t = -1, was_parked = 0;
    M->fpos = pos;
    M->hend = pos + FZ_FRAME;
    M->target = -1;
    M->stop = 0;
    M->consumed = pos;
    if (M->len - pos < FZ_FRAME) {     /* the stream ends before this header does */
      m_short_header(M, pos);
      return;
    }
    if (m_stops_before(M, M->hend) < 0) { m_partial(M); return; }
    M->consumed = M->hend;
    M->stop = 1;
    if (!fz_frame_parse(M->s + pos, &f)) { m_fail_all(M, CC_ERR_SYSTEM, 1); return; }
    M->cur = f;
    if (m_match(M, &f, &t) < 0) return;
    if (t < 0 && f.tag != CC__TAG_ABORT && f.bytes && !M->ending && !m_wanted(M)) {
      was_parked = 1;
      if (m_park(M, &f, &t) < 0) return;
    }
    M->target = t;
    if (t < 0 && f.tag != CC__TAG_ABORT && f.tag != CC__TAG_BYE && m_hold(M, &f, was_parked) < 0) return;
    M->stop = 2;
    bytes = f.bytes;
    if (bytes > M->len - M->hend) {    /* the stream ends in this payload */
      m_short_payload(M, t);
      return;
    }
    if (m_stops_before(M, M->hend + (size_t)bytes) < 0) { m_partial(M); return; }
    M->consumed = M->hend + (size_t)bytes;
    M->stop = 0;
    if (m_payload(M, &f, t) < 0) return;
    pos = M->hend + (size_t)bytes;
  }
}

/* ------------------------------------------------------------------ the code */

typedef struct fz_ctx {
  const msgdef *d;
  int dynamic;
  int calls[N];
  int order[MAXORDER], norder;
  unsigned char *snap[N];              /* each receive's buffer when its callback came */
} fz_ctx;

static cc_result fz_done(void *ctx, cc__msg *m, int i) {
  fz_ctx *x = (fz_ctx *)ctx;
  FZ_CHECK(i >= 0 && i < N);
  FZ_CHECK(!m[i].is_send && m[i].live && m[i].started && m[i].done && m[i].moved == m[i].bytes);
  FZ_CHECK(x->calls[i] == 0);
  x->calls[i]++;
  FZ_CHECK(x->norder < MAXORDER);
  x->order[x->norder++] = i;
  if (m[i].bytes) memcpy(x->snap[i], m[i].buf, m[i].bytes);
  if (x->dynamic && x->d[i].then >= 0) m[x->d[i].then].live = 1;
  return CC_OK;
}

/* One turn of cc__engine_run's loop, its steps as it calls them, without its
   wait (cc__run_idle): *ended when the run ended (failed or all done). */
static cc_result fz_step(cc__run *x, int *progress, int *ended) {
  int np = 0, all = 0, sending;
  cc_result r;
  *progress = 0;
  *ended = 1;
  if ((r = cc__start(x, progress)) != CC_OK || (r = cc__run_send(x, progress)) != CC_OK) return r;
  sending = cc__sending(x);
  if ((r = cc__run_recv(x, sending, progress, &np)) != CC_OK) return r;
  if ((r = cc__start(x, progress)) != CC_OK || (r = cc__run_check(x, &all)) != CC_OK || all) return r;
  *ended = 0;
  return CC_OK;
}

/* The entry of a call (cc__ready's part for a communicator with a net):
   take in what the links hold, then fail with a failure posted meanwhile.
   1 when the call failed there. */
static int fz_ready(cc_comm *c, cc_result *r) {
  *r = cc__engine_poll(c, "fuzz");
  if (*r == CC_OK && CC__LOAD_RLX(&c->hdr->fail_code)) *r = cc__take_fail(c, "fuzz");
  return *r != CC_OK;
}

/* Turns until one makes no progress: 1 when the run ended. */
static int fz_turns(cc__run *x, cc_result *r) {
  int progress, ended, k;
  for (k = 0;; k++) {
    FZ_CHECK(k < 10000000);
    *r = fz_step(x, &progress, &ended);
    if (ended) return 1;
    if (!progress) return 0;
  }
}

static size_t fz_unread(int fd) {       /* bytes in the socket, not yet read */
  int n = 0;
  FZ_CHECK(ioctl(fd, FIONREAD, &n) == 0 && n >= 0);
  return (size_t)n;
}

/* ------------------------------------------------------------------ the target */

static unsigned char *fz_blocked_payload(void) {   /* the blocked send's payload, made once */
  static unsigned char *p;
  size_t k;
  if (!p) {
    p = (unsigned char *)malloc(BLOCKED);
    FZ_CHECK(p != NULL);
    for (k = 0; k < BLOCKED; k++) p[k] = fz_pattern(0, k);
  }
  return p;
}

static void fz_fail_report(const char *what, cc_result r, const model *M, const cc_comm *c) {
  fprintf(stderr, "fuzz: %s: the run gave %d (%s), the model %d (%zu bytes read)\n", what, (int)r, c->err,
          (int)M->result, M->consumed);
}

/* What the steps of one input's run share (fz_one). */
typedef struct fz_state {
  int mode, setup;                     /* the input's first two bytes */
  const unsigned char *s;              /* the stream: the rest */
  size_t len;
  const msgdef *defs;                  /* the set that mode picks */
  int sv[2];                           /* the socketpair: rank 0's end, rank 1's */
  cc_comm *c;
  cc__net *nt;
  cc__peer *pe;                        /* rank 0's link to rank 1 */
  cc__msg m[N];
  cc__run x;
  fz_ctx ctx;
  model M;
  cc_result r;                         /* what the run gave */
  size_t off;                          /* bytes of the stream written into the socket */
  size_t *bound;                       /* where the run stopped for want of bytes */
  int nbound;
} fz_state;

/* The net of a two-rank communicator with a group per rank. */
static cc__net *fz_net_new(cc_comm *c) {
  cc__net *nt;
  int i;
  nt = (cc__net *)CC_MALLOC(sizeof *nt);
  FZ_CHECK(nt != NULL);
  memset(nt, 0, sizeof *nt);
  c->net = nt;
  c->hdr = &nt->own_hdr;
  nt->tcp_only = 1;
  nt->ngroups = 2;
  nt->grp = (int *)CC_MALLOC(2 * sizeof(int));
  nt->lrank = (int *)CC_MALLOC(2 * sizeof(int));
  nt->gfirst = (int *)CC_MALLOC(2 * sizeof(int));
  nt->gsize = (int *)CC_MALLOC(2 * sizeof(int));
  FZ_CHECK(nt->grp && nt->lrank && nt->gfirst && nt->gsize);
  for (i = 0; i < 2; i++) {
    nt->grp[i] = nt->gfirst[i] = i;
    nt->lrank[i] = 0;
    nt->gsize[i] = 1;
  }
  return nt;
}

/* Rank 0's TCP link to rank 1: one end of a socketpair, with its stage. */
static void fz_link_new(fz_state *S) {
  int *sv = S->sv, v;
  cc__peer *pe;
  FZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  FZ_CHECK(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0);
  FZ_CHECK(fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK) == 0);
  v = 1 << 20;                         /* rank 1's side takes a whole stream, mostly */
  (void)setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
  v = 64 << 10;                        /* rank 0's side never takes the blocked send */
  FZ_CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &v, sizeof v) == 0);
  pe = &S->c->peers[1];
  pe->link = CC__LINK_TCP;
  pe->tcp.fd = sv[0];
  pe->tcp.stage = (unsigned char *)CC_MALLOC(CC__STAGE);
  FZ_CHECK(pe->tcp.stage != NULL);
  S->pe = pe;
}

/* The run's collective: number SEQ, the call that setup picks. */
static void fz_set_call(cc_comm *c, int setup) {
  c->seq = SEQ;
  memset(&c->cur, 0, sizeof c->cur);
  if (setup & 1) {                     /* gather_v(int32, root 1): this rank's own count */
    c->cur.coll = CC__GATHER_V;
    c->cur.dtype = CC_INT32;
    c->cur.root = 1;
    c->cur.count = 1024;
  } else {                             /* all_reduce(1250 float32, sum) */
    c->cur.coll = CC__ALL_REDUCE;
    c->cur.dtype = CC_FLOAT32;
    c->cur.op = CC_SUM;
    c->cur.count = 1250;
  }
}

/* Rank 0 of 2, TCP only, connected to rank 1, in the run of a collective. */
static void fz_comm_new(fz_state *S) {
  cc__settings set;
  cc_comm *c;
  memset(&set, 0, sizeof set);
  set.rank = 0;
  set.size = 2;
  set.local_size = -1;
  set.spin_us = -1;
  set.small_bytes = -1;
  set.timeout_ns = 2 * CC__S;
  set.transport = CC__TR_TCP;
  set.max_unexpected = (size_t)1 << 30;   /* the default of CC_MAX_UNEXPECTED (the model has no limit) */
  c = cc__comm_new(0, 2, &set);
  /* a failed run finishes a frame partly written (cc__run_settle): nobody reads here */
  if (c) c->settle_ns = CC__MS;
  FZ_CHECK(c != NULL);
  S->c = c;
  S->nt = fz_net_new(c);
  c->local_rank = 0;
  c->local_size = 1;
  fz_link_new(S);
  fz_set_call(c, S->setup);
}

/* The messages (a send's payload its pattern, a receive's buffer 0xee), the
   model's copies (with rank 1's queue q1), and the run over them. */
static void fz_messages_new(fz_state *S, mq *q1) {
  const msgdef *defs = S->defs;
  int dynamic = (S->mode & 0x40) != 0, blocked = (S->setup & 2) != 0, i;
  cc__msg *m = S->m;
  fz_ctx *ctx = &S->ctx;
  model *M = &S->M;
  cc__run *x = &S->x;
  memset(ctx, 0, sizeof *ctx);
  ctx->d = defs;
  ctx->dynamic = dynamic;
  memset(M, 0, sizeof *M);
  M->d = defs;
  M->dynamic = dynamic;
  M->polling = (S->setup & 4) != 0;
  M->id = S->c->cur;
  M->s = S->s;
  M->len = S->len;
  M->q1 = q1;
  for (i = 0; i < N; i++) {
    const msgdef *d = &defs[i];
    unsigned char *b = NULL;
    size_t k;
    if (i == 0) {
      b = fz_blocked_payload();
    } else if (d->bytes) {
      b = (unsigned char *)malloc(d->bytes);
      FZ_CHECK(b != NULL);
      for (k = 0; k < d->bytes; k++) b[k] = d->is_send ? fz_pattern(i, k) : 0xee;
    }
    cc__msg_set(&m[i], d->is_send, d->peer, d->tag, b, d->bytes);
    m[i].live = i == 0 ? blocked : d->live;
    M->live[i] = m[i].live;
    if (d->is_send) {
      M->buf[i] = b;
    } else if (d->bytes) {
      M->buf[i] = (unsigned char *)malloc(d->bytes);
      ctx->snap[i] = (unsigned char *)malloc(d->bytes);
      FZ_CHECK(M->buf[i] && ctx->snap[i]);
      memset(M->buf[i], 0xee, d->bytes);
      memset(ctx->snap[i], 0xdd, d->bytes);
    }
  }
  memset(x, 0, sizeof *x);
  x->c = S->c;
  x->m = m;
  x->n = N;
  x->cb = fz_done;
  x->ctx = ctx;
  x->what = "fuzz";
  x->id = &S->c->cur;
}

/* Feed the stream: whole, then cc__engine_run; else in pieces, with the
   engine's turns after each (with setup & 4, the call's entry first reads
   what arrived first). The run's result goes to S->r, the places where it
   stopped for want of bytes to S->bound. */
static void fz_feed(fz_state *S) {
  int mode = S->mode, whole = (mode & 0x80) != 0, entry = (S->setup & 4) != 0, nbound = 0, ended = 0;
  uint32_t lcg = (uint32_t)(mode & 0x1f) * 2654435761u + 1;
  const unsigned char *s = S->s;
  size_t len = S->len, off = 0, *bound = S->bound;
  int *sv = S->sv;
  cc_comm *c = S->c;
  cc__msg *m = S->m;
  cc__run *x = &S->x;
  cc_result r = CC_OK;

  if (whole) {
    long w = len ? (long)send(sv[1], s, len, MSG_DONTWAIT | MSG_NOSIGNAL) : 0;
    FZ_CHECK(w >= 0 || errno == EAGAIN || errno == EWOULDBLOCK);
    if (w == (long)len) {
      off = len;
      S->M.ending = 1;                 /* the reader sees the end with the first bytes: it parks nothing */
      FZ_CHECK(shutdown(sv[1], SHUT_WR) == 0);
      if (!entry || !fz_ready(c, &r)) r = cc__engine_run(c, m, N, fz_done, &S->ctx, &c->cur, "fuzz");
      ended = 1;
    } else if (w > 0) {                /* the socket took part: the rest goes in pieces */
      off = (size_t)w;
      bound[nbound++] = off;
      ended = entry && fz_ready(c, &r);
      entry = 0;
      if (!ended) ended = fz_turns(x, &r);
    }
  }
  while (!ended && off < len) {
    size_t piece = len - off;
    long w;
    if (!whole) {
      lcg = lcg * 1103515245u + 12345u;
      piece = CC__MIN(piece, 1 + (size_t)(lcg >> 8) % ((mode & 0x20) || nbound >= 512 ? 4096 : 24));
    }
    w = (long)send(sv[1], s + off, piece, MSG_DONTWAIT | MSG_NOSIGNAL);
    /* the run read all that arrived before: the socket is empty */
    FZ_CHECK(w > 0);
    off += (size_t)w;
    FZ_CHECK((size_t)nbound < MAXB);
    bound[nbound++] = off;
    ended = entry && fz_ready(c, &r);
    entry = 0;
    if (!ended) ended = fz_turns(x, &r);
  }
  if (!ended) {
    FZ_CHECK(shutdown(sv[1], SHUT_WR) == 0);
    ended = entry && fz_ready(c, &r);
    if (!ended) ended = fz_turns(x, &r);
    if (!ended) {
      fprintf(stderr, "fuzz: the run waits for nothing: it would hang until its timeout\n");
      FZ_CHECK(ended);
    }
  }
  if (r != CC_OK) cc__run_settle(x);   /* as cc__engine_run ends a failed run */
  S->r = r;
  S->off = off;
  S->nbound = nbound;
}

/* With FZ_TRACE set, a line on what the model made of the input. */
static void fz_trace(const fz_state *S) {
  const model *M = &S->M;
  if (getenv("FZ_TRACE"))
    fprintf(stderr, "fuzz: mode %#x setup %#x, %zu bytes: result %d, posted %d (rank %d), %zu bytes read, "
            "%d completions, %d queued, reader %s\n", S->mode, S->setup, S->len, (int)S->r,
            M->posted ? (int)M->pcode : 0, M->posted ? M->pwho : 0, M->consumed, M->norder, M->nq1,
            M->stop == 0 ? "between frames" : M->stop == 1 ? "in a header" : "in a payload");
}

/* The result, the failure word, and the communicator's own failure. */
static void fz_check_result(const fz_state *S) {
  const model *M = &S->M;
  cc_comm *c = S->c;
  cc__net *nt = S->nt;
  cc_result r = S->r;
  if (r != M->result) {
    fz_fail_report("result", r, M, c);
    FZ_CHECK(r == M->result);
  }
  if (M->posted) {
    if (c->hdr->fail_code != (uint32_t)M->pcode || c->hdr->fail_rank != M->pwho) {
      fprintf(stderr, "fuzz: the failure word holds %u, rank %d; the model %d, rank %d\n", c->hdr->fail_code,
              c->hdr->fail_rank, (int)M->pcode, M->pwho);
      FZ_CHECK(0);
    }
    FZ_CHECK(c->hdr->fail_ready);
    FZ_CHECK(fz_terminated(c->hdr->fail_msg, sizeof c->hdr->fail_msg) && c->hdr->fail_msg[0]);
  } else {
    FZ_CHECK(c->hdr->fail_code == 0 && !c->hdr->fail_ready);
  }
  if (r != CC_OK) {
    FZ_CHECK(c->failed == r && nt->propagated && M->propagated);
    FZ_CHECK(fz_terminated(c->err, sizeof c->err) && c->err[0]);
  } else {
    FZ_CHECK(c->failed == CC_OK && !nt->propagated && !M->propagated);
  }
}

/* Every message, and the callbacks. */
static void fz_check_messages(fz_state *S) {
  const msgdef *defs = S->defs;
  const cc__msg *m = S->m;
  const fz_ctx *ctx = &S->ctx;
  model *M = &S->M;
  int i;
  if (M->partial) M->moved[0] = m[0].moved;  /* what the socket took of it: checked with what rank 1 got below */
  for (i = 0; i < N; i++) {
    const msgdef *d = &defs[i];
    if (m[i].done != M->done[i] || m[i].moved != M->moved[i] || (!d->is_send && m[i].matched != M->matched[i])) {
      fprintf(stderr, "fuzz: message %d: done %d moved %zu matched %d, the model %d %zu %d\n", i, m[i].done,
              m[i].moved, m[i].matched, M->done[i], M->moved[i], M->matched[i]);
      FZ_CHECK(0);
    }
    FZ_CHECK(m[i].live == M->live[i] && m[i].started == M->started[i]);
    if (d->is_send) {
      FZ_CHECK(ctx->calls[i] == 0);
      if (d->bytes) for (size_t k = 0; k < d->bytes; k += 997) FZ_CHECK(m[i].buf[k] == fz_pattern(i, k));
      continue;
    }
    FZ_CHECK(ctx->calls[i] == M->done[i]);
    if (d->bytes) {
      if (memcmp(m[i].buf, M->buf[i], d->bytes) != 0) {
        fprintf(stderr, "fuzz: receive %d holds other bytes than the model's\n", i);
        FZ_CHECK(0);
      }
      if (M->done[i]) FZ_CHECK(memcmp(ctx->snap[i], M->buf[i], d->bytes) == 0);
    }
  }
  FZ_CHECK(ctx->norder == M->norder);
  for (i = 0; i < M->norder; i++) FZ_CHECK(ctx->order[i] == M->order[i]);
}

/* The queues, oldest first: rank 1's, then rank 0's own. */
static void fz_check_queues(const fz_state *S) {
  const model *M = &S->M;
  const cc_comm *c = S->c;
  const cc__umsg *u;
  int i;
  for (i = 0, u = c->peers[1].uq_head; u; u = u->next, i++) {
    const fz_frame *f;
    if (i >= M->nq1)
      fprintf(stderr, "fuzz: queued: tag %d, %llu bytes; the model has %d\n", u->f.tag, (unsigned long long)u->f.bytes,
              M->nq1);
    FZ_CHECK(i < M->nq1);
    f = &M->q1[i].f;
    FZ_CHECK(u->f.tag == f->tag && u->f.bytes == f->bytes && u->f.seq == f->seq && u->f.id.count == f->count &&
             u->f.id.op == f->op && u->f.id.root == f->root && u->f.id.coll == f->coll && u->f.id.dtype == f->dtype);
    FZ_CHECK(u->cap >= u->f.bytes);
    FZ_CHECK(u->f.bytes == 0 || memcmp(u->data, M->q1[i].data, (size_t)u->f.bytes) == 0);
    if (!u->next) FZ_CHECK(c->peers[1].uq_tail == u);
  }
  FZ_CHECK(i == M->nq1);
  for (i = 0, u = c->peers[0].uq_head; u; u = u->next, i++) {
    FZ_CHECK(i < M->nq0);
    FZ_CHECK(u->f.tag == M->q0[i].f.tag && u->f.bytes == M->q0[i].f.bytes);
  }
  FZ_CHECK(i == M->nq0);
}

/* How far the run read, and where the reader stands. */
static void fz_check_reader(const fz_state *S) {
  const model *M = &S->M;
  const cc__peer *pe = S->pe;
  const cc__msg *m = S->m;
  const unsigned char *s = S->s;
  size_t stage_left, consumed;
  stage_left = pe->tcp.st_end - pe->tcp.st_beg;
  consumed = S->off - fz_unread(S->sv[0]) - stage_left;
  if (consumed != M->consumed) {
    fprintf(stderr, "fuzz: the run took %zu bytes of the stream, the model %zu\n", consumed, M->consumed);
    FZ_CHECK(consumed == M->consumed);
  }
  if (stage_left) FZ_CHECK(memcmp(pe->tcp.stage + pe->tcp.st_beg, s + consumed, stage_left) == 0);
  if (M->stop == 0) {
    FZ_CHECK(pe->rx_state == 0 && pe->rx_hdr_got == 0);
  } else if (M->stop == 1) {
    FZ_CHECK(pe->rx_state == 0 && pe->rx_hdr_got == M->consumed - M->fpos);
    FZ_CHECK(memcmp(pe->rx_hdr, s + M->fpos, pe->rx_hdr_got) == 0);
  } else {
    size_t in = M->consumed - M->hend;
    FZ_CHECK(pe->rx_state == 1 && pe->rx_done == in);
    if (M->target >= 0) {
      FZ_CHECK(pe->rx_target == &m[M->target] && !pe->rx_unexp);
    } else if (M->parked) {            /* its payload left in the socket, no room taken for it */
      FZ_CHECK(!pe->rx_target && !pe->rx_unexp && in == 0);
    } else {
      FZ_CHECK(!pe->rx_target && pe->rx_unexp && pe->rx_unexp->f.tag == M->cur.tag && pe->rx_unexp->cap >= in);
      FZ_CHECK(in == 0 || memcmp(pe->rx_unexp->data, s + M->hend, in) == 0);
    }
  }
}

/* What rank 0 sent to rank 1: the sends' frames, then the failure. */
static void fz_check_sent(const fz_state *S) {
  static unsigned char out[BLOCKED + 4096];
  const model *M = &S->M;
  const msgdef *defs = S->defs;
  const cc__msg *m = S->m;
  const cc_comm *c = S->c;
  cc_result r = S->r;
  size_t got = 0, want_out = 0;
  int i;
  for (;;) {
    long k = (long)recv(S->sv[1], out + got, sizeof out - got, MSG_DONTWAIT);
    if (k > 0) { got += (size_t)k; FZ_CHECK(got < sizeof out); continue; }
    if (k == 0) {
      FZ_CHECK(r != CC_OK);            /* the link was shut after the failure */
      break;
    }
    FZ_CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
    FZ_CHECK(r == CC_OK);              /* a failure shuts the link */
    break;
  }
  for (i = 0; i < M->nsent; i++) {
    int j = M->sent[i];
    fz_frame f;
    unsigned char h[FZ_FRAME];
    m_header(M, j, &f);
    fz_frame_make(h, &f);
    FZ_CHECK(got - want_out >= FZ_FRAME + defs[j].bytes);
    FZ_CHECK(memcmp(out + want_out, h, FZ_FRAME) == 0);
    FZ_CHECK(memcmp(out + want_out + FZ_FRAME, m[j].buf, defs[j].bytes) == 0);
    want_out += FZ_FRAME + defs[j].bytes;
  }
  if (M->partial) {                    /* the blocked send: its header and part of its payload */
    fz_frame f;
    unsigned char h[FZ_FRAME];
    m_header(M, 0, &f);
    fz_frame_make(h, &f);
    FZ_CHECK(M->nsent == 0 && !m[0].done);
    FZ_CHECK(got - want_out >= FZ_FRAME && got - want_out < FZ_FRAME + BLOCKED);
    FZ_CHECK(memcmp(out + want_out, h, FZ_FRAME) == 0);
    FZ_CHECK(memcmp(out + want_out + FZ_FRAME, fz_blocked_payload(), got - want_out - FZ_FRAME) == 0);
    FZ_CHECK(m[0].hdr_sent == FZ_FRAME && m[0].moved == got - want_out - FZ_FRAME);
    want_out = got;                    /* a frame partly written: no abort frame after it */
  } else if (r != CC_OK) {             /* the abort frame: the failure's code, rank and message */
    fz_frame f;
    const char *msg;
    size_t fl = strlen(c->hdr->fail_msg);
    FZ_CHECK(got - want_out >= FZ_FRAME + 9);
    FZ_CHECK(fz_frame_parse(out + want_out, &f) && f.tag == CC__TAG_ABORT);
    FZ_CHECK(got - want_out == FZ_FRAME + f.bytes);
    FZ_CHECK(fz_le32(out + want_out + FZ_FRAME) == (uint32_t)M->xcode);
    FZ_CHECK((int32_t)fz_le32(out + want_out + FZ_FRAME + 4) == M->xwho);
    msg = (const char *)out + want_out + FZ_FRAME + 8;
    FZ_CHECK(msg[f.bytes - 9] == 0 && strlen(msg) == f.bytes - 9 && msg[0]);
    if (M->xtext) {                    /* the failure word holds the same message (cut at its size) */
      FZ_CHECK(strncmp(msg, c->hdr->fail_msg, fl) == 0);
      FZ_CHECK(fl == sizeof c->hdr->fail_msg - 1 || strlen(msg) == fl);
    }
    want_out = got;
  }
  FZ_CHECK(want_out == got);
}

/* Free what the run allocated (the blocked send's payload stays, for the next
   input), rank 1's end of the link, and the communicator. */
static void fz_free(fz_state *S) {
  int i;
  for (i = 1; i < N; i++) {
    free(S->m[i].buf);
    if (!S->defs[i].is_send) free(S->M.buf[i]);
    free(S->ctx.snap[i]);
  }
  close(S->sv[1]);                     /* first: a failed communicator's end waits for its peers' (cc__tcp_linger) */
  cc__comm_free(S->c);                 /* closes sv[0]; frees the queues, the stage, the net */
}

/* Run the set that mode and setup pick on stream s and check it all. */
static void fz_one(int mode, int setup, const unsigned char *s, size_t len) {
  static mq q1[MAXQ];
  static size_t bound[MAXB];
  fz_state S;
  S.mode = mode;
  S.setup = setup;
  S.s = s;
  S.len = len;
  S.defs = (mode & 0x40) != 0 ? dyn_set : fixed_set;
  S.r = CC_OK;
  S.off = 0;
  S.bound = bound;
  S.nbound = 0;
  fz_comm_new(&S);
  fz_messages_new(&S, q1);
  fz_feed(&S);

  /* the model, with the stops the run had */
  S.M.bound = bound;
  S.M.nbound = S.nbound;
  model_run(&S.M);
  fz_trace(&S);

  fz_check_result(&S);
  fz_check_messages(&S);
  fz_check_queues(&S);
  fz_check_reader(&S);
  fz_check_sent(&S);
  fz_free(&S);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || size - 2 > MAXLEN) return 0;
  fz_one(data[0], data[1], data + 2, size - 2);
  return 0;
}

/* Streams longer than the fuzzer's inputs, once at start: an unexpected
   message of 2.5 MiB (its buffer grows from 1 MiB as its bytes arrive), whole
   and cut short in its payload, then what the fixed set waits for. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  size_t big = (5u << 20) / 2, len = 0, k, cut;
  unsigned char *s = (unsigned char *)malloc(big + 16384);
  fz_frame f;
  static const int tags[] = {5, 5, 9, 3, 0};
  static const size_t sizes[] = {8, 8, 0, 100, 4096};
  (void)argc;
  (void)argv;
  FZ_CHECK(s != NULL);
  memset(&f, 0, sizeof f);
  f.tag = 42;
  f.bytes = big;
  fz_frame_make(s, &f);
  len = FZ_FRAME;
  for (k = 0; k < big; k++) s[len + k] = (unsigned char)(k * 7 + k / 4099);
  len += big;
  cut = len - 1000;
  for (k = 0; k < 5; k++) {
    f.tag = tags[k];
    f.bytes = sizes[k];
    fz_frame_make(s + len, &f);
    memset(s + len + FZ_FRAME, (int)(k + 1), sizes[k]);
    len += FZ_FRAME + sizes[k];
  }
  memset(&f, 0, sizeof f);             /* all_reduce(1250 float32, sum) #7 */
  f.tag = CC__TAG_COLL;
  f.bytes = 5000;
  f.seq = SEQ;
  f.count = 1250;
  f.coll = CC__ALL_REDUCE;
  f.dtype = CC_FLOAT32;
  fz_frame_make(s + len, &f);
  memset(s + len + FZ_FRAME, 0x77, 5000);
  len += FZ_FRAME + 5000;
  fz_one(0x80, 0, s, len);             /* whole, as the socket takes it */
  fz_one(0x20, 0, s, len);             /* pieces up to 4 KiB */
  fz_one(0x80, 0, s, cut);             /* the stream ends in the big payload */
  fz_one(0xc0, 0, s, len);             /* the dynamic set */
  free(s);
  return 0;
}
