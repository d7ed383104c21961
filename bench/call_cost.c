/* call_cost.c - N calls of one small collective in a world of one, for
   bench/call_cost.sh, which counts the instructions under callgrind and
   takes the difference of two runs: the instructions of one call, from the
   argument checks to the return, waits excepted (a world of one never waits),
   the same count on every run.

     RANK=0 WORLD_SIZE=1 call_cost KIND N      KIND: all_reduce all_gather
       reduce_scatter broadcast all_to_all gather scatter barrier (8 B blocks) */
#include "../cc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  static const char *const kinds[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                      "all_to_all", "gather",     "scatter",        "barrier"};
  float s[2] = {1, 2}, r[2];
  cc_comm *c;
  long i, n;
  int k;
  if (argc != 3) {
    fprintf(stderr, "usage: call_cost KIND N\n");
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
