/* test_failures.c - what the library does when things go wrong. Each case is a
 * job of real processes; the ranks write what they saw into a shared mapping,
 * and this process judges it and prints PASS / FAIL lines.
 *
 *   init/...      cc_comm_init with a bad cc_config: CC_ERR_INVALID_ARG naming the
 *                 field, *out NULL, at once
 *   args/...      bad arguments (NULL buffers, count x size overflowing size_t,
 *                 root / peer / tag out of range, unknown dtype or op, an op not
 *                 defined for the dtype, overlapping buffers...): CC_ERR_INVALID_ARG
 *                 with a message naming the argument, and the next all_reduce on
 *                 the communicator works
 *   mismatch/...  ranks call different collectives, counts, dtypes, ops, roots:
 *                 CC_ERR_MISMATCH on every rank, no hang; then CC_ERR_ABORTED
 *   async         an asynchronous all_reduce whose counts disagree: the request's
 *                 own message (cc_request_error) names the mismatch, and keeps it
 *                 after a later call failed with another message
 *   abort         cc_comm_abort from a second thread while the main thread waits in
 *                 an all_reduce: every rank's pending and later calls return
 *                 CC_ERR_ABORTED
 *   timeout/...   a rank skips an all_reduce: the others get CC_ERR_TIMEOUT naming
 *                 it after the timeout (CC_TIMEOUT=1 under cc_spawn, or
 *                 cfg.timeout_ms = 1000 winning over CC_TIMEOUT=30)
 *   kill/...      rank 2 of 4 dies by SIGKILL while the others wait in an
 *                 all_reduce (large count, small count, and in the middle of a
 *                 stream of large ones): the others get CC_ERR_PEER_LOST naming
 *                 rank 2 within 2 s, then CC_ERR_ABORTED at once; under cc_spawn,
 *                 cc_spawn returns 137 within 3 s
 *   shm/segments  the job's segments are mode 0600 while a rank is late to join,
 *                 gone from /dev/shm once every rank joined, and nothing is left
 *                 after every rank is killed with SIGKILL
 *
 * After every case: no process left and nothing new in /dev/shm/cc-*.
 *
 * With CC_TEST_TRANSPORT=tcp every case runs with CC_TRANSPORT=tcp: the ranks
 * meet in shared memory, then every pair talks over TCP (test_tcp_suites.sh).
 *
 * The kill and timeout/cfg cases start the ranks as ccrun does (fork; RANK,
 * WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, CC_JOB_ID; cc_comm_init) rather than
 * with cc_spawn: cc_spawn stops the survivors as soon as a rank dies, so there
 * they may not live to report. kill/spawn checks what cc_spawn itself does. */
#define _GNU_SOURCE
#define CC_IMPLEMENTATION
#include "cc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXR 8
#define MAXCHECK 128
#define MS 1000000LL
#define SEC 1000000000LL

/* ---------------------------------------------------------------- shared state */

struct report {
  int reached;            /* 1: the rank recorded its results; -1: init failed */
  int code, code2;        /* the call under test, and the call after it */
  int64_t t_call, t_ret;  /* when the call under test was entered, returned */
  int64_t d2;             /* how long the call after it took */
  long iterations;
  char err[256], err2[256];
};

struct check {
  char name[112];
  int ok;
  char why[400];
};

struct shared {
  int64_t kill_ns;        /* when the victim killed itself */
  int64_t abort_ns;       /* when cc_comm_abort was called */
  struct report r[MAXR];
  int nchecks[MAXR];
  struct check checks[MAXR][MAXCHECK];
};

static struct shared *sh;
static int quick;
static int npass, nfail;

/* ---------------------------------------------------------------- utilities */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * MS;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static double secs(int64_t ns) { return (double)ns / 1e9; }

/* "CC_ERR_TIMEOUT" for CC_ERR_TIMEOUT; four buffers, for use in one printf */
static const char *code_name(int r) {
  static char buf[4][48];
  static int next;
  char *b = buf[next++ % 4];
  const char *s = cc_strerror((cc_result)r);
  snprintf(b, sizeof buf[0], "%.*s", (int)strcspn(s ? s : "?", ":"), s ? s : "?");
  return b;
}

/* copy src into dst[n], cut short if it must be */
static void copy_str(char *dst, size_t n, const char *src) {
  size_t len = strlen(src);
  if (len >= n) len = n - 1;
  memcpy(dst, src, len);
  dst[len] = 0;
}

static const char *last_error(const cc_comm *c) {
  const char *e = cc_comm_last_error(c);
  return e ? e : "(NULL)";
}

static void result(int ok, const char *fmt, ...) {
  va_list ap;
  fputs(ok ? "PASS: " : "FAIL: ", stdout);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
  if (ok) npass++; else nfail++;
}

static void note(const char *fmt, ...) {
  va_list ap;
  fputs("  note: ", stdout);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

/* msg names rank r: holds "rank R" not followed by another digit */
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

/* msg contains one of the '|'-separated words of `need`, ignoring case */
static int mentions(const char *msg, const char *need) {
  char word[64];
  while (*need) {
    size_t n = strcspn(need, "|");
    snprintf(word, sizeof word, "%.*s", (int)n, need);
    if (strcasestr(msg, word)) return 1;
    need += n;
    if (*need == '|') need++;
  }
  return 0;
}

/* A verdict over several ranks: ok until a rank fails it; the reasons pile up. */
struct verdict {
  int ok;
  double worst;
  char why[1400];
};

static void v_init(struct verdict *v) {
  v->ok = 1;
  v->worst = 0;
  v->why[0] = 0;
}

static void v_fail(struct verdict *v, int rank, const char *fmt, ...) {
  size_t n = strlen(v->why);
  va_list ap;
  v->ok = 0;
  if (n + 16 >= sizeof v->why) return;
  n += (size_t)snprintf(v->why + n, sizeof v->why - n, "%srank %d: ", n ? "; " : "", rank);
  if (n >= sizeof v->why) return;
  va_start(ap, fmt);
  vsnprintf(v->why + n, sizeof v->why - n, fmt, ap);
  va_end(ap);
}

/* ---------------------------------------------------------------- what is left */

struct shm_snap {
  int n;
  char name[256][128];
};
static struct shm_snap shm_before, shm_now;

static void shm_snapshot(struct shm_snap *s) {
  DIR *d = opendir("/dev/shm");
  struct dirent *e;
  s->n = 0;
  if (!d) return;
  while ((e = readdir(d)) != NULL && s->n < 256) {
    if (strncmp(e->d_name, "cc-", 3) == 0) {
      copy_str(s->name[s->n++], sizeof s->name[0], e->d_name);
    }
  }
  closedir(d);
}

static int shm_has(const struct shm_snap *s, const char *name) {
  int i;
  for (i = 0; i < s->n; i++) {
    if (strcmp(s->name[i], name) == 0) return 1;
  }
  return 0;
}

/* a live process has /dev/shm/NAME mapped or open: a job in progress, maybe
 * not ours (another suite on this host), so not a leak */
static int shm_in_use(const char *name) {
  char path[300], line[700], target[300];
  DIR *d = opendir("/proc"), *fds;
  struct dirent *e, *f;
  int found = 0;

  snprintf(target, sizeof target, "/dev/shm/%s", name);
  while (!found && d && (e = readdir(d)) != NULL) {
    FILE *m;
    if (atoi(e->d_name) <= 0) continue;
    snprintf(path, sizeof path, "/proc/%s/maps", e->d_name);
    if ((m = fopen(path, "r")) != NULL) {
      while (!found && fgets(line, sizeof line, m)) found = strstr(line, target) != NULL;
      fclose(m);
    }
    snprintf(path, sizeof path, "/proc/%s/fd", e->d_name);
    if (found || (fds = opendir(path)) == NULL) continue;
    while (!found && (f = readdir(fds)) != NULL) {
      char link[300];
      ssize_t n;
      snprintf(line, sizeof line, "%s/%s", path, f->d_name);
      n = readlink(line, link, sizeof link - 1);
      if (n > 0) {
        link[n] = 0;
        found = strncmp(link, target, strlen(target)) == 0;
      }
    }
    closedir(fds);
  }
  if (d) closedir(d);
  return found;
}

static int shm_new_entries(void) {
  int i, k = 0;
  shm_snapshot(&shm_now);
  for (i = 0; i < shm_now.n; i++) k += !shm_has(&shm_before, shm_now.name[i]);
  return k;
}

/* After a case: every process it started has ended (this process is a child
 * subreaper, so orphans come back to it and are seen here) and /dev/shm holds no
 * cc-* entry it did not hold before (and that no live process uses). Each waits
 * up to 2 s. Leftovers are reported, then killed or removed. */
static void check_clean(const char *cs) {
  int64_t end = now_ns() + 2 * SEC;
  int procs_left = 0, shm_left = 0, i, st;
  pid_t p;

  for (;;) {
    p = waitpid(-1, &st, WNOHANG);
    if (p > 0) continue;
    if (p < 0) break;                       /* ECHILD: no child at all */
    if (now_ns() > end) { procs_left = 1; break; }
    sleep_ms(20);
  }
  if (procs_left) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    char path[64], line[512];
    while (d && (e = readdir(d)) != NULL) {
      FILE *f;
      int pid = atoi(e->d_name), ppid = 0;
      if (pid <= 0) continue;
      snprintf(path, sizeof path, "/proc/%d/stat", pid);
      if (!(f = fopen(path, "r"))) continue;
      if (fgets(line, sizeof line, f)) {
        char *q = strrchr(line, ')');
        if (q) sscanf(q + 1, " %*c %d", &ppid);
      }
      fclose(f);
      if (ppid == getpid()) {
        result(0, "%s: process %d (%s) still runs 2 s after the job ended (killed now)", cs, pid,
               line);
        kill(pid, SIGKILL);
      }
    }
    if (d) closedir(d);
    while (waitpid(-1, &st, 0) > 0) {
    }
  }

  end = now_ns() + 2 * SEC;
  while (shm_new_entries() > 0 && now_ns() < end) sleep_ms(50);
  for (i = 0; i < shm_now.n; i++) {
    char path[160];
    if (shm_has(&shm_before, shm_now.name[i]) || shm_in_use(shm_now.name[i])) continue;
    shm_left = 1;
    result(0, "%s: left /dev/shm/%s (removed now)", cs, shm_now.name[i]);
    snprintf(path, sizeof path, "/dev/shm/%s", shm_now.name[i]);
    unlink(path);
  }
  if (!procs_left && !shm_left) result(1, "%s: no process and nothing in /dev/shm left", cs);
}

