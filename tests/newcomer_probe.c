/* newcomer_probe.c - programs a newcomer would write, for tests/test_newcomer.sh.
 *
 *     newcomer_probe world            cc_comm_init(&c, NULL), print "size N", destroy;
 *                                     on an error "error: MESSAGE" and exit 1
 *     newcomer_probe late RANK MS     a barrier, then rank RANK sleeps MS ms before an
 *                                     all_reduce that every rank calls; each rank
 *                                     prints "result: CODE" (its own cc_strerror
 *                                     name) and, on an error, the message
 *     newcomer_probe spawn_fail       cc_spawn(3, ...) whose rank 1 fails an
 *                                     all_reduce on purpose (cc_comm_abort, then
 *                                     returns 3); prints "spawn: RC"
 *
 * It uses the public API only. Built into BUILD/probes (no test on its own). */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void code_name(cc_result r, char *out, size_t cap) {
  const char *s = cc_strerror(r);
  size_t n = strcspn(s, ":");
  if (n >= cap) n = cap - 1;
  memcpy(out, s, n);
  out[n] = 0;
}

static int mode_world(void) {
  cc_comm *c;
  if (cc_comm_init(&c, NULL) != CC_OK) {
    printf("error: %s\n", cc_comm_last_error(NULL));
    return 1;
  }
  printf("size %d\n", cc_comm_size(c));
  return cc_comm_destroy(c) == CC_OK ? 0 : 1;
}

static int mode_late(int late, long ms) {
  cc_comm *c;
  float x = 1.0f;
  char name[40];
  cc_result r;
  if (cc_comm_init(&c, NULL) != CC_OK) {
    printf("error: %s\n", cc_comm_last_error(NULL));
    return 1;
  }
  r = cc_barrier(c);
  if (r == CC_OK && cc_comm_rank(c) == late) sleep_ms(ms);
  if (r == CC_OK) r = cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM);
  code_name(r, name, sizeof name);
  printf("result: %s%s%s\n", name, r == CC_OK ? "" : ": ", r == CC_OK ? "" : cc_comm_last_error(c));
  fflush(stdout);
  cc_comm_destroy(c);
  return r == CC_OK ? 0 : 3;
}

static int fail_fn(cc_comm *c, void *arg) {
  float x = 1.0f;
  (void)arg;
  if (cc_comm_rank(c) == 1) {
    cc_comm_abort(c);
    return 3;
  }
  return cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM) == CC_OK ? 0 : 4;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "world")) return mode_world();
  if (argc == 4 && !strcmp(argv[1], "late")) return mode_late(atoi(argv[2]), atol(argv[3]));
  if (argc == 2 && !strcmp(argv[1], "spawn_fail")) {
    int rc = cc_spawn(3, fail_fn, NULL);
    printf("spawn: %d\n", rc);
    return 0;
  }
  fprintf(stderr, "usage: %s world | late RANK MS | spawn_fail\n", argv[0]);
  return 2;
}
