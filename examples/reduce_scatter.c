/* reduce_scatter - every rank holds size*2 numbers; reduce_scatter adds the
   ranks' buffers element by element and gives block r (2 numbers) of the sum
   to rank r.

   Reproduces the reduce_scatter example of seed 001 (blog post on collective
   communication operations, section 1.4 "reducescatter"; 4 ranks). Rank r
   holds torch.ones(8) * (r + 1); every element of the sum is 1+2+3+4 = 10,
   so each rank receives tensor([10., 10.]). (The seed passes a one-element
   input list, [input_tensor], which torch would refuse for 4 ranks, and
   gloo has no reduce_scatter; what it printed is what this program does:
   the 8 elements in 4 blocks of 2.)

   Run:  build/ccrun -n 4 build/examples/reduce_scatter

   It prints the seed's eight lines, the ranks in any order:
       Rank 0 before reduce_scatter: tensor([1., 1., 1., 1., 1., 1., 1., 1.])
       Rank 0 after reduce_scatter: tensor([10., 10.])
       ...                                                                   */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c;
  ex_text t;
  int rank, size;
  const size_t tensor_size = 2; /* elements each rank receives */
  float *input, output[2];
  size_t i, n;

  ex_check(NULL, cc_comm_init(&c, NULL), "cc_comm_init");
  rank = cc_comm_rank(c);
  size = cc_comm_size(c);

  n = tensor_size * (size_t)size;
  input = (float *)ex_alloc(n, sizeof *input);
  for (i = 0; i < n; i++) input[i] = (float)(rank + 1);
  ex_print("Rank %d before reduce_scatter: %s\n", rank, ex_tensor_f32(&t, input, n));

  ex_check(c, cc_reduce_scatter(c, input, output, tensor_size, CC_FLOAT32, CC_SUM),
           "cc_reduce_scatter");

  ex_print("Rank %d after reduce_scatter: %s\n", rank,
           ex_tensor_f32(&t, output, tensor_size));

  free(input);
  ex_check(NULL, cc_comm_destroy(c), "cc_comm_destroy");
  return 0;
}