static void begin_case(void) {
  memset(sh, 0, sizeof *sh);
  shm_snapshot(&shm_before);
}

/* ---------------------------------------------------------------- starting jobs */

/* The body of a rank: runs with a ready communicator and writes its report. */
typedef void (*body_fn)(cc_comm *c, struct report *me, void *arg);

struct job {
  int n;
  int timeout_ms;         /* cfg.timeout_ms; 0: from CC_TIMEOUT */
  const char *cc_timeout; /* CC_TIMEOUT in the ranks' environment */
  int late_ms;            /* the last rank calls cc_comm_init this much later */
  body_fn body;
  void *arg;
  void (*watch)(struct job *j); /* called in the parent while the ranks run */
  char jobid[33];
  int status[MAXR];       /* as from waitpid; -1: never ended */
};

static void rank_main(struct job *j, int r) {
  char v[64];
  cc_config cfg;
  cc_comm *c = NULL;
  struct report *me = &sh->r[r];
  int rc;

  prctl(PR_SET_PDEATHSIG, SIGKILL);
  snprintf(v, sizeof v, "%d", r);
  setenv("RANK", v, 1);
  setenv("LOCAL_RANK", v, 1);
  snprintf(v, sizeof v, "%d", j->n);
  setenv("WORLD_SIZE", v, 1);
  setenv("LOCAL_WORLD_SIZE", v, 1);
  setenv("CC_TIMEOUT", j->cc_timeout, 1);
  if (r == j->n - 1 && j->late_ms > 0) sleep_ms(j->late_ms);
  cc_config_init(&cfg);
  if (j->timeout_ms) cfg.timeout_ms = j->timeout_ms;
  rc = cc_comm_init(&c, &cfg);
  if (rc != CC_OK) {
    me->code = rc;
    snprintf(me->err, sizeof me->err, "cc_comm_init: %.200s", last_error(NULL));
    me->reached = -1;
    _exit(3);
  }
  j->body(c, me, j->arg);
  cc_comm_destroy(c);
  _exit(0);
}

/* launch - start j->n ranks as ccrun would, with a fresh CC_JOB_ID, and wait
 * for them up to deadline_s; a rank still running then is killed and reported. */
static void launch(const char *cs, struct job *j, int deadline_s) {
  pid_t pid[MAXR];
  unsigned char raw[16];
  char id[33];
  int r, i, fd, left;
  int64_t end;

  fd = open("/dev/urandom", O_RDONLY);
  if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw) {
    uint64_t x = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
    for (i = 0; i < 16; i++) raw[i] = (unsigned char)(x >> (i % 8 * 8)) ^ (unsigned char)i;
  }
  if (fd >= 0) close(fd);
  for (i = 0; i < 16; i++) snprintf(id + 2 * i, 3, "%02x", raw[i]);
  setenv("CC_JOB_ID", id, 1);
  memcpy(j->jobid, id, sizeof id);

  fflush(stdout);
  fflush(stderr);
  for (r = 0; r < j->n; r++) {
    j->status[r] = -1;
    pid[r] = fork();
    if (pid[r] == 0) rank_main(j, r);
    if (pid[r] < 0) {
      result(0, "%s: fork: %s", cs, strerror(errno));
      pid[r] = 0;
    }
  }
  unsetenv("CC_JOB_ID");

  end = now_ns() + (int64_t)deadline_s * SEC;
  do {
    left = 0;
    for (r = 0; r < j->n; r++) {
      int st;
      if (pid[r] <= 0 || j->status[r] != -1) continue;
      if (waitpid(pid[r], &st, WNOHANG) == pid[r]) {
        j->status[r] = st;
      } else {
        left++;
      }
    }
    if (left && j->watch) j->watch(j);
    if (left) sleep_ms(10);
  } while (left && now_ns() < end);
  for (r = 0; r < j->n; r++) {
    if (pid[r] > 0 && j->status[r] == -1) {
      result(0, "%s: rank %d still runs %d s after the start (killed now)", cs, r, deadline_s);
      kill(pid[r], SIGKILL);
      waitpid(pid[r], &j->status[r], 0);
    }
    if (sh->r[r].reached == -1) result(0, "%s: rank %d: %s", cs, r, sh->r[r].err);
  }
}

static char watchdog_msg[200];

static void on_watchdog(int sig) {
  ssize_t n;
  (void)sig;
  n = write(1, watchdog_msg, strlen(watchdog_msg));
  (void)n;
  _exit(1);
}

/* spawn - cc_spawn(n, fn, arg), but never for more than 60 s */
static int spawn(const char *cs, int n, cc_main_fn fn, void *arg) {
  int rc;
  snprintf(watchdog_msg, sizeof watchdog_msg,
           "FAIL: %s: cc_spawn did not return within 60 s\n", cs);
  signal(SIGALRM, on_watchdog);
  fflush(stdout);
  fflush(stderr);
  alarm(60);
  rc = cc_spawn(n, fn, arg);
  alarm(0);
  return rc;
}

/* ---------------------------------------------------------------- rank side */

static void record(struct report *me, const cc_comm *c, int code) {
  me->code = code;
  copy_str(me->err, sizeof me->err, last_error(c));
}

