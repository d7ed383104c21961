/* all_reduce_scalar - the all_reduce of all_reduce.c on integers: every rank
 * contributes rank + 1 and every rank receives the sum.
 *
 * Reproduces the all_reduce snippet of seed 004 (the torch.distributed backend
 * table with a test snippet per function): rank r holds
 * torch.tensor([r + 1]), an int64 tensor; after dist.all_reduce(tensor,
 * op=SUM) every rank prints tensor([10]) (1+2+3+4). The seed shows no
 * output; these lines are what the snippet prints with 4 ranks.
 *
 * Run:  build/ccrun -n 4 build/examples/all_reduce_scalar
 *
 * It prints four lines, the ranks in any order:
 *     Rank 0: tensor([10])
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c);
  int64_t tensor = rank + 1;
  ex_text t;

  ex_check(c, cc_all_reduce(c, &tensor, &tensor, 1, CC_INT64, CC_SUM), "cc_all_reduce");
  ex_print("Rank %d: %s\n", rank, ex_tensor_i64(&t, &tensor, 1));

  return ex_finish(c);
}
