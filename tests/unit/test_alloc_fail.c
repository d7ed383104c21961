/* test_alloc_fail.c - a failed allocation inside a collective is an error,
 * never CC_OK with wrong data.
 *
 * The library is built here with CC_MALLOC/CC_FREE pointing at an allocator
 * that can be told to fail the k-th allocation from now. For every transport
 * (shared memory, and TCP: CC_TRANSPORT=tcp under cc_spawn) and every kind of
 * reduction (a user op, float32 sum, a premul_sum, float16 sum), and for k = 1,
 * 2, 3, ... until the call makes fewer than k allocations, a 2-rank job runs
 * one all_reduce (small and large count) with rank 0's k-th allocation
 * failing. Each rank's result must be either CC_OK with the right data (the
 * allocation had a fallback) or an error; rank 0, whose allocation failed,
 * must say CC_ERR_NO_MEMORY when it failed. The reference is computed here from
 * the known inputs (small integers, exact in float).
 *
 * Joining and splitting too: on each transport, each of the allocations of one
 * rank's cc_comm_init (a 2-rank job meeting at tcp://127.0.0.1) and of its
 * cc_comm_split fails in turn. That rank must say CC_ERR_NO_MEMORY, the real
 * cause (not a timeout waiting for a peer it never served), without crashing
 * or hanging; or succeed with a communicator that works. */
#define _GNU_SOURCE
#include <stddef.h>
static void *t_malloc(size_t n);
static void t_free(void *p);
#define CC_MALLOC(n) t_malloc(n)
#define CC_FREE(p) t_free(p)
#define CC_IMPLEMENTATION
#include "cc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

static long t_arm;      /* > 0: the t_arm-th allocation from now fails */
static long t_seen;     /* allocations since arming */
static int failed;
static void *t_malloc(size_t n) {
  if (t_arm > 0) {
    t_seen++;
    if (--t_arm == 0) return NULL;
  }
  return malloc(n);
}
static void t_free(void *p) { free(p); }

enum { K_USER, K_SUM, K_PREMUL, K_HALF, K_KINDS };
static const char *const kind_names[K_KINDS] = {"user op (sum)", "float32 sum", "premul_sum (x2)", "float16 sum"};

struct rep {
  int code;               /* result of the armed call */
  int wrong;              /* elements that differ from the reference */
  long reached;           /* 1: the k-th allocation was reached */
  int early;              /* rank 1: the unarmed call already failed */
  char err[400];
};
static struct rep *sh;    /* [2], shared with the ranks */

static void user_sum(void *inout, const void *in, size_t count, cc_dtype t, void *user) {
  float *a = (float *)inout;
  const float *b = (const float *)in;
  size_t i;
  (void)t;
  (void)user;
  for (i = 0; i < count; i++) a[i] += b[i];
}

struct job { int kind; long k; size_t count; };

static int rank_fn(cc_comm *c, void *arg) {
  const struct job *j = (const struct job *)arg;
  int me = cc_comm_rank(c);
  size_t i, n = j->count;
  float *x = (float *)malloc(n * sizeof(float) + 1), *y = (float *)malloc(n * sizeof(float) + 1);
  uint16_t *hx = (uint16_t *)malloc(n * 2 + 1), *hy = (uint16_t *)malloc(n * 2 + 1);
  cc_op op = CC_SUM;
  cc_result r;
  float two = 2.0f;
  struct rep *out = &sh[me];
  for (i = 0; i < n; i++) {
    x[i] = (float)((me + 1) * (int)(i % 7));
    hx[i] = cc__float_to_half(x[i]);
  }
  if (j->kind == K_USER && cc_op_create(c, user_sum, NULL, &op) != CC_OK) return 1;
  if (j->kind == K_PREMUL && cc_op_create_premul_sum(c, CC_FLOAT32, &two, &op) != CC_OK) return 1;
  /* one call first, so that scratch kept between calls is made unarmed */
  r = j->kind == K_HALF ? cc_all_reduce(c, hx, hy, n, CC_FLOAT16, CC_SUM) : cc_all_reduce(c, x, y, n, CC_FLOAT32, op);
  if (r != CC_OK) {
    /* rank 0 makes no allocation fail here; rank 1 may still be in this call
       when rank 0's next one fails, and a failure ends every call still
       running (docs/errors.md): an error, not wrong data */
    out->code = me == 0 ? -1 : (int)r;
    out->early = 1;
    snprintf(out->err, sizeof out->err, "unarmed call: %.300s", cc_comm_last_error(c));
    return 0;
  }
  if (me == 0) { t_seen = 0; t_arm = j->k; }
  r = j->kind == K_HALF ? cc_all_reduce(c, hx, hy, n, CC_FLOAT16, CC_SUM) : cc_all_reduce(c, x, y, n, CC_FLOAT32, op);
  out->reached = me == 0 ? (t_arm == 0 && t_seen == j->k) : 0;
  t_arm = 0;
  out->code = (int)r;
  snprintf(out->err, sizeof out->err, "%.300s", r == CC_OK ? "" : cc_comm_last_error(c));
  if (r == CC_OK) {
    for (i = 0; i < n; i++) {
      float want = (float)(3 * (int)(i % 7)) * (j->kind == K_PREMUL ? 2.0f : 1.0f);
      float got = j->kind == K_HALF ? cc__half_to_float(hy[i]) : y[i];
      if (got != want) out->wrong++;
    }
  }
  free(x); free(y); free(hx); free(hy);
  return 0;
}

