/* broadcast - rank 0's matrix is copied to every other rank.
 *
 * Reproduces "9 broadcast" of seed 003 (notebook "collective communication
 * practice", NCCL, 4 ranks). Rank 0 holds a [5, 2] tensor of ones, the other
 * ranks a [5, 2] tensor of zeros of the same shape; after
 * dist.broadcast(tensor, src=0) every rank holds the ones. The buffer is
 * both the source (on the root) and the destination (elsewhere).
 *
 * Run:  build/ccrun -n 4 build/examples/broadcast
 *
 * It prints the seed's eight lines, the ranks in any order. The seed printed
 * numpy arrays over several lines, written here on the line of their title
 * with the rows separated by one space (see example_util.h):
 *     Rank 0 before broadcast: [[1. 1.] [1. 1.] [1. 1.] [1. 1.] [1. 1.]]
 *     Rank 1 before broadcast (initial zeros): [[0. 0.] [0. 0.] [0. 0.] [0. 0.] [0. 0.]]
 *     Rank 1 after broadcast: [[1. 1.] [1. 1.] [1. 1.] [1. 1.] [1. 1.]]
 *     ...
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), root = 0;
  float tensor[5][2];
  ex_text t;

  /* torch.ones(5, 2) on the root, torch.zeros(5, 2) elsewhere */
  ex_full_f32(&tensor[0][0], 5 * 2, rank == root ? 1.0f : 0.0f);
  if (rank == root)
    ex_print("Rank %d before broadcast: %s\n", rank, ex_numpy2_f32(&t, &tensor[0][0], 5, 2));
  else
    ex_print("Rank %d before broadcast (initial zeros): %s\n", rank,
             ex_numpy2_f32(&t, &tensor[0][0], 5, 2));

  ex_check(c, cc_broadcast(c, tensor, 5 * 2, CC_FLOAT32, root), "cc_broadcast");

  ex_print("Rank %d after broadcast: %s\n", rank, ex_numpy2_f32(&t, &tensor[0][0], 5, 2));

  return ex_finish(c);
}
