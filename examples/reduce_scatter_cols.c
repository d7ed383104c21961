/* reduce_scatter_cols - every rank holds a matrix with one column per rank;
 * reduce_scatter adds the matrices up and gives column r of the sum to rank r.
 *
 * Reproduces "7.3 Column reduce scatter" of seed 003 (notebook "collective
 * communication practice", NCCL, 4 ranks). Rank r holds the [5, 4] tensor
 * whose column j is r*10 + j, and splits it with torch.split(data, 1, dim=1)
 * into four [5, 1] columns; rank j receives the sum of everyone's column j:
 * (0+10+20+30) + 4*j = 60, 64, 68, 72 in all five rows.
 *
 * A column of a row-major matrix is not contiguous: its numbers lie `size`
 * floats apart. cc_reduce_scatter takes `size` contiguous blocks, so each
 * rank first packs column j into block j (send + j*5) - what torch does for
 * the strided views behind the scenes. The 5 numbers received are the
 * [5, 1] column itself, contiguous already.
 *
 * Run:  build/ccrun -n 4 build/examples/reduce_scatter_cols
 *
 * It prints the seed's eight lines, the ranks in any order. The seed printed
 * numpy arrays over several lines, written here on the line of their title
 * with the rows separated by one space (see example_util.h):
 *     Rank 0 original data (shape torch.Size([5, 4])): [[0. 1. 2. 3.] [0. 1. 2. 3.] ...]
 *     Rank 0 after reduce_scatter (sum), output shape torch.Size([5, 1]): [[60.] [60.] [60.] [60.] [60.]]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

enum { ROWS = 5 };

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  float *data = (float *)ex_alloc((size_t)ROWS * (size_t)size, sizeof *data);
  float *send = (float *)ex_alloc((size_t)size * ROWS, sizeof *send);
  float output[ROWS]; /* data: [5, size]; send: size blocks of 5; output: [5, 1] */
  ex_text t;

  ex_fill_cols_f32(data, ROWS, (size_t)size, (float)(rank * 10));
  ex_print("Rank %d original data (shape torch.Size([%d, %d])): %s\n", rank, ROWS, size,
           ex_numpy2_f32(&t, data, ROWS, (size_t)size));

  /* torch.split(data, 1, dim=1), made contiguous: column j -> block j */
  ex_split_cols_f32(send, data, ROWS, (size_t)size, 1);

  ex_check(c, cc_reduce_scatter(c, send, output, ROWS, CC_FLOAT32, CC_SUM),
           "cc_reduce_scatter");

  ex_print("Rank %d after reduce_scatter (sum), output shape torch.Size([%d, 1]): %s\n",
           rank, ROWS, ex_numpy2_f32(&t, output, ROWS, 1));

  free(data);
  free(send);
  return ex_finish(c);
}
