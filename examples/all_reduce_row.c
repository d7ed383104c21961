/* all_reduce_row - every rank holds a row of five numbers; all_reduce adds
 * the rows up, element by element, and every rank receives the sum.
 *
 * Reproduces "5 all reduce" (first cell) of seed 003 (notebook "collective
 * communication practice", NCCL, 4 ranks). Rank r holds torch.ones(1, 5) * r
 * and prints it as a Python list (tensor.tolist()); after
 * dist.all_reduce(tensor, op=SUM) every element on every rank is
 * 0+1+2+3 = 6. The call is in place (sendbuf == recvbuf), as torch's.
 *
 * Run:  build/ccrun -n 4 build/examples/all_reduce_row
 *
 * It prints the seed's eight lines, the ranks in any order:
 *     Rank 0 before all_reduce: [[0.0, 0.0, 0.0, 0.0, 0.0]]
 *     Rank 0 after all_reduce (sum): [[6.0, 6.0, 6.0, 6.0, 6.0]]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c);
  float tensor[5]; /* shape [1, 5] */
  ex_text t;

  ex_full_f32(tensor, 5, (float)rank); /* torch.ones(1, 5) * rank */
  ex_print("Rank %d before all_reduce: %s\n", rank, ex_tolist2_f32(&t, tensor, 1, 5));

  ex_check(c, cc_all_reduce(c, tensor, tensor, 5, CC_FLOAT32, CC_SUM), "cc_all_reduce");

  ex_print("Rank %d after all_reduce (sum): %s\n", rank, ex_tolist2_f32(&t, tensor, 1, 5));

  return ex_finish(c);
}
