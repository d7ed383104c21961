/* sec_probe.c - the attacker's and the victim's side of tests/multihost/test_security.sh
 * (docs/security.md). One rank of a job joins with cc_comm_init(&c, NULL)
 * (rank, size and rendezvous from the environment); the other modes are
 * strangers that never link the library's logic (they write the handshake's
 * bytes by hand, as an attacker would).
 *
 *     sec_probe allreduce COUNT      a rank: all_reduce of COUNT float32, checked
 *     sec_probe unexp                a rank: rank 1 floods rank 0 with messages
 *                                    nobody receives
 *     sec_probe stranger HOST PORT WORLD
 *                                    a stranger's rank-1 hello at a rendezvous
 *     sec_probe flood HOST PORT N SECONDS [dribble MS]
 *                                    N silent (or dribbling) connections, kept
 *                                    up for SECONDS
 *     sec_probe relay LPORT HOST PORT DIR OFFSET
 *                                    forward one connection, flip one byte
 *     sec_probe tokens N             judge N random-looking tokens
 *     sec_probe uid                  cc_get_unique_id
 *     sec_probe spawn N              cc_spawn of N ranks, each an all_reduce
 *
 * The ranks join with cc_comm_init(&c, NULL); with SEC_CFG_TOKEN set (even to
 * ""), with a cc_config whose token is its value instead. With
 * SEC_NO_GETRANDOM=1 the probe first forbids itself the getrandom system call
 * (a seccomp filter: ENOSYS), as a sandbox may.
 *
 * allreduce  every rank: x[i] = (rank + 1) * (i % 7 + 1); all_reduce sum in
 *            place; the reference is exact (small integers). Prints
 *                result: CODE: MESSAGE
 *                data: ok | data: WRONG (N of COUNT elements differ)
 *                nofile: SOFT of HARD             (the open-files limit after cc_comm_init)
 *                env token: absent | present      (CC_TOKEN after cc_comm_init)
 *                proc environ token: absent | present   (CC_TOKEN=VALUE in
 *                                                 /proc/self/environ, what others read)
 *            exit 0 for CC_OK with the right data, 3 for CC_OK with WRONG data
 *            (never acceptable), 1 for an error (init's too).
 * unexp      rank 1 sends empty messages with tag 7, which nobody receives,
 *            until a send fails; rank 0 waits in a cc_recv of tag 1 from rank 1.
 *            Each prints `result: CODE: MESSAGE` and rank 0 `rss: KB` (its peak
 *            resident set, VmHWM); exit 1 (an error is the expected outcome),
 *            0 if a call succeeded.
 * stranger   connects to HOST:PORT and says a well-formed version-4 hello of
 *            kind rendezvous, from rank 1 to rank 0 of a world of WORLD, with
 *            the token flag set and the empty job nonce of env://; reads the
 *            server's answer; if it was not refused, answers with a response
 *            whose MAC is random, and reads the verdict. Prints one line:
 *                stranger: chal B bytes status S, verdict V bytes status T mac M, closed C
 *            (B, V: bytes received of each; M: "zero" when the verdict's 32 MAC
 *            bytes are all zero, else "NONZERO"; C: yes when the server closed
 *            the connection within 3 s). Exit 0.
 * flood      opens N connections to HOST:PORT that never send a byte, and for
 *            SECONDS opens a new one as soon as the server closes one (a
 *            sustained flood); SECONDS 0: open them, hold them until killed.
 *            With `dribble MS` each connection sends the start of a rank's
 *            hello one byte every MS milliseconds (never its last byte), as
 *            slowly as it can while never being silent for long. It raises its
 *            own open-files limit to the hard one. Prints `flood: N open` once
 *            all are (or after 5 s), and at the end `flood: opened A, closed
 *            by the server C, B bytes dribbled`.
 * relay      listens on 127.0.0.1:LPORT (0: a port the kernel picks; either
 *            way it prints `relay: listening on port N`) for one connection, connects it to
 *            HOST:PORT and forwards both ways; the byte at OFFSET of the
 *            direction DIR (c2s: from the client, s2c: towards it) is flipped
 *            (xor 0x55). Prints `relay: flipped byte OFFSET of DIR` when it did;
 *            exits when either side closes.
 * tokens     N tokens of 32 hex digits from a fixed pseudo-random sequence (the
 *            same every run), each judged as cc_comm_init judges a token
 *            (cc__token_check); prints `tokens: R of N refused` and the first
 *            few refused. Exit 0.
 * uid        `result: CODE: MESSAGE` of cc_get_unique_id; exit 0 for CC_OK.
 * spawn      cc_spawn(N, ...), each rank an all_reduce of 1000 float32 checked;
 *            prints `spawn: status S: MESSAGE` (cc_comm_last_error(NULL)); exit S.
 *
 * With -DSEC_PROBE_SHIM this file is instead an LD_PRELOAD shim (the test
 * builds it: cc -shared -fPIC -DSEC_PROBE_SHIM ... -ldl): it flips (xor 0x55)
 * the byte at offset SEC_FLIP_AT of the first TCP stream that this process
 * receives that far (with SEC_FLIP_STREAM=K: of its K-th TCP stream, counted
 * from 1 in the order their first bytes arrive), as an interposer on recv()
 * on the path would, and says `flip: byte N of fd F` on stderr.
 *
 * Built into BUILD/probes, not BUILD/tests: it is no test on its own. */