/* ---- joining and splitting: every allocation of one rank's cc_comm_init, or
   of its cc_comm_split, failing in turn */

/* A port nothing listens on now, on loopback. */
static int free_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

/* One rank of a 2-rank job meeting at tcp://127.0.0.1:port. With arm > 0 the
   arm-th allocation from the start of its cc_comm_init (split 0) or of its
   cc_comm_split (split 1: colour 7 for both, the ranks in reverse order)
   fails. A communicator it makes must work: an all_reduce, and in a split
   the new rank. */
static void job_rank(int rank, int port, const char *transport, int split, long arm, struct rep *out) {
  cc_config cfg;
  cc_comm *c = NULL, *s = NULL;
  char where[64];
  cc_result r;
  float x = (float)(rank + 1), y = 0;
  snprintf(where, sizeof where, "tcp://127.0.0.1:%d", port);
  cc_config_init(&cfg);
  cfg.rank = rank;
  cfg.world_size = 2;
  cfg.init_method = where;
  cfg.transport = transport;
  cfg.timeout_ms = 20000;
  if (split && (r = cc_comm_init(&c, &cfg)) != CC_OK) {
    out->code = -1;
    snprintf(out->err, sizeof out->err, "unarmed cc_comm_init: %.300s", cc_comm_last_error(NULL));
    return;
  }
  t_seen = 0;
  t_arm = arm;
  r = split ? cc_comm_split(c, 7, -rank, &s) : cc_comm_init(&s, &cfg);
  out->reached = arm > 0 && t_arm == 0 && t_seen == arm;
  t_arm = 0;
  out->code = (int)r;
  snprintf(out->err, sizeof out->err, "%.300s", r == CC_OK ? "" : cc_comm_last_error(split ? c : NULL));
  if (r == CC_OK) {
    r = cc_all_reduce(s, &x, &y, 1, CC_FLOAT32, CC_SUM);
    out->wrong = r != CC_OK || y != 3.0f || (split && cc_comm_rank(s) != 1 - rank);
    cc_comm_destroy(s);
  }
  if (c) cc_comm_destroy(c);
}

/* The cc segments in /dev/shm, each name between newlines, into buf. */
static void shm_names(char *buf, size_t len) {
  DIR *d = opendir("/dev/shm");
  struct dirent *e;
  size_t n = 1;
  snprintf(buf, len, "\n");
  while (d && (e = readdir(d)) != NULL)
    if (strncmp(e->d_name, "cc-", 3) == 0 && n + strlen(e->d_name) + 2 < len)
      n += (size_t)snprintf(buf + n, len - n, "%s\n", e->d_name);
  if (d) closedir(d);
}

/* Removes the cc segments that are not in `before`: what a killed rank left,
   as cc_spawn removes what its killed ranks leave. */
static void shm_clean(const char *before) {
  static char now[1 << 16];
  char *p, *q, name[300];
  shm_names(now, sizeof now);
  for (p = now + 1; (q = strchr(p, '\n')) != NULL; p = q + 1) {
    snprintf(name, sizeof name, "\n%.*s\n", (int)(q - p), p);
    if (!strstr(before, name)) {
      snprintf(name, sizeof name, "/dev/shm/%.*s", (int)(q - p), p);
      unlink(name);
    }
  }
}

/* Runs the job with rank `armed`'s k-th allocation failing. Returns 0 when
   that rank made fewer than k, 1 when it reported, -1 when it crashed or
   hung (why says so). The other rank may wait for a peer that gave up (for
   the rendezvous, until its timeout): once the armed one is done, it is
   killed (what it says is another test's). */
