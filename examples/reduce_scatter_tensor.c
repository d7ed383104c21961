/* reduce_scatter_tensor - the row reduce_scatter again, written as the seed's
 * second version: one input tensor instead of a list of rows.
 *
 * Reproduces "7.2 Row reduce scatter (reduce_scatter_tensor)" of seed 003
 * (notebook "collective communication practice", NCCL, 4 ranks). Rank r holds
 * the [4, 5] tensor whose row i is r*10 + i; dist.reduce_scatter_tensor
 * splits it along dim 0 into four blocks and gives rank i the sum of
 * everyone's block i: 60, 64, 68, 72. torch needs two functions for the two
 * ways of passing the input (a list, or one tensor to split); in C both are
 * the same call on the same buffer, cc_reduce_scatter with a count of 5 per
 * rank, as in reduce_scatter_rows.c.
 *
 * Run:  build/ccrun -n 4 build/examples/reduce_scatter_tensor
 *
 * It prints the seed's eight lines, the ranks in any order. The seed printed
 * numpy arrays over several lines, written here on the line of their title
 * with the rows separated by one space (see example_util.h):
 *     Rank 0 input_tensor (shape torch.Size([4, 5])): [[0. 0. 0. 0. 0.] [1. 1. 1. 1. 1.] ...]
 *     Rank 0 after reduce_scatter_tensor (sum), output shape torch.Size([1, 5]): [[60. 60. 60. 60. 60.]]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  float *input_tensor = (float *)ex_alloc((size_t)size * 5, sizeof *input_tensor);
  float output[5]; /* shape [1, 5]: block `rank` of the sum */
  ex_text t;

  ex_fill_rows_f32(input_tensor, (size_t)size, 5, (float)(rank * 10));
  ex_print("Rank %d input_tensor (shape torch.Size([%d, 5])): %s\n", rank, size,
           ex_numpy2_f32(&t, input_tensor, (size_t)size, 5));

  ex_check(c, cc_reduce_scatter(c, input_tensor, output, 5, CC_FLOAT32, CC_SUM),
           "cc_reduce_scatter");

  ex_print("Rank %d after reduce_scatter_tensor (sum), output shape "
           "torch.Size([1, 5]): %s\n",
           rank, ex_numpy2_f32(&t, output, 1, 5));

  free(input_tensor);
  return ex_finish(c);
}
