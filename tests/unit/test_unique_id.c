/* test_unique_id.c - the NCCL-style start: cc_get_unique_id in the process of
 * rank 0, the id handed to the other ranks by the caller's own means, then
 * cc_comm_init_rank everywhere.
 *
 *   pipe/N, file/N   N = 1..4 ranks: rank 0 (this test's child) makes the id and
 *                    writes it into a pipe, or into a file created 0600 that
 *                    the other ranks poll for; every rank joins and runs an
 *                    all_reduce and an all_gather whose results are checked;
 *                    over shared memory (ranks on one host) and with
 *                    CC_TRANSPORT=tcp.
 *   env ignored      RANK/WORLD_SIZE/LOCAL_WORLD_SIZE of another job in the
 *                    environment do not matter: rank and size are the arguments
 *   bad arguments    NULL id, nranks 0, rank out of range, an id of zeros:
 *                    CC_ERR_INVALID_ARG naming the argument, *out NULL
 *   stranger         a rank holding another job's id (same address, other nonce
 *                    and secret) cannot join: it fails, the real job completes
 * Every rank is a forked process; results come back through a shared mapping. */
#define _GNU_SOURCE
#define CC_IMPLEMENTATION
#include "cc.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXR 4

struct res { int code; int ok; char err[320]; };
static struct res *sh;
static int nfail;

