/* cuda_all_reduce - every rank adds a vector that lives on its GPU into
   everyone's, with cc_cuda.cuh; the ranks may share one GPU.

   Each rank fills n floats on its GPU with x[i] = (rank + 1) * (i % 7), with a
   kernel on its stream, and calls cc_cuda_all_reduce in place on the same
   stream: the call only queues the work and returns. After the stream is
   synchronized every element holds (1 + 2 + ... + size) * (i % 7). A second
   call, out of place, sums plain cudaMalloc buffers (mapped by the peers on
   first use) with a premul_sum: each rank's vector times 1/size, the average.

   Build and run (the Makefile's `cuda` target builds it with nvcc):
       make cuda && build/ccrun -n 4 build/cuda/cuda_all_reduce [n]

   Prints, in rank order:
       cuda_all_reduce: 4 ranks, ipc mode, 1048576 floats
       rank 0 (GPU 0): x[0..6] = 0 10 20 30 40 50 60, all 1048576 right; average right
       ...
   and exits 0; with no CUDA device it says so and exits 2. */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "cc_cuda.cuh"

#include <stdio.h>
#include <stdlib.h>

#define CHECK_CC(g, call)                                                            \
  do {                                                                             \
    cc_result r_ = (call);                                                         \
    if (r_ != CC_OK) {                                                             \
      fprintf(stderr, "%s: %s\n", #call, (g) ? cc_cuda_comm_last_error(g) : cc_comm_last_error(c)); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)
#define CHECK_CUDA(call)                                                             \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                  \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

__global__ void fill(float *x, size_t n, float scale) {
  size_t i;
  for (i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    x[i] = scale * (float)(i % 7);
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : (size_t)1 << 20, i, wrong = 0, wrong_avg = 0;
  cc_comm *c;
  cc_cuda_comm *g = NULL;
  cudaStream_t s;
  float *x, *a, *avg, *host, sum, inv;
  int ndev = 0, rank, size, dev, r;
  cc_op mean;

  CHECK_CC(g, cc_comm_init(&c, NULL));
  rank = cc_comm_rank(c);
  size = cc_comm_size(c);
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    if (rank == 0) printf("cuda_all_reduce: no CUDA device here (%s)\n", cudaGetErrorString(cudaGetLastError()));
    cc_comm_destroy(c);
    return 2;
  }
  dev = cc_comm_local_rank(c) % ndev;                 /* ranks share GPUs round robin */
  CHECK_CC(g, cc_cuda_comm_init(c, dev, &g));
  CHECK_CUDA(cudaSetDevice(dev));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  /* in place, on a buffer from cc_cuda_malloc (shared with the peers once) */
  CHECK_CC(g, cc_cuda_malloc(g, (void **)&x, n * sizeof *x));
  fill<<<256, 256, 0, s>>>(x, n, (float)(rank + 1));
  CHECK_CC(g, cc_cuda_all_reduce(g, x, x, n, CC_FLOAT32, CC_SUM, s));

  /* out of place, plain cudaMalloc buffers: the average through premul_sum */
  CHECK_CUDA(cudaMalloc((void **)&a, n * sizeof *a));
  CHECK_CUDA(cudaMalloc((void **)&avg, n * sizeof *avg));
  fill<<<256, 256, 0, s>>>(a, n, (float)(rank + 1));
  inv = 1.0f / (float)size;
  CHECK_CC(g, cc_op_create_premul_sum(c, CC_FLOAT32, &inv, &mean));
  CHECK_CC(g, cc_cuda_all_reduce(g, a, avg, n, CC_FLOAT32, mean, s));

  host = (float *)malloc(2 * n * sizeof *host);
  if (!host) return 1;
  CHECK_CUDA(cudaMemcpyAsync(host, x, n * sizeof *x, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaMemcpyAsync(host + n, avg, n * sizeof *avg, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CC(g, cc_cuda_comm_check(g));                  /* nothing failed while the GPU worked */

  sum = (float)size * (float)(size + 1) / 2.0f;
  for (i = 0; i < n; i++) {
    float want_avg = 0.0f;
    int k;
    for (k = 0; k < size; k++) want_avg += inv * ((float)(k + 1) * (float)(i % 7));
    wrong += host[i] != sum * (float)(i % 7);
    wrong_avg += host[n + i] != want_avg;
  }
  if (rank == 0)
    printf("cuda_all_reduce: %d ranks, %s mode, %zu floats\n", size, cc_cuda_comm_mode(g), n);
  for (r = 0; r < size; r++) {                         /* one line per rank, in rank order */
    CHECK_CC(g, cc_barrier(c));
    if (r != rank) continue;
    printf("rank %d (GPU %d): x[0..6] =", rank, dev);
    for (i = 0; i < 7 && i < n; i++) printf(" %g", host[i]);
    printf(", %s; average %s\n", wrong ? "WRONG" : "all right", wrong_avg ? "WRONG" : "right");
    fflush(stdout);
  }

  free(host);
  CHECK_CC(g, cc_cuda_free(g, x));
  CHECK_CC(g, cc_op_destroy(c, mean));
  CHECK_CC(g, cc_cuda_comm_destroy(g));
  g = NULL;
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(avg));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CC(g, cc_comm_destroy(c));
  return wrong || wrong_avg ? 1 : 0;
}