/* After the call under test: one more (small) all_reduce; its code and time. */
static void second_call(struct report *me, cc_comm *c) {
  float x = 1.0f;
  int64_t t = now_ns();
  me->code2 = cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM);
  me->d2 = now_ns() - t;
  copy_str(me->err2, sizeof me->err2, last_error(c));
}

/* ---------------------------------------------------------------- init/... */

static void init_case(const char *what, cc_config cfg, int null_out, const char *need) {
  static int dummy;
  cc_comm *c = (cc_comm *)(void *)&dummy;
  int64_t t = now_ns();
  int rc = cc_comm_init(null_out ? NULL : &c, &cfg);
  double d = secs(now_ns() - t);
  const char *msg = last_error(NULL);

  if (rc == CC_OK && !null_out && c) cc_comm_destroy(c);
  if (rc != CC_ERR_INVALID_ARG) {
    result(0, "init/%s: returned %s, expected CC_ERR_INVALID_ARG (\"%s\")", what, code_name(rc),
           msg);
  } else if (!null_out && c != NULL) {
    result(0, "init/%s: CC_ERR_INVALID_ARG but *out is not NULL", what);
  } else if (!mentions(msg, need)) {
    result(0, "init/%s: message \"%s\" does not name %s", what, msg, need);
  } else if (d > 1.0) {
    result(0, "init/%s: took %.2f s; a bad argument is refused at once", what, d);
  } else {
    result(1, "init/%s: CC_ERR_INVALID_ARG, \"%s\"", what, msg);
  }
}

static void case_init(void) {
  cc_config cfg;

  cc_config_init(&cfg);
  cfg.timeout_ms = 2000;
  cfg.init_method = "tcp://127.0.0.1:1";
  cfg.rank = 4;
  cfg.world_size = 4;
  init_case("rank 4 of world_size 4", cfg, 0, "rank");
  cfg.rank = -2;
  init_case("rank -2", cfg, 0, "rank");
  cfg.rank = 0;
  cfg.world_size = 0;
  init_case("world_size 0", cfg, 0, "world_size");
  cfg.world_size = -5;
  init_case("world_size -5", cfg, 0, "world_size");
  cfg.world_size = 2;
  cfg.transport = "bogus";
  init_case("transport \"bogus\"", cfg, 0, "transport");
  cfg.transport = NULL;
  cfg.init_method = "bogus://x";
  init_case("init_method \"bogus://x\"", cfg, 0, "init_method");
  cfg.init_method = "tcp://127.0.0.1:1";
  cfg.timeout_ms = -1;
  init_case("timeout_ms -1", cfg, 0, "timeout");
  cfg.timeout_ms = 2000;
  init_case("out NULL", cfg, 1, "out");
}

/* ---------------------------------------------------------------- args/... */

/* Record one check of the argument list: `got` against `want`, the message
 * naming need1 and need2 (each "a|b": either word), then an all_reduce that must
 * still work. */
static void arg_check(cc_comm *c, const char *name, int got, int want, const char *need1,
                      const char *need2) {
  int rank = cc_comm_rank(c), size = cc_comm_size(c), i = sh->nchecks[rank], rc;
  struct check *k;
  char msg[256];
  float x = (float)(rank + 1), expect = (float)(size * (size + 1) / 2);

  if (i >= MAXCHECK) return;
  sh->nchecks[rank]++;
  k = &sh->checks[rank][i];
  copy_str(k->name, sizeof k->name, name);
  copy_str(msg, sizeof msg, last_error(c));
  k->ok = 1;
  if (got != want) {
    k->ok = 0;
    snprintf(k->why, sizeof k->why, "returned %s, expected %s (\"%s\")", code_name(got),
             code_name(want), msg);
  } else if ((need1 && !mentions(msg, need1)) || (need2 && !mentions(msg, need2))) {
    k->ok = 0;
    snprintf(k->why, sizeof k->why, "message \"%s\" does not name %s%s%s", msg, need1,
             need2 ? " and " : "", need2 ? need2 : "");
  }
  rc = cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM);
  if (rc != CC_OK || x != expect) {
    size_t n = strlen(k->why);
    k->ok = 0;
    snprintf(k->why + n, sizeof k->why - n, "%sthen a valid all_reduce returned %s (%s), sum %g",
             n ? "; " : "", code_name(rc), last_error(c), (double)x);
  }
}

#define EXPECT_BAD(name, call, need1, need2) \
  arg_check(c, name, (call), CC_ERR_INVALID_ARG, need1, need2)
#define EXPECT_OK(name, call) arg_check(c, name, (call), CC_OK, NULL, NULL)

/* The buffers and ranks the argument checks pass to the library. */
struct args_bufs {
  int rank, n, peer;
  float a[64], b[64], big[3 * 16 + 8], scalar;
  double d1[8], d2[8];
  size_t counts[MAXR], displs[MAXR];
};

/* This rank, its peer, zeroed buffers and the counts and displs of the _v calls. */
static void args_bufs_init(struct args_bufs *s, cc_comm *c) {
  unsigned i;

  s->rank = cc_comm_rank(c);
  s->n = cc_comm_size(c);
  s->peer = (s->rank + 1) % s->n;
  s->scalar = 2.0f;
  memset(s->a, 0, sizeof s->a);
  memset(s->b, 0, sizeof s->b);
  memset(s->big, 0, sizeof s->big);
  memset(s->d1, 0, sizeof s->d1);
  memset(s->d2, 0, sizeof s->d2);
  for (i = 0; i < MAXR; i++) {
    s->counts[i] = 2;
    s->displs[i] = 2 * i;
  }
}

/* Buffers that are NULL while the count is above 0. */
static void args_null_buffers(cc_comm *c, struct args_bufs *s) {
  float *a = s->a, *b = s->b;
  int peer = s->peer;

  EXPECT_BAD("all_reduce: sendbuf NULL, count 4", cc_all_reduce(c, NULL, b, 4, CC_FLOAT32, CC_SUM),
             "sendbuf", NULL);
  EXPECT_BAD("all_reduce: recvbuf NULL, count 4", cc_all_reduce(c, a, NULL, 4, CC_FLOAT32, CC_SUM),
             "recvbuf", NULL);
  EXPECT_BAD("broadcast: buf NULL, count 4", cc_broadcast(c, NULL, 4, CC_FLOAT32, 0), "buf", NULL);
  EXPECT_BAD("reduce: sendbuf NULL, count 4", cc_reduce(c, NULL, b, 4, CC_FLOAT32, CC_SUM, 0),
             "sendbuf", NULL);
  EXPECT_BAD("all_gather: recvbuf NULL, count 4", cc_all_gather(c, a, NULL, 4, CC_FLOAT32),
             "recvbuf", NULL);
  EXPECT_BAD("reduce_scatter: sendbuf NULL, count 4",
             cc_reduce_scatter(c, NULL, b, 4, CC_FLOAT32, CC_SUM), "sendbuf", NULL);
  EXPECT_BAD("all_to_all: recvbuf NULL, count 4", cc_all_to_all(c, a, NULL, 4, CC_FLOAT32),
             "recvbuf", NULL);
  EXPECT_BAD("send: buf NULL, count 4", cc_send(c, NULL, 4, CC_FLOAT32, peer, 0), "buf", NULL);
  EXPECT_BAD("recv: buf NULL, count 4", cc_recv(c, NULL, 4, CC_FLOAT32, peer, 0), "buf", NULL);
}

