/* all_to_all_scalar - every rank sends one number to each rank (its own rank
 * number, to all); each rank receives one number from every rank, in rank
 * order.
 *
 * Reproduces the all_to_all snippet of seed 004 (the torch.distributed backend
 * table with a test snippet per function): rank r's input is
 * torch.tensor([r] * world_size); after dist.all_to_all(output, input) each
 * rank prints its output, torch.empty(world_size, dtype=torch.int). Element
 * s comes from rank s, so every rank holds 0, 1, 2, 3. The seed shows no
 * output. Its input is int64 and its output int32, which torch refuses to
 * mix; here both are int32, the type of the tensor that is printed, which
 * torch shows with its dtype: tensor([0, 1, 2, 3], dtype=torch.int32).
 *
 * Run:  build/ccrun -n 4 build/examples/all_to_all_scalar
 *
 * It prints four lines, the ranks in any order:
 *     Rank 0: tensor([0, 1, 2, 3], dtype=torch.int32)
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  int32_t *input = (int32_t *)ex_alloc((size_t)size, sizeof *input);
  int32_t *output = (int32_t *)ex_alloc((size_t)size, sizeof *output);
  ex_text t;
  int i;

  for (i = 0; i < size; i++) input[i] = rank; /* torch.tensor([rank] * world_size) */
  ex_check(c, cc_all_to_all(c, input, output, 1, CC_INT32), "cc_all_to_all");

  ex_print("Rank %d: %s\n", rank, ex_tensor_i32(&t, output, (size_t)size));

  free(input);
  free(output);
  return ex_finish(c);
}
