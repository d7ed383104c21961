/* all_gather_rows - every rank holds one row of five numbers; all_gather
 * gives every rank all the rows, stacked in rank order.
 *
 * Reproduces "3.1 Row allgather" of seed 003 (notebook "collective
 * communication practice", NCCL, 4 ranks). Rank r holds torch.ones(1, 5) * r;
 * after dist.all_gather and torch.cat(tensor_gather_list, dim=0) every rank
 * holds the [4, 5] matrix whose row r is all r. cc_all_gather lays rank r's
 * row at recv + r*5, which already is that row-major matrix. (The seed slept
 * one second before its last print so that the lines come out in two
 * groups; the order does not matter here, so there is no sleep.)
 *
 * Run:  build/ccrun -n 4 build/examples/all_gather_rows
 *
 * It prints the seed's lines, the ranks in any order; the seed's
 * print(f"Rank {rank} gathered tensor:\n", t) shows the tensor over four
 * lines, written here on its title's line (see example_util.h), without the
 * seed's device='cuda:N':
 *     rank 0 after cat: torch.Size([4, 5])
 *     Rank 0 gathered tensor: tensor([[0., 0., 0., 0., 0.], [1., 1., 1., 1., 1.], ...])
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  float tensor_shard[5]; /* shape [1, 5] */
  float *gathered_tensor = (float *)ex_alloc((size_t)size * 5, sizeof *gathered_tensor);
  ex_text t;

  ex_full_f32(tensor_shard, 5, (float)rank); /* torch.ones(1, 5) * rank */

  ex_check(c, cc_all_gather(c, tensor_shard, gathered_tensor, 5, CC_FLOAT32),
           "cc_all_gather");

  ex_print("rank %d after cat: torch.Size([%d, 5])\n", rank, size);
  ex_print("Rank %d gathered tensor: %s\n", rank,
           ex_tensor2_f32(&t, gathered_tensor, (size_t)size, 5));

  free(gathered_tensor);
  return ex_finish(c);
}
