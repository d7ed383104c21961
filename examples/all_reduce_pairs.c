/* all_reduce_pairs - six ranks each hold two integers; all_reduce adds them
 * up element by element and every rank receives the sums.
 *
 * Reproduces the all_reduce example of seed 000 (Zhihu article "torch.distributed
 * all_gather and all_reduce", run with torchrun on 2 hosts x 3 NPUs = 6 ranks).
 * Rank r holds torch.tensor([2, 3]) + r*2, an int64 tensor: [2, 3], [4, 5],
 * ..., [12, 13]; the sums are 2+4+...+12 = 42 and 3+5+...+13 = 48. torch
 * printed device='npu:N' after each tensor; a CPU tensor prints no device,
 * and neither does this program.
 *
 * Run:  build/ccrun -n 6 build/examples/all_reduce_pairs
 *
 * It prints the seed's twelve lines, the ranks in any order:
 *     initial tensor=tensor([2, 3]), rank=0
 *     after all_reduce tensor=tensor([42, 48]), rank=0
 *     ...
 */
/* ranks: 6 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c);
  int64_t tensor[2]; /* torch.tensor([2, 3]) + rank*2 */
  ex_text t;

  tensor[0] = 2 + rank * 2;
  tensor[1] = 3 + rank * 2;
  ex_print("initial tensor=%s, rank=%d\n", ex_tensor_i64(&t, tensor, 2), rank);

  ex_check(c, cc_all_reduce(c, tensor, tensor, 2, CC_INT64, CC_SUM), "cc_all_reduce");

  ex_print("after all_reduce tensor=%s, rank=%d\n", ex_tensor_i64(&t, tensor, 2), rank);

  return ex_finish(c);
}
