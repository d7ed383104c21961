/* tests/fuzz/fuzz_handshake.c - libFuzzer target: the accepting side of the
   handshake, cc__hs_serve (@tcp), with its table shrunk to 4 connections and
   the time a connection has for each message to 2 ms, so that every input
   reaches a full table and eviction.

   A server thread runs cc__hs_serve on a loopback listener for 25 ms (or until
   every connection the input could complete is kept). Meanwhile this thread
   plays up to 8 clients from the input's script: after a config byte (bit 0
   a token, bit 1 CC_NET_ENCRYPT=1 with it, bit 2 records follow (the
   rendezvous' kind), else data connections), each op byte names a client
   (high bits) and an action (low nibble):
     0-1  connect                       2  send 1..64 raw bytes of the input
     3-5  send the next 1..96 bytes of the client's genuine stream (hello, then
          its response once the server's challenge is in, then its record once
          the verdict is in: messages split anywhere, several in one write)
     6    read what the server sent (and extend the genuine stream)
     7    send the next genuine byte with a bit flipped (changed on the way)
     8    close                          9  sleep 1-4 ms
     10-15 as 3-5 (most ops make progress).
   Checks, besides ASan, UBSan and LeakSanitizer:
     - a connection is kept (take) only when its client sent an untouched
       genuine stream, and as the rank it claimed; never twice for one rank;
     - with a token, no client ever receives a verdict with a non-zero MAC
       unless its own response was genuine, and a refused hello gets at most
       the 48-byte challenge;
     - with a token, the keys agree: a message sealed by the client with its
       keys opens with the server's keys of the kept connection, and back. */
#define CC__PEND_MAX 4
#define CC__HS_WAIT (2 * 1000000ull)
#include "fuzz_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#define NCLI 8
#define WORLD 9
static const char *TOKEN = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978";
static const char *JOB = "0123456789abcdef0123456789abcdef";

typedef struct cli {
  int fd, dead;                        /* dead: closed, or its stream was changed */
  int rank;                            /* the rank its hello claims */
  unsigned char out[CC__HELLO + CC__RESP + CC__REC + CC__TAG];
  size_t nout, sent;                   /* genuine bytes known, sent */
  unsigned char in[CC__CHAL + CC__VERD + 64];
  size_t nin;
  int stage;                           /* 0 hello queued, 1 resp queued, 2 record queued */
  int resp_genuine, done;              /* done: its whole genuine stream went out untouched */
  cc__sec *sec;                        /* with a token: its keys, once the verdict is in */
} cli;

typedef struct kept { int from, fd; cc__sec *sec; } kept;

static struct {
  cc_comm c;
  int ready, lfd, port, token, encrypt, rec, served;
  kept k[NCLI * 2];
  int nk;
} g;

static int take(void *ctx, const cc__hello_t *h, int fd, const unsigned char *rec, cc__sec *sec) {
  int i;
  (void)ctx;
  if (g.rec) FZ_CHECK(rec != NULL);
  for (i = 0; i < g.nk; i++)
    if (g.k[i].from == h->from) return 0;          /* a second claim of one rank */
  FZ_CHECK(g.nk < NCLI * 2);
  FZ_CHECK(!g.token == !sec);
  g.k[g.nk].from = h->from;
  g.k[g.nk].fd = fd;
  g.k[g.nk++].sec = sec;
  return 1;
}

