/* broadcast_scalar - rank 0 changes its one-element tensor and broadcasts
 * it; every rank then holds rank 0's value.
 *
 * Reproduces the broadcast snippet of seed 004 (the torch.distributed backend
 * table with a test snippet per function): every rank starts with
 * torch.tensor([0]), an int64 tensor; rank 0 adds 1; after
 * dist.broadcast(tensor, src=0) every rank prints tensor([1]). The seed
 * shows no output; these lines are what the snippet prints with 4 ranks.
 *
 * Run:  build/ccrun -n 4 build/examples/broadcast_scalar
 *
 * It prints four lines, the ranks in any order:
 *     Rank 0: tensor([1])
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c);
  int64_t tensor = 0;
  ex_text t;

  if (rank == 0) tensor += 1; /* only rank 0 modifies the tensor */
  ex_check(c, cc_broadcast(c, &tensor, 1, CC_INT64, 0), "cc_broadcast");
  ex_print("Rank %d: %s\n", rank, ex_tensor_i64(&t, &tensor, 1));

  return ex_finish(c);
}
