/* tests/fuzz/fuzz_stream.c - libFuzzer target: the receive path of a TCP
   connection, cc__conn_read (with cc__conn_begin/cc__conn_end, the unexpected
   queue and abort frames), fed the fuzzer's bytes as what rank 1 sent.

   Rank 0 of a two-rank net-mode communicator built by hand (what cc__net_build
   would leave: conn[1] a connected socket with its stage, conn[0] none, hdr the
   net's own failure word) reads from one end of a socketpair; the input goes
   into the other end. Input: a mode byte, then the stream.
     mode & 0x80   the whole stream is written at once (as far as the socket
                   takes it), else in pieces of pseudo-random sizes (1..24
                   bytes, or with mode & 0x20 1..4096; mode & 0x1f seeds them),
                   with a cc__conn_read after each (frames split anywhere);
     mode & 0x40   dynamic: receives become live as others complete (a callback,
                   as the pipelined collectives do) and cc__net_start runs
                   between reads, else a fixed set of started receives.
   Then the writing end is closed and cc__conn_read runs to the end of the
   stream (CC_OK at a frame boundary) or an error.

   Checks, besides ASan/UBSan/LeakSanitizer: with the fixed set, the result,
   each receive's state and data, and the failure posted, all against a model of
   the protocol written here (frame, match the oldest pending receive of the tag
   from that peer, sizes must agree, else queue; abort frames fail with their
   code); with the dynamic set: the result is CC_OK or an error that was posted,
   the callback comes once for every completed receive and never for anything
   else, every completed receive holds the payload of a frame of its tag. With
   both, after every call that succeeded, no queued message waits while a
   started receive of its tag does. */
#include "fuzz_util.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#define NOPS 9
#define MAXQ ((1 << 17) / CC__FRAME + 1)   /* a stream of empty frames */

typedef struct opdef {
  int is_send, peer, tag, live;
  size_t bytes;
  int then;                            /* dynamic: the op made live when this one completes, or -1 */
} opdef;

/* The fixed set (the live ones started): two receives of tag 5 (matched in order), a
   collective chunk large enough for the direct-to-buffer path, an empty one,
   and ops the stream from rank 1 must never touch. */
static const opdef fixed_ops[NOPS] = {
  {0, 1, 5, 1, 8, -1},
  {0, 1, CC__TAG_COLL, 1, 5000, -1},
  {0, 1, 5, 1, 8, -1},
  {0, 1, 9, 1, 0, -1},
  {1, 1, 5, 1, 8, -1},                 /* a send to rank 1 */
  {0, 1, 7, 0, 4, -1},                 /* not live */
  {0, 0, 7, 1, 4, -1},                 /* from itself */
  {0, 1, 3, 1, 100, -1},
  {0, 1, 0, 1, 4096, -1},
};

/* The dynamic set: chains like the pipelined broadcast's. */
static const opdef dyn_ops[NOPS] = {
  {0, 1, 5, 1, 8, 3},
  {0, 1, CC__TAG_COLL, 1, 4096, 4},
  {1, 1, 5, 0, 8, -1},                 /* a send, live once op 3 completes */
  {0, 1, 5, 0, 8, 2},
  {0, 1, CC__TAG_COLL, 0, 4096, -1},
  {0, 1, 9, 1, 0, 6},
  {0, 1, 9, 0, 16, -1},
  {1, 0, 11, 1, 4, -1},                /* a send to itself ... */
  {0, 0, 11, 1, 4, -1},                /* ... and its receive */
};

typedef struct fz_ctx {
  const opdef *defs;
  int calls[NOPS];
} fz_ctx;

static void fz_done(void *ctx, cc__xop *ops, int i) {
  fz_ctx *x = (fz_ctx *)ctx;
  FZ_CHECK(i >= 0 && i < NOPS);
  FZ_CHECK(!ops[i].is_send && ops[i].done && ops[i].moved == ops[i].bytes);
  x->calls[i]++;
  if (x->defs[i].then >= 0) ops[x->defs[i].then].live = 1;
}

