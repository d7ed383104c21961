/* reduce_row - every rank holds a row of five numbers; reduce adds the rows
 * up, element by element, on rank 0 only.
 *
 * Reproduces "4 Reduce" of seed 003 (notebook "collective communication
 * practice", NCCL, 4 ranks). Rank r holds torch.ones(1, 5) * r and prints it
 * as a Python list (tensor.tolist()); after dist.reduce(tensor, dst=0,
 * op=SUM) rank 0 holds 0+1+2+3 = 6 in every element. The seed calls the
 * other ranks' tensors "undefined" after the call but printed them
 * unchanged; cc never writes the receive buffer of a rank that is not the
 * root, so they are unchanged here by contract. The call is in place
 * (sendbuf == recvbuf), as torch's.
 *
 * Run:  build/ccrun -n 4 build/examples/reduce_row
 *
 * It prints the seed's eight lines, the ranks in any order:
 *     Rank 0 before reduce: [[0.0, 0.0, 0.0, 0.0, 0.0]]
 *     Rank 0 after reduce (sum): [[6.0, 6.0, 6.0, 6.0, 6.0]]
 *     Rank 1 after reduce (tensor content undefined): [[1.0, 1.0, 1.0, 1.0, 1.0]]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), root = 0;
  float tensor[5]; /* shape [1, 5] */
  ex_text t;

  ex_full_f32(tensor, 5, (float)rank); /* torch.ones(1, 5) * rank */
  ex_print("Rank %d before reduce: %s\n", rank, ex_tolist2_f32(&t, tensor, 1, 5));

  ex_check(c, cc_reduce(c, tensor, tensor, 5, CC_FLOAT32, CC_SUM, root), "cc_reduce");

  if (rank == root)
    ex_print("Rank %d after reduce (sum): %s\n", rank, ex_tolist2_f32(&t, tensor, 1, 5));
  else
    ex_print("Rank %d after reduce (tensor content undefined): %s\n", rank,
             ex_tolist2_f32(&t, tensor, 1, 5));

  return ex_finish(c);
}
