/* scatter_scalar - rank 0 holds one number per rank; scatter gives number r
 * to rank r.
 *
 * Reproduces the scatter snippet of seed 004 (the torch.distributed backend
 * table with a test snippet per function): rank 0's scatter_list is
 * [torch.tensor([i]) for i in range(world_size)]; after
 * dist.scatter(tensor, scatter_list, src=0) rank r prints its torch.empty(1)
 * tensor. The seed shows no output. Its list holds int64 tensors and its
 * receive tensor is float32, which torch refuses to mix; here both are
 * float32, the type of the tensor that is printed, so rank r prints
 * tensor([r.]).
 *
 * Run:  build/ccrun -n 4 build/examples/scatter_scalar
 *
 * It prints four lines, the ranks in any order:
 *     Rank 0: tensor([0.])
 *     Rank 1: tensor([1.])
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  float tensor, *scatter_list = NULL;
  ex_text t;
  int i;

  if (rank == 0) { /* [torch.tensor([i]) for i in range(world_size)] */
    scatter_list = (float *)ex_alloc((size_t)size, sizeof *scatter_list);
    for (i = 0; i < size; i++) scatter_list[i] = (float)i;
  }
  ex_check(c, cc_scatter(c, scatter_list, &tensor, 1, CC_FLOAT32, 0), "cc_scatter");

  ex_print("Rank %d: %s\n", rank, ex_tensor_f32(&t, &tensor, 1));

  free(scatter_list);
  return ex_finish(c);
}