#ifdef SEC_PROBE_SHIM
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define SHIM_FDS 4096
static unsigned long long shim_got[SHIM_FDS];
static int shim_num[SHIM_FDS];         /* which TCP stream of this process (1, 2, ...), 0: not seen yet */
static unsigned long long shim_at = ~0ull;
static int shim_ready, shim_done, shim_streams, shim_which;
static ssize_t (*shim_recv)(int, void *, size_t, int);
static int (*shim_close)(int);

static void shim_init(void) {
  const char *s = getenv("SEC_FLIP_AT");
  if (shim_ready) return;
  *(void **)&shim_recv = dlsym(RTLD_NEXT, "recv");
  *(void **)&shim_close = dlsym(RTLD_NEXT, "close");
  if (s && *s) shim_at = strtoull(s, NULL, 10);
  s = getenv("SEC_FLIP_STREAM");
  shim_which = s && *s ? atoi(s) : 0;
  shim_ready = 1;
}

static int shim_is_tcp(int fd) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  int type = 0;
  socklen_t tl = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM) return 0;
  if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0) return 0;
  return sa.ss_family == AF_INET || sa.ss_family == AF_INET6;
}

ssize_t recv(int fd, void *buf, size_t len, int flags) {
  ssize_t k;
  shim_init();
  k = shim_recv(fd, buf, len, flags);
  if (k > 0 && !(flags & MSG_PEEK) && fd >= 0 && fd < SHIM_FDS && !shim_done && shim_is_tcp(fd)) {
    unsigned long long a = shim_got[fd], b = a + (unsigned long long)k;
    if (!shim_num[fd]) shim_num[fd] = ++shim_streams;
    if (shim_at >= a && shim_at < b && (!shim_which || shim_which == shim_num[fd])) {
      ((unsigned char *)buf)[shim_at - a] ^= 0x55;
      shim_done = 1;
      fprintf(stderr, "flip: byte %llu of fd %d\n", shim_at, fd);
    }
    shim_got[fd] = b;
  }
  return k;
}

int close(int fd) {
  shim_init();
  if (fd >= 0 && fd < SHIM_FDS) shim_got[fd] = 0, shim_num[fd] = 0;
  return shim_close(fd);
}

#else /* the probe */

#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>
#include "forbid.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "CC_ERR_TIMEOUT: a peer did not ..." -> "CC_ERR_TIMEOUT" */
static void result(cc_result r, const char *msg) {
  const char *s = cc_strerror(r);
  printf("result: %.*s: %s\n", (int)strcspn(s, ":"), s, msg);
  fflush(stdout);
}