/* Counts whose count x dtype size (x size) overflows size_t. */
static void args_count_overflow(cc_comm *c, struct args_bufs *s) {
  float *a = s->a, *b = s->b, *big = s->big;
  int peer = s->peer;

  EXPECT_BAD("all_reduce: count SIZE_MAX/2 of float32 (bytes overflow size_t)",
             cc_all_reduce(c, a, b, SIZE_MAX / 2, CC_FLOAT32, CC_SUM), "count", NULL);
  EXPECT_BAD("broadcast: count SIZE_MAX/8+1 of float64",
             cc_broadcast(c, a, SIZE_MAX / 8 + 1, CC_FLOAT64, 0), "count", NULL);
  EXPECT_BAD("all_gather: count SIZE_MAX/2 of int8 (size x count overflows)",
             cc_all_gather(c, a, big, SIZE_MAX / 2, CC_INT8), "count", NULL);
  EXPECT_BAD("reduce_scatter: count SIZE_MAX/2 of int8 (size x count overflows)",
             cc_reduce_scatter(c, big, b, SIZE_MAX / 2, CC_INT8, CC_SUM), "count", NULL);
  EXPECT_BAD("send: count SIZE_MAX/4+1 of float32", cc_send(c, a, SIZE_MAX / 4 + 1, CC_FLOAT32, peer, 0),
             "count", NULL);
}

/* A root, peer or tag out of range. */
static void args_out_of_range(cc_comm *c, struct args_bufs *s) {
  float *a = s->a, *b = s->b, *big = s->big;
  int n = s->n, peer = s->peer;

  EXPECT_BAD("broadcast: root = size", cc_broadcast(c, a, 4, CC_FLOAT32, n), "root", NULL);
  EXPECT_BAD("broadcast: root = -1", cc_broadcast(c, a, 4, CC_FLOAT32, -1), "root", NULL);
  EXPECT_BAD("reduce: root = size", cc_reduce(c, a, b, 4, CC_FLOAT32, CC_SUM, n), "root", NULL);
  EXPECT_BAD("gather: root = 1000", cc_gather(c, a, big, 4, CC_FLOAT32, 1000), "root", NULL);
  EXPECT_BAD("scatter: root = -2", cc_scatter(c, big, b, 4, CC_FLOAT32, -2), "root", NULL);
  EXPECT_BAD("send: peer = size", cc_send(c, a, 4, CC_FLOAT32, n, 0), "peer", NULL);
  EXPECT_BAD("recv: peer = -1", cc_recv(c, b, 4, CC_FLOAT32, -1, 0), "peer", NULL);
  EXPECT_BAD("send: tag = -1", cc_send(c, a, 4, CC_FLOAT32, peer, -1), "tag", NULL);
}

/* An unknown dtype or op. */
static void args_unknown_dtype_op(cc_comm *c, struct args_bufs *s) {
  float *a = s->a, *b = s->b, *big = s->big;

  EXPECT_BAD("all_reduce: dtype 99", cc_all_reduce(c, a, b, 4, (cc_dtype)99, CC_SUM), "dtype",
             NULL);
  EXPECT_BAD("all_reduce: dtype CC_DTYPE_COUNT",
             cc_all_reduce(c, a, b, 4, CC_DTYPE_COUNT, CC_SUM), "dtype", NULL);
  EXPECT_BAD("broadcast: dtype -1", cc_broadcast(c, a, 4, (cc_dtype)-1, 0), "dtype", NULL);
  EXPECT_BAD("all_gather: dtype 99", cc_all_gather(c, a, big, 4, (cc_dtype)99), "dtype", NULL);
  EXPECT_BAD("all_reduce: op 99", cc_all_reduce(c, a, b, 4, CC_FLOAT32, 99), "op", NULL);
  EXPECT_BAD("all_reduce: op -1", cc_all_reduce(c, a, b, 4, CC_FLOAT32, -1), "op", NULL);
  EXPECT_BAD("reduce: op CC_OP_BUILTIN_COUNT (never created)",
             cc_reduce(c, a, b, 4, CC_FLOAT32, CC_OP_BUILTIN_COUNT, 0), "op", NULL);
}

/* Ops outside their dtypes: bitwise on floats, AVG on integers, MIN/MAX on complex. */
static void args_op_outside_dtype(cc_comm *c, struct args_bufs *s) {
  static const struct {
    cc_dtype t;
    cc_op op;
    const char *tname, *opname;
  } pairs[] = {
      {CC_FLOAT32, CC_BAND, "float32", "band"},   {CC_FLOAT64, CC_BOR, "float64", "bor"},
      {CC_FLOAT16, CC_BXOR, "float16", "bxor"},   {CC_BFLOAT16, CC_BAND, "bfloat16", "band"},
      {CC_COMPLEX64, CC_BXOR, "complex64", "bxor"}, {CC_INT32, CC_AVG, "int32", "avg"},
      {CC_UINT8, CC_AVG, "uint8", "avg"},         {CC_INT64, CC_AVG, "int64", "avg"},
      {CC_COMPLEX64, CC_MIN, "complex64", "min"}, {CC_COMPLEX128, CC_MAX, "complex128", "max"},
  };
  float *a = s->a, *b = s->b, *big = s->big;
  double *d1 = s->d1, *d2 = s->d2;
  unsigned i;
  char name[112];

  for (i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    snprintf(name, sizeof name, "all_reduce: op %s on %s", pairs[i].opname, pairs[i].tname);
    EXPECT_BAD(name, cc_all_reduce(c, d1, d2, 2, pairs[i].t, pairs[i].op), pairs[i].opname,
               pairs[i].tname);
  }
  EXPECT_BAD("reduce: op bxor on float32", cc_reduce(c, a, b, 4, CC_FLOAT32, CC_BXOR, 0), "bxor",
             "float32");
  EXPECT_BAD("reduce_scatter: op avg on int32",
             cc_reduce_scatter(c, big, b, 4, CC_INT32, CC_AVG), "avg", "int32");
}

/* Overlapping buffers that are not the in-place form, then the _v calls with NULL counts. */
static void args_overlap_and_v(cc_comm *c, struct args_bufs *s) {
  float *a = s->a, *big = s->big;
  size_t *counts = s->counts, *displs = s->displs;
  int rank = s->rank;

  EXPECT_BAD("all_reduce: recvbuf = sendbuf + 1, count 4",
             cc_all_reduce(c, a, a + 1, 4, CC_FLOAT32, CC_SUM), "sendbuf|recvbuf", NULL);
  EXPECT_BAD("all_reduce: sendbuf = recvbuf + 3, count 4",
             cc_all_reduce(c, a + 3, a, 4, CC_FLOAT32, CC_SUM), "sendbuf|recvbuf", NULL);
  EXPECT_BAD("all_gather: sendbuf = recvbuf + rank*count + 1",
             cc_all_gather(c, big + rank * 4 + 1, big, 4, CC_FLOAT32), "sendbuf|recvbuf", NULL);
  EXPECT_BAD("reduce_scatter: recvbuf = sendbuf + rank*count + 1",
             cc_reduce_scatter(c, big, big + rank * 4 + 1, 4, CC_FLOAT32, CC_SUM),
             "sendbuf|recvbuf", NULL);
  EXPECT_BAD("all_to_all: recvbuf = sendbuf + 2", cc_all_to_all(c, big, big + 2, 4, CC_FLOAT32),
             "sendbuf|recvbuf", NULL);

  /* variable sizes */
  EXPECT_BAD("all_gather_v: recv_counts NULL",
             cc_all_gather_v(c, a, 2, big, NULL, displs, CC_FLOAT32), "recv_counts", NULL);
  EXPECT_BAD("all_to_all_v: send_counts NULL",
             cc_all_to_all_v(c, a, NULL, displs, big, counts, displs, CC_FLOAT32), "send_counts",
             NULL);
}

