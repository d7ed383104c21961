/* reduce_scalar - every rank contributes rank + 1; reduce adds them up on
 * rank 0, which prints the sum.
 *
 * Reproduces the reduce snippet of seed 004 (the torch.distributed backend
 * table with a test snippet per function): rank r holds torch.tensor([r + 1]),
 * an int64 tensor; after dist.reduce(tensor, dst=0, op=SUM) rank 0 prints
 * "Reduced result: tensor([10])". The seed shows no output; this line is
 * what the snippet prints with 4 ranks. The call is in place.
 *
 * Run:  build/ccrun -n 4 build/examples/reduce_scalar
 *
 * It prints one line, from rank 0:
 *     Reduced result: tensor([10])
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), dst = 0; /* the root */
  int64_t tensor = rank + 1;
  ex_text t;

  ex_check(c, cc_reduce(c, &tensor, &tensor, 1, CC_INT64, CC_SUM, dst), "cc_reduce");
  if (rank == dst) ex_print("Reduced result: %s\n", ex_tensor_i64(&t, &tensor, 1));

  return ex_finish(c);
}
