/* test_cuda_init.cu - cc_cuda_comm_init where it cannot work, on any machine.
 *
 * Without a usable GPU (the CI machines), every rank of a 2-rank job (cc_spawn)
 * must get the same error from cc_cuda_comm_init, naming the rank that could
 * not join and why, in cc_comm_last_error(host); no GPU communicator; and the
 * host communicator still works. A bad device ordinal and a NULL `out` are
 * refused with CC_ERR_INVALID_ARG. Where a GPU is present only the bad-ordinal
 * and NULL cases run (tests/cuda/test_cuda.cu covers the rest). CUDA is touched in
 * the ranks only, never in this parent before the fork. */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "cc_cuda.cuh"
#include "test_util.h"

typedef struct shared {
  int has_gpu[2];
  int nodev_code[2], nodev_named[2], nodev_out_null[2], host_ok[2];
  int baddev_code[2], baddev_named[2];
  int nullout_code[2];
  char msg[2][320];
} shared;

static shared *sh;

static int rank_main(cc_comm *c, void *arg) {
  int me = cc_comm_rank(c), n = 0, x = 1, sum = 0;
  cc_cuda_comm *g = (cc_cuda_comm *)&x;   /* must be set to NULL on failure */
  cc_result r;
  (void)arg;
  sh->has_gpu[me] = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  if (!sh->has_gpu[me]) {
    r = cc_cuda_comm_init(c, 0, &g);
    sh->nodev_code[me] = (int)r;
    sh->nodev_out_null[me] = g == NULL;
    snprintf(sh->msg[me], sizeof sh->msg[me], "%s", cc_comm_last_error(c));
    sh->nodev_named[me] = strstr(cc_comm_last_error(c), "cuda_comm_init: rank 0: cudaGetDeviceCount failed") != NULL;
  }
  r = cc_cuda_comm_init(c, me == 1 ? 4096 : 0, &g);   /* rank 1 names a device nobody has */
  sh->baddev_code[me] = (int)r;
  sh->baddev_named[me] = strstr(cc_comm_last_error(c), "rank 1: device 4096 is out of range") != NULL ||
                         (!sh->has_gpu[me] && strstr(cc_comm_last_error(c), "rank 0: cudaGetDeviceCount") != NULL);
  if (r == CC_OK) cc_cuda_comm_destroy(g);
  sh->nullout_code[me] = (int)cc_cuda_comm_init(c, 0, NULL);
  sh->host_ok[me] = cc_all_reduce(c, &x, &sum, 1, CC_INT32, CC_SUM) == CC_OK && sum == 2;
  return 0;
}

int main(void) {
  int r, gpu;
  tu_default_timeout("30");
  sh = (shared *)tu_shared_alloc(sizeof *sh);
  if (tu_spawn(2, rank_main, NULL) != 0) { tu_fail("cuda init", "cc_spawn failed"); return 1; }
  gpu = sh->has_gpu[0] || sh->has_gpu[1];
  if (gpu) {
    tu_skip("cuda init without a GPU", "this machine has one (tests/cuda/test_cuda.cu runs)");
  } else {
    for (r = 0; r < 2; r++) {
      if (sh->nodev_code[r] != CC_ERR_UNSUPPORTED && sh->nodev_code[r] != CC_ERR_SYSTEM)
        tu_fail("cuda init without a GPU", "rank %d: %s: %s", r, cc_strerror((cc_result)sh->nodev_code[r]), sh->msg[r]);
      else if (!sh->nodev_named[r] || !sh->nodev_out_null[r] || sh->nodev_code[r] != sh->nodev_code[0])
        tu_fail("cuda init without a GPU", "rank %d: out %s, message \"%s\"", r,
                sh->nodev_out_null[r] ? "NULL" : "set", sh->msg[r]);
      else
        continue;
      break;
    }
    if (r == 2) tu_pass("cuda init without a GPU: both ranks fail alike, naming the rank and the cause", "%s", sh->msg[1]);
  }
  for (r = 0; r < 2; r++)
    if ((gpu && sh->baddev_code[r] != CC_ERR_INVALID_ARG) || sh->baddev_code[r] == CC_OK || !sh->baddev_named[r]) break;
  if (r == 2) tu_pass("cuda init: a bad device ordinal on one rank fails every rank, naming it", NULL);
  else tu_fail("cuda init: a bad device ordinal", "rank %d got %s", r, cc_strerror((cc_result)sh->baddev_code[r]));
  if (sh->nullout_code[0] == CC_ERR_INVALID_ARG && sh->nullout_code[1] == CC_ERR_INVALID_ARG)
    tu_pass("cuda init: out NULL is CC_ERR_INVALID_ARG", NULL);
  else
    tu_fail("cuda init: out NULL", "got %d, %d", sh->nullout_code[0], sh->nullout_code[1]);
  if (sh->host_ok[0] && sh->host_ok[1]) tu_pass("cuda init: the host communicator works after the failures", NULL);
  else tu_fail("cuda init: the host communicator after the failures", "all_reduce failed");
  return tu_exit_code();
}
