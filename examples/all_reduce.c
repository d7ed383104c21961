/* all_reduce - every rank contributes one number; all_reduce adds them up and
 * every rank receives the sum.
 *
 * Reproduces the all_reduce example of seed 001 (blog post on collective
 * communication operations, section 1.2 "allreduce"; torch.distributed with
 * gloo, 4 ranks). Rank r holds tensor([r + 1.]); after
 * dist.all_reduce(tensor, op=SUM) every rank holds tensor([10.]) (1+2+3+4).
 * As torch's, the call works in place: sendbuf and recvbuf are the same.
 *
 * Run:  build/ccrun -n 4 build/examples/all_reduce
 * (`make run` runs it with --tag-output, which prefixes each line with its rank)
 *
 * It prints the seed's eight lines, the ranks in any order:
 *     Rank 0 before all_reduce: tensor([1.])
 *     Rank 0 after all_reduce: tensor([10.])
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c);
  float x = (float)rank + 1.0f;
  ex_text t;

  ex_print("Rank %d before all_reduce: %s\n", rank, ex_tensor_f32(&t, &x, 1));

  ex_check(c, cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM), "cc_all_reduce");

  ex_print("Rank %d after all_reduce: %s\n", rank, ex_tensor_f32(&t, &x, 1));

  return ex_finish(c);
}
