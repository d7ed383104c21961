/* reduce - every rank contributes one number; reduce adds them up on the root
 * (rank 0) only. The other ranks' buffers are left as they were.
 *
 * Reproduces the reduce example of seed 001 (blog post on collective
 * communication operations, section 1.3 "reduce"; torch.distributed with
 * gloo, 4 ranks). Rank r holds tensor([r + 1.]); after
 * dist.reduce(tensor, dst=0, op=SUM) rank 0 holds tensor([10.]) and the
 * others still hold their own value, which the seed prints as "(unchanged)".
 * The call is in place (sendbuf == recvbuf); cc never writes the receive
 * buffer of a rank that is not the root.
 *
 * Run:  build/ccrun -n 4 build/examples/reduce
 *
 * It prints the seed's nine lines, the ranks in any order:
 *     Rank 0 before reduce: tensor([1.])
 *     Rank 0 is the root.
 *     Rank 0 after reduce: tensor([10.])
 *     Rank 1 after reduce: (unchanged) tensor([2.])
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), root = 0;
  float x = (float)rank + 1.0f;
  ex_text t;

  ex_print("Rank %d before reduce: %s\n", rank, ex_tensor_f32(&t, &x, 1));

  if (rank == root) ex_print("Rank %d is the root.\n", rank);
  ex_check(c, cc_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM, root), "cc_reduce");

  if (rank == root)
    ex_print("Rank %d after reduce: %s\n", rank, ex_tensor_f32(&t, &x, 1));
  else
    ex_print("Rank %d after reduce: (unchanged) %s\n", rank, ex_tensor_f32(&t, &x, 1));

  return ex_finish(c);
}