/* Between calls that succeeded: no queued message from rank 1 waits while a
   started receive of its tag does (it would have been taken, or refused). */
static void fz_no_stuck(const cc__conn *cn, const cc__xop *ops) {
  const cc__umsg *q;
  int i;
  for (q = cn->uq_head; q; q = q->next)
    for (i = 0; i < NOPS; i++)
      FZ_CHECK(ops[i].is_send || ops[i].peer != 1 || !ops[i].live || !ops[i].started || ops[i].done ||
               ops[i].tag != q->tag);
}

/* ------------------------------------------------------------------ the model */

typedef struct mop {
  int eligible;                        /* a started live receive from rank 1 */
  int done, matched;
  size_t moved;
  unsigned char *buf;                  /* what its buffer must hold */
} mop;

typedef struct mq {
  int tag;
  unsigned sig;                        /* collectives' messages: must be nt->sig (0 here) */
  uint64_t bytes;
  const unsigned char *data;
} mq;

static uint32_t m_get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Take the oldest queued message of op i's tag: -1 on a size mismatch. */
static int m_take(mop *m, const opdef *d, int i, mq *q, int *nq) {
  int k;
  for (k = 0; k < *nq; k++) {
    if (q[k].tag != d[i].tag) continue;
    if (q[k].tag == -2 && q[k].sig != 0) return -1;
    if (q[k].bytes != d[i].bytes) return -1;
    if (q[k].bytes) memcpy(m[i].buf, q[k].data, (size_t)q[k].bytes);
    memmove(&q[k], &q[k + 1], sizeof *q * (size_t)(*nq - k - 1));
    (*nq)--;
    m[i].done = 1;
    m[i].moved = d[i].bytes;
    return 0;
  }
  return 0;
}

/* What reading stream s (len bytes, then the end) must do to the fixed set:
   the result, and the failure's rank in *who. */
static cc_result model(const unsigned char *s, size_t len, const opdef *d, mop *m, int *who, mq *q) {
  size_t pos = 0;
  int nq = 0;
  for (;;) {
    int32_t tag;
    uint64_t bytes, avail;
    unsigned sig;
    int i, hit = -1;
    if (len - pos < CC__FRAME) return CC_OK;           /* the end, between frames */
    tag = (int32_t)m_get32(s + pos + 4);
    bytes = (uint64_t)m_get32(s + pos + 8) | (uint64_t)m_get32(s + pos + 12) << 32;
    sig = (unsigned)(bytes >> 48);
    bytes &= ((uint64_t)1 << 48) - 1;
    if (m_get32(s + pos) != 0x31446363u || bytes > ((uint64_t)1 << 44) || (tag < 0 && tag != -2 && tag != -3) ||
        (sig && tag != -2) ||
        (tag == -3 && (bytes < 8 || bytes > CC__ABORT_MAX))) {
      *who = 1;
      return CC_ERR_SYSTEM;
    }
    pos += CC__FRAME;
    avail = CC__MIN((uint64_t)(len - pos), bytes);
    if (tag == -3) {
      uint32_t code;
      *who = 1;
      if (avail < bytes) return CC_ERR_PEER_LOST;
      code = m_get32(s + pos);
      if (code == 0 || code == (uint32_t)CC_ERR_INVALID_ARG || code >= (uint32_t)CC_RESULT_COUNT) return CC_ERR_SYSTEM;
      *who = (int32_t)m_get32(s + pos + 4);
      return (cc_result)code;
    }
    for (i = 0; i < NOPS; i++) {
      if (!m[i].eligible || m[i].done || d[i].tag != tag) continue;
      if (m_take(m, d, i, q, &nq) != 0) { *who = 0; return CC_ERR_MISMATCH; }
      if (m[i].done) continue;
      if (tag == -2 && sig != 0) { *who = 0; return CC_ERR_MISMATCH; }
      if (d[i].bytes != bytes) { *who = 0; return CC_ERR_MISMATCH; }
      hit = i;
      break;
    }
    /* an unexpected message is allocated as its bytes arrive: never refused up front */
    if (hit >= 0) {
      m[hit].matched = 1;
      if (avail) memcpy(m[hit].buf, s + pos, (size_t)avail);
      m[hit].moved = (size_t)avail;
    }
    if (avail < bytes) { *who = 1; return CC_ERR_PEER_LOST; }
    if (hit >= 0) {
      m[hit].done = 1;
    } else {
      FZ_CHECK(nq < MAXQ);
      q[nq].tag = tag;
      q[nq].sig = sig;
      q[nq].bytes = bytes;
      q[nq].data = s + pos;
      nq++;
      for (i = 0; i < NOPS; i++) {     /* the first pending receive of the tag takes the oldest */
        if (!m[i].eligible || m[i].done || m[i].matched || d[i].tag != tag) continue;
        if (m_take(m, d, i, q, &nq) != 0) { *who = 0; return CC_ERR_MISMATCH; }
        break;
      }
    }
    pos += (size_t)bytes;
  }
}

