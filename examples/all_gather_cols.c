/* all_gather_cols - every rank holds a 5 x 2 block of columns; all_gather
 * gives every rank all the blocks side by side, a 5 x (2*size) matrix.
 *
 * Reproduces "3.2 Column allgather" of seed 003 (notebook "collective
 * communication practice", NCCL, 4 ranks). Rank r holds a [5, 2] tensor whose
 * column j is r*10 + j; after dist.all_gather and torch.cat(gather_list,
 * dim=1) every rank holds the same [5, 8] matrix.
 *
 * cc_all_gather puts rank r's row-major [5, 2] block at blocks + r*10, one
 * block after another; each rank then copies block r, row i, column j to row
 * i, column r*2 + j of the result, which is what torch.cat along dim 1 does.
 *
 * Run:  build/ccrun -n 4 build/examples/all_gather_cols
 *
 * It prints the seed's lines, the ranks in any order. The seed printed numpy
 * arrays over several lines, written here on the line of their title with the
 * rows separated by one space (see example_util.h):
 *     Rank 0 local tensor shape torch.Size([5, 2]): [[0. 1.] [0. 1.] ...]
 *     Rank 0 after column-wise all_gather, shape torch.Size([5, 8]): [[ 0.  1. 10. 11. 20. 21. 30. 31.] ...]
 * (The seed's copy of that output has runs of spaces squeezed to one; numpy
 * pads every number to the same width, "[[ 0.  1. 10.", as printed here.)
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

enum { ROWS = 5, COLS_PER_RANK = 2 };

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  const int width = size * COLS_PER_RANK; /* of the gathered matrix */
  const size_t n = (size_t)ROWS * (size_t)width;
  float tensor[ROWS][COLS_PER_RANK];
  float *blocks = (float *)ex_alloc(n, sizeof *blocks); /* gather_list */
  float *gathered_tensor = (float *)ex_alloc(n, sizeof *gathered_tensor);
  ex_text t;

  ex_fill_cols_f32(&tensor[0][0], ROWS, COLS_PER_RANK, (float)(rank * 10));
  ex_print("Rank %d local tensor shape torch.Size([%d, %d]): %s\n", rank, ROWS,
           COLS_PER_RANK, ex_numpy2_f32(&t, &tensor[0][0], ROWS, COLS_PER_RANK));

  ex_check(c, cc_all_gather(c, tensor, blocks, ROWS * COLS_PER_RANK, CC_FLOAT32),
           "cc_all_gather");

  /* torch.cat(gather_list, dim=1): block r becomes columns r*2 .. r*2+1 */
  ex_cat_cols_f32(gathered_tensor, blocks, ROWS, (size_t)size, COLS_PER_RANK);

  ex_print("Rank %d after column-wise all_gather, shape torch.Size([%d, %d]): %s\n",
           rank, ROWS, width, ex_numpy2_f32(&t, gathered_tensor, ROWS, (size_t)width));

  free(blocks);
  free(gathered_tensor);
  return ex_finish(c);
}
