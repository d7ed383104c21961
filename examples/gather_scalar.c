/* gather_scalar - every rank sends its rank number to rank 0, which prints
 * them all, in rank order.
 *
 * Reproduces the gather snippet of seed 004 (the torch.distributed backend
 * table with a test snippet per function): rank r holds torch.tensor([r]), an
 * int64 tensor; after dist.gather(tensor, gather_list, dst=0) rank 0 prints
 * "Gathered result: [tensor([0]), tensor([1]), tensor([2]), tensor([3])]".
 * The seed shows no output; this line is what the snippet prints with 4
 * ranks. Only rank 0 needs the receive buffer; the others pass NULL, as the
 * snippet passes gather_list=None.
 *
 * Run:  build/ccrun -n 4 build/examples/gather_scalar
 *
 * It prints one line, from rank 0:
 *     Gathered result: [tensor([0]), tensor([1]), tensor([2]), tensor([3])]
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  int64_t tensor = rank, *gather_list = NULL;
  ex_text t;

  if (rank == 0) gather_list = (int64_t *)ex_alloc((size_t)size, sizeof *gather_list);
  ex_check(c, cc_gather(c, &tensor, gather_list, 1, CC_INT64, 0), "cc_gather");

  if (rank == 0)
    ex_print("Gathered result: %s\n",
             ex_tensor_list_i64(&t, gather_list, (size_t)size, 1));

  free(gather_list);
  return ex_finish(c);
}