static int join(cc_comm **c) {
  cc_config cfg;
  cc_result r;
  cc_config_init(&cfg);
  cfg.token = getenv("SEC_CFG_TOKEN");
  r = cc_comm_init(c, cfg.token ? &cfg : NULL);
  if (r != CC_OK) {
    result(r, cc_comm_last_error(NULL));
    return -1;
  }
  return 0;
}

/* Does /proc/self/environ (the environment block this process started with,
   as other processes of this user can read it) hold an entry `name` with a
   value that is not empty? */
static int proc_environ_has(const char *name) {
  static char buf[1 << 16];
  size_t n, i, k = strlen(name);
  FILE *f = fopen("/proc/self/environ", "rb");
  if (!f) return 0;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  for (i = 0; i + k < n; i++)
    if ((i == 0 || buf[i - 1] == 0) && !memcmp(buf + i, name, k) && buf[i + k]) return 1;
  return 0;
}

static int mode_allreduce(size_t n) {
  cc_comm *c;
  float *x;
  size_t i, wrong = 0;
  int rank, size;
  cc_result r;
  if (join(&c) != 0) return 1;
  {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) printf("nofile: %llu of %llu\n", (unsigned long long)rl.rlim_cur,
                                                   (unsigned long long)rl.rlim_max);
  }
  printf("env token: %s\n", getenv("CC_TOKEN") ? "present" : "absent");
  printf("proc environ token: %s\n", proc_environ_has("CC_TOKEN=") ? "present" : "absent");
  rank = cc_comm_rank(c);
  size = cc_comm_size(c);
  x = (float *)malloc(n * sizeof *x + 1);
  if (!x) return 1;
  for (i = 0; i < n; i++) x[i] = (float)((rank + 1) * (int)(i % 7 + 1));
  r = cc_all_reduce(c, x, x, n, CC_FLOAT32, CC_SUM);
  result(r, r == CC_OK ? "all_reduce" : cc_comm_last_error(c));
  for (i = 0; i < n; i++)
    if (x[i] != (float)((size * (size + 1) / 2) * (int)(i % 7 + 1))) wrong++;
  if (r == CC_OK) {
    if (wrong) printf("data: WRONG (%zu of %zu elements differ)\n", wrong, n);
    else printf("data: ok\n");
  }
  fflush(stdout);
  cc_comm_destroy(c);
  free(x);
  return r != CC_OK ? 1 : wrong ? 3 : 0;
}

static long peak_rss_kb(void) {
  char line[256];
  long kb = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
  fclose(f);
  return kb;
}

static int mode_unexp(void) {
  cc_comm *c;
  cc_result r;
  long sent = 0;
  int me;
  if (join(&c) != 0) return 1;
  me = cc_comm_rank(c);
  if (me == 1) {
    do { r = cc_send(c, NULL, 0, CC_UINT8, 0, 7); sent++; } while (r == CC_OK && sent < 100000000L);
    printf("sent: %ld\n", sent);
  } else if (cc_comm_rank(c) == 0) {
    int v = 0;
    r = cc_recv(c, &v, 1, CC_INT32, 1, 1);
    printf("rss: %ld\n", peak_rss_kb());
  } else {
    r = cc_barrier(c);
  }
  result(r, r == CC_OK ? "ok" : cc_comm_last_error(c));
  cc_comm_destroy(c);
  /* the flooding rank's failure is the expected end, not news: under ccrun
     its non-zero exit would have rank 0 killed before it reports */
  return r == CC_OK || me == 1 ? 0 : 1;
}

static int dial(const char *host, int port, int nonblock) {
  struct sockaddr_in sa;
  int fd = socket(AF_INET, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0), one = 1;
  if (fd < 0) return -1;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) { close(fd); return -1; }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) { close(fd); return -1; }
  return fd;
}

