/* gather_rows - every rank holds one row of five numbers; gather stacks the
 * rows on rank 0, one under the other.
 *
 * Reproduces "2.1 Row Gather" of seed 003 (notebook "collective communication
 * practice", NCCL, 4 ranks). Rank r holds torch.ones(1, 5) * r; rank 0
 * gathers the rows and concatenates them along dim 0 into a [4, 5] tensor.
 * cc_gather already lays rank r's row at recv + r*5, which is the row-major
 * [size, 5] matrix torch.cat(gather_list, dim=0) builds: no reshaping. The
 * receive buffer is needed on the root only; the others pass NULL.
 *
 * Run:  build/ccrun -n 4 build/examples/gather_rows
 *
 * It prints the seed's lines, the ranks in any order; the seed's
 * print("Gathered tensor:\n", t) shows the tensor over four lines, written
 * here on the same line as its title (see example_util.h), and without the
 * seed's device='cuda:0':
 *     Rank 1 has sent its data, no local copy of gathered tensor.
 *     Rank 0 gathered tensor shape: torch.Size([4, 5])
 *     Gathered tensor: tensor([[0., 0., 0., 0., 0.], [1., 1., 1., 1., 1.], ...])
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c), root = 0;
  float tensor[5], *gathered = NULL; /* tensor: shape [1, 5] */
  ex_text t;

  ex_full_f32(tensor, 5, (float)rank); /* torch.ones(1, 5) * rank */
  if (rank == root) gathered = (float *)ex_alloc((size_t)size * 5, sizeof *gathered);

  ex_check(c, cc_gather(c, tensor, gathered, 5, CC_FLOAT32, root), "cc_gather");

  if (rank == root) {
    ex_print("Rank %d gathered tensor shape: torch.Size([%d, 5])\n", rank, size);
    ex_print("Gathered tensor: %s\n", ex_tensor2_f32(&t, gathered, (size_t)size, 5));
  } else {
    ex_print("Rank %d has sent its data, no local copy of gathered tensor.\n", rank);
  }

  free(gathered);
  return ex_finish(c);
}
