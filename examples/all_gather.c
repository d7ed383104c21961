/* all_gather - every rank contributes one number and every rank receives all
 * of them, in rank order.
 *
 * Reproduces the all_gather example of seed 001 (blog post on collective
 * communication operations, section 1.1 "allgather"; torch.distributed with
 * gloo, 4 ranks started by mp.spawn). Rank r holds tensor([r + 1.]); after
 * dist.all_gather(gather_list, tensor) every rank's list is
 * [tensor([1.]), tensor([2.]), tensor([3.]), tensor([4.])]. In C the list is
 * one buffer of size*1 floats: rank r's value lands at all[r].
 *
 * Run:  build/ccrun -n 4 build/examples/all_gather
 *
 * It prints the seed's eight lines, the ranks in any order:
 *     Rank 0 before all_gather: tensor([1.])
 *     Rank 0 after all_gather: [tensor([1.]), tensor([2.]), tensor([3.]), tensor([4.])]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  float x = (float)rank + 1.0f;
  float *all = (float *)ex_alloc((size_t)size, sizeof *all); /* gather_list */
  ex_text t;

  ex_print("Rank %d before all_gather: %s\n", rank, ex_tensor_f32(&t, &x, 1));

  ex_check(c, cc_all_gather(c, &x, all, 1, CC_FLOAT32), "cc_all_gather");

  /* print(gather_list): a list of `size` one-element tensors */
  ex_print("Rank %d after all_gather: %s\n", rank,
           ex_tensor_list_f32(&t, all, (size_t)size, 1));

  free(all);
  return ex_finish(c);
}