/* User ops: premul_sum on the wrong dtype, an op used after cc_op_destroy, bad creations. */
static void args_user_ops(cc_comm *c, struct args_bufs *s) {
  float *a = s->a, *b = s->b, *scalar = &s->scalar;
  double *d1 = s->d1, *d2 = s->d2;
  cc_op op = 0, op2 = 0;
  int rc;

  rc = cc_op_create_premul_sum(c, CC_FLOAT32, scalar, &op);
  EXPECT_OK("op_create_premul_sum for float32", rc);
  if (rc == CC_OK) {
    EXPECT_BAD("all_reduce: a float32 premul_sum op on float64",
               cc_all_reduce(c, d1, d2, 4, CC_FLOAT64, op), "op|premul", "dtype|float64");
    EXPECT_OK("op_destroy", cc_op_destroy(c, op));
    EXPECT_BAD("all_reduce: an op after cc_op_destroy",
               cc_all_reduce(c, a, b, 4, CC_FLOAT32, op), "op", NULL);
  }
  EXPECT_BAD("op_create: fn NULL", cc_op_create(c, NULL, NULL, &op2), "fn", NULL);
  EXPECT_BAD("op_create_premul_sum: scalar NULL",
             cc_op_create_premul_sum(c, CC_FLOAT32, NULL, &op2), "scalar", NULL);
  EXPECT_BAD("op_create_premul_sum: dtype 99",
             cc_op_create_premul_sum(c, (cc_dtype)99, scalar, &op2), "dtype", NULL);
}

/* Communicator calls with bad arguments, then count 0, which is valid with NULL buffers. */
static void args_comm_and_count_zero(cc_comm *c, struct args_bufs *s) {
  float *a = s->a, *b = s->b;
  cc_comm *sub = NULL;

  EXPECT_BAD("comm_split: color -5", cc_comm_split(c, -5, 0, &sub), "color", NULL);
  if (sub) cc_comm_destroy(sub);
  EXPECT_BAD("all_reduce: comm NULL", cc_all_reduce(NULL, a, b, 4, CC_FLOAT32, CC_SUM), NULL,
             NULL);
  EXPECT_BAD("barrier: comm NULL", cc_barrier(NULL), NULL, NULL);

  /* count 0 is valid and the buffers may then be NULL */
  EXPECT_OK("all_reduce: count 0, NULL buffers", cc_all_reduce(c, NULL, NULL, 0, CC_FLOAT32, CC_SUM));
  EXPECT_OK("broadcast: count 0, NULL buffer", cc_broadcast(c, NULL, 0, CC_FLOAT32, 0));
  EXPECT_OK("all_gather: count 0, NULL buffers", cc_all_gather(c, NULL, NULL, 0, CC_FLOAT32));
}

static void args_body(cc_comm *c, struct report *me) {
  struct args_bufs s;

  args_bufs_init(&s, c);
  args_null_buffers(c, &s);
  args_count_overflow(c, &s);
  args_out_of_range(c, &s);
  args_unknown_dtype_op(c, &s);
  args_op_outside_dtype(c, &s);
  args_overlap_and_v(c, &s);
  args_user_ops(c, &s);
  args_comm_and_count_zero(c, &s);
  me->reached = 1;
}

static int args_fn(cc_comm *c, void *arg) {
  (void)arg;
  args_body(c, &sh->r[cc_comm_rank(c)]);
  return 0;
}

static void case_args(void) {
  const int n = 3;
  int rc, r, i;

  begin_case();
  rc = spawn("args", n, args_fn, NULL);
  for (r = 0; r < n; r++) {
    if (sh->r[r].reached != 1) {
      result(0, "args: rank %d stopped after %d checks (cc_spawn returned %d)", r,
             sh->nchecks[r], rc);
    }
  }
  for (i = 0; i < sh->nchecks[0]; i++) {
    int bad = -1;
    for (r = 0; r < n && bad < 0; r++) {
      if (i >= sh->nchecks[r] || !sh->checks[r][i].ok) bad = r;
    }
    if (bad < 0) {
      result(1, "args/%s", sh->checks[0][i].name);
    } else {
      result(0, "args/%s: rank %d: %s", sh->checks[0][i].name, bad,
             i < sh->nchecks[bad] ? sh->checks[bad][i].why : "did not get this far");
    }
  }
  if (rc != 0) result(0, "args: cc_spawn returned %d, expected 0", rc);
  check_clean("args");
}

/* ---------------------------------------------------------------- mismatch/... */

enum { MM_COLLECTIVE, MM_COUNT, MM_COUNT_LARGE, MM_DTYPE, MM_OP, MM_ROOT, MM_REDUCE_ROOT,
       MM_BARRIER, MM_KINDS };
static const char *const mm_names[MM_KINDS] = {
    "all_reduce on ranks 0, 2, broadcast on rank 1",
    "all_reduce count 4, rank 1 count 5",
    "all_reduce count 1M, rank 1 count 1M+1",
    "all_reduce float32, rank 1 int32",
    "all_reduce sum, rank 1 max",
    "broadcast root 0, rank 1 says root 1",
    "reduce root 0, rank 1 says root 2",
    "all_reduce on ranks 0, 2, barrier on rank 1",
};

static int mismatch_fn(cc_comm *c, void *arg) {
  int kind = *(const int *)arg, rank = cc_comm_rank(c), odd = rank == 1, rc;
  struct report *me = &sh->r[rank];
  size_t count = kind == MM_COUNT_LARGE ? (size_t)1 << 20 : 4;
  float *a = (float *)calloc(count + 1, sizeof(float));
  float *b = (float *)calloc(count + 1, sizeof(float));

  rc = cc_barrier(c);
  if (rc != CC_OK) {
    record(me, c, rc);
    snprintf(me->err2, sizeof me->err2, "the barrier before the case failed");
    free(a);
    free(b);
    return 0;
  }
  me->t_call = now_ns();
  switch (kind) {
    case MM_COLLECTIVE:
      rc = odd ? cc_broadcast(c, a, 4, CC_FLOAT32, 0) : cc_all_reduce(c, a, b, 4, CC_FLOAT32, CC_SUM);
      break;
    case MM_COUNT:
    case MM_COUNT_LARGE:
      rc = cc_all_reduce(c, a, b, odd ? count + 1 : count, CC_FLOAT32, CC_SUM);
      break;
    case MM_DTYPE:
      rc = cc_all_reduce(c, a, b, 4, odd ? CC_INT32 : CC_FLOAT32, CC_SUM);
      break;
    case MM_OP:
      rc = cc_all_reduce(c, a, b, 4, CC_FLOAT32, odd ? CC_MAX : CC_SUM);
      break;
    case MM_ROOT:
      rc = cc_broadcast(c, a, 4, CC_FLOAT32, odd ? 1 : 0);
      break;
    case MM_REDUCE_ROOT:
      rc = cc_reduce(c, a, b, 4, CC_FLOAT32, CC_SUM, odd ? 2 : 0);
      break;
    default:
      rc = odd ? cc_barrier(c) : cc_all_reduce(c, a, b, 4, CC_FLOAT32, CC_SUM);
      break;
  }
  me->t_ret = now_ns();
  record(me, c, rc);
  second_call(me, c);
  me->reached = 1;
  free(a);
  free(b);
  return 0;
}

static void case_mismatch(int kind) {
  const int n = 3;
  char cs[160];
  int r, late = 0;
  int tcp_world = getenv("CC_TRANSPORT") && !strcmp(getenv("CC_TRANSPORT"), "tcp");
  struct verdict v1, v2;

  snprintf(cs, sizeof cs, "mismatch/%s", mm_names[kind]);
  begin_case();
  spawn(cs, n, mismatch_fn, &kind);
  v_init(&v1);
  v_init(&v2);
  for (r = 0; r < n; r++) {
    struct report *m = &sh->r[r];
    double d = secs(m->t_ret - m->t_call);
    if (m->reached != 1) {
      v_fail(&v1, r, "did not report (%s %s)", code_name(m->code), m->err);
      continue;
    }
    /* Over messages (TCP) a rank that exchanges no data with the disagreeing
       rank in this call may only learn it from its next call (docs/errors.md):
       CC_OK here (no data of another call), CC_ERR_MISMATCH there. So may
       every rank of a small broadcast on one host, which is queued: its root
       returns without waiting, and a rank that takes the root for itself too. */
    if ((tcp_world || kind == MM_ROOT) && m->code == CC_OK && m->code2 == CC_ERR_MISMATCH && d <= 2.0 && m->d2 <= 2 * SEC) {
      late++;
      continue;
    }
    if (m->code != CC_ERR_MISMATCH || d > 2.0) {
      v_fail(&v1, r, "%s after %.2f s (\"%s\")", code_name(m->code), d, m->err);
    }
    if (d > v1.worst) v1.worst = d;
    if (m->code2 != CC_ERR_ABORTED || m->d2 > 250 * MS) {
      v_fail(&v2, r, "%s after %.3f s (\"%s\")", code_name(m->code2), secs(m->d2), m->err2);
    }
  }
  if (v1.ok && late) {
    result(1, "%s: CC_ERR_MISMATCH on every rank within %.3f s, %d of them from their next call (\"%s\")", cs,
           v1.worst, late, sh->r[0].code == CC_OK ? sh->r[0].err2 : sh->r[0].err);
  } else if (v1.ok) {
    result(1, "%s: CC_ERR_MISMATCH on every rank within %.3f s (\"%s\")", cs, v1.worst,
           sh->r[0].err);
  } else {
    result(0, "%s: expected CC_ERR_MISMATCH on every rank within 2 s: %s", cs, v1.why);
  }
  result(v2.ok, "%s: the next call returns CC_ERR_ABORTED at once%s%s", cs, v2.ok ? "" : ": ",
         v2.why);
  check_clean(cs);
}