static void *server(void *arg) {
  cc__hs_srv v;
  int want = *(int *)arg;
  memset(&v, 0, sizeof v);
  v.c = &g.c;
  v.kind = g.rec ? CC__HELLO_RDV : CC__HELLO_DATA;
  v.world = WORLD;
  v.me = 0;
  v.job = g.rec ? "" : JOB;
  v.token = g.token ? TOKEN : NULL;
  v.encrypt = g.encrypt;
  v.with_rec = g.rec;
  v.take = take;
  (void)cc__hs_serve(&v, g.lfd, want, cc__now_ns() + 25 * CC__MS);
  __atomic_store_n(&g.served, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void setup(void) {
  if (g.ready) return;
  g.lfd = cc__sock_listen("127.0.0.1", 0, 64, &g.port);
  FZ_CHECK(g.lfd >= 0);
  g.ready = 1;
}

static void queue_hello(cli *k) {
  cc__hello_t h;
  memset(&h, 0, sizeof h);
  h.kind = g.rec ? CC__HELLO_RDV : CC__HELLO_DATA;
  h.world = WORLD;
  h.from = k->rank;
  h.to = 0;
  if (!g.rec) memcpy(h.job, JOB, 33);
  cc__random(h.nonce, 16);
  h.flags = (g.token ? CC__HS_TOKEN : 0) | (g.encrypt ? CC__HS_ENCRYPT : 0) | (cc__aead_have_gcm() ? CC__HS_GCM : 0);
  cc__hello_encode(k->out, &h);
  k->nout = CC__HELLO;
}

/* Take in what the server sent; queue the next genuine message. */
static void pump_in(cli *k, int ms) {
  struct pollfd pf;
  long n;
  if (k->fd < 0) return;
  pf.fd = k->fd; pf.events = POLLIN; pf.revents = 0;
  if (poll(&pf, 1, ms) <= 0) return;
  n = cc__sock_recv(k->fd, k->in + k->nin, sizeof k->in - k->nin);
  if (n <= 0) return;
  k->nin += (size_t)n;
  if (g.token && k->nin >= CC__CHAL && k->stage == 0) FZ_CHECK(cc__get32(k->in + 8) == 0 || k->nin <= CC__CHAL);
  if (k->stage == 0 && k->nin >= CC__CHAL && cc__get32(k->in + 8) == 0 && k->nout == CC__HELLO) {
    unsigned char *r = k->out + CC__HELLO;
    memset(r, 0, CC__RESP);
    cc__put32(r, CC__HS_MAGIC);
    if (g.token) cc__hs_mac(TOKEN, "cc-c", k->out, k->in, NULL, r + 8);
    k->nout += CC__RESP;
    k->stage = 1;
    k->resp_genuine = !k->dead;
  }
  if (k->nin >= CC__CHAL + CC__VERD) {
    const unsigned char *v = k->in + CC__CHAL;
    int i, zero = 1;
    for (i = 8; i < 40; i++) zero &= v[i] == 0;
    if (g.token && !zero) FZ_CHECK(k->resp_genuine && k->sent >= CC__HELLO + CC__RESP);
    if (k->stage == 1 && cc__get32(v + 4) == 0 && g.rec) {
      cc__rec r;
      unsigned char *p = k->out + CC__HELLO + CC__RESP;
      memset(&r, 0, sizeof r);
      snprintf(r.host, sizeof r.host, "fuzzhost%d", k->rank);
      snprintf(r.ip, sizeof r.ip, "127.0.0.1");
      r.port = 1000 + (uint32_t)k->rank;
      cc__rec_encode(p, &r);
      if (g.token && !k->sec)
        k->sec = cc__sec_derive(TOKEN, 1, (int)cc__get32(k->in + 32), g.encrypt, k->out, k->in, k->out + CC__HELLO, v);
      if (k->sec) cc__sec_seal(k->sec, p, CC__REC, p);
      k->nout += CC__REC + (k->sec ? CC__TAG : 0);
      k->stage = 2;
    } else if (k->stage == 1 && cc__get32(v + 4) == 0 && !g.rec && g.token && !k->sec) {
      k->sec = cc__sec_derive(TOKEN, 1, (int)cc__get32(k->in + 32), g.encrypt, k->out, k->in, k->out + CC__HELLO, v);
    }
  }
}

/* The client's whole handshake is out (hello and response; with records the
   sealed record too): what it sends or does after that is the data stream's
   business, not the handshake's, and the server may have kept it already. */
static int stream_out(const cli *k) {
  size_t all = CC__HELLO + CC__RESP + (g.rec ? CC__REC + (g.token ? CC__TAG : 0) : 0);
  return k->sent >= all;
}

static void send_genuine(cli *k, size_t n) {
  long w;
  if (k->fd < 0) return;
  n = CC__MIN(n, k->nout - k->sent);
  if (!n) return;
  w = cc__sock_send2(k->fd, k->out + k->sent, n, NULL, 0);
  if (w > 0) k->sent += (size_t)w;
  if (!k->dead && k->sent == k->nout && (k->stage == 2 || (k->stage == 1 && !g.rec && k->nin >= CC__CHAL + CC__VERD &&
                                                            cc__get32(k->in + CC__CHAL + 4) == 0)))
    k->done = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cli k[NCLI];
  pthread_t th;
  size_t pos = 1;
  int i, j, ops = 0, want = NCLI;
  if (size < 1) return 0;
  setup();
  memset(&g.c, 0, sizeof g.c);
  g.token = data[0] & 1;
  g.encrypt = g.token && (data[0] & 2);
  g.rec = (data[0] >> 2) & 1;
  g.nk = 0;
  g.served = 0;
  memset(k, 0, sizeof k);
  for (i = 0; i < NCLI; i++) { k[i].fd = -1; k[i].rank = 1 + i; }
  FZ_CHECK(pthread_create(&th, NULL, server, &want) == 0);
  while (pos < size && ops++ < 64) {
    unsigned op = data[pos++], t = op & 15;
    cli *q = &k[(op >> 4) % NCLI];
    if (t <= 1) {
      if (q->fd < 0 && !q->nout) {
        q->fd = cc__sock_connect("127.0.0.1", g.port, cc__now_ns() + 20 * CC__MS);
        if (q->fd >= 0) queue_hello(q);
      }
    } else if (t == 2) {
      size_t n = pos < size ? (size_t)(data[pos++] % 64) + 1 : 1;
      n = CC__MIN(n, size - pos);
      if (q->fd >= 0 && n) { (void)cc__sock_send2(q->fd, data + pos, n, NULL, 0); if (!q->done && !stream_out(q)) q->dead = 1; }
      pos += n;
    } else if (t == 6) {
      pump_in(q, 2);
    } else if (t == 7) {
      if (q->fd >= 0 && q->sent < q->nout) {   /* the byte changes on the way: the client MACs the genuine one */
        unsigned char b = (unsigned char)(q->out[q->sent] ^ (1u << (pos < size ? data[pos++] % 8 : 0)));
        if (cc__sock_send2(q->fd, &b, 1, NULL, 0) == 1) { q->sent++; q->dead = 1; }
      }
    } else if (t == 8) {
      if (q->fd >= 0) { cc__fd_close(q->fd); q->fd = -1; if (!q->done && !stream_out(q)) q->dead = 1; }
    } else if (t == 9) {
      cc__sleep_ns((uint64_t)(1 + (pos < size ? data[pos++] % 4 : 0)) * CC__MS);
    } else {
      size_t n = pos < size ? (size_t)data[pos++] % 96 + 1 : 96;
      pump_in(q, 0);
      send_genuine(q, n);
    }
  }
  while (!__atomic_load_n(&g.served, __ATOMIC_ACQUIRE))   /* the genuine clients finish what they started */
    for (i = 0; i < NCLI; i++) { pump_in(&k[i], 1); if (!k[i].dead) send_genuine(&k[i], 1000); }
  pthread_join(th, NULL);
  for (i = 0; i < NCLI; i++) pump_in(&k[i], 0);
  /* every kept connection is a genuine client's, as the rank it claimed */
  for (j = 0; j < g.nk; j++) {
    cli *q = NULL;
    for (i = 0; i < NCLI; i++) if (k[i].rank == g.k[j].from) q = &k[i];
    FZ_CHECK(q != NULL);
    FZ_CHECK(q->sent >= CC__HELLO + CC__RESP);
    FZ_CHECK(!q->dead || !g.token);
    if (g.token && q->sec && g.k[j].sec && q->fd >= 0) {       /* the keys agree, both ways */
      unsigned char m[40], s[40 + CC__TAG];
      memcpy(m, "a message sealed with the client's key!", 40);
      cc__sec_seal(q->sec, m, 40, s);
      FZ_CHECK(cc__sec_open(g.k[j].sec, s, 40) == 0 && memcmp(s, m, 40) == 0);
      cc__sec_seal(g.k[j].sec, m, 40, s);
      FZ_CHECK(cc__sec_open(q->sec, s, 40) == 0 && memcmp(s, m, 40) == 0);
    }
    cc__fd_close(g.k[j].fd);
    cc__sec_free(g.k[j].sec);
  }
  for (i = 0; i < NCLI; i++) { cc__fd_close(k[i].fd); cc__sec_free(k[i].sec); }
  return 0;
}
