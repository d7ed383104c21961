/* init_probe.c - one rank of a job, for tests/multihost/test_init.sh: joins the job with
 * cc_comm_init(&c, NULL) (rank, size and rendezvous all from the environment),
 * adds up rank+1 over all ranks, passes a barrier and prints
 *
 *     rank R of N: sum S
 *
 * then exits 0. On an error it prints `error: CODE MESSAGE` (CODE as
 * CC_ERR_INVALID_ARG, MESSAGE from cc_comm_last_error) and exits 1.
 *
 *     init_probe [hold MS] [kill R]
 *
 * hold MS   wait MS milliseconds after joining (so that two jobs overlap)
 * kill R    rank R kills itself with SIGKILL 300 ms after the others entered
 *           the all_reduce; the others report the error they get
 *
 * Built into BUILD/probes, not BUILD/tests: it is no test on its own. */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void probe_sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* "CC_ERR_TIMEOUT: a peer did not ..." -> "CC_ERR_TIMEOUT" */
static void probe_fail(cc_result r, const char *detail) {
  const char *s = cc_strerror(r);
  int n = (int)strcspn(s, ":");
  printf("error: %.*s %s\n", n, s, detail ? detail : "(null)");
  fflush(stdout);
}

int main(int argc, char **argv) {
  cc_comm *c = NULL;
  long hold_ms = 0;
  int victim = -1, i, rank, size;
  long long x, sum;
  cc_result r;

  for (i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "hold") == 0) {
      hold_ms = atol(argv[i + 1]);
    } else if (strcmp(argv[i], "kill") == 0) {
      victim = atoi(argv[i + 1]);
    } else {
      fprintf(stderr, "usage: %s [hold MS] [kill RANK]\n", argv[0]);
      return 2;
    }
  }

  r = cc_comm_init(&c, NULL);
  if (r != CC_OK) {
    probe_fail(r, cc_comm_last_error(NULL));
    return 1;
  }
  rank = cc_comm_rank(c);
  size = cc_comm_size(c);
  if (hold_ms > 0) probe_sleep_ms(hold_ms);

  if (victim >= 0) {
    /* Everyone is in: from here on the others wait in the all_reduce. */
    r = cc_barrier(c);
    if (r != CC_OK) {
      probe_fail(r, cc_comm_last_error(c));
      return 1;
    }
    if (rank == victim) {
      probe_sleep_ms(300);
      kill(getpid(), SIGKILL);
    }
  }

  x = rank + 1;
  r = cc_all_reduce(c, &x, &sum, 1, CC_INT64, CC_SUM);
  if (r == CC_OK) r = cc_barrier(c);
  if (r != CC_OK) {
    probe_fail(r, cc_comm_last_error(c));
    return 1;
  }
  printf("rank %d of %d: sum %lld\n", rank, size, sum);
  fflush(stdout);
  r = cc_comm_destroy(c);
  if (r != CC_OK) {
    probe_fail(r, "cc_comm_destroy failed");
    return 1;
  }
  return 0;
}
