/* barrier - no rank leaves the barrier before every rank has entered it.
 *
 * Reproduces the barrier snippet of seed 004 (the torch.distributed backend
 * table with a test snippet per function): each rank prints that it reached
 * the barrier, calls dist.barrier(), and prints that it passed. Watched live,
 * all four "reached" lines come before any "passed" line.
 *
 * Run:  build/ccrun -n 4 build/examples/barrier
 *
 * It prints eight lines, the ranks in any order (the seed shows no output):
 *     Rank 0 reached barrier.
 *     Rank 0 passed barrier.
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c);

  ex_print("Rank %d reached barrier.\n", rank);
  ex_check(c, cc_barrier(c), "cc_barrier");
  ex_print("Rank %d passed barrier.\n", rank);

  return ex_finish(c);
}
