/* all_to_all_cols - every rank holds one column for each rank; all_to_all
 * sends column j to rank j, so that rank j ends up with everyone's column j,
 * side by side in rank order.
 *
 * Reproduces "8.2 Column alltoall" of seed 003 (notebook "collective
 * communication practice", NCCL, 4 ranks). Rank r holds the [5, 4] tensor
 * whose column j is r*10 + j. The seed cuts it into four [5, 1] columns made
 * contiguous (local_tensor[:, col:col+1].contiguous()), exchanges them with
 * dist.all_to_all(output_list, input_list) and joins what it received with
 * torch.cat(output_list, dim=1): column s of rank j's result is s*10 + j,
 * e.g. rank 1 holds rows of 1, 11, 21, 31.
 *
 * In C the same three steps are explicit: pack column j of the row-major
 * matrix into block j of the send buffer (its numbers lie `size` floats
 * apart in the matrix), cc_all_to_all with 5 numbers per peer, then unpack
 * block s of the receive buffer into column s of the result.
 *
 * Run:  build/ccrun -n 4 build/examples/all_to_all_cols
 *
 * It prints the seed's eight lines, the ranks in any order. The seed printed
 * numpy arrays over several lines, written here on the line of their title
 * with the rows separated by one space (see example_util.h):
 *     Rank 1 local tensor (shape torch.Size([5, 4])): [[10. 11. 12. 13.] ...]
 *     Rank 1 after column-wise all_to_all (shape torch.Size([5, 4])): [[ 1. 11. 21. 31.] ...]
 * (The seed's copy of that output has runs of spaces squeezed to one; numpy
 * pads every number to the same width, "[[ 1. 11.", as printed here.)
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

enum { ROWS = 5 };

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  const size_t n = (size_t)ROWS * (size_t)size;
  float *local_tensor = (float *)ex_alloc(n, sizeof *local_tensor); /* [5, size] */
  float *send = (float *)ex_alloc(n, sizeof *send); /* size blocks of 5 */
  float *recv = (float *)ex_alloc(n, sizeof *recv); /* size blocks of 5 */
  float *result = (float *)ex_alloc(n, sizeof *result); /* [5, size] */
  ex_text t;

  ex_fill_cols_f32(local_tensor, ROWS, (size_t)size, (float)(rank * 10));
  ex_print("Rank %d local tensor (shape torch.Size([%d, %d])): %s\n", rank, ROWS, size,
           ex_numpy2_f32(&t, local_tensor, ROWS, (size_t)size));

  /* input_list: column j, made contiguous, is the block for rank j */
  ex_split_cols_f32(send, local_tensor, ROWS, (size_t)size, 1);

  ex_check(c, cc_all_to_all(c, send, recv, ROWS, CC_FLOAT32), "cc_all_to_all");

  /* torch.cat(output_list, dim=1): the block from rank s becomes column s */
  ex_cat_cols_f32(result, recv, ROWS, (size_t)size, 1);

  ex_print("Rank %d after column-wise all_to_all (shape torch.Size([%d, %d])): %s\n",
           rank, ROWS, size, ex_numpy2_f32(&t, result, ROWS, (size_t)size));

  free(local_tensor);
  free(send);
  free(recv);
  free(result);
  return ex_finish(c);
}
