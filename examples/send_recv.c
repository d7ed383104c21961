/* send_recv - point to point: rank 0 sends three numbers to rank 1, which
 * receives and prints them.
 *
 * Reproduces the send/recv snippet of seed 004 (the torch.distributed backend
 * table with a test snippet per function; 2 ranks): rank 0 calls
 * dist.send(tensor=torch.tensor([1, 2, 3]), dst=1), rank 1 calls
 * dist.recv(recv_tensor, src=0) into torch.empty(3) and prints it. The seed
 * shows no output. It sends int64 numbers into a float32 tensor, which
 * torch refuses (the sizes differ); here both sides use float32, the type of
 * the tensor that is printed, so rank 1 prints what the snippet means to
 * show: tensor([1., 2., 3.]). Ranks other than 0 and 1, if any, take no part.
 *
 * Run:  build/ccrun -n 2 build/examples/send_recv
 *
 * It prints one line, from rank 1:
 *     tensor([1., 2., 3.])
 */
/* ranks: 2 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h"

int main(void) {
  cc_comm *c = ex_start();
  const int rank = cc_comm_rank(c), tag = 0;
  float tensor[3] = {1, 2, 3}, recv_tensor[3];
  ex_text t;

  ex_need_ranks(c, 2, INT_MAX, "send_recv");

  if (rank == 0) {
    ex_check(c, cc_send(c, tensor, 3, CC_FLOAT32, 1, tag), "cc_send");
  } else if (rank == 1) {
    ex_check(c, cc_recv(c, recv_tensor, 3, CC_FLOAT32, 0, tag), "cc_recv");
    ex_print("%s\n", ex_tensor_f32(&t, recv_tensor, 3));
  }

  return ex_finish(c);
}
