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
 *     newcomer_probe spawn_destroy    cc_spawn(4, ...) whose workers end as a main()
 *                                     does, `return cc_comm_destroy(c);`, after an
 *                                     all_reduce; prints "spawn: RC"
 *     newcomer_probe leave KIND [MS]  a mismatched collective, then every rank
 *                                     destroys its communicator (rank 0 after MS
 *                                     ms, default at once). KIND
 *                                     coll: rank 0 broadcasts (root 0) while the
 *                                     others all_reduce; root: rank 3 broadcasts
 *                                     from root 1, the others from root 0. Each
 *                                     rank prints "call: CODE[: MESSAGE]" and
 *                                     "destroy: CODE[: MESSAGE]"
 *     newcomer_probe p2p_tag          rank 0 sends 4 bytes with tag 0, rank 1
 *                                     receives 4 bytes with tag 5, then both call
 *                                     a barrier; each rank prints "result: CODE[:
 *                                     MESSAGE]"
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

static int destroy_fn(cc_comm *c, void *arg) {
  int v = cc_comm_rank(c) + 1;
  (void)arg;
  if (cc_all_reduce(c, &v, &v, 1, CC_INT32, CC_SUM) != CC_OK || v != cc_comm_size(c) * (cc_comm_size(c) + 1) / 2)
    return 5;
  return cc_comm_destroy(c);
}

static void print_result(const char *label, cc_comm *c, cc_result r) {
  char name[40];
  code_name(r, name, sizeof name);
  printf("%s: %s%s%s\n", label, name, r == CC_OK ? "" : ": ", r == CC_OK ? "" : cc_comm_last_error(c));
  fflush(stdout);
}

static int mode_leave(const char *kind, long late_ms) {
  cc_comm *c;
  float x[2] = {1.0f, 2.0f};
  cc_result r;
  int rank;
  if (cc_comm_init(&c, NULL) != CC_OK) {
    printf("error: %s\n", cc_comm_last_error(NULL));
    return 1;
  }
  rank = cc_comm_rank(c);
  if (!strcmp(kind, "coll"))
    r = rank == 0 ? cc_broadcast(c, x, 2, CC_FLOAT32, 0) : cc_all_reduce(c, x, x, 2, CC_FLOAT32, CC_SUM);
  else
    r = cc_broadcast(c, x, 2, CC_FLOAT32, rank == 3 ? 1 : 0);
  print_result("call", c, r);
  if (rank == 0 && late_ms > 0) sleep_ms(late_ms);
  r = cc_comm_destroy(c);
  print_result("destroy", NULL, r);
  return 0;
}

static int mode_p2p_tag(void) {
  cc_comm *c;
  int v = 7;
  cc_result r;
  if (cc_comm_init(&c, NULL) != CC_OK) {
    printf("error: %s\n", cc_comm_last_error(NULL));
    return 1;
  }
  if (cc_comm_rank(c) == 0) {         /* its barrier begins after rank 1's receive timed out */
    r = cc_send(c, &v, 1, CC_INT32, 1, 0);
    sleep_ms(3000);
  } else {
    r = cc_recv(c, &v, 1, CC_INT32, 0, 5);
  }
  if (r == CC_OK) r = cc_barrier(c);
  print_result("result", c, r);
  cc_comm_destroy(c);
  return r == CC_OK ? 0 : 3;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "world")) return mode_world();
  if (argc == 4 && !strcmp(argv[1], "late")) return mode_late(atoi(argv[2]), atol(argv[3]));
  if (argc == 2 && !strcmp(argv[1], "spawn_fail")) {
    int rc = cc_spawn(3, fail_fn, NULL);
    printf("spawn: %d\n", rc);
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "spawn_destroy")) {
    int rc = cc_spawn(4, destroy_fn, NULL);
    printf("spawn: %d\n", rc);
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "p2p_tag")) return mode_p2p_tag();
  if ((argc == 3 || argc == 4) && !strcmp(argv[1], "leave")) return mode_leave(argv[2], argc == 4 ? atol(argv[3]) : 0);
  fprintf(stderr, "usage: %s world | late RANK MS | spawn_fail | spawn_destroy | leave coll|root [MS] | p2p_tag\n", argv[0]);
  return 2;
}