static int job_run(const char *transport, int split, int armed, long k, char *why, size_t wlen) {
  pid_t pid[2];
  int port = free_port(), st = 0, i, waited;
  static char before[1 << 16];
  shm_names(before, sizeof before);
  memset(sh, 0, 2 * sizeof *sh);
  for (i = 0; i < 2; i++) {
    if ((pid[i] = fork()) == 0) {
      job_rank(i, port, transport, split, i == armed ? k : 0, &sh[i]);
      _exit(0);
    }
  }
  for (waited = 0; waited < 2000 && waitpid(pid[armed], &st, WNOHANG) == 0; waited++) usleep(5000);
  if (waited == 2000) {
    kill(pid[armed], SIGKILL);
    waitpid(pid[armed], &st, 0);
  }
  kill(pid[!armed], SIGKILL);
  waitpid(pid[!armed], NULL, 0);
  shm_clean(before);
  if (waited == 2000) snprintf(why, wlen, "k=%ld: rank %d still running after 10 s", k, armed);
  else if (!WIFEXITED(st)) snprintf(why, wlen, "k=%ld: rank %d crashed (signal %d)", k, armed, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
  else if (sh[armed].code < 0) snprintf(why, wlen, "k=%ld: rank %d: %s", k, armed, sh[armed].err);
  else return sh[armed].reached ? 1 : 0;
  return -1;
}

static void job_sweep(const char *transport, int split, int armed) {
  const char *call = split ? "cc_comm_split" : "cc_comm_init";
  const struct rep *a = &sh[armed];
  long k, nomem = 0, ok = 0;
  char why[1000] = "";
  int rc = 0;
  for (k = 1; k <= 400; k++) {
    if ((rc = job_run(transport, split, armed, k, why, sizeof why)) <= 0) break;
    if (a->code == CC_OK && a->wrong) {
      snprintf(why, sizeof why, "k=%ld: %s CC_OK, but the communicator does not work: %s", k, call, a->err);
      break;
    }
    if (a->code != CC_OK && a->code != CC_ERR_NO_MEMORY) {
      snprintf(why, sizeof why, "k=%ld: its allocation failed and it said %s: %s", k, cc_strerror((cc_result)a->code),
               a->err);
      break;
    }
    if (a->code == CC_OK) ok++;
    else nomem++;
  }
  if (why[0] || k > 400) {
    printf("FAIL: alloc_fail.%s: %s, rank %d: %s\n", split ? "split" : "init", transport, armed,
           why[0] ? why : "more than 400 allocations");
    failed = 1;
  } else {
    printf("PASS: alloc_fail.%s: %s, rank %d: each of the %ld allocations of %s failed in turn: %ld times "
           "CC_ERR_NO_MEMORY, %ld times a communicator that works\n", split ? "split" : "init", transport, armed,
           nomem + ok, call, nomem, ok);
  }
  fflush(stdout);
}

int main(void) {
  static const char *const transports[2] = {"shm", "tcp"};
  static const size_t counts[2] = {1000, 300000};
  int ti, kind, ci;
  sh = (struct rep *)mmap(NULL, 2 * sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) { printf("FAIL: alloc_fail: mmap\n"); return 1; }
  setenv("CC_TIMEOUT", "20", 1);
  setenv("CC_SPAWN_GRACE_MS", "3000", 1);
  for (ti = 0; ti < 2; ti++) {
    setenv("CC_TRANSPORT", transports[ti], 1);
    for (kind = 0; kind < K_KINDS; kind++)
      for (ci = 0; ci < 2; ci++) {
        long k, nomem = 0, ok = 0, bad = 0;
        char why[1000] = "";
        for (k = 1; k <= 200; k++) {
          struct job j;
          int rc;
          j.kind = kind; j.k = k; j.count = counts[ci];
          memset(sh, 0, 2 * sizeof *sh);
          rc = cc_spawn(2, rank_fn, &j);
          if (rc != 0 || sh[0].code < 0 || sh[1].code < 0) {
            bad++;
            snprintf(why, sizeof why, "k=%ld: cc_spawn %d: %s %s", k, rc, sh[0].err, sh[1].err);
            break;
          }
          if (!sh[0].reached) break;            /* the call made fewer than k allocations */
          if ((sh[0].code == CC_OK && sh[0].wrong) || (sh[1].code == CC_OK && sh[1].wrong)) {
            bad++;
            snprintf(why, sizeof why, "k=%ld: CC_OK with %d / %d wrong elements on ranks 0 / 1", k, sh[0].wrong,
                     sh[1].wrong);
            break;
          }
          if (sh[0].code != CC_OK && sh[0].code != CC_ERR_NO_MEMORY) {
            bad++;
            snprintf(why, sizeof why, "k=%ld: rank 0's allocation failed and it said %s: %s", k,
                     cc_strerror((cc_result)sh[0].code), sh[0].err);
            break;
          }
          if (sh[0].code == CC_ERR_NO_MEMORY) nomem++; else ok++;
        }
        if (bad) {
          printf("FAIL: alloc_fail: %s, %s, count %zu: %s\n", transports[ti], kind_names[kind], counts[ci], why);
          failed = 1;
        } else {
          printf("PASS: alloc_fail: %s, %s, count %zu: each of %ld allocations failed in turn: %ld times "
                 "CC_ERR_NO_MEMORY, %ld times CC_OK with the right data, never wrong data\n",
                 transports[ti], kind_names[kind], counts[ci], nomem + ok, nomem, ok);
        }
        fflush(stdout);
      }
  }
  for (ti = 0; ti < 2; ti++) {
    int split, armed;
    for (split = 0; split < 2; split++)
      for (armed = 0; armed < 2; armed++) job_sweep(transports[ti], split, armed);
  }
  return failed;
}
