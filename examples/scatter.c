/* scatter - rank 0 holds a matrix with one row per rank; scatter sends row r
 * to rank r.
 *
 * Reproduces "6 scatter" of seed 003 (notebook "collective communication
 * practice", NCCL, 4 ranks). Rank 0 builds the [4, 5] tensor whose row i is
 * all i and splits it into a list of four rows of shape [5]; after
 * dist.scatter(recv_tensor, scatter_list, src=0) rank r holds [r. r. r. r. r.].
 * In C the list is the row-major matrix itself: cc_scatter sends the 5
 * numbers at data + r*5 to rank r. Only the root needs the matrix; the others
 * pass NULL.
 *
 * Run:  build/ccrun -n 4 build/examples/scatter
 *
 * It prints the seed's six lines, the ranks in any order. The seed printed
 * numpy arrays over several lines, written here on the line of their title
 * with the rows separated by one space (see example_util.h):
 *     Rank 0: Original data to scatter: [[0. 0. 0. 0. 0.] [1. 1. 1. 1. 1.] ...]
 *     Rank 0: Scatter list shapes: [torch.Size([5]), torch.Size([5]), torch.Size([5]), torch.Size([5])]
 *     Rank 1 received tensor of shape torch.Size([5]): [1. 1. 1. 1. 1.]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), size = cc_comm_size(c), root = 0;
  float recv_tensor[5], *data_to_scatter = NULL;
  char shapes[1024];
  ex_text t;
  int i;

  if (rank == root) {
    /* torch.arange(world_size).float().unsqueeze(1).repeat(1, 5) */
    data_to_scatter = (float *)ex_alloc((size_t)size * 5, sizeof *data_to_scatter);
    ex_fill_rows_f32(data_to_scatter, (size_t)size, 5, 0.0f);
    ex_print("Rank %d: Original data to scatter: %s\n", rank,
             ex_numpy2_f32(&t, data_to_scatter, (size_t)size, 5));

    /* the seed's list of row views: `size` tensors of shape [5] */
    shapes[0] = 0;
    for (i = 0; i < size; i++) {
      size_t len = strlen(shapes);
      snprintf(shapes + len, sizeof shapes - len, "%storch.Size([5])", i ? ", " : "");
    }
    ex_print("Rank %d: Scatter list shapes: [%s]\n", rank, shapes);
  }

  ex_check(c, cc_scatter(c, data_to_scatter, recv_tensor, 5, CC_FLOAT32, root),
           "cc_scatter");

  ex_print("Rank %d received tensor of shape torch.Size([5]): %s\n", rank,
           ex_numpy_f32(&t, recv_tensor, 5));

  free(data_to_scatter);
  return ex_finish(c);
}
