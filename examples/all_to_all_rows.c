/* all_to_all_rows - every rank holds one row for each rank; all_to_all sends
 * row j to rank j, so that rank j ends up with everyone's row j, in rank
 * order (a transpose of the rows across the ranks).
 *
 * Reproduces "8.1 Row alltoall" of seed 003 (notebook "collective
 * communication practice", NCCL, 4 ranks). Rank r holds the [4, 2] tensor
 * whose row d is r*10 + d (the block meant for rank d); after
 * dist.all_to_all_single(recv_tensor, send_tensor) row s of rank d's result
 * is s*10 + d: rank 0 gets 0, 10, 20, 30; rank 1 gets 1, 11, 21, 31. The
 * rows are contiguous, so cc_all_to_all works on the matrices as they are,
 * 2 numbers per peer.
 *
 * Run:  build/ccrun -n 4 build/examples/all_to_all_rows
 *
 * It prints the seed's eight lines, the ranks in any order. The seed printed
 * numpy arrays over several lines, written here on the line of their title
 * with the rows separated by one space (see example_util.h):
 *     Rank 1 send_tensor (before alltoall): [[10. 10.] [11. 11.] [12. 12.] [13. 13.]]
 *     Rank 1 recv_tensor (after alltoall): [[ 1.  1.] [11. 11.] [21. 21.] [31. 31.]]
 *     ...
 * (The seed's copy of that output has runs of spaces squeezed to one; numpy
 * pads every number to the same width, "[[ 1.  1.]", as printed here.)
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

enum { ELEMENT_SIZE = 2 }; /* numbers in each block */

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  const size_t n = (size_t)size * ELEMENT_SIZE; /* shape [size, 2] */
  float *send_tensor = (float *)ex_alloc(n, sizeof *send_tensor);
  float *recv_tensor = (float *)ex_alloc(n, sizeof *recv_tensor);
  ex_text t;

  /* row dst, the block meant for rank dst, is rank*10 + dst */
  ex_fill_rows_f32(send_tensor, (size_t)size, ELEMENT_SIZE, (float)(rank * 10));
  ex_print("Rank %d send_tensor (before alltoall): %s\n", rank,
           ex_numpy2_f32(&t, send_tensor, (size_t)size, ELEMENT_SIZE));

  ex_check(c, cc_all_to_all(c, send_tensor, recv_tensor, ELEMENT_SIZE, CC_FLOAT32),
           "cc_all_to_all");

  ex_print("Rank %d recv_tensor (after alltoall): %s\n", rank,
           ex_numpy2_f32(&t, recv_tensor, (size_t)size, ELEMENT_SIZE));

  free(send_tensor);
  free(recv_tensor);
  return ex_finish(c);
}
