/* reduce_scatter_scalar - every rank holds one number per rank, all equal to
 * rank + 1; reduce_scatter adds them up and gives sum r to rank r.
 *
 * Reproduces the reduce_scatter snippet of seed 004 (the torch.distributed
 * backend table with a test snippet per function): rank r's input is a list
 * of world_size tensors torch.tensor([r + 1]); after
 * dist.reduce_scatter(output, input, op=SUM) each rank prints its
 * torch.empty(1) output. Every sum is 1+2+3+4 = 10. The seed shows no
 * output. Its inputs are int64 and its output float32, which torch refuses
 * to mix; here both are float32, the type of the tensor that is printed, so
 * each rank prints tensor([10.]).
 *
 * Run:  build/ccrun -n 4 build/examples/reduce_scatter_scalar
 *
 * It prints four lines, the ranks in any order:
 *     Rank 0: tensor([10.])
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  float *input = (float *)ex_alloc((size_t)size, sizeof *input); /* one tensor per rank */
  float output;
  ex_text t;

  ex_full_f32(input, (size_t)size, (float)(rank + 1));
  ex_check(c, cc_reduce_scatter(c, input, &output, 1, CC_FLOAT32, CC_SUM),
           "cc_reduce_scatter");

  ex_print("Rank %d: %s\n", rank, ex_tensor_f32(&t, &output, 1));

  free(input);
  return ex_finish(c);
}
