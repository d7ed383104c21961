/* call_cost.c - N calls of one small collective in a world of one, for
   dev/call_cost.sh, which counts the instructions under callgrind and
   takes the difference of two runs: the instructions of one call, from the
   argument checks to the return, waits excepted (a world of one never waits),
   the same count on every run.

     RANK=0 WORLD_SIZE=1 call_cost KIND N      KIND: all_reduce all_gather
       reduce_scatter broadcast all_to_all gather scatter barrier (8 B blocks)

   With a third argument, `late`, in a world of two (broadcast, gather,
   scatter: the queued calls): the rank that receives (gather: the root)
   starts its calls 300 ms after the other, which by then has put all N
   frames into the ring (N at most about 1100: the ring holds 64 KiB); so
   neither waits inside the N calls. */
#define _POSIX_C_SOURCE 200809L
#include "../cc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
  static const char *const kinds[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                      "all_to_all", "gather",     "scatter",        "barrier"};
  float s[2] = {1, 2}, r[2];
  cc_comm *c;
  long i, n;
  int k, late = argc == 4 && !strcmp(argv[3], "late");
  if (argc != 3 && !late) {
    fprintf(stderr, "usage: call_cost KIND N [late]\n");
    return 2;
  }
  for (k = 0; k < 8 && strcmp(argv[1], kinds[k]) != 0; k++) {}
  n = atol(argv[2]);
  if (k == 8 || n < 0) {
    fprintf(stderr, "call_cost: no collective '%s', or N < 0\n", argv[1]);
    return 2;
  }
  if (cc_comm_init(&c, NULL) != CC_OK) {
    fprintf(stderr, "call_cost: %s\n", cc_comm_last_error(NULL));
    return 1;
  }
  if (late && cc_barrier(c) != CC_OK) return 1;
  if (late && (k == 5) == (cc_comm_rank(c) == 0)) {
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
  }
  for (i = 0; i < n; i++) {
    cc_result e;
    switch (k) {
    case 0: e = cc_all_reduce(c, s, r, 2, CC_FLOAT32, CC_SUM); break;
    case 1: e = cc_all_gather(c, s, r, 2, CC_FLOAT32); break;
    case 2: e = cc_reduce_scatter(c, s, r, 2, CC_FLOAT32, CC_SUM); break;
    case 3: e = cc_broadcast(c, r, 2, CC_FLOAT32, 0); break;
    case 4: e = cc_all_to_all(c, s, r, 2, CC_FLOAT32); break;
    case 5: e = cc_gather(c, s, r, 2, CC_FLOAT32, 0); break;
    case 6: e = cc_scatter(c, s, r, 2, CC_FLOAT32, 0); break;
    default: e = cc_barrier(c); break;
    }
    if (e != CC_OK) {
      fprintf(stderr, "call_cost: %s: %s\n", argv[1], cc_comm_last_error(c));
      return 1;
    }
  }
  cc_comm_destroy(c);
  return 0;
}