/* ---------------------------------------------------------------- async/... */

/* An asynchronous all_reduce whose counts disagree (rank 1 says 5, the others
 * 4): the request fails with CC_ERR_MISMATCH; its own message
 * (cc_request_error, once cc_test says done) names the mismatch and stays so
 * after a later call on the communicator failed with another message. */
static int async_fn(cc_comm *c, void *arg) {
  int rank = cc_comm_rank(c), done = 0, rc;
  struct report *me = &sh->r[rank];
  float a[5] = {1, 2, 3, 4, 5}, b[5];
  cc_request *req = NULL;
  int64_t t0;
  (void)arg;
  if (cc_barrier(c) != CC_OK) { record(me, c, -1); me->reached = 1; return 0; }
  me->t_call = now_ns();
  cc_group_begin(c);
  cc_all_reduce(c, a, b, rank == 1 ? 5 : 4, CC_FLOAT32, CC_SUM);
  if (cc_group_end(c, &req) != CC_OK || !req) { record(me, c, -2); me->reached = 1; return 0; }
  t0 = now_ns();
  while (cc_test(req, &done) == CC_OK && !done && now_ns() - t0 < 5 * SEC) sleep_ms(1);
  copy_str(me->err, sizeof me->err, cc_request_error(req));     /* before anything else fails */
  second_call(me, c);                  /* fails too (CC_ERR_ABORTED), with a message of its own */
  if (strcmp(me->err, cc_request_error(req)) != 0) me->iterations = 1;   /* the request's own changed */
  rc = cc_wait(req);
  me->code = rc;
  me->t_ret = now_ns();
  me->reached = 1;
  return 0;
}

static void case_async(void) {
  const int n = 3;
  const char *cs = "async/a failed request keeps its own message";
  struct verdict v;
  int r;
  begin_case();
  spawn(cs, n, async_fn, NULL);
  v_init(&v);
  for (r = 0; r < n; r++) {
    struct report *m = &sh->r[r];
    if (m->reached != 1 || m->code != CC_ERR_MISMATCH || !strstr(m->err, "called all_reduce(count ") ||
        m->iterations != 0 || m->code2 != CC_ERR_ABORTED || !strstr(m->err2, "failed earlier"))
      v_fail(&v, r, "request %s, cc_request_error \"%s\"%s; the next call %s (\"%s\")", code_name(m->code), m->err,
             m->iterations ? " (it changed after the next call)" : "", code_name(m->code2), m->err2);
  }
  result(v.ok, "%s: the request returns CC_ERR_MISMATCH, cc_request_error names it before and after the next call "
         "failed with CC_ERR_ABORTED (\"%s\")%s%s", cs, sh->r[0].err, v.ok ? "" : ": ", v.why);
  check_clean(cs);
}

/* ---------------------------------------------------------------- abort */

static void *abort_thread(void *p) {
  sleep_ms(300);
  __atomic_store_n(&sh->abort_ns, now_ns(), __ATOMIC_SEQ_CST);
  cc_comm_abort((cc_comm *)p);
  return NULL;
}

/* Rank 1 aborts from a second thread 300 ms after ranks 1-3 entered an
 * all_reduce; rank 0 stays out of it and calls only after the abort. */
static int abort_fn(cc_comm *c, void *arg) {
  int rank = cc_comm_rank(c), rc, i;
  struct report *me = &sh->r[rank];
  float buf[1024];
  pthread_t t;

  (void)arg;
  for (i = 0; i < 1024; i++) buf[i] = 1.0f;
  rc = cc_barrier(c);
  if (rc != CC_OK) {
    record(me, c, rc);
    snprintf(me->err2, sizeof me->err2, "the barrier before the case failed");
    return 0;
  }
  if (rank == 0) {
    int64_t end = now_ns() + 10 * SEC;
    while (__atomic_load_n(&sh->abort_ns, __ATOMIC_SEQ_CST) == 0 && now_ns() < end) sleep_ms(5);
    sleep_ms(200);
  }
  if (rank == 1 && pthread_create(&t, NULL, abort_thread, c) != 0) {
    snprintf(me->err, sizeof me->err, "pthread_create failed");
    return 1;
  }
  me->t_call = now_ns();
  rc = cc_all_reduce(c, buf, buf, 1024, CC_FLOAT32, CC_SUM);
  me->t_ret = now_ns();
  record(me, c, rc);
  if (rank == 1) pthread_join(t, NULL);
  second_call(me, c);
  me->reached = 1;
  return 0;
}

static void case_abort(void) {
  const char *cs = "abort";
  const int n = 4;
  int r;
  int64_t a;
  struct verdict v1, v2, v3;

  begin_case();
  spawn(cs, n, abort_fn, NULL);
  a = sh->abort_ns;
  v_init(&v1);
  v_init(&v2);
  v_init(&v3);
  for (r = 0; r < n; r++) {
    struct report *m = &sh->r[r];
    if (m->reached != 1) {
      v_fail(r ? &v1 : &v2, r, "did not report (%s %s)", code_name(m->code), m->err);
      continue;
    }
    if (r > 0) {
      double d = secs(m->t_ret - a);
      if (a == 0 || m->code != CC_ERR_ABORTED || d > 2.0 || m->t_call > a) {
        v_fail(&v1, r, "%s %.2f s after the abort (entered %.2f s before it; \"%s\")",
               code_name(m->code), d, secs(a - m->t_call), m->err);
      }
      if (d > v1.worst) v1.worst = d;
    } else if (m->code != CC_ERR_ABORTED || m->t_ret - m->t_call > 1 * SEC) {
      v_fail(&v2, r, "%s after %.2f s (\"%s\")", code_name(m->code), secs(m->t_ret - m->t_call),
             m->err);
    }
    if (m->code2 != CC_ERR_ABORTED || m->d2 > 250 * MS) {
      v_fail(&v3, r, "%s after %.3f s (\"%s\")", code_name(m->code2), secs(m->d2), m->err2);
    }
  }
  if (v1.ok) {
    result(1, "abort: the pending all_reduce of ranks 1-3 returns CC_ERR_ABORTED within %.3f s of "
              "cc_comm_abort on rank 1's second thread", v1.worst);
  } else {
    result(0, "abort: expected CC_ERR_ABORTED within 2 s on ranks 1-3: %s", v1.why);
  }
  result(v2.ok, "abort: rank 0, which was in no call, gets CC_ERR_ABORTED from its next call%s%s",
         v2.ok ? "" : ": ", v2.why);
  result(v3.ok, "abort: later calls return CC_ERR_ABORTED at once on every rank%s%s",
         v3.ok ? "" : ": ", v3.why);
  check_clean(cs);
}

/* ---------------------------------------------------------------- timeout/... */

#define ABSENT 3