/* ------------------------------------------------------------------ the target */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int sv[2], mode, dynamic, i, who = -1, nsops = 0, progress = 0, stop = 0;
  size_t off = 0, len;
  uint32_t lcg;
  const unsigned char *s;
  const opdef *defs;
  cc_comm *c;
  cc__net *nt;
  cc__conn *cn;
  cc__xop ops[NOPS];
  fz_ctx x;
  cc_result r = CC_OK, want;
  mop m[NOPS];
  static mq q[MAXQ];

  if (size < 1 || size > (1u << 17)) return 0;
  mode = data[0];
  s = data + 1;
  len = size - 1;
  dynamic = (mode & 0x40) != 0;
  lcg = (uint32_t)(mode & 0x1f) * 2654435761u + 1;
  defs = dynamic ? dyn_ops : fixed_ops;

  /* rank 0 of 2, net mode, connected to rank 1 */
  c = cc__comm_new(0, 2, NULL);
  FZ_CHECK(c != NULL);
  nt = (cc__net *)CC_MALLOC(sizeof *nt);
  FZ_CHECK(nt != NULL);
  memset(nt, 0, sizeof *nt);
  c->net = nt;
  c->hdr = &nt->own_hdr;
  nt->ngroups = 2;
  nt->tcp_only = 1;
  nt->conn = (cc__conn *)CC_MALLOC(sizeof(cc__conn) * 2);
  FZ_CHECK(nt->conn != NULL);
  memset(nt->conn, 0, sizeof(cc__conn) * 2);
  nt->conn[0].fd = -1;
  FZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  FZ_CHECK(fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK) == 0);
  cn = &nt->conn[1];
  cn->fd = sv[0];
  cn->stage = (unsigned char *)CC_MALLOC(CC__STAGE);
  FZ_CHECK(cn->stage != NULL);

  /* the receives and their buffers; the model's copies start out the same */
  memset(&x, 0, sizeof x);
  x.defs = defs;
  memset(m, 0, sizeof m);
  for (i = 0; i < NOPS; i++) {
    const opdef *d = &defs[i];
    unsigned char *buf = d->bytes ? (unsigned char *)malloc(d->bytes) : NULL;
    FZ_CHECK(d->bytes == 0 || buf != NULL);
    if (buf) memset(buf, 0xee, d->bytes);
    cc__xop_set(&ops[i], d->is_send, d->peer, d->tag, buf, d->bytes);
    ops[i].live = d->live;
    ops[i].sidx = -1;
    if (!dynamic) ops[i].started = d->live;
    m[i].eligible = !d->is_send && d->live && d->peer == 1;
    m[i].buf = d->bytes ? (unsigned char *)malloc(d->bytes) : NULL;
    if (m[i].buf) memset(m[i].buf, 0xee, d->bytes);
  }

  /* feed the stream */
  while (off < len && !stop) {
    size_t piece = len - off;
    ssize_t w;
    if (!(mode & 0x80)) {
      lcg = lcg * 1103515245u + 12345u;
      piece = CC__MIN(piece, 1 + (size_t)(lcg >> 8) % ((mode & 0x20) ? 4096 : 24));
    }
    w = write(sv[1], s + off, piece);
    if (w > 0) off += (size_t)w;
    else FZ_CHECK(w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    if (dynamic && (r = cc__net_start(c, ops, NOPS, &nsops, fz_done, &x, "fuzz")) != CC_OK) break;
    r = cc__conn_read(c, ops, NOPS, 1, dynamic ? fz_done : NULL, &x, &progress, "fuzz");
    if (r != CC_OK) stop = 1;
    else if (dynamic && (r = cc__net_start(c, ops, NOPS, &nsops, fz_done, &x, "fuzz")) != CC_OK) stop = 1;
    else fz_no_stuck(cn, ops);
    FZ_CHECK(!cn->eof);
  }
  close(sv[1]);
  if (r == CC_OK && dynamic) r = cc__net_start(c, ops, NOPS, &nsops, fz_done, &x, "fuzz");
  if (r == CC_OK) {
    r = cc__conn_read(c, ops, NOPS, 1, dynamic ? fz_done : NULL, &x, &progress, "fuzz");
    if (r == CC_OK) FZ_CHECK(cn->eof);
  }
  if (r == CC_OK && dynamic) r = cc__net_start(c, ops, NOPS, &nsops, fz_done, &x, "fuzz");
  if (r == CC_OK) fz_no_stuck(cn, ops);
  FZ_CHECK((int)r >= 0 && (int)r < (int)CC_RESULT_COUNT);
  FZ_CHECK(nsops == 0);

  if (r != CC_OK) {                    /* every failure is posted and shuts the connection */
    FZ_CHECK(c->hdr->fail_code != 0);
    FZ_CHECK(nt->propagated);
    if (r != CC_ERR_INVALID_ARG) FZ_CHECK(c->failed != 0);
    FZ_CHECK(fz_terminated(c->err, sizeof c->err));
  }

  if (!dynamic) {
    want = model(s, len, defs, m, &who, q);
    if (r != want) {
      fprintf(stderr, "fuzz: cc__conn_read gave %d, the model %d (%s)\n", (int)r, (int)want, c->err);
      FZ_CHECK(r == want);
    }
    if (r != CC_OK) {
      FZ_CHECK(c->hdr->fail_code == (uint32_t)r);
      FZ_CHECK(c->hdr->fail_rank == who);
    }
    for (i = 0; i < NOPS; i++) {
      const opdef *d = &defs[i];
      if (!m[i].eligible) {            /* untouched */
        FZ_CHECK(!ops[i].done && ops[i].moved == 0 && ops[i].hdr_sent == 0);
      } else {
        FZ_CHECK(ops[i].done == m[i].done);
        if (m[i].done || m[i].matched) FZ_CHECK(ops[i].moved == m[i].moved);
      }
      if (d->bytes) FZ_CHECK(memcmp(ops[i].buf, m[i].buf, d->bytes) == 0);
    }
  } else {
    for (i = 0; i < NOPS; i++) {
      const opdef *d = &defs[i];
      FZ_CHECK(x.calls[i] == (!d->is_send && ops[i].done));
      if (!d->is_send && ops[i].done && d->peer == 1 && d->bytes) {
        /* the payload of some frame of this tag and size */
        size_t pos = 0, found = 0;
        while (!found && len - pos >= CC__FRAME) {
          int32_t tag = (int32_t)m_get32(s + pos + 4);
          uint64_t b = (uint64_t)m_get32(s + pos + 8) | (uint64_t)m_get32(s + pos + 12) << 32;
          pos += CC__FRAME;
          if (b > len - pos) break;
          if (tag == d->tag && b == d->bytes && memcmp(s + pos, ops[i].buf, d->bytes) == 0) found = 1;
          pos += (size_t)b;
        }
        FZ_CHECK(found);
      }
    }
  }

  for (i = 0; i < NOPS; i++) {
    free(ops[i].buf);
    free(m[i].buf);
  }
  cc__comm_free(c);                    /* closes sv[0], frees the queue, the stage, the net */
  return 0;
}
