/* reduce_scatter - every rank holds size*2 numbers; reduce_scatter adds the
 * ranks' buffers element by element and gives block r (2 numbers) of the sum
 * to rank r.
 *
 * Reproduces the reduce_scatter example of seed 001 (blog post on collective
 * communication operations, section 1.4 "reducescatter"; 4 ranks). Rank r
 * holds torch.ones(8) * (r + 1); every element of the sum is 1+2+3+4 = 10,
 * so each rank receives tensor([10., 10.]). (The seed passes a one-element
 * input list, [input_tensor], which torch would refuse for 4 ranks, and
 * gloo has no reduce_scatter; what it printed is what this program does:
 * the 8 elements in 4 blocks of 2.)
 *
 * Run:  build/ccrun -n 4 build/examples/reduce_scatter
 *
 * It prints the seed's eight lines, the ranks in any order:
 *     Rank 0 before reduce_scatter: tensor([1., 1., 1., 1., 1., 1., 1., 1.])
 *     Rank 0 after reduce_scatter: tensor([10., 10.])
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  const size_t tensor_size = 2; /* elements each rank receives */
  const size_t n = tensor_size * (size_t)size;
  float *input = (float *)ex_alloc(n, sizeof *input), output[2];
  ex_text t;

  ex_full_f32(input, n, (float)(rank + 1)); /* torch.ones(8) * (rank + 1) */
  ex_print("Rank %d before reduce_scatter: %s\n", rank, ex_tensor_f32(&t, input, n));

  ex_check(c, cc_reduce_scatter(c, input, output, tensor_size, CC_FLOAT32, CC_SUM),
           "cc_reduce_scatter");

  ex_print("Rank %d after reduce_scatter: %s\n", rank,
           ex_tensor_f32(&t, output, tensor_size));

  free(input);
  return ex_finish(c);
}
