/* gather_cols - every rank holds a 5 x 2 block of columns; gather puts the
 * blocks side by side on rank 0, giving a 5 x (2*size) matrix.
 *
 * Reproduces "2.2 Column Gather" of seed 003 (notebook "collective
 * communication practice", NCCL, 4 ranks). Rank r holds a [5, 2] tensor whose
 * column j is r*10 + j; rank 0 gathers the four blocks and concatenates them
 * along dim 1 (torch.cat(gather_list, dim=1)) into [5, 8].
 *
 * Column concatenation is not what the bytes of a gather look like: cc_gather
 * puts rank r's 10 numbers (its row-major [5, 2] block) one after another at
 * blocks + r*10. The root then copies block r, row i, column j to row i,
 * column r*2 + j of the [5, 8] result, as torch.cat does.
 *
 * Run:  build/ccrun -n 4 build/examples/gather_cols
 *
 * It prints the seed's lines, the ranks in any order. The seed printed numpy
 * arrays over several lines (print(t.numpy())), written here on the line of
 * their title with the rows separated by one space (see example_util.h):
 *     Rank 1 local tensor (shape torch.Size([5, 2])): [[10. 11.] [10. 11.] ...]
 *     Rank 1 has sent its data, no local copy of gathered tensor.
 *     Rank 0 final gathered tensor (shape torch.Size([5, 8])): [[ 0.  1. 10. 11. 20. 21. 30. 31.] ...]
 * (The seed's copy of that output has runs of spaces squeezed to one; numpy
 * pads every number to the same width, "[[ 0.  1. 10.", as printed here.)
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

enum { ROWS = 5, COLS_PER_RANK = 2 };

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c), root = 0;
  float local[ROWS][COLS_PER_RANK];
  float *blocks = NULL, *gathered = NULL;
  ex_text t;

  ex_fill_cols_f32(&local[0][0], ROWS, COLS_PER_RANK, (float)(rank * 10));
  ex_print("Rank %d local tensor (shape torch.Size([%d, %d])): %s\n", rank, ROWS,
           COLS_PER_RANK, ex_numpy2_f32(&t, &local[0][0], ROWS, COLS_PER_RANK));

  if (rank == root)
    blocks = (float *)ex_alloc((size_t)size * ROWS * COLS_PER_RANK, sizeof *blocks);
  ex_check(c, cc_gather(c, local, blocks, ROWS * COLS_PER_RANK, CC_FLOAT32, root),
           "cc_gather");

  if (rank == root) {
    /* torch.cat(gather_list, dim=1): block r becomes columns r*2 .. r*2+1 */
    const int width = size * COLS_PER_RANK;
    gathered = (float *)ex_alloc((size_t)ROWS * (size_t)width, sizeof *gathered);
    ex_cat_cols_f32(gathered, blocks, ROWS, (size_t)size, COLS_PER_RANK);
    ex_print("Rank %d final gathered tensor (shape torch.Size([%d, %d])): %s\n", rank,
             ROWS, width, ex_numpy2_f32(&t, gathered, ROWS, (size_t)width));
  } else {
    ex_print("Rank %d has sent its data, no local copy of gathered tensor.\n", rank);
  }

  free(blocks);
  free(gathered);
  return ex_finish(c);
}
