/* all_gather_weights - six ranks each hold a vector of four weights;
 * all_gather gives every rank all six vectors, in rank order.
 *
 * Reproduces the all_gather example of seed 000 (Zhihu article "torch.distributed
 * all_gather and all_reduce", run with torchrun on 2 hosts x 3 NPUs = 6 ranks).
 * The seed drew its weights with torch.randn; this program uses, as fixed
 * numbers, the very values the seed printed, so its output is the seed's.
 * The seed's `rank` is the LOCAL_RANK (rank on the host): on its second host
 * the ranks 3, 4, 5 printed rank=0, 1, 2. Started on one host, as here, the
 * local rank equals the rank. torch printed device='npu:N' after each tensor;
 * a CPU tensor prints no device, and neither does this program.
 *
 * Run:  build/ccrun -n 6 build/examples/all_gather_weights
 *
 * It prints twelve lines, the ranks in any order:
 *     weight=tensor([ 0.1697,  1.1252,  1.9084, -0.1981]), rank=0,world_size=6
 *     after gather=[tensor([ 0.1697,  1.1252,  1.9084, -0.1981]), tensor([-0.4507, ...]), ...]
 *     ...
 */
/* ranks: 6 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

/* What torch.randn((4)) gave the seed's six ranks. */
static const float seed_weights[6][4] = {
    {0.1697f, 1.1252f, 1.9084f, -0.1981f},   {-0.4507f, -0.8248f, 0.4962f, -1.8013f},
    {-0.3324f, -0.7647f, 0.4681f, 1.1544f},  {-1.3327f, 0.3076f, -1.0683f, -1.4375f},
    {-0.9139f, 0.4885f, 0.1722f, -0.1989f},  {0.5774f, 1.4462f, 0.1082f, -1.3113f}};

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), local_rank = cc_comm_local_rank(c);
  const int word_size = cc_comm_size(c); /* the seed's spelling */
  const float *weight;
  float gathered[6][4];
  ex_text t;

  ex_need_ranks(c, 6, 6, "all_gather_weights"); /* one per weight vector of the seed */
  weight = seed_weights[rank];
  ex_print("weight=%s, rank=%d,world_size=%d\n", ex_tensor_f32(&t, weight, 4),
           local_rank, word_size);

  ex_check(c, cc_all_gather(c, weight, gathered, 4, CC_FLOAT32), "cc_all_gather");

  ex_print("after gather=%s\n", ex_tensor_list_f32(&t, &gathered[0][0], 6, 4));

  return ex_finish(c);
}
