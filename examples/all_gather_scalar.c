/* all_gather_scalar - every rank contributes its rank number and every rank
 * receives all of them, in rank order.
 *
 * Reproduces the all_gather snippet of seed 004 (the torch.distributed backend
 * table with a test snippet per function): rank r holds torch.tensor([r]), an
 * int64 tensor; after dist.all_gather(gather_list, tensor) every rank prints
 * the list [tensor([0]), tensor([1]), tensor([2]), tensor([3])]. The seed
 * shows no output; these lines are what the snippet prints with 4 ranks. In
 * C the list is one buffer: rank r's number lands at gather_list[r].
 *
 * Run:  build/ccrun -n 4 build/examples/all_gather_scalar
 *
 * It prints four lines, the ranks in any order:
 *     Rank 0: [tensor([0]), tensor([1]), tensor([2]), tensor([3])]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  int64_t tensor = rank;
  int64_t *gather_list = (int64_t *)ex_alloc((size_t)size, sizeof *gather_list);
  ex_text t;

  ex_check(c, cc_all_gather(c, &tensor, gather_list, 1, CC_INT64), "cc_all_gather");
  ex_print("Rank %d: %s\n", rank, ex_tensor_list_i64(&t, gather_list, (size_t)size, 1));

  free(gather_list);
  return ex_finish(c);
}