/* Every rank passes a barrier; then rank ABSENT sleeps 3 s instead of joining
 * the all_reduce of the others. */
static void skip_body(cc_comm *c, struct report *me, void *arg) {
  int rank = cc_comm_rank(c), rc;
  float x = (float)(rank + 1);

  (void)arg;
  rc = cc_barrier(c);
  if (rc != CC_OK) {
    record(me, c, rc);
    snprintf(me->err2, sizeof me->err2, "the barrier before the case failed");
    return;
  }
  if (rank == ABSENT) {
    sleep_ms(3000);
    me->reached = 1;
    return;
  }
  me->t_call = now_ns();
  rc = cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM);
  me->t_ret = now_ns();
  record(me, c, rc);
  second_call(me, c);
  me->reached = 1;
}

static int skip_fn(cc_comm *c, void *arg) {
  skip_body(c, &sh->r[cc_comm_rank(c)], arg);
  return 0;
}

static void judge_timeout(const char *cs, int n) {
  struct verdict v1, v2, v3;
  int r;

  v_init(&v1);
  v_init(&v2);
  v_init(&v3);
  for (r = 0; r < n; r++) {
    struct report *m = &sh->r[r];
    double d = secs(m->t_ret - m->t_call);
    if (r == ABSENT) continue;
    if (m->reached != 1) {
      v_fail(&v1, r, "did not report (%s %s)", code_name(m->code), m->err);
      continue;
    }
    if (m->code != CC_ERR_TIMEOUT || d < 0.95 || d > 2.5) {
      v_fail(&v1, r, "%s after %.2f s (\"%s\")", code_name(m->code), d, m->err);
    }
    if (d > v1.worst) v1.worst = d;
    if (!names_rank(m->err, ABSENT)) v_fail(&v2, r, "\"%s\"", m->err);
    if (m->code2 != CC_ERR_ABORTED || m->d2 > 250 * MS) {
      v_fail(&v3, r, "%s after %.3f s (\"%s\")", code_name(m->code2), secs(m->d2), m->err2);
    }
  }
  if (v1.ok) {
    result(1, "%s: the others get CC_ERR_TIMEOUT after %.3f s at most (timeout 1 s)", cs, v1.worst);
  } else {
    result(0, "%s: expected CC_ERR_TIMEOUT after 1-2.5 s (timeout 1 s): %s", cs, v1.why);
  }
  if (v2.ok) {
    result(1, "%s: the message names rank %d (\"%s\")", cs, ABSENT, sh->r[0].err);
  } else {
    result(0, "%s: the message does not name the missing rank %d: %s", cs, ABSENT, v2.why);
  }
  result(v3.ok, "%s: the next call returns CC_ERR_ABORTED at once%s%s", cs, v3.ok ? "" : ": ",
         v3.why);
}

static void case_timeout_spawn(void) {
  const char *cs = "timeout/CC_TIMEOUT=1 under cc_spawn";
  int rc;

  begin_case();
  setenv("CC_TIMEOUT", "1", 1);
  rc = spawn(cs, 4, skip_fn, NULL);
  setenv("CC_TIMEOUT", "10", 1);
  judge_timeout(cs, 4);
  if (rc != 0) note("cc_spawn returned %d", rc);
  check_clean(cs);
}

static void case_timeout_cfg(void) {
  const char *cs = "timeout/cfg.timeout_ms=1000 over CC_TIMEOUT=30";
  struct job j;

  memset(&j, 0, sizeof j);
  j.n = 4;
  j.timeout_ms = 1000;
  j.cc_timeout = "30";
  j.body = skip_body;
  begin_case();
  launch(cs, &j, 40);
  judge_timeout(cs, 4);
  check_clean(cs);
}

/* ---------------------------------------------------------------- kill/... */

#define VICTIM 2

struct kill_arg {
  size_t count;
  int stream; /* 1: everyone loops on all_reduce; the victim dies in the middle */
};

static void victim_dies(void) {
  __atomic_store_n(&sh->kill_ns, now_ns(), __ATOMIC_SEQ_CST);
  kill(getpid(), SIGKILL);
  for (;;) pause();
}

static void *killer_thread(void *p) {
  (void)p;
  sleep_ms(200);
  victim_dies();
  return NULL;
}

static void kill_body(cc_comm *c, struct report *me, void *argp) {
  const struct kill_arg *a = (const struct kill_arg *)argp;
  int rank = cc_comm_rank(c), rc;
  size_t i;
  float *send = (float *)malloc(a->count * sizeof(float));
  float *recv = (float *)malloc(a->count * sizeof(float));
  int64_t end;

  if (!send || !recv) {
    snprintf(me->err, sizeof me->err, "malloc of %zu floats failed", a->count);
    return;
  }
  for (i = 0; i < a->count; i++) send[i] = 1.0f;
  rc = cc_barrier(c);
  if (rc != CC_OK) {
    record(me, c, rc);
    snprintf(me->err2, sizeof me->err2, "the barrier before the case failed");
    return;
  }
  if (rank == VICTIM) {
    if (a->stream) {
      pthread_t t;
      if (pthread_create(&t, NULL, killer_thread, NULL) != 0) victim_dies();
      for (;;) cc_all_reduce(c, send, recv, a->count, CC_FLOAT32, CC_SUM);
    }
    sleep_ms(300);
    victim_dies();
  }
  end = now_ns() + 60 * SEC;
  do {
    me->t_call = now_ns();
    rc = cc_all_reduce(c, send, recv, a->count, CC_FLOAT32, CC_SUM);
    me->t_ret = now_ns();
    me->iterations++;
  } while (a->stream && rc == CC_OK && me->t_ret < end);
  record(me, c, rc);
  second_call(me, c);
  me->reached = 1;
  free(send);
  free(recv);
}

/* required: every survivor must have reported (under cc_spawn they may have
 * been stopped first) */
static void judge_kill(const char *cs, int n, const struct kill_arg *a, int required) {
  struct verdict v1, v2, v3;
  int64_t k = sh->kill_ns;
  int r, reported = 0;

  if (k == 0) {
    result(0, "%s: rank %d never got to kill itself", cs, VICTIM);
    return;
  }
  v_init(&v1);
  v_init(&v2);
  v_init(&v3);
  for (r = 0; r < n; r++) {
    struct report *m = &sh->r[r];
    double d = secs(m->t_ret - k);
    if (r == VICTIM) continue;
    if (m->reached != 1) {
      if (required) v_fail(&v1, r, "did not report (%s %s)", code_name(m->code), m->err);
      else note("%s: rank %d was stopped before it could report (allowed)", cs, r);
      continue;
    }
    reported++;
    if (m->code != CC_ERR_PEER_LOST || d > 2.0) {
      v_fail(&v1, r, "%s %.2f s after rank %d died (\"%s\")", code_name(m->code), d, VICTIM, m->err);
    } else if (!a->stream && m->t_call > k) {
      v_fail(&v1, r, "entered the all_reduce only after rank %d died", VICTIM);
    }
    if (d > v1.worst) v1.worst = d;
    if (!names_rank(m->err, VICTIM)) v_fail(&v2, r, "\"%s\"", m->err);
    if (m->code2 != CC_ERR_ABORTED || m->d2 > 250 * MS) {
      v_fail(&v3, r, "%s after %.3f s (\"%s\")", code_name(m->code2), secs(m->d2), m->err2);
    }
  }
  if (!reported && !required) return;
  if (v1.ok) {
    result(1, "%s: the others return CC_ERR_PEER_LOST %.3f s after rank %d died, at most", cs,
           v1.worst, VICTIM);
  } else {
    result(0, "%s: expected CC_ERR_PEER_LOST within 2 s of rank %d's death: %s", cs, VICTIM,
           v1.why);
  }
  if (v2.ok) {
    result(1, "%s: cc_comm_last_error names rank %d (\"%s\")", cs, VICTIM,
           sh->r[VICTIM == 0 ? 1 : 0].err);
  } else {
    result(0, "%s: cc_comm_last_error does not name rank %d: %s", cs, VICTIM, v2.why);
  }
  result(v3.ok, "%s: the next call returns CC_ERR_ABORTED at once%s%s", cs, v3.ok ? "" : ": ",
         v3.why);
}