/* Up to n bytes within ms milliseconds: how many; *closed when the peer closed. */
static size_t read_some(int fd, unsigned char *p, size_t n, int ms, int *closed) {
  size_t got = 0;
  double end = now_s() + ms / 1000.0;
  *closed = 0;
  while (got < n) {
    struct pollfd pf;
    ssize_t k;
    int left = (int)((end - now_s()) * 1000);
    if (left <= 0) break;
    pf.fd = fd; pf.events = POLLIN; pf.revents = 0;
    if (poll(&pf, 1, left) <= 0) continue;
    k = recv(fd, p + got, n - got, 0);
    if (k == 0) { *closed = 1; break; }
    if (k < 0) { if (errno == EINTR) continue; *closed = 1; break; }
    got += (size_t)k;
  }
  return got;
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void rnd(unsigned char *p, size_t n) {
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(p, 1, n, f) != n) memset(p, 0x5a, n);
  if (f) fclose(f);
}

static int mode_stranger(const char *host, int port, int world) {
  unsigned char hello[96], chal[48], resp[40], verd[40], extra[64];
  size_t nc, nv = 0;
  int fd = dial(host, port, 0), closed = 0, i, macz = 1;
  uint32_t st = 0xffffffffu, vs = 0xffffffffu;
  if (fd < 0) { printf("stranger: cannot connect to %s port %d\n", host, port); return 1; }
  memset(hello, 0, sizeof hello);
  memcpy(hello, "ccH1", 4);
  put32(hello + 4, 4);                 /* version */
  put32(hello + 8, 1);                 /* kind: rendezvous */
  put32(hello + 12, (uint32_t)world);
  put32(hello + 16, 1);                /* from rank 1 */
  put32(hello + 20, 0);                /* to rank 0 */
  rnd(hello + 64, 16);                 /* nonce; job nonce "" (env://) */
  put32(hello + 80, 1 | 4);            /* a token, AES-256-GCM */
  if (send(fd, hello, sizeof hello, MSG_NOSIGNAL) != (ssize_t)sizeof hello) { printf("stranger: send failed\n"); return 1; }
  nc = read_some(fd, chal, sizeof chal, 3000, &closed);
  if (nc == sizeof chal) st = get32(chal + 8);
  if (nc == sizeof chal && st == 0 && !closed) {
    memset(resp, 0, sizeof resp);
    memcpy(resp, "ccH1", 4);
    rnd(resp + 8, 32);                 /* a MAC this stranger cannot compute */
    if (send(fd, resp, sizeof resp, MSG_NOSIGNAL) == (ssize_t)sizeof resp) {
      nv = read_some(fd, verd, sizeof verd, 3000, &closed);
      if (nv == sizeof verd) {
        vs = get32(verd + 4);
        for (i = 8; i < 40; i++) if (verd[i]) macz = 0;
      }
    }
  }
  if (!closed) read_some(fd, extra, sizeof extra, 3000, &closed);
  printf("stranger: chal %zu bytes status %u, verdict %zu bytes status %u mac %s, closed %s\n", nc, st, nv, vs,
         macz ? "zero" : "NONZERO", closed ? "yes" : "no");
  close(fd);
  return 0;
}

static volatile sig_atomic_t g_stop;
static void on_term(int s) { (void)s; g_stop = 1; }