static void check(int ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf(ok ? "PASS: unique_id: " : "FAIL: unique_id: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  if (!ok) nfail++;
}

/* Every rank: join, all_reduce of rank+1 (sum n(n+1)/2), all_gather of rank. */
static void rank_body(int rank, int n, const cc_unique_id *id) {
  cc_comm *c = NULL;
  struct res *me = &sh[rank];
  int v = rank + 1, all[MAXR], i;
  cc_result r = cc_comm_init_rank(&c, n, id, rank, NULL);
  me->code = (int)r;
  if (r != CC_OK) {
    snprintf(me->err, sizeof me->err, "%.300s", cc_comm_last_error(NULL));
    return;
  }
  me->ok = cc_comm_rank(c) == rank && cc_comm_size(c) == n;
  r = cc_all_reduce(c, &v, &v, 1, CC_INT32, CC_SUM);
  if (r == CC_OK) r = cc_all_gather(c, &rank, all, 1, CC_INT32);
  me->code = (int)r;
  if (r != CC_OK) snprintf(me->err, sizeof me->err, "%.300s", cc_comm_last_error(c));
  if (v != n * (n + 1) / 2) me->ok = 0;
  for (i = 0; r == CC_OK && i < n; i++) if (all[i] != i) me->ok = 0;
  cc_comm_destroy(c);
}

static int wait_all(pid_t *pids, int n) {
  int i, st, bad = 0;
  for (i = 0; i < n; i++) {
    if (pids[i] <= 0) continue;
    if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
  }
  return bad;
}

/* how: 0 pipe, 1 file */
static void run_job(int n, int how, const char *transport) {
  pid_t pids[MAXR];
  int fds[2] = {-1, -1}, i, good = 1;
  char path[128], label[96];
  snprintf(label, sizeof label, "%s/%d ranks (%s)", how ? "file" : "pipe", n, transport);
  snprintf(path, sizeof path, "/tmp/cc-test-uid-%d-%d", (int)getpid(), n);
  unlink(path);
  if (!how && pipe(fds) != 0) { check(0, "%s: pipe", label); return; }
  memset(sh, 0, sizeof(struct res) * MAXR);
  for (i = 0; i < n; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      cc_unique_id id;
      alarm(60);
      setenv("CC_TRANSPORT", transport, 1);
      if (i == 0) {
        int k;
        if (cc_get_unique_id(&id) != CC_OK) {
          snprintf(sh[0].err, sizeof sh[0].err, "get_unique_id: %.280s", cc_comm_last_error(NULL));
          sh[0].code = -1;
          _exit(1);
        }
        if (!how) {
          for (k = 1; k < n; k++) if (write(fds[1], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
        } else {
          char tmp[160];
          int fd;
          snprintf(tmp, sizeof tmp, "%s.tmp", path);
          fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
          if (fd < 0 || write(fd, &id, sizeof id) != (ssize_t)sizeof id || close(fd) != 0 || rename(tmp, path) != 0)
            _exit(1);
        }
      } else if (!how) {
        if (read(fds[0], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
      } else {
        int fd, tries;
        for (tries = 0; (fd = open(path, O_RDONLY)) < 0 && tries < 2000; tries++) usleep(5000);
        if (fd < 0 || read(fd, &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
        close(fd);
      }
      rank_body(i, n, &id);
      _exit(sh[i].code == CC_OK && sh[i].ok ? 0 : 1);
    }
  }
  if (fds[0] >= 0) { close(fds[0]); close(fds[1]); }
  if (wait_all(pids, n)) good = 0;
  for (i = 0; i < n; i++) {
    if (sh[i].code != CC_OK || !sh[i].ok) {
      check(0, "%s: rank %d: %s ok=%d: %s", label, i, cc_strerror((cc_result)sh[i].code), sh[i].ok, sh[i].err);
      good = 0;
      break;
    }
  }
  if (good) check(1, "%s: every rank joined through the id; all_reduce and all_gather right", label);
  unlink(path);
}

static void bad_args(void) {
  cc_comm *c = (cc_comm *)1;
  cc_unique_id zero;
  cc_result r;
  memset(&zero, 0, sizeof zero);
  r = cc_comm_init_rank(&c, 2, NULL, 0, NULL);
  check(r == CC_ERR_INVALID_ARG && c == NULL && strstr(cc_comm_last_error(NULL), "id is NULL"),
        "NULL id: %s (%s)", cc_strerror(r), cc_comm_last_error(NULL));
  r = cc_comm_init_rank(&c, 0, &zero, 0, NULL);
  check(r == CC_ERR_INVALID_ARG && strstr(cc_comm_last_error(NULL), "nranks"), "nranks 0: %s (%s)", cc_strerror(r),
        cc_comm_last_error(NULL));
  r = cc_comm_init_rank(&c, 2, &zero, 2, NULL);
  check(r == CC_ERR_INVALID_ARG && strstr(cc_comm_last_error(NULL), "rank 2"), "rank 2 of 2: %s (%s)", cc_strerror(r),
        cc_comm_last_error(NULL));
  r = cc_comm_init_rank(&c, 2, &zero, 1, NULL);
  check(r == CC_ERR_INVALID_ARG && strstr(cc_comm_last_error(NULL), "not one"), "an id of zeros: %s (%s)",
        cc_strerror(r), cc_comm_last_error(NULL));
  r = cc_get_unique_id(NULL);
  check(r == CC_ERR_INVALID_ARG, "cc_get_unique_id(NULL): %s", cc_strerror(r));
}

/* A rank with another id (same address and port, other nonce and secret)
   tries to join as rank 1 before the real rank 1. */
static void stranger(void) {
  int fds[2];
  pid_t pids[3];
  int i;
  if (pipe(fds) != 0) return;
  memset(sh, 0, sizeof(struct res) * MAXR);
  for (i = 0; i < 3; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      cc_unique_id id;
      alarm(60);
      setenv("CC_TIMEOUT", "5", 1);
      if (i == 0) {
        if (cc_get_unique_id(&id) != CC_OK) _exit(1);
        if (write(fds[1], &id, sizeof id) != (ssize_t)sizeof id || write(fds[1], &id, sizeof id) != (ssize_t)sizeof id)
          _exit(1);
        rank_body(0, 2, &id);
        _exit(sh[0].code == CC_OK && sh[0].ok ? 0 : 1);
      }
      if (read(fds[0], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
      if (i == 2) {                    /* the stranger: same address, its own nonce and secret */
        cc_comm *c;
        cc_result r;
        cc__random(id.internal + 24, 48);
        r = cc_comm_init_rank(&c, 2, &id, 1, NULL);
        sh[2].code = (int)r;
        snprintf(sh[2].err, sizeof sh[2].err, "%.300s", r == CC_OK ? "" : cc_comm_last_error(NULL));
        if (r == CC_OK) cc_comm_destroy(c);
        _exit(0);
      }
      usleep(300000);                  /* the stranger goes first */
      rank_body(1, 2, &id);
      _exit(sh[1].code == CC_OK && sh[1].ok ? 0 : 1);
    }
  }
  close(fds[0]);
  close(fds[1]);
  wait_all(pids, 3);
  check(sh[0].code == CC_OK && sh[0].ok && sh[1].code == CC_OK && sh[1].ok && sh[2].code != CC_OK,
        "a rank with another job's id is refused (%s: %.120s); the job's ranks 0 and 1 complete (%s, %s)",
        cc_strerror((cc_result)sh[2].code), sh[2].err, cc_strerror((cc_result)sh[0].code),
        cc_strerror((cc_result)sh[1].code));
}

int main(void) {
  static const char *const tr[2] = {"shm", "tcp"};
  int n, how, t;
  sh = (struct res *)mmap(NULL, sizeof(struct res) * MAXR, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  /* another job's variables: they must not matter */
  setenv("RANK", "5", 1);
  setenv("WORLD_SIZE", "8", 1);
  setenv("LOCAL_WORLD_SIZE", "8", 1);
  setenv("CC_TIMEOUT", "30", 1);
  bad_args();
  for (t = 0; t < 2; t++)
    for (how = 0; how < 2; how++)
      for (n = 1; n <= MAXR; n++) {
        if (t == 1 && n == 3) continue;  /* keep the TCP rows short: 1, 2, 4 */
        run_job(n, how, tr[t]);
      }
  stranger();
  return nfail ? 1 : 0;
}
