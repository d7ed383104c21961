/* all_reduce_matrix - the same sum as all_reduce_row on a 2 x 5 matrix: a
 * reduction works element by element whatever the tensor's shape, so the
 * call only needs the element count, 10.
 *
 * Reproduces "5 all reduce" (second cell, "adding a dimension") of seed 003
 * (notebook "collective communication practice", NCCL, 4 ranks). Rank r holds
 * torch.full((2, 5), r); after dist.all_reduce(tensor, op=SUM) every element
 * on every rank is 0+1+2+3 = 6.
 *
 * Run:  build/ccrun -n 4 build/examples/all_reduce_matrix
 *
 * It prints the seed's eight lines, the ranks in any order. The seed printed
 * numpy arrays over two lines (print(t.numpy())), written here on the line of
 * their title with the rows separated by one space (see example_util.h):
 *     Rank 0 before all_reduce: [[0. 0. 0. 0. 0.] [0. 0. 0. 0. 0.]]
 *     Rank 0 after all_reduce (sum): [[6. 6. 6. 6. 6.] [6. 6. 6. 6. 6.]]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c);
  float tensor[2][5];
  ex_text t;

  ex_full_f32(&tensor[0][0], 2 * 5, (float)rank); /* torch.full((2, 5), rank) */
  ex_print("Rank %d before all_reduce: %s\n", rank, ex_numpy2_f32(&t, &tensor[0][0], 2, 5));

  ex_check(c, cc_all_reduce(c, tensor, tensor, 2 * 5, CC_FLOAT32, CC_SUM),
           "cc_all_reduce");

  ex_print("Rank %d after all_reduce (sum): %s\n", rank,
           ex_numpy2_f32(&t, &tensor[0][0], 2, 5));

  return ex_finish(c);
}