static int mode_flood(const char *host, int port, int n, double secs, double dribble_ms) {
  int *fds = (int *)malloc(sizeof(int) * (size_t)n), i, open_now = 0, said = 0;
  size_t *sent = (size_t *)calloc((size_t)n, sizeof(size_t));
  double *next = (double *)malloc(sizeof(double) * (size_t)n);
  struct pollfd *pf = (struct pollfd *)malloc(sizeof(struct pollfd) * (size_t)n);
  unsigned char hello[96];
  long opened = 0, closed = 0, bytes = 0;
  double t0 = now_s(), gap = dribble_ms / 1000.0;
  struct rlimit rl;
  if (!fds || !pf || !sent || !next) return 1;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {   /* n connections need n descriptors */
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  memset(hello, 0, sizeof hello);      /* what a rank's hello starts with; never all of it */
  memcpy(hello, "ccH1", 4);
  put32(hello + 4, 4);
  put32(hello + 8, 1);
  put32(hello + 12, 3);
  put32(hello + 16, 1);
  signal(SIGTERM, on_term);
  for (i = 0; i < n; i++) {
    fds[i] = dial(host, port, 1);
    if (fds[i] >= 0) opened++;
    next[i] = t0 + gap * (double)i / (double)n;   /* the dribbles spread over one gap */
  }
  while (!g_stop) {
    double t = now_s();
    if (secs > 0 && t - t0 >= secs) break;
    open_now = 0;
    for (i = 0; i < n; i++) {
      pf[i].fd = fds[i]; pf[i].events = POLLIN; pf[i].revents = 0;
      if (fds[i] >= 0) open_now++;
      if (gap > 0 && fds[i] >= 0 && t >= next[i]) {        /* one more byte, never the last */
        if (sent[i] < sizeof hello - 1 && send(fds[i], hello + sent[i], 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
          sent[i]++;
          bytes++;
        }
        next[i] += gap;
        if (next[i] < t) next[i] = t + gap;
      }
    }
    if (!said && (open_now == n || t - t0 > 5)) { printf("flood: %d open\n", open_now); fflush(stdout); said = 1; }
    poll(pf, (nfds_t)n, gap > 0 ? 5 : 20);
    for (i = 0; i < n; i++) {
      char b[64];
      if (fds[i] >= 0 && !(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (fds[i] >= 0 && recv(fds[i], b, sizeof b, MSG_DONTWAIT) > 0) continue;   /* it said something: stay */
      if (fds[i] >= 0) { close(fds[i]); closed++; fds[i] = -1; }
      if (secs > 0) {                  /* at once, at the back of the queue */
        fds[i] = dial(host, port, 1);
        if (fds[i] >= 0) opened++;
        sent[i] = 0;
        next[i] = now_s() + gap;
      }
    }
  }
  printf("flood: opened %ld, closed by the server %ld, %ld bytes dribbled\n", opened, closed, bytes);
  for (i = 0; i < n; i++) if (fds[i] >= 0) close(fds[i]);
  return 0;
}

static int mode_relay(int lport, const char *host, int port, const char *dir, unsigned long long off) {
  struct sockaddr_in sa;
  int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1, a, b, c2s = !strcmp(dir, "c2s");
  unsigned long long moved[2] = {0, 0};
  int flipped = 0;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)lport);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 4) != 0) {
    printf("relay: cannot listen on port %d\n", lport);
    return 1;
  }
  {                                    /* LPORT 0: the kernel's choice, no race with another bind */
    socklen_t sl = sizeof sa;
    if (getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) return 1;
  }
  printf("relay: listening on port %d\n", ntohs(sa.sin_port));
  fflush(stdout);
  if ((a = accept(lfd, NULL, NULL)) < 0) return 1;
  for (;;) {                           /* the server may not be up yet */
    struct pollfd pf;
    int e = 0;
    socklen_t el = sizeof e;
    b = dial(host, port, 1);
    pf.fd = b; pf.events = POLLOUT; pf.revents = 0;
    if (b >= 0 && poll(&pf, 1, 1000) == 1 && getsockopt(b, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && !e) break;
    if (b >= 0) close(b);
    usleep(20000);
  }
  fcntl(b, F_SETFL, 0);
  for (;;) {
    struct pollfd pf[2];
    unsigned char buf[65536];
    int i;
    pf[0].fd = a; pf[0].events = POLLIN; pf[0].revents = 0;
    pf[1].fd = b; pf[1].events = POLLIN; pf[1].revents = 0;
    if (poll(pf, 2, 1000) < 0 && errno != EINTR) break;
    for (i = 0; i < 2; i++) {
      ssize_t k;
      int to = i == 0 ? b : a, d = i == 0 ? 0 : 1;   /* d 0: client to server */
      if (!pf[i].revents) continue;
      k = recv(pf[i].fd, buf, sizeof buf, 0);
      if (k <= 0) goto done;
      if (!flipped && (d == 0) == c2s && off >= moved[d] && off < moved[d] + (unsigned long long)k) {
        buf[off - moved[d]] ^= 0x55;
        flipped = 1;
        printf("relay: flipped byte %llu of %s\n", off, dir);
        fflush(stdout);
      }
      moved[d] += (unsigned long long)k;
      if (send(to, buf, (size_t)k, MSG_NOSIGNAL) != k) goto done;
    }
  }
done:
  printf("relay: done after %llu bytes c2s, %llu s2c\n", moved[0], moved[1]);
  return 0;
}

static int mode_tokens(long n) {
  uint64_t x = 0x9e3779b97f4a7c15ull;  /* splitmix64 from a fixed seed */
  long i, bad = 0;
  for (i = 0; i < n; i++) {
    unsigned char raw[16];
    char tok[33], why[160];
    int j;
    for (j = 0; j < 16; j += 8) {
      uint64_t z = (x += 0x9e3779b97f4a7c15ull);
      int b;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      for (b = 0; b < 8; b++) raw[j + b] = (unsigned char)(z >> (8 * b));
    }
    for (j = 0; j < 16; j++) snprintf(tok + 2 * j, 3, "%02x", raw[j]);
    if (cc__token_check(tok, why, sizeof why) != 0 && ++bad <= 3) printf("refused: %s: %s\n", tok, why);
  }
  printf("tokens: %ld of %ld refused\n", bad, n);
  return 0;
}

static int mode_uid(void) {
  cc_unique_id id;
  cc_result r = cc_get_unique_id(&id);
  result(r, r == CC_OK ? "get_unique_id" : cc_comm_last_error(NULL));
  return r == CC_OK ? 0 : 1;
}

static int spawn_rank(cc_comm *c, void *arg) {
  float x[1000];
  int i, n = cc_comm_size(c), bad = 0;
  cc_result r;
  (void)arg;
  for (i = 0; i < 1000; i++) x[i] = (float)(cc_comm_rank(c) + 1);
  r = cc_all_reduce(c, x, x, 1000, CC_FLOAT32, CC_SUM);
  for (i = 0; i < 1000; i++) bad += x[i] != (float)(n * (n + 1) / 2);
  return r != CC_OK || bad;
}

static int mode_spawn(int n) {
  int st = cc_spawn(n, spawn_rank, NULL);
  printf("spawn: status %d: %s\n", st, cc_comm_last_error(NULL));
  return st;
}

int main(int argc, char **argv) {
  const char *ng = getenv("SEC_NO_GETRANDOM");
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (ng && !strcmp(ng, "1") && tu_forbid_syscall(SYS_getrandom) != 0) {
    printf("result: cannot install the seccomp filter: %s\n", strerror(errno));
    return 4;
  }
  if (argc == 2 && !strcmp(argv[1], "uid")) return mode_uid();
  if (argc == 3 && !strcmp(argv[1], "spawn")) return mode_spawn(atoi(argv[2]));
  if (argc == 3 && !strcmp(argv[1], "tokens")) return mode_tokens(strtol(argv[2], NULL, 10));
  if (argc == 3 && !strcmp(argv[1], "allreduce")) return mode_allreduce((size_t)strtoul(argv[2], NULL, 10));
  if (argc == 2 && !strcmp(argv[1], "unexp")) return mode_unexp();
  if (argc == 5 && !strcmp(argv[1], "stranger")) return mode_stranger(argv[2], atoi(argv[3]), atoi(argv[4]));
  if (argc == 6 && !strcmp(argv[1], "flood"))
    return mode_flood(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]), 0);
  if (argc == 8 && !strcmp(argv[1], "flood") && !strcmp(argv[6], "dribble"))
    return mode_flood(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]), atof(argv[7]));
  if (argc == 7 && !strcmp(argv[1], "relay"))
    return mode_relay(atoi(argv[2]), argv[3], atoi(argv[4]), argv[5], strtoull(argv[6], NULL, 10));
  fprintf(stderr, "usage: %s allreduce COUNT | unexp | stranger HOST PORT WORLD | flood HOST PORT N SECONDS [dribble MS] | "
          "relay LPORT HOST PORT c2s|s2c OFFSET | tokens N | uid | spawn N\n", argv[0]);
  return 2;
}

#endif
