/* tests/cuda/cuda_emu.h - between a program and tests/cuda/cuda_emu.cpp, the CUDA
 * runtime emulated on the CPU that test_cuda_emu is linked with instead of
 * libcudart.
 *
 * The one hook: a kernel launch (fn<<<...>>>, cudaLaunchKernel) names the
 * kernel by its host stub. The emulator asks the program for the kernel's CPU
 * twin, cc_emu_kernel_twin(stub, &twin): a function that runs the kernel's
 * own __host__ __device__ body over the whole grid, thread after thread, on
 * copies of the launch's arguments. The program defines it (test_cuda.cu
 * hands it cc_cuda.cuh's cc_cuda__twin and the twins of its own test
 * kernels); a kernel without a twin fails to launch with
 * cudaErrorInvalidDeviceFunction. Kernels run this way must not depend on
 * threads running at the same time: no __syncthreads, shared memory, atomics
 * or warp intrinsics, but for a block's first phase before a barrier, which
 * a twin runs once per block before the block's threads, phase by phase
 * (cc_cuda.cuh's kernels read their abort word so; tests/cuda/test_cuda.sh checks
 * them).
 *
 * What the emulator offers a test besides the runtime (weak: absent, that is
 * NULL, in a build with the real runtime):
 *   cc_cuda_emulated()       1
 *   cc_emu_count(what)       events counted in this process so far:
 *                            "freed_while_mapped" (a cudaFree of memory that a
 *                            live process still had open through CUDA IPC),
 *                            "flush_waits" (stream waits with
 *                            CU_STREAM_WAIT_VALUE_FLUSH), "kernels" (run),
 *                            "faults" (kernels that faulted),
 *                            "capture_violations" (calls a stream capture
 *                            prohibited), "over_one_wave" (launches with more
 *                            blocks than the device runs at once),
 *                            "max_blocks" (the most blocks of one launch
 *                            since it was asked last), "memop_calls"
 *                            (cuStreamWaitValue32 and cuStreamWriteValue32),
 *                            "batch_calls" (cuStreamBatchMemOp),
 *                            "already_mapped" (cudaIpcOpenMemHandle refused:
 *                            a stale mapping holds the place); and the
 *                            happens-before checker's, every process's:
 *                            "hb_on" (1: CC_EMU_HB=1 made it), "hb_accesses",
 *                            "hb_flag_edges", "hb_sync_edges", "hb_races",
 *                            "hb_uaf" (uses after free or close),
 *                            "hb_errors", "hb_released" (waits passed on an
 *                            unpublished value), "hb_after_release",
 *                            "hb_dropped_reads", "hb_history_misses",
 *                            "hb_streams", "hb_evicted_flags"
 *
 * The happens-before checker (CC_EMU_HB=1, docs/cuda.md) learns a kernel's
 * accesses from its twin: a build with CC_CUDA_EMU_HOOKS defined gets
 * cc_cuda.cuh's twins calling cc_emu_access(p, bytes, write, op), and its wait
 * kernel's flag stores and loads going through cc_emu_flag_store and
 * cc_emu_flag_load (declared by cc_cuda.cuh, defined by the emulator). */
#ifndef CC_CUDA_EMU_H
#define CC_CUDA_EMU_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*cc_emu_twin_fn)(void **args, dim3 grid, dim3 block);
typedef struct cc_emu_twin {
  cc_emu_twin_fn run;
  int nargs;                           /* the kernel's parameters, at most 8 */
  size_t size[8];                      /* their sizes in bytes */
} cc_emu_twin;

/* Defined by the program: 1 and *out filled when stub is a kernel it knows. */
int cc_emu_kernel_twin(const void *stub, cc_emu_twin *out);

int cc_cuda_emulated(void) __attribute__((weak));
long cc_emu_count(const char *what) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#endif
