/* reduce_scatter_rows - every rank holds a matrix with one row per rank;
 * reduce_scatter adds the matrices up and gives row r of the sum to rank r.
 *
 * Reproduces "7.1 Row reduce scatter (dist.reduce_scatter)" of seed 003
 * (notebook "collective communication practice", NCCL, 4 ranks). Rank r holds
 * the [4, 5] tensor whose row i is r*10 + i and passes its rows as a list of
 * four [1, 5] tensors; rank i receives the sum of everyone's row i:
 * (0+10+20+30) + 4*i = 60, 64, 68, 72. In C the list is the row-major matrix
 * itself: cc_reduce_scatter reduces block i (the 5 numbers at data + i*5)
 * into rank i's output.
 *
 * Run:  build/ccrun -n 4 build/examples/reduce_scatter_rows
 *
 * It prints the seed's eight lines, the ranks in any order. The seed printed
 * numpy arrays over several lines, written here on the line of their title
 * with the rows separated by one space (see example_util.h):
 *     Rank 1 original data (shape torch.Size([4, 5])): [[10. 10. 10. 10. 10.] [11. 11. 11. 11. 11.] ...]
 *     Rank 1 after reduce_scatter (sum), output shape torch.Size([1, 5]): [[64. 64. 64. 64. 64.]]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  float *data = (float *)ex_alloc((size_t)size * 5, sizeof *data); /* shape [size, 5] */
  float output[5];                                                 /* shape [1, 5] */
  ex_text t;

  ex_fill_rows_f32(data, (size_t)size, 5, (float)(rank * 10));
  ex_print("Rank %d original data (shape torch.Size([%d, 5])): %s\n", rank, size,
           ex_numpy2_f32(&t, data, (size_t)size, 5));

  ex_check(c, cc_reduce_scatter(c, data, output, 5, CC_FLOAT32, CC_SUM),
           "cc_reduce_scatter");

  ex_print("Rank %d after reduce_scatter (sum), output shape torch.Size([1, 5]): %s\n",
           rank, ex_numpy2_f32(&t, output, 1, 5));

  free(data);
  return ex_finish(c);
}