static void case_kill(const char *cs, size_t count, int stream) {
  struct kill_arg a;
  struct job j;
  int r, st;

  a.count = count;
  a.stream = stream;
  memset(&j, 0, sizeof j);
  j.n = 4;
  j.cc_timeout = "10";
  j.body = kill_body;
  j.arg = &a;
  begin_case();
  launch(cs, &j, 40);
  judge_kill(cs, j.n, &a, 1);
  st = j.status[VICTIM];
  result(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: rank %d died by SIGKILL (status %#x)",
         cs, VICTIM, st);
  for (r = 0; r < j.n; r++) {
    st = j.status[r];
    if (r != VICTIM && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      result(0, "%s: rank %d did not exit 0 after the failure (status %#x)", cs, r, st);
    }
  }
  if (stream) note("%s: %ld all_reduces on rank 0 before the failure", cs, sh->r[0].iterations);
  check_clean(cs);
}

static int spawn_kill_fn(cc_comm *c, void *arg) {
  kill_body(c, &sh->r[cc_comm_rank(c)], arg);
  return 0;
}

static void case_kill_spawn(void) {
  const char *cs = "kill/cc_spawn, small count";
  struct kill_arg a;
  int rc;
  double d;

  a.count = 16;
  a.stream = 0;
  begin_case();
  rc = spawn(cs, 4, spawn_kill_fn, &a);
  d = secs(now_ns() - sh->kill_ns);
  judge_kill(cs, 4, &a, 0);
  if (sh->kill_ns == 0) {
    result(0, "%s: cc_spawn returned %d, but rank %d never killed itself", cs, rc, VICTIM);
  } else {
    result(rc == 128 + SIGKILL && d < 3.0,
           "%s: cc_spawn returns %d %.2f s after rank %d died (expected %d within 3 s)", cs, rc, d,
           VICTIM, 128 + SIGKILL);
  }
  check_clean(cs);
}

/* ---------------------------------------------------------------- shm/... */

/* count of /dev/shm entries named cc-JOBID*, and of those not mode 0600 */
static int shm_job_entries(const char *jobid, int *bad_mode, char *first_bad, size_t len) {
  char prefix[48], path[300];
  DIR *d = opendir("/dev/shm");
  struct dirent *e;
  struct stat sb;
  int n = 0;

  snprintf(prefix, sizeof prefix, "cc-%s", jobid);
  while (d && (e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    n++;
    snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
    if (bad_mode && stat(path, &sb) == 0 && (sb.st_mode & 07777) != 0600) {
      if (!*bad_mode) snprintf(first_bad, len, "%s mode %04o", e->d_name, (unsigned)(sb.st_mode & 07777));
      (*bad_mode)++;
    }
  }
  if (d) closedir(d);
  return n;
}

static int seen_entries, seen_bad;
static char seen_bad_name[320];

static void watch_shm(struct job *j) {
  int n = shm_job_entries(j->jobid, &seen_bad, seen_bad_name, sizeof seen_bad_name);
  if (n > seen_entries) seen_entries = n;
}

/* Every rank joins (the last one 1 s late), runs an all_reduce large enough for
 * any lazily made segment, splits in two and reduces in each half; then rank 0
 * counts the job's entries in /dev/shm (there must be none: each is unlinked
 * once every rank mapped it), and every rank kills itself with SIGKILL. */
static void shm_body(cc_comm *c, struct report *me, void *arg) {
  int rank = cc_comm_rank(c), rc;
  size_t count = (size_t)1 << 20, i;
  float *buf = (float *)malloc(count * sizeof(float));
  cc_comm *half = NULL;
  const char *jobid = getenv("CC_JOB_ID");

  (void)arg;
  if (!buf) return;
  for (i = 0; i < count; i++) buf[i] = 1.0f;
  rc = cc_all_reduce(c, buf, buf, count, CC_FLOAT32, CC_SUM);
  if (rc == CC_OK) rc = cc_comm_split(c, rank % 2, rank, &half);
  if (rc == CC_OK) rc = cc_all_reduce(half, buf, buf, count, CC_FLOAT32, CC_SUM);
  if (rc == CC_OK) rc = cc_barrier(c);
  record(me, c, rc);
  if (rc == CC_OK && rank == 0) me->iterations = shm_job_entries(jobid ? jobid : "?", NULL, NULL, 0);
  me->reached = 1;
  if (rc == CC_OK) rc = cc_barrier(c);
  if (rc == CC_OK) kill(getpid(), SIGKILL);
  me->code2 = rc;
  free(buf);
}

static void case_shm(void) {
  const char *cs = "shm/segments";
  struct job j;
  int r, died = 0;

  memset(&j, 0, sizeof j);
  j.n = 4;
  j.cc_timeout = "10";
  j.late_ms = 1000;
  j.body = shm_body;
  j.watch = watch_shm;
  seen_entries = seen_bad = 0;
  begin_case();
  launch(cs, &j, 40);
  if (seen_entries == 0) {
    note("%s: no segment of the job was seen in /dev/shm while rank 3 was late", cs);
  } else {
    result(!seen_bad, "%s: the job's segments in /dev/shm are mode 0600 (%d seen while rank 3 was late)%s%s",
           cs, seen_entries, seen_bad ? "; " : "", seen_bad ? seen_bad_name : "");
  }
  for (r = 0; r < j.n; r++) {
    if (sh->r[r].reached != 1 || sh->r[r].code != CC_OK) {
      result(0, "%s: rank %d: %s (\"%s\")", cs, r, code_name(sh->r[r].code), sh->r[r].err);
    }
    died += WIFSIGNALED(j.status[r]) && WTERMSIG(j.status[r]) == SIGKILL;
  }
  if (sh->r[0].reached == 1 && sh->r[0].code == CC_OK) {
    result(sh->r[0].iterations == 0,
           "%s: once every rank has joined, /dev/shm holds %ld entries of the job (expected 0)", cs,
           sh->r[0].iterations);
  }
  result(died == j.n, "%s: %d of %d ranks killed themselves with SIGKILL", cs, died, j.n);
  check_clean(cs);
}

/* ---------------------------------------------------------------- main */

int main(void) {
  static const char *const launcher_vars[] = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
      "CC_JOB_ID", "CC_TRANSPORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE",
      "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"};
  size_t large;
  unsigned i;
  int kind;

  for (i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++) unsetenv(launcher_vars[i]);
  /* every case again over TCP (tests/transport/test_tcp_suites.sh): CC_TEST_TRANSPORT=tcp */
  if (getenv("CC_TEST_TRANSPORT") && *getenv("CC_TEST_TRANSPORT")) setenv("CC_TRANSPORT", getenv("CC_TEST_TRANSPORT"), 1);
  setenv("CC_TIMEOUT", "10", 1);
  quick = getenv("CC_TEST_QUICK") != NULL && *getenv("CC_TEST_QUICK") != 0;
  large = quick ? (size_t)1 << 21 : (size_t)1 << 23;
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) note("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
  sh = (struct shared *)mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                             -1, 0);
  if (sh == MAP_FAILED) {
    printf("FAIL: failures: mmap of the shared report: %s\n", strerror(errno));
    return 1;
  }

  case_init();
  case_args();
  for (kind = 0; kind < MM_KINDS; kind++) case_mismatch(kind);
  case_abort();
  case_async();
  case_timeout_spawn();
  case_timeout_cfg();
  case_kill("kill/large count", large, 0);
  case_kill("kill/small count", 16, 0);
  case_kill("kill/in a stream of all_reduces", quick ? (size_t)1 << 18 : (size_t)1 << 20, 1);
  case_kill_spawn();
  case_shm();

  printf("test_failures: %d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
