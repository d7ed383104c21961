/* cc_cuda.cuh - v0.1.0 - collectives on GPU buffers for cc.h - MIT licence (see cc.h)

   Usage: in the one CUDA file (.cu, built with nvcc) that implements cc.h

       #define CC_IMPLEMENTATION
       #include "cc.h"
       #include "cc_cuda.cuh"

   and plain `#include "cc_cuda.cuh"` (after cc.h) everywhere else; the
   declarations need only <cuda_runtime_api.h>, so a C++ file built by g++ may
   call them too. The implementation is compiled with cc.h's, in the same
   file: it reuses cc.h's argument checks, reductions rules and host
   communicator. Link with -pthread (the CUDA runtime comes with nvcc).

   Example: every rank adds its vector into everyone's (ccrun -n 2 ./prog)

       cc_comm *c;
       cc_cuda_comm *g;
       float *x;
       cc_comm_init(&c, NULL);
       cc_cuda_comm_init(c, 0, &g);                       // GPU 0 for every rank
       cc_cuda_malloc(g, (void **)&x, n * sizeof *x);     // shared once, used in place
       ... fill x on `stream` ...
       cc_cuda_all_reduce(g, x, x, n, CC_FLOAT32, CC_SUM, stream);  // ordered on stream
       cudaStreamSynchronize(stream);
       cc_cuda_comm_destroy(g);
       cc_comm_destroy(c);

   How it works (docs/cuda.md has the whole design):

   - When every rank of the host communicator is on this host and every pair
     of GPUs can reach each other (the same GPU, or peer access), ranks share
     their buffers through CUDA IPC and each rank's kernels read its peers'
     buffers in place: "ipc" mode. Several ranks may share one GPU.
   - Otherwise ("staged" mode: ranks on several hosts, GPUs without peer
     access, or CC_CUDA_TRANSPORT=staged) every call copies device to host,
     runs the host collective of cc.h (shared memory, TCP) and copies back.
   - Every call is ordered on the stream it is given, and after the
     communicator's previous call whatever its stream (as NCCL). Calls
     cannot be captured into CUDA graphs. In ipc mode the host thread does
     not wait for the GPU: it swaps one small record per rank with
     its peers through the host communicator (which buffers, which call), then
     queues on the stream the waits for the peers (stream memory operations on
     flags in shared pinned memory), the kernels and the copies, and returns.
     In staged mode the call synchronizes the stream and returns when done.
   - A user op (cc_op_create) runs on the CPU: calls with one take the staged
     path, in ipc mode too. premul_sum ops run on the GPU.
   - A rank that dies, a dead CUDA context, or a peer that does not arrive
     within the timeout, is noticed by a watchdog thread per communicator (it
     sleeps between checks); it releases every wait queued on the GPU and
     aborts the host communicator, and every later call, and
     cc_cuda_comm_check, report the failure. Results of the calls in flight
     are then undefined.

   Environment:

       CC_CUDA_TRANSPORT     auto | ipc | staged (default auto)
       CC_CUDA_ONESHOT_BYTES all_reduce, broadcast and reduce up to this size read
                             whole buffers; above, each rank reads a slice once
                             and writes it where it is needed (default 256K)
       CC_CUDA_BLOCKS        the most blocks of one kernel launch (default 32; never
                             more than the device runs at once)
       CC_CUDA_SYNC          memop | kernel: how the GPU waits for peers (stream
                             memory operations where the device has them)
       CC_TIMEOUT, CC_DEBUG  as for cc.h
*/

#ifndef CC_CUDA_H_INCLUDED
#define CC_CUDA_H_INCLUDED

#ifndef CC_H_INCLUDED
#  error "include cc.h before cc_cuda.cuh"
#endif

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cc_cuda_comm cc_cuda_comm;

/* cc_cuda_comm_init - a GPU communicator over the ranks of `host`, using GPU
 *   `device` (an ordinal as this process sees it) for this rank.
 *   host      stays in use by the GPU communicator (destroy it after); the
 *             caller may go on using it between cc_cuda_ calls, from the
 *             same thread. Each call makes `device` current while it runs
 *             and gives the caller's current device back.
 *   Collective every rank of `host` calls it
 *   Returns   CC_OK, or an error with detail in cc_comm_last_error(host) */
CC_API cc_result cc_cuda_comm_init(cc_comm *host, int device, cc_cuda_comm **out);

/* cc_cuda_comm_destroy - wait for this communicator's queued work, close this
 *   rank's mappings of the peers' memory, meet the peers, then free the GPU
 *   communicator. Collective: every rank calls it (after its last call). A
 *   failure's detail is then in cc_comm_last_error(host). */
CC_API cc_result cc_cuda_comm_destroy(cc_cuda_comm *g);

/* cc_cuda_malloc / cc_cuda_free - device memory that every peer maps once and
 *   then reads in place. Not collective (a failure is that call's only).
 *   Memory that peers have open is freed once they have closed it (at their
 *   next call), at the latest by destroy. Plain cudaMalloc memory works too:
 *   it is mapped by the peers on its first use and the mapping is cached, so
 *   free it only after cc_cuda_comm_destroy. */
CC_API cc_result cc_cuda_malloc(cc_cuda_comm *g, void **ptr, size_t bytes);
CC_API cc_result cc_cuda_free(cc_cuda_comm *g, void *ptr);

/* cc_cuda_comm_abort - fail the GPU communicator and its host communicator
 *   for every rank: queued GPU waits are released, pending and later calls
 *   return an error. Any thread may call it (as cc_comm_abort). Any failure
 *   of the GPU communicator does the same. */
CC_API void cc_cuda_comm_abort(cc_cuda_comm *g);

/* Detail of the last failure on g ("all_reduce: rank 1 lost (pid 4711 exited)"). */
CC_API const char *cc_cuda_comm_last_error(const cc_cuda_comm *g);
/* CC_OK, or the failure the watchdog found while work was queued on the GPU
 * (a peer died or did not arrive in time); never blocks. */
CC_API cc_result cc_cuda_comm_check(cc_cuda_comm *g);
/* "ipc" or "staged" (see above). */
CC_API const char *cc_cuda_comm_mode(const cc_cuda_comm *g);

/* The collectives and point to point: the arguments, rules and in-place forms
 * of cc.h's, with device pointers, and the stream last. Each returns once the
 * work is queued on `s` (ipc mode) or done (staged mode). */
CC_API cc_result cc_cuda_barrier(cc_cuda_comm *g, cudaStream_t s);
CC_API cc_result cc_cuda_broadcast(cc_cuda_comm *g, void *buf, size_t count, cc_dtype t, int root,
                                   cudaStream_t s);
CC_API cc_result cc_cuda_reduce(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                cc_dtype t, cc_op op, int root, cudaStream_t s);
CC_API cc_result cc_cuda_all_reduce(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                    cc_dtype t, cc_op op, cudaStream_t s);
CC_API cc_result cc_cuda_gather(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                cc_dtype t, int root, cudaStream_t s);
CC_API cc_result cc_cuda_all_gather(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                    cc_dtype t, cudaStream_t s);
CC_API cc_result cc_cuda_scatter(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                 cc_dtype t, int root, cudaStream_t s);
CC_API cc_result cc_cuda_reduce_scatter(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                        cc_dtype t, cc_op op, cudaStream_t s);
CC_API cc_result cc_cuda_all_to_all(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                    cc_dtype t, cudaStream_t s);
CC_API cc_result cc_cuda_gather_v(cc_cuda_comm *g, const void *sendbuf, size_t send_count, void *recvbuf,
                                  const size_t *recv_counts, const size_t *displs, cc_dtype t, int root,
                                  cudaStream_t s);
CC_API cc_result cc_cuda_all_gather_v(cc_cuda_comm *g, const void *sendbuf, size_t send_count,
                                      void *recvbuf, const size_t *recv_counts, const size_t *displs,
                                      cc_dtype t, cudaStream_t s);
CC_API cc_result cc_cuda_scatter_v(cc_cuda_comm *g, const void *sendbuf, const size_t *send_counts,
                                   const size_t *displs, void *recvbuf, size_t recv_count, cc_dtype t,
                                   int root, cudaStream_t s);
CC_API cc_result cc_cuda_all_to_all_v(cc_cuda_comm *g, const void *sendbuf, const size_t *send_counts,
                                      const size_t *send_displs, void *recvbuf, const size_t *recv_counts,
                                      const size_t *recv_displs, cc_dtype t, cudaStream_t s);

/* Point to point. Messages between one pair are matched in the order they
 * were sent (as NCCL); the tags of a matched pair must be equal. A send waits
 * on its stream until the peer has received it, so two ranks that send to each
 * other put both calls in one group. */
CC_API cc_result cc_cuda_send(cc_cuda_comm *g, const void *buf, size_t count, cc_dtype t, int peer, int tag,
                              cudaStream_t s);
CC_API cc_result cc_cuda_recv(cc_cuda_comm *g, void *buf, size_t count, cc_dtype t, int peer, int tag,
                              cudaStream_t s);

/* Groups of sends and receives: queued by the calls between begin and end,
 * queued on their stream (one stream for the whole group) by end, and never
 * deadlocking on each other. A send to oneself must be in the group of its
 * receive. Collectives cannot be grouped. */
CC_API cc_result cc_cuda_group_begin(cc_cuda_comm *g);
CC_API cc_result cc_cuda_group_end(cc_cuda_comm *g);

#ifdef __cplusplus
}
#endif

#endif /* CC_CUDA_H_INCLUDED */

/* ================================================================== implementation */
#if defined(CC_IMPLEMENTATION) && !defined(CC_NO_IMPLEMENTATION) && !defined(CC_CUDA__IMPLEMENTED)
#define CC_CUDA__IMPLEMENTED

#ifndef CC__IMPLEMENTED
#  error "cc_cuda.cuh: its implementation is built with cc.h's: define CC_IMPLEMENTATION and include cc.h first, in the same file"
#endif
#ifndef __CUDACC__
#  error "cc_cuda.cuh: the implementation holds CUDA kernels: build this file with nvcc (as a .cu file)"
#endif

#include <cuda.h>   /* driver types for the entry points fetched at run time; libcuda is not linked */

/* CONTENTS (search for the tag)

       @cuda-kernels   the reduction, copy and wait kernels (device code)
       @cuda-types     the shared flag page, the per-call record, the communicator
       @cuda-errors    CUDA failures as cc results, aborting the communicator
       @cuda-buffers   describing own buffers, mapping peers', cc_cuda_malloc
       @cuda-sync      waiting for peers on the stream: memops or a kernel
       @cuda-watchdog  peer death and timeouts while work is queued on the GPU
       @cuda-init      cc_cuda_comm_init / destroy
       @cuda-ipc       the collectives and point to point in ipc mode
       @cuda-staged    the same through host memory and cc.h's host collectives
       @cuda-api       the public calls */

#define CC_CUDA__MAXR 32         /* ranks of an ipc-mode communicator, at most */
#define CC_CUDA__NMAP 32         /* peer buffers mapped per peer (least recently used goes) */
#define CC_CUDA__NEXP 64         /* own buffers whose IPC handle is cached */
#define CC_CUDA__NFREED 16       /* own buffers retired lately, named on the flag page */
#define CC_CUDA__TAG 0x7ccda000  /* host tag of the point-to-point records */
#define CC_CUDA__THREADS 512
#define CC_CUDA__RELEASE (1u << 24)  /* what the watchdog adds to a flag to release its waits */

/* ============================================================== @cuda-kernels */
/* The fold of cc.h's @reduce, element by element, for the GPU. The rules are
   cc.h's (read them there): a left fold in rank order; float16/bfloat16 folded
   in float32 and rounded once with cc.h's own conversions; integer sums and
   products in the unsigned type; min/max as fmin/fmax with the earlier operand
   winning ties; avg divides the sum once; premul_sum scales the first source and
   adds scal[k]*x[k] for the others; every NaN stored as the canonical quiet NaN.
   Every product and sum is rounded on its own (__fmul_rn etc.), so that nvcc
   never fuses a multiply-add: the bits are those of cc.h's CPU fold, which the
   host test tests/cuda/test_cuda_fold.cu checks by running these very functions on
   the CPU. */

template <typename T> struct cc_cuda__rn;
/* The four operations of type T rounded to nearest: on the device the
   intrinsics __Pmul_rn and friends (P is f or d), which nvcc never fuses; in
   the CPU twin the plain operators, which C++ rounds the same way. */
#ifdef __CUDA_ARCH__
#define CC_CUDA__RN_OPS(T, P)                                             \
  static __device__ T mul(T a, T b) { return __##P##mul_rn(a, b); }       \
  static __device__ T add(T a, T b) { return __##P##add_rn(a, b); }       \
  static __device__ T sub(T a, T b) { return __##P##sub_rn(a, b); }       \
  static __device__ T div(T a, T b) { return __##P##div_rn(a, b); }
#else
#define CC_CUDA__RN_OPS(T, P)                                             \
  static T mul(T a, T b) { return a * b; }                                \
  static T add(T a, T b) { return a + b; }                                \
  static T sub(T a, T b) { return a - b; }                                \
  static T div(T a, T b) { return a / b; }
#endif
template <> struct cc_cuda__rn<float> {
  CC_CUDA__RN_OPS(float, f)
  static CC__HD float qnan(void) { return cc__f32_from_bits(0x7fc00000u); }
};
template <> struct cc_cuda__rn<double> {
  CC_CUDA__RN_OPS(double, d)
  static CC__HD double qnan(void) { return cc__f64_from_bits(0x7ff8000000000000ull); }
};
#undef CC_CUDA__RN_OPS

/* What the kernels need beyond plain loads and stores, for the GPU and for
   their CPU twins (the same bodies, run thread after thread by the tests'
   CUDA emulation): a load of a word that another agent writes (an acquire load
   on the CPU, which ThreadSanitizer understands), a store that publishes the
   stream's earlier writes, a system-wide fence, a short nap while polling.
   The kernels use no __syncthreads, shared memory, atomics or warp
   intrinsics, so that their threads may run one after another
   (tests/cuda/test_cuda.sh checks it), but for one thing: each block reads the
   abort word once, in a first phase of its own (cc_cuda__block_stopped),
   which the CPU twins run once per block before the block's threads. */
/* Hooks for the tests' CUDA emulation (tests/cuda/cuda_emu.cpp) and its
   happens-before checker, in the kernels' CPU twins only, never in device
   code. A build for the emulation defines CC_CUDA_EMU_HOOKS; then each twin
   tells the emulator which bytes its launch reads and writes
   (cc_emu_access; nothing once the communicator failed, when the kernels do
   nothing), and the wait kernel's twin stores and loads its flags through the
   emulator (cc_emu_flag_store, cc_emu_flag_load: it keeps the writer's vector
   clock beside each flag). Any other build: no call, plain acquire loads and
   release stores on the CPU. */
#ifdef CC_CUDA_EMU_HOOKS
extern "C" void cc_emu_access(const void *p, size_t bytes, int write, const char *op);
extern "C" void cc_emu_flag_store(volatile unsigned int *p, unsigned int v);
extern "C" unsigned int cc_emu_flag_load(const volatile unsigned int *p);
#endif

static CC__HD inline unsigned int cc_cuda__load(const volatile unsigned int *p) {
#ifdef __CUDA_ARCH__
  return *p;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}
static CC__HD inline unsigned int cc_cuda__load_flag(const volatile unsigned int *p) { /* a peer's post */
#ifdef __CUDA_ARCH__
  return *p;
#elif defined(CC_CUDA_EMU_HOOKS)
  return cc_emu_flag_load(p);
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}
static CC__HD inline void cc_cuda__store(volatile unsigned int *p, unsigned int v) {
#ifdef __CUDA_ARCH__
  *p = v;
#elif defined(CC_CUDA_EMU_HOOKS)
  cc_emu_flag_store(p, v);
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}
static CC__HD inline void cc_cuda__fence_system(void) {
#ifdef __CUDA_ARCH__
  __threadfence_system();
#endif
  /* on the CPU the release store and the acquire loads above order the twin
     (and ThreadSanitizer does not model a fence) */
}
static CC__HD inline void cc_cuda__nap(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  __nanosleep(256);
#elif !defined(__CUDA_ARCH__)
  sched_yield();
#endif
}

/* Has the communicator failed? The abort word is host memory (the flag page,
   over PCIe): each block reads it once, its thread 0 into shared memory, and
   every thread of the block takes it from there after the barrier, so that
   the whole block returns, or none of it. The kernels' only cooperation
   within a block, and only before their work: a block's first phase, which
   the CPU twins run once per block (cc_cuda__twin_stopped). */
static __device__ __forceinline__ int cc_cuda__block_stopped(const volatile unsigned int *abort) {
  __shared__ unsigned int stop;
  if (threadIdx.x == 0) stop = *abort;
  __syncthreads();
  return stop != 0;
}
/* The same phase in a twin: block b of a launch, its word read once. */
static inline int cc_cuda__twin_stopped(const volatile unsigned int *abort) { return cc_cuda__load(abort) != 0; }

template <typename T> static CC__HD T cc_cuda__scal(const unsigned char *m) {
  T v;
  memcpy(&v, m, sizeof v);
  return v;
}

/* Integers. Unsigned types take every op; the signed ones only min and max
   (their other ops run in the unsigned type, as in cc.h). 1u * x: unsigned
   arithmetic even where T promotes to int. */
template <typename T> struct cc_cuda__pint {
  typedef T S;
  typedef T A;
  template <int OP> static CC__HD A first(S x, const unsigned char *m) {
    return OP == CC__OP_PREMUL ? (T)(1u * cc_cuda__scal<T>(m) * x) : x;
  }
  template <int OP> static CC__HD A step(A acc, S s, const unsigned char *m) {
    switch (OP) {
      case CC_MIN: return s < acc ? s : acc;
      case CC_MAX: return s > acc ? s : acc;
      case CC_SUM: return (T)(1u * acc + s);
      case CC_PROD: return (T)(1u * acc * s);
      case CC_BAND: return (T)(acc & s);
      case CC_BOR: return (T)(acc | s);
      case CC_BXOR: return (T)(acc ^ s);
      case CC__OP_PREMUL: return (T)(acc + 1u * cc_cuda__scal<T>(m) * s);
      default: return acc;
    }
  }
  template <int OP> static CC__HD S last(A acc, int n) { (void)n; return acc; }
};

/* float32 and float64 */
template <typename T> struct cc_cuda__pflt {
  typedef T S;
  typedef T A;
  typedef cc_cuda__rn<T> R;
  static CC__HD A load(S x) { return x; }
  template <int OP> static CC__HD A first(S x, const unsigned char *m) {
    return OP == CC__OP_PREMUL ? R::mul(cc_cuda__scal<T>(m), x) : x;
  }
  template <int OP> static CC__HD A step(A acc, A s, const unsigned char *m) {
    switch (OP) {
      case CC_MIN: return s < acc || acc != acc ? s : acc;
      case CC_MAX: return s > acc || acc != acc ? s : acc;
      case CC_SUM: case CC_AVG: return R::add(acc, s);
      case CC_PROD: return R::mul(acc, s);
      case CC__OP_PREMUL: return R::add(acc, R::mul(cc_cuda__scal<T>(m), s));
      default: return acc;
    }
  }
  template <int OP> static CC__HD S last(A acc, int n) {
    if (OP == CC_AVG) acc = R::div(acc, (T)n);
    return acc != acc ? R::qnan() : acc;
  }
};

/* float16 (BF 0) and bfloat16 (BF 1), folded in float32 */
template <int BF> struct cc_cuda__phalf {
  typedef uint16_t S;
  typedef float A;
  typedef cc_cuda__pflt<float> F;
  static CC__HD float load(uint16_t h) { return BF ? cc__bf16_to_float(h) : cc__half_to_float(h); }
  template <int OP> static CC__HD A first(S x, const unsigned char *m) {
    return OP == CC__OP_PREMUL ? cc_cuda__rn<float>::mul(load(cc_cuda__scal<uint16_t>(m)), load(x)) : load(x);
  }
  template <int OP> static CC__HD A step(A acc, S s, const unsigned char *m) {
    if (OP == CC__OP_PREMUL)
      return cc_cuda__rn<float>::add(acc, cc_cuda__rn<float>::mul(load(cc_cuda__scal<uint16_t>(m)), load(s)));
    return F::template step<OP>(acc, load(s), m);
  }
  template <int OP> static CC__HD S last(A acc, int n) {
    float f = F::template last<OP>(acc, n);
    return BF ? cc__float_to_bf16(f) : cc__float_to_half(f);
  }
};

/* complex64 and complex128: prod and premul_sum (sum and avg run as the real
   type over twice the count, as in cc.h) */
template <typename T> struct cc_cuda__cpx { T re, im; };
template <typename T> struct cc_cuda__pcpx {
  typedef cc_cuda__cpx<T> S;
  typedef cc_cuda__cpx<T> A;
  typedef cc_cuda__rn<T> R;
  static CC__HD A mul(T a, T b, T c, T d) {   /* (a + bi)(c + di), one rounding per product */
    A r;
    r.re = R::sub(R::mul(a, c), R::mul(b, d));
    r.im = R::add(R::mul(a, d), R::mul(b, c));
    return r;
  }
  template <int OP> static CC__HD A first(S x, const unsigned char *m) {
    if (OP != CC__OP_PREMUL) return x;
    return mul(cc_cuda__scal<T>(m), cc_cuda__scal<T>(m + sizeof(T)), x.re, x.im);
  }
  template <int OP> static CC__HD A step(A acc, S s, const unsigned char *m) {
    A p;
    if (OP == CC_PROD) return mul(acc.re, acc.im, s.re, s.im);
    if (OP != CC__OP_PREMUL) return acc;
    p = mul(cc_cuda__scal<T>(m), cc_cuda__scal<T>(m + sizeof(T)), s.re, s.im);
    acc.re = R::add(acc.re, p.re);
    acc.im = R::add(acc.im, p.im);
    return acc;
  }
  template <int OP> static CC__HD S last(A acc, int n) {
    (void)n;
    if (acc.re != acc.re) acc.re = R::qnan();
    if (acc.im != acc.im) acc.im = R::qnan();
    return acc;
  }
};

/* One element: the whole fold over n sources. The kernel's tail and the host
   test both run it. */
template <class P, int OP>
static CC__HD typename P::S cc_cuda__fold_one(const void *const *src, const unsigned char (*scal)[16], int n,
                                              size_t i) {
  typedef typename P::S S;
  typename P::A acc = P::template first<OP>(((const S *)src[0])[i], scal[0]);
  int k;
  for (k = 1; k < n; k++) acc = P::template step<OP>(acc, ((const S *)src[k])[i], scal[k]);
  return P::template last<OP>(acc, n);
}

typedef struct cc_cuda__fold_args {
  const void *src[CC_CUDA__MAXR];
  void *dst[CC_CUDA__MAXR];            /* the result goes to every one of them */
  unsigned long long count;            /* elements of the policy's type */
  int n, ndst, vec;                    /* vec: every pointer 16-byte aligned */
  const volatile unsigned int *abort;  /* nonzero: the communicator failed; do nothing */
  unsigned char scal[CC_CUDA__MAXR][16];
} cc_cuda__fold_args;

template <typename S> union cc_cuda__pack { uint4 u; S s[16 / sizeof(S)]; };

/* dst[d][i] = fold over src[0..n-1] of element i, for every d < ndst: 16 bytes
   per thread and load where every pointer is aligned, element by element for
   the rest. Each element is read and written by one thread only, so a
   destination may be a source (in place). Thread t of `stride` threads; the
   kernel runs it on the GPU, cc_cuda__host_fold on the CPU (the tests). */
template <class P, int OP>
static CC__HD void cc_cuda__fold_body(const cc_cuda__fold_args &a, size_t t, size_t stride) {
  typedef typename P::S S;
  enum { L = 16 / sizeof(S) };
  size_t i, npack = a.vec ? a.count / L : 0;
  int k, l, d;
  for (i = t; i < npack; i += stride) {
    cc_cuda__pack<S> in, out;
    typename P::A acc[L];
    in.u = ((const uint4 *)a.src[0])[i];
    for (l = 0; l < L; l++) acc[l] = P::template first<OP>(in.s[l], a.scal[0]);
    for (k = 1; k < a.n; k++) {
      in.u = ((const uint4 *)a.src[k])[i];
      for (l = 0; l < L; l++) acc[l] = P::template step<OP>(acc[l], in.s[l], a.scal[k]);
    }
    for (l = 0; l < L; l++) out.s[l] = P::template last<OP>(acc[l], a.n);
    for (d = 0; d < a.ndst; d++) ((uint4 *)a.dst[d])[i] = out.u;
  }
  for (i = npack * L + t; i < a.count; i += stride) {
    S v = cc_cuda__fold_one<P, OP>(a.src, a.scal, a.n, i);
    for (d = 0; d < a.ndst; d++) ((S *)a.dst[d])[i] = v;
  }
}

template <class P, int OP>
__global__ void __launch_bounds__(CC_CUDA__THREADS) cc_cuda__fold_kernel(cc_cuda__fold_args a) {
  if (cc_cuda__block_stopped(a.abort)) return;
  cc_cuda__fold_body<P, OP>(a, (size_t)blockIdx.x * blockDim.x + threadIdx.x, (size_t)gridDim.x * blockDim.x);
}

typedef void (*cc_cuda__fold_fn)(cc_cuda__fold_args);
typedef void (*cc_cuda__host_fold_fn)(const cc_cuda__fold_args *a, size_t threads);

/* The kernel on the CPU, its `threads` threads one after the other, block
   by block (each block's first phase: the abort word): what
   tests/cuda/test_cuda_fold.cu compares with cc.h's cc__reduce_n, on machines
   without a GPU too. */
template <class P, int OP>
static void cc_cuda__host_fold(const cc_cuda__fold_args *a, size_t threads) {
  size_t t, b;
  for (b = 0; b < threads; b += CC_CUDA__THREADS) {
    if (cc_cuda__twin_stopped(a->abort)) continue;
    for (t = b; t < threads && t < b + CC_CUDA__THREADS; t++) cc_cuda__fold_body<P, OP>(*a, t, threads);
  }
}

/* The kernel's CPU twin for an emulated launch (see cc_cuda__twin). */
typedef void (*cc_cuda__twin_fn)(void **args, dim3 grid, dim3 block);
template <class P, int OP>
static void cc_cuda__fold_twin(void **args, dim3 grid, dim3 block) {
  const cc_cuda__fold_args *a = (const cc_cuda__fold_args *)args[0];
#ifdef CC_CUDA_EMU_HOOKS
  int k;
  for (k = 0; k < a->n + a->ndst && !cc_cuda__load(a->abort); k++)
    cc_emu_access(k < a->n ? a->src[k] : a->dst[k - a->n], (size_t)a->count * sizeof(typename P::S), k >= a->n,
                  "fold kernel");
#endif
  cc_cuda__host_fold<P, OP>(a, (size_t)grid.x * block.x);
}

struct cc_cuda__as_kernel {
  typedef cc_cuda__fold_fn fn;
  template <class P, int OP> static fn get(void) { return &cc_cuda__fold_kernel<P, OP>; }
};
struct cc_cuda__as_host {
  typedef cc_cuda__host_fold_fn fn;
  template <class P, int OP> static fn get(void) { return &cc_cuda__host_fold<P, OP>; }
};
struct cc_cuda__as_twin {
  typedef cc_cuda__twin_fn fn;
  template <class P, int OP> static fn get(void) { return &cc_cuda__fold_twin<P, OP>; }
};

/* The fold for (dtype, op), as cc.h's cc__reduce_n picks its loop: X is
   cc_cuda__as_kernel (the kernel) or cc_cuda__as_host (its CPU twin). *scale is
   how many kernel elements one dtype element is (2: complex sum and avg run as
   the real type), *esize the bytes of one kernel element. NULL: the pair is not
   a built-in fold. */
template <class X>
static typename X::fn cc_cuda__pick(cc_dtype t, int op, size_t *scale, size_t *esize) {
#define CC_CUDA__K(P, OP) return X::template get<P, OP>()
#define CC_CUDA__UINT_OPS(P)                                                         \
  switch (op) {                                                                    \
    case CC_SUM: CC_CUDA__K(P, CC_SUM); case CC_PROD: CC_CUDA__K(P, CC_PROD);      \
    case CC_MIN: CC_CUDA__K(P, CC_MIN); case CC_MAX: CC_CUDA__K(P, CC_MAX);        \
    case CC_BAND: CC_CUDA__K(P, CC_BAND); case CC_BOR: CC_CUDA__K(P, CC_BOR);      \
    case CC_BXOR: CC_CUDA__K(P, CC_BXOR); case CC__OP_PREMUL: CC_CUDA__K(P, CC__OP_PREMUL); \
    default: return NULL;                                                          \
  }
#define CC_CUDA__SINT_OPS(P, U)                                                      \
  switch (op) {                                                                    \
    case CC_MIN: CC_CUDA__K(P, CC_MIN); case CC_MAX: CC_CUDA__K(P, CC_MAX);        \
    default: CC_CUDA__UINT_OPS(U)                                                  \
  }
#define CC_CUDA__FLT_OPS(P)                                                          \
  switch (op) {                                                                    \
    case CC_SUM: CC_CUDA__K(P, CC_SUM); case CC_PROD: CC_CUDA__K(P, CC_PROD);      \
    case CC_MIN: CC_CUDA__K(P, CC_MIN); case CC_MAX: CC_CUDA__K(P, CC_MAX);        \
    case CC_AVG: CC_CUDA__K(P, CC_AVG); case CC__OP_PREMUL: CC_CUDA__K(P, CC__OP_PREMUL); \
    default: return NULL;                                                          \
  }
#define CC_CUDA__CPX_OPS(P, R)                                                       \
  switch (op) {                                                                    \
    case CC_PROD: CC_CUDA__K(P, CC_PROD); case CC__OP_PREMUL: CC_CUDA__K(P, CC__OP_PREMUL); \
    case CC_SUM: *scale = 2; *esize /= 2; CC_CUDA__K(R, CC_SUM);                   \
    case CC_AVG: *scale = 2; *esize /= 2; CC_CUDA__K(R, CC_AVG);                   \
    default: return NULL;                                                          \
  }
  *scale = 1;
  *esize = cc__dtype_bytes(t);
  if (cc__op_check(t, op)) return NULL;
  switch (t) {
    case CC_INT8: CC_CUDA__SINT_OPS(cc_cuda__pint<int8_t>, cc_cuda__pint<uint8_t>)
    case CC_UINT8: CC_CUDA__UINT_OPS(cc_cuda__pint<uint8_t>)
    case CC_INT32: CC_CUDA__SINT_OPS(cc_cuda__pint<int32_t>, cc_cuda__pint<uint32_t>)
    case CC_UINT32: CC_CUDA__UINT_OPS(cc_cuda__pint<uint32_t>)
    case CC_INT64: CC_CUDA__SINT_OPS(cc_cuda__pint<int64_t>, cc_cuda__pint<uint64_t>)
    case CC_UINT64: CC_CUDA__UINT_OPS(cc_cuda__pint<uint64_t>)
    case CC_FLOAT16: CC_CUDA__FLT_OPS(cc_cuda__phalf<0>)
    case CC_BFLOAT16: CC_CUDA__FLT_OPS(cc_cuda__phalf<1>)
    case CC_FLOAT32: CC_CUDA__FLT_OPS(cc_cuda__pflt<float>)
    case CC_FLOAT64: CC_CUDA__FLT_OPS(cc_cuda__pflt<double>)
    case CC_COMPLEX64: CC_CUDA__CPX_OPS(cc_cuda__pcpx<float>, cc_cuda__pflt<float>)
    case CC_COMPLEX128: CC_CUDA__CPX_OPS(cc_cuda__pcpx<double>, cc_cuda__pflt<double>)
    default: return NULL;
  }
#undef CC_CUDA__K
#undef CC_CUDA__UINT_OPS
#undef CC_CUDA__SINT_OPS
#undef CC_CUDA__FLT_OPS
#undef CC_CUDA__CPX_OPS
}

static cc_cuda__fold_fn cc_cuda__fold_pick(cc_dtype t, int op, size_t *scale, size_t *esize) {
  return cc_cuda__pick<cc_cuda__as_kernel>(t, op, scale, esize);
}

/* Up to CC_CUDA__MAXR copies in one launch: blockIdx.y picks the copy. 16 bytes
   a load where source and destination are both aligned to 16, else 4, else 1. */
typedef struct cc_cuda__copy_args {
  const void *src[CC_CUDA__MAXR];
  void *dst[CC_CUDA__MAXR];
  unsigned long long bytes[CC_CUDA__MAXR];
  const volatile unsigned int *abort;
} cc_cuda__copy_args;

/* Copy y of the launch, as thread t of `stride` threads. */
static CC__HD void cc_cuda__copy_body(const cc_cuda__copy_args &a, unsigned int y, size_t t, size_t stride) {
  const unsigned char *s = (const unsigned char *)a.src[y];
  unsigned char *d = (unsigned char *)a.dst[y];
  size_t n = a.bytes[y], i, done = 0;
  if (n == 0 || s == d) return;
  if ((((uintptr_t)s | (uintptr_t)d) & 15) == 0) {
    for (i = t; i < n / 16; i += stride) ((uint4 *)d)[i] = ((const uint4 *)s)[i];
    done = n / 16 * 16;
  } else if ((((uintptr_t)s | (uintptr_t)d) & 3) == 0) {
    for (i = t; i < n / 4; i += stride) ((unsigned int *)d)[i] = ((const unsigned int *)s)[i];
    done = n / 4 * 4;
  }
  for (i = done + t; i < n; i += stride) d[i] = s[i];
}

__global__ void __launch_bounds__(CC_CUDA__THREADS) cc_cuda__copy_kernel(cc_cuda__copy_args a) {
  if (cc_cuda__block_stopped(a.abort)) return;
  cc_cuda__copy_body(a, blockIdx.y, (size_t)blockIdx.x * blockDim.x + threadIdx.x, (size_t)gridDim.x * blockDim.x);
}

static void cc_cuda__copy_twin(void **args, dim3 grid, dim3 block) {
  const cc_cuda__copy_args *a = (const cc_cuda__copy_args *)args[0];
  size_t t, stride = (size_t)grid.x * block.x;
  unsigned int y;
#ifdef CC_CUDA_EMU_HOOKS
  for (y = 0; y < grid.y && !cc_cuda__load(a->abort); y++)
    if (a->bytes[y] && a->src[y] != a->dst[y]) {
      cc_emu_access(a->src[y], a->bytes[y], 0, "copy kernel");
      cc_emu_access(a->dst[y], a->bytes[y], 1, "copy kernel");
    }
#endif
  for (y = 0; y < grid.y; y++)
    for (t = 0; t < stride; t++)
      if (t % block.x || !cc_cuda__twin_stopped(a->abort))   /* block (t / block.x, y): its abort word once */
        cc_cuda__copy_body(*a, y, t, stride);
      else
        t += block.x - 1;
}

/* One source to up to CC_CUDA__MAXR destinations, each byte read once (a
   slice of a broadcast: read from the root, written to every rank that
   receives it). 16 bytes a load where every pointer is aligned to 16, else 4,
   else 1. */
typedef struct cc_cuda__fan_args {
  const void *src;
  void *dst[CC_CUDA__MAXR];
  unsigned long long bytes;
  int ndst;
  const volatile unsigned int *abort;
} cc_cuda__fan_args;

static CC__HD void cc_cuda__fan_body(const cc_cuda__fan_args &a, size_t t, size_t stride) {
  const unsigned char *s = (const unsigned char *)a.src;
  size_t n = a.bytes, i, done = 0;
  uintptr_t bits = (uintptr_t)s;
  int d;
  for (d = 0; d < a.ndst; d++) bits |= (uintptr_t)a.dst[d];
  if ((bits & 15) == 0) {
    for (i = t; i < n / 16; i += stride) {
      uint4 v = ((const uint4 *)s)[i];
      for (d = 0; d < a.ndst; d++) ((uint4 *)a.dst[d])[i] = v;
    }
    done = n / 16 * 16;
  } else if ((bits & 3) == 0) {
    for (i = t; i < n / 4; i += stride) {
      unsigned int v = ((const unsigned int *)s)[i];
      for (d = 0; d < a.ndst; d++) ((unsigned int *)a.dst[d])[i] = v;
    }
    done = n / 4 * 4;
  }
  for (i = done + t; i < n; i += stride) {
    unsigned char v = s[i];
    for (d = 0; d < a.ndst; d++) ((unsigned char *)a.dst[d])[i] = v;
  }
}

__global__ void __launch_bounds__(CC_CUDA__THREADS) cc_cuda__fan_kernel(cc_cuda__fan_args a) {
  if (cc_cuda__block_stopped(a.abort)) return;
  cc_cuda__fan_body(a, (size_t)blockIdx.x * blockDim.x + threadIdx.x, (size_t)gridDim.x * blockDim.x);
}

static void cc_cuda__fan_twin(void **args, dim3 grid, dim3 block) {
  const cc_cuda__fan_args *a = (const cc_cuda__fan_args *)args[0];
  size_t t, stride = (size_t)grid.x * block.x;
#ifdef CC_CUDA_EMU_HOOKS
  int d;
  if (a->bytes && !cc_cuda__load(a->abort)) {
    cc_emu_access(a->src, a->bytes, 0, "copy kernel");
    for (d = 0; d < a->ndst; d++) cc_emu_access(a->dst[d], a->bytes, 1, "copy kernel");
  }
#endif
  for (t = 0; t < stride; t++)
    if (t % block.x || !cc_cuda__twin_stopped(a->abort)) cc_cuda__fan_body(*a, t, stride);
    else t += block.x - 1;
}

/* The wait without stream memory operations: thread 0 posts (after a system
   fence, so that the stream's earlier writes are seen first), thread i waits
   for flag i. Gives up when the communicator fails. */
typedef struct cc_cuda__sync_args {
  volatile unsigned int *post;
  unsigned int post_val;
  int nwait;
  const volatile unsigned int *wait[CC_CUDA__MAXR];
  unsigned int wait_val[CC_CUDA__MAXR];
  const volatile unsigned int *abort;
} cc_cuda__sync_args;

static CC__HD void cc_cuda__sync_body(const cc_cuda__sync_args &a, int i) {
  if (i == 0 && a.post) {
    cc_cuda__fence_system();
    cc_cuda__store(a.post, a.post_val);
  }
  if (i < a.nwait)
    while ((int)(cc_cuda__load_flag(a.wait[i]) - a.wait_val[i]) < 0 && !cc_cuda__load(a.abort)) cc_cuda__nap();
  cc_cuda__fence_system();
}

__global__ void cc_cuda__sync_kernel(cc_cuda__sync_args a) { cc_cuda__sync_body(a, (int)threadIdx.x); }

static void cc_cuda__sync_twin(void **args, dim3 grid, dim3 block) {
  const cc_cuda__sync_args *a = (const cc_cuda__sync_args *)args[0];
  int i;
  (void)grid;
  for (i = 0; i < (int)block.x; i++) cc_cuda__sync_body(*a, i);
}

/* Device code built with --use_fast_math or -ftz=true flushes float32
   subnormals to zero, even in __fadd_rn and __fmul_rn (add.rn.ftz.f32): the
   folds would no longer give cc.h's bits. Init multiplies the smallest normal
   float32 by one half here, once, and refuses such a build. */
typedef struct cc_cuda__ftz_args {
  float *out;
  float x;
} cc_cuda__ftz_args;

__global__ void cc_cuda__ftz_kernel(cc_cuda__ftz_args a) { *a.out = cc_cuda__rn<float>::mul(a.x, 0.5f); }

static void cc_cuda__ftz_twin(void **args, dim3 grid, dim3 block) {
  const cc_cuda__ftz_args *a = (const cc_cuda__ftz_args *)args[0];
  (void)grid, (void)block;
  *a->out = cc_cuda__rn<float>::mul(a->x, 0.5f);
}

/* For a CUDA runtime emulated on the CPU (tests/cuda/cuda_emu.cpp): the CPU twin
   of kernel `stub` (its host stub, as a launch names it), which runs the
   kernel's own body over the whole grid, thread after thread, and the size of
   its one parameter; NULL when stub is not a kernel of this file. */
static __attribute__((unused)) cc_cuda__twin_fn cc_cuda__twin(const void *stub, size_t *argbytes) {
  int t, op;
  if (stub == (const void *)&cc_cuda__copy_kernel) { *argbytes = sizeof(cc_cuda__copy_args); return cc_cuda__copy_twin; }
  if (stub == (const void *)&cc_cuda__fan_kernel) { *argbytes = sizeof(cc_cuda__fan_args); return cc_cuda__fan_twin; }
  if (stub == (const void *)&cc_cuda__sync_kernel) { *argbytes = sizeof(cc_cuda__sync_args); return cc_cuda__sync_twin; }
  if (stub == (const void *)&cc_cuda__ftz_kernel) { *argbytes = sizeof(cc_cuda__ftz_args); return cc_cuda__ftz_twin; }
  *argbytes = sizeof(cc_cuda__fold_args);
  for (t = 0; t < CC_DTYPE_COUNT; t++)
    for (op = 0; op <= CC__OP_PREMUL; op++) {
      size_t scale, es;
      cc_cuda__fold_fn k = cc_cuda__pick<cc_cuda__as_kernel>((cc_dtype)t, op, &scale, &es);
      if (k && (const void *)k == stub) return cc_cuda__pick<cc_cuda__as_twin>((cc_dtype)t, op, &scale, &es);
    }
  return NULL;
}

/* ============================================================== @cuda-types */

/* The flag page: host memory shared by the ranks (POSIX shared memory) and
   mapped into every rank's GPU (cudaHostRegister), so that streams wait on it
   with stream memory operations, and the watchdogs read and release it
   without a CUDA call. Every counter only grows (modulo 2^32); a wait is
   "counter - target >= 0" as a signed 32-bit number, as
   CU_STREAM_WAIT_VALUE_GEQ compares. The last three fields are the host
   threads' only (no GPU waits on them): which buffers each rank has retired
   and how far each peer has closed its mappings of them. */
typedef struct cc_cuda__page {
  unsigned int abort;                  /* 0, or the cc_result that failed the communicator */
  unsigned int claim;                  /* the first rank to fail takes it, then fills the two below */
  int abort_rank;
  char abort_msg[244];
  unsigned int post[CC_CUDA__MAXR][16];        /* [r][0]: collective phase rank r's stream has reached */
  unsigned int ready[CC_CUDA__MAXR][CC_CUDA__MAXR]; /* [src][dst]: messages src -> dst ready to be read */
  unsigned int done[CC_CUDA__MAXR][CC_CUDA__MAXR];  /* [src][dst]: messages src -> dst copied by dst */
  unsigned int want[CC_CUDA__MAXR][CC_CUDA__MAXR];  /* [src][dst]: message dst's stream waits for */
  unsigned int frees[CC_CUDA__MAXR];                /* [r]: buffers rank r has retired so far */
  unsigned int closed[CC_CUDA__MAXR][CC_CUDA__MAXR]; /* [r][p]: of those, how many rank p no longer maps */
  unsigned long long freed[CC_CUDA__MAXR][CC_CUDA__NFREED]; /* [r][(k - 1) % NFREED]: buffer id of r's k-th */
} cc_cuda__page;

#define CC_CUDA__NFLAGS (CC_CUDA__MAXR + 3 * CC_CUDA__MAXR * CC_CUDA__MAXR)

/* A buffer as its owner names it to its peers. */
typedef struct cc_cuda__buf {
  unsigned long long id;               /* the CUDA buffer id of the allocation; 0: none */
  unsigned long long off, size;        /* the pointer's offset in it; its size */
  unsigned long long ptr;              /* the pointer in the owner's address space */
  cudaIpcMemHandle_t h;
} cc_cuda__buf;

/* What every rank tells the others for one call (all_gather over the host
   communicator), followed by `size` (displacement, count) pairs: the blocks a
   scatter_v root or an all_to_all_v rank sends to each rank. */
typedef struct cc_cuda__rec {
  int coll, dtype, op, root, tag;
  unsigned int flags;                  /* CC_CUDA__STAGE, CC_CUDA__NOMEM */
  unsigned long long count, aux;       /* count (or send count), receive count */
  unsigned long long seq;              /* point to point: message number */
  unsigned long long need;             /* CC_CUDA__NOMEM: the scratch bytes this rank could not allocate */
  unsigned char scal[16];              /* premul_sum: this rank's scalar */
  cc_cuda__buf b[2];                   /* send, receive */
} cc_cuda__rec;

#define CC_CUDA__STAGE 1u              /* this call must go through the host */
#define CC_CUDA__NOMEM 2u              /* this rank has no memory for the call's scratch: nobody runs it */

typedef struct cc_cuda__map {          /* a peer's buffer mapped here */
  unsigned long long id, size, used;
  unsigned long long src;              /* where the allocation is in its owner */
  unsigned char *base;
} cc_cuda__map;

typedef struct cc_cuda__exp {          /* an own buffer's handle, cached */
  unsigned long long id, base, size, used;
  cudaIpcMemHandle_t h;
  int ok;                              /* 0: it cannot be shared (cudaIpcGetMemHandle refused) */
  int named;                           /* its handle went to the peers in a record */
} cc_cuda__exp;

typedef struct cc_cuda__alloc {        /* cc_cuda_malloc'd, not yet freed */
  void *p;
  int named;                           /* a record named it: peers may have it open */
} cc_cuda__alloc;

typedef struct cc_cuda__closing {      /* a peer's mapping to close once this rank's work up to ev is done */
  void *base;
  int owner;
  int sealed;                          /* 0: the call being made may still read it (ev comes at its end) */
  cudaEvent_t ev;                      /* NULL: nothing was queued before it */
} cc_cuda__closing;

typedef struct cc_cuda__retired {      /* own memory to free once every peer has closed it */
  void *p;
  unsigned int seq;                    /* its number among this rank's retired buffers */
} cc_cuda__retired;

typedef struct cc_cuda__p2p {          /* a send or receive queued in a group */
  int send, peer, tag;
  const void *sbuf;
  void *rbuf;
  size_t count;
  cc_dtype t;
  cc_cuda__rec rec;                    /* a receive: the sender's record */
} cc_cuda__p2p;

typedef CUresult (*cc_cuda__memop_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*cc_cuda__batch_fn)(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
typedef CUresult (*cc_cuda__attrs_fn)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);

enum { CC_CUDA__STAGED, CC_CUDA__IPC };

typedef struct cc_cuda__occ {          /* blocks of one kernel that an SM holds at once */
  const void *fn;
  unsigned int per_sm;
} cc_cuda__occ;
#define CC_CUDA__NOCC 96               /* kernels of this file, with room */

struct cc_cuda_comm {
  cc_comm *host;
  int rank, size, dev, mode, sms;
  cc_cuda__occ occ[CC_CUDA__NOCC];     /* per kernel, asked once */
  int nocc;
  size_t oneshot;                      /* CC_CUDA_ONESHOT_BYTES */
  size_t max_blocks;                   /* CC_CUDA_BLOCKS: the most blocks of one launch */
  char err[320];
  int failed;                          /* cc_result of the failure; later calls get CC_ERR_ABORTED */
  /* driver entry points (NULL where the driver lacks them) */
  cc_cuda__memop_fn wait32, write32;
  cc_cuda__batch_fn batch;             /* cuStreamBatchMemOp: a barrier's post and waits in one call */
  cc_cuda__attrs_fn attrs;
  int memops;                          /* waits are stream memory operations, else cc_cuda__sync_kernel */
  unsigned int flush;                  /* CU_STREAM_WAIT_VALUE_FLUSH where the device can flush remote writes */
  int far;                             /* some peer's GPU is another GPU than this rank's */
  /* the order of calls across streams */
  cudaEvent_t ev;                      /* the end of the latest call's work, on stream `last` */
  cudaStream_t last;
  int have_last;
  cudaStream_t cur;                    /* the stream of the call being made (after it waited for ev) */
  cudaEvent_t probe;                   /* never recorded: querying it tells whether the context lives */
  /* ipc mode */
  cc_cuda__page *page;                 /* host address */
  unsigned char *dpage;                /* the same page, device address */
  size_t page_bytes;
  int pids[CC_CUDA__MAXR];
  unsigned int phase;                  /* collective phases queued so far */
  unsigned int tx[CC_CUDA__MAXR], rx[CC_CUDA__MAXR];  /* messages queued to / from each rank */
  cc_cuda__map maps[CC_CUDA__MAXR][CC_CUDA__NMAP];
  unsigned long long clock;
  unsigned long long mark;             /* the clock when the call being made began */
  cc_cuda__exp exps[CC_CUDA__NEXP];
  cc_cuda__alloc *allocs;
  int nallocs, capallocs;
  void *work;                          /* own scratch: an in-place input's copy, unshareable sends */
  size_t work_bytes;
  unsigned int frees;                  /* own buffers retired so far */
  cc_cuda__retired *retired;
  int nretired, capretired;
  unsigned int seen[CC_CUDA__MAXR];    /* each peer's retired buffers processed here */
  unsigned int acked[CC_CUDA__MAXR];   /* ... and to be acknowledged once their mappings are closed */
  cc_cuda__closing *closes;
  int ncloses, capcloses;
  unsigned char *recs;                 /* size + 1 records: everyone's, then the outgoing one */
  size_t rec_bytes;
  /* staged mode, and calls that must go through the host */
  unsigned char *stage;                /* pinned host memory */
  size_t stage_bytes;
  /* groups */
  int group_depth;
  cc_cuda__p2p *q;
  int nq, capq;
  cudaStream_t qstream;
  cc_result qerr;
  /* watchdog */
  pthread_t wd;
  int wd_started, wd_stop, closing;    /* closing: destroy has begun; the watchdog judges no more */
  int host_aborted;                    /* the watchdog aborted the host communicator */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  cc_result async;                     /* what the watchdog found */
  char async_msg[320];
  unsigned int *hi;                    /* CC_CUDA__NFLAGS: released flag values, 0 not yet */
  uint64_t since[3 * CC_CUDA__MAXR];          /* per watched wait: since when (0: not waiting) */
  unsigned int since_val[3 * CC_CUDA__MAXR];     /* ... on which value */
};

static unsigned char *cc_cuda__rec_at(cc_cuda_comm *g, int r) { return g->recs + (size_t)r * g->rec_bytes; }
static cc_cuda__rec *cc_cuda__recp(cc_cuda_comm *g, int r) { return (cc_cuda__rec *)(void *)cc_cuda__rec_at(g, r); }
/* rank r's (displacement, count) pair for rank j */
static unsigned long long *cc_cuda__tab(cc_cuda_comm *g, int r, int j) {
  return (unsigned long long *)(void *)(cc_cuda__rec_at(g, r) + sizeof(cc_cuda__rec)) + 2 * j;
}

/* ============================================================== @cuda-errors */
/* Two ways to end a call with an error:
   - cc_cuda__fail refuses it: a bad argument, memory that could not be had,
     a stream being captured. Nothing was sent; g stays usable.
   - cc_cuda__abort fails the communicator for every rank: later calls return
     CC_ERR_ABORTED. In ipc mode the flag page says so, and every rank's
     watchdog then releases its GPU's waits and aborts its host
     communicator, so that no rank waits for one that will not come; in staged
     mode the host communicator is aborted at once. */

static cc_result cc_cuda__fail(cc_cuda_comm *g, cc_result code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->err, sizeof g->err, fmt, ap);
  va_end(ap);
  cc__log(g->host, CC__LOG_WARN, "%s (%s)", g->err, cc_strerror(code));
  return code;
}

/* A CUDA call that failed: the cc code, and "what: rank r: call: name: text". */
static cc_result cc_cuda__code(cudaError_t e) {
  switch (e) {
    case cudaErrorMemoryAllocation: return CC_ERR_NO_MEMORY;
    case cudaErrorNotSupported: case cudaErrorInsufficientDriver: case cudaErrorNoDevice:
      return CC_ERR_UNSUPPORTED;
    case cudaErrorInvalidValue: case cudaErrorInvalidDevice: case cudaErrorInvalidDevicePointer:
      return CC_ERR_INVALID_ARG;
    default: return CC_ERR_SYSTEM;
  }
}
#define CC_CUDA__CALL(g, what, call)                                                 \
  do {                                                                             \
    cudaError_t cc_cuda__e_ = (call);                                              \
    if (cc_cuda__e_ != cudaSuccess)                                                \
      return cc_cuda__abort(g, cc_cuda__code(cc_cuda__e_) == CC_ERR_INVALID_ARG ? CC_ERR_SYSTEM : cc_cuda__code(cc_cuda__e_), \
                            "%s: rank %d: %s failed: %s (%s)", what, (g)->rank, #call,              \
                            cudaGetErrorName(cc_cuda__e_), cudaGetErrorString(cc_cuda__e_));        \
  } while (0)

/* A CUDA call of ours failed and we go on without it: take back the error it
   left as the thread's last error, unless the caller's own error was pending
   before (`before`, from cudaPeekAtLastError): that one is the caller's to
   read, and is never cleared here. */
static void cc_cuda__forgive(cudaError_t before) {
  if (before == cudaSuccess) (void)cudaGetLastError();
}

/* Tell every rank that the communicator failed (g->err says why). */
static void cc_cuda__spread(cc_cuda_comm *g, cc_result code) {
  if (g->page) {
    unsigned int zero = 0;
    if (__atomic_compare_exchange_n(&g->page->claim, &zero, 1u, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      g->page->abort_rank = g->rank;
      snprintf(g->page->abort_msg, sizeof g->page->abort_msg, "%.*s", (int)sizeof g->page->abort_msg - 1, g->err);
      __atomic_store_n(&g->page->abort, (unsigned int)code, __ATOMIC_RELEASE);
    }
    pthread_mutex_lock(&g->lock);
    pthread_cond_signal(&g->cond);     /* the watchdog acts now */
    pthread_mutex_unlock(&g->lock);
  } else {
    cc_comm_abort(g->host);
  }
}

static cc_result cc_cuda__abort(cc_cuda_comm *g, cc_result code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->err, sizeof g->err, fmt, ap);
  va_end(ap);
  if (!g->failed) g->failed = code;
  cc__log(g->host, CC__LOG_WARN, "%s (%s)", g->err, cc_strerror(code));
  cc_cuda__spread(g, code);
  return code;
}

/* Every call starts here: a failed communicator refuses work. */
static cc_result cc_cuda__ready(cc_cuda_comm *g, const char *what) {
  unsigned int a = g->page ? __atomic_load_n(&g->page->abort, __ATOMIC_ACQUIRE) : 0;
  if (!g->failed && a) {
    g->failed = (cc_result)a;
    snprintf(g->err, sizeof g->err, "%s: rank %d: the communicator failed: rank %d: %s", what, g->rank,
             g->page->abort_rank, g->page->abort_msg);
  }
  if (!g->failed && g->host->failed) {
    g->failed = g->host->failed;
    snprintf(g->err, sizeof g->err, "%s: rank %d: the host communicator failed: %.200s", what, g->rank, g->host->err);
    cc_cuda__spread(g, (cc_result)g->failed);
  }
  if (g->failed) {
    if (!strstr(g->err, "(earlier failure)") && strlen(g->err) + 20 < sizeof g->err) strcat(g->err, " (earlier failure)");
    return CC_ERR_ABORTED;
  }
  return CC_OK;
}

/* After a host call that failed: its message, as g's. When a peer failed the
   communicator first (its failure aborted the host communicator under this
   call), the peer's verdict is the call's. */
static cc_result cc_cuda__host_failed(cc_cuda_comm *g, cc_result r) {
  unsigned int a = g->page ? __atomic_load_n(&g->page->abort, __ATOMIC_ACQUIRE) : 0;
  if (r == CC_ERR_INVALID_ARG) {
    snprintf(g->err, sizeof g->err, "%s", g->host->err);   /* a refused argument: g stays usable */
    return r;
  }
  if (a && g->page->abort_rank != g->rank) {
    if (!g->failed) g->failed = (cc_result)a;
    snprintf(g->err, sizeof g->err, "rank %d: the communicator failed: rank %d: %s", g->rank, g->page->abort_rank,
             g->page->abort_msg);
    return (cc_result)a;
  }
  return cc_cuda__abort(g, r, "%s", g->host->err);
}

/* Does this process's CUDA context still live? A fault in a kernel kills it:
   every call then returns the same (sticky) error. Errors that a stream
   capture makes (a query prohibited while some thread captures, which the
   callers' relaxed capture mode should prevent) say nothing of the context. */
static cudaError_t cc_cuda__context(cc_cuda_comm *g) {
  cudaError_t e;
  if (!g->probe) return cudaSuccess;
  e = cudaEventQuery(g->probe);        /* never recorded: cudaSuccess while the context lives */
  switch (e) {
    case cudaErrorNotReady: case cudaErrorStreamCaptureUnsupported: case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureImplicit: case cudaErrorCapturedEvent: case cudaErrorStreamCaptureWrongThread:
      return cudaSuccess;
    default: return e;
  }
}

/* Every call of this library, and its watchdog thread, runs with the
   thread's stream-capture mode relaxed (as NCCL allocates, and PyTorch's
   NCCL watchdog queries its events): its allocations, mappings and event
   queries touch no stream that is being captured, so they must neither fail
   nor invalidate a capture that another thread, or the caller on another
   stream, is making (torch.cuda.graph captures in Global mode, which
   prohibits them in every other thread). A call on a stream that is being
   captured is refused before any of them (cc_cuda__not_capturing). The
   caller's mode is given back when the call returns. */
struct cc_cuda__relaxed {
  cudaStreamCaptureMode prev;
  int ok;
  cc_cuda__relaxed() : prev(cudaStreamCaptureModeRelaxed), ok(0) {
    cudaError_t before = cudaPeekAtLastError();
    ok = cudaThreadExchangeStreamCaptureMode(&prev) == cudaSuccess;
    if (!ok) cc_cuda__forgive(before);
  }
  ~cc_cuda__relaxed() {
    if (ok) cudaThreadExchangeStreamCaptureMode(&prev);
  }
};

/* The caller's current device, made this communicator's for the call and
   given back when the call returns. */
struct cc_cuda__device_guard {
  int prev, dev;
  explicit cc_cuda__device_guard(int d) : prev(-1), dev(d) {
    cudaError_t before = cudaPeekAtLastError();
    if (cudaGetDevice(&prev) != cudaSuccess) {
      cc_cuda__forgive(before);
      prev = -1;
    }
  }
  ~cc_cuda__device_guard() { if (prev >= 0 && prev != dev) cudaSetDevice(prev); }
};

/* ============================================================== @cuda-buffers */

static cc_cuda__alloc *cc_cuda__find_alloc(cc_cuda_comm *g, const void *p) {
  int i;
  for (i = 0; i < g->nallocs; i++)
    if (g->allocs[i].p == p) return &g->allocs[i];
  return NULL;
}

/* ipc mode: the IPC handle of b's allocation (which starts at `start`), from
   the cache of exported allocations or got now; an allocation CUDA will not
   share sends this call through the host (CC_CUDA__STAGE in *flags). */
static void cc_cuda__export(cc_cuda_comm *g, const char *what, const char *name, const void *p,
                            unsigned long long start, cc_cuda__buf *b, unsigned int *flags) {
  unsigned long long id = b->id;
  size_t rsize = b->size;
  int i, slot = 0;
  cc_cuda__exp *e;
  for (i = 0; i < CC_CUDA__NEXP; i++) {
    if (g->exps[i].id == id) break;
    if (g->exps[i].used < g->exps[slot].used) slot = i;
  }
  if (i == CC_CUDA__NEXP) {            /* first use of this allocation: get its handle */
    cudaError_t before = cudaPeekAtLastError();
    e = &g->exps[slot];
    memset(e, 0, sizeof *e);
    e->id = id;
    e->base = (unsigned long long)start;
    e->size = rsize;
    e->ok = cudaIpcGetMemHandle(&e->h, (void *)(uintptr_t)start) == cudaSuccess;
    if (!e->ok) {
      cc_cuda__forgive(before);
      cc__log(g->host, CC__LOG_INFO, "%s: rank %d: %s %p cannot be shared through CUDA IPC; this call goes through the host",
              what, g->rank, name, p);
    }
  } else {
    e = &g->exps[i];
  }
  e->used = ++g->clock;
  if (!e->ok) {
    *flags |= CC_CUDA__STAGE;
  } else {
    b->h = e->h;
    if (!e->named) {                   /* cc_cuda_free must now wait for the peers to close it */
      cc_cuda__alloc *a = cc_cuda__find_alloc(g, (const void *)(uintptr_t)start);
      e->named = 1;
      if (a) a->named = 1;
    }
  }
}

/* Describe own buffer p (bytes long) for the peers: which allocation, where in
   it, its IPC handle (cached per allocation). Refuses host memory and memory
   of another device; sets CC_CUDA__STAGE in *flags where the memory cannot be
   shared (managed memory, memory pools, a driver without the queries). A
   buffer described for a record counts as named: the peers may open it. */
static cc_result cc_cuda__describe(cc_cuda_comm *g, const char *what, const char *name, const void *p,
                                   size_t bytes, cc_cuda__buf *b, unsigned int *flags) {
  unsigned int mtype = 0, managed = 0;
  unsigned long long id = 0;
  int ord = -1;
  CUdeviceptr start = 0;
  size_t rsize = 0;
  memset(b, 0, sizeof *b);
  if (!p || !bytes) return CC_OK;
  b->ptr = (unsigned long long)(uintptr_t)p;
  if (!g->attrs) {                     /* no driver queries: check with the runtime, share nothing */
    cudaPointerAttributes a;
    cudaError_t before = cudaPeekAtLastError();
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cc_cuda__forgive(before);
      return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: %s %p is not memory CUDA knows", what, g->rank, name, p);
    }
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
      return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: %s %p is host memory, not device memory", what,
                           g->rank, name, p);
    *flags |= CC_CUDA__STAGE;
    return CC_OK;
  }
  {
    CUpointer_attribute at[6] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *v[6] = {&mtype, &managed, &id, &ord, &start, &rsize};
    if (g->attrs(6, at, v, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS) {
      cudaError_t ctx = cc_cuda__context(g);
      if (ctx != cudaSuccess)          /* a dead context refuses every query */
        return cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: the CUDA context failed: %s (%s)", what, g->rank,
                              cudaGetErrorName(ctx), cudaGetErrorString(ctx));
      return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: %s %p: cuPointerGetAttributes refused it", what,
                           g->rank, name, p);
    }
  }
  if (managed) { *flags |= CC_CUDA__STAGE; return CC_OK; }
  if (mtype != CU_MEMORYTYPE_DEVICE)
    return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: %s %p is host memory, not device memory", what,
                         g->rank, name, p);
  if (ord != g->dev)
    return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: %s %p is memory of device %d; this communicator uses device %d",
                         what, g->rank, name, p, ord, g->dev);
  if ((uintptr_t)p - (uintptr_t)start > rsize || bytes > rsize - ((uintptr_t)p - (uintptr_t)start))
    return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: %s %p holds %zu bytes; its allocation ends %zu bytes after it",
                         what, g->rank, name, p, bytes, (size_t)(start + rsize - (uintptr_t)p));
  b->id = id;
  b->off = (uintptr_t)p - (uintptr_t)start;
  b->size = rsize;
  if (g->mode != CC_CUDA__IPC) return CC_OK;   /* staged: checked, nothing to share */
  cc_cuda__export(g, what, name, p, (unsigned long long)start, b, flags);
  return CC_OK;
}


static unsigned long long cc_cuda__buffer_id(cc_cuda_comm *g, const void *p) {
  unsigned long long id = 0;
  CUpointer_attribute at = CU_POINTER_ATTRIBUTE_BUFFER_ID;
  void *v = &id;
  if (!g->attrs || !p || g->attrs(1, &at, &v, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS) return 0;
  return id;
}

/* Close a peer's mapping once nothing queued can still read it: an event on
   the stream of the call being made, which has waited for the end of the
   previous call (every earlier one is ordered before that), never by waiting
   for the device. (Not on the previous call's stream: the caller may have
   destroyed it since.) `now`: no work of the call being made reads it (a
   buffer its owner retired), so the event is recorded at once; else the
   call's own copies may read it (a mapping its cache evicts while the call
   is being queued), and the event is recorded once all of the call's work is
   queued (cc_cuda__seal_closes). */
static cc_result cc_cuda__record_close(cc_cuda_comm *g, const char *what, cc_cuda__closing *c, int queued) {
  cudaError_t before = cudaPeekAtLastError(), e = cudaSuccess;
  if (!queued) {                       /* nothing was ever queued: it may close at once */
    c->sealed = 1;
    return CC_OK;
  }
  if ((!c->ev && (e = cudaEventCreateWithFlags(&c->ev, cudaEventDisableTiming)) != cudaSuccess) ||
      (e = cudaEventRecord(c->ev, g->cur)) != cudaSuccess) {
    cc_cuda__forgive(before);
    return what ? cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: an event for closing rank %d's buffer failed: %s (%s)",
                                 what, g->rank, c->owner, cudaGetErrorName(e), cudaGetErrorString(e))
                : CC_ERR_SYSTEM;       /* left unsealed: destroy closes it after all of this rank's work */
  }
  c->sealed = 1;
  return CC_OK;
}

static cc_result cc_cuda__close_later(cc_cuda_comm *g, const char *what, int owner, void *base, int now) {
  cc_cuda__closing *c;
  if (g->ncloses == g->capcloses) {
    int cap = g->capcloses ? 2 * g->capcloses : 16;
    cc_cuda__closing *q = (cc_cuda__closing *)CC_MALLOC(sizeof *q * (size_t)cap);
    if (!q) return cc_cuda__abort(g, CC_ERR_NO_MEMORY, "%s: rank %d: out of host memory", what, g->rank);
    if (g->ncloses) memcpy(q, g->closes, sizeof *q * (size_t)g->ncloses);
    CC_FREE(g->closes);
    g->closes = q;
    g->capcloses = cap;
  }
  c = &g->closes[g->ncloses++];
  c->base = base;
  c->owner = owner;
  c->sealed = 0;
  c->ev = NULL;
  return now ? cc_cuda__record_close(g, what, c, g->have_last) : CC_OK;
}

/* The call being made has queued its work on g->cur: the mappings it evicted
   are closed once that work is done. `what` NULL: the call failed with its
   own message already, which this must not replace (what cannot be sealed
   is closed by destroy). */
static cc_result cc_cuda__seal_closes(cc_cuda_comm *g, const char *what) {
  int i;
  for (i = 0; i < g->ncloses; i++)
    if (!g->closes[i].sealed) CC__TRY(cc_cuda__record_close(g, what, &g->closes[i], 1));
  return CC_OK;
}

/* Close the mappings whose work is done (all of them with `all`, once this
   rank's work is known done), and tell each peer how far it may free. */
static void cc_cuda__reap_closes(cc_cuda_comm *g, int all) {
  int i, n = 0, p;
  for (i = 0; i < g->ncloses; i++) {
    cc_cuda__closing *c = &g->closes[i];
    if (!all && !c->sealed) {          /* the call being made may read it */
      g->closes[n++] = *c;
      continue;
    }
    if (!all && c->ev) {
      cudaError_t before = cudaPeekAtLastError(), e = cudaEventQuery(c->ev);
      if (e == cudaErrorNotReady) {
        cc_cuda__forgive(before);
        g->closes[n++] = *c;
        continue;
      }
    }
    if (c->ev) cudaEventDestroy(c->ev);
    if (cudaIpcCloseMemHandle(c->base) != cudaSuccess)
      cc__log(g->host, CC__LOG_WARN, "rank %d: cudaIpcCloseMemHandle of rank %d's buffer failed", g->rank, c->owner);
  }
  g->ncloses = n;
  if (!g->page) return;
  for (p = 0; p < g->size; p++) {
    int pending = 0;
    if (p == g->rank || __atomic_load_n(&g->page->closed[p][g->rank], __ATOMIC_ACQUIRE) == g->acked[p]) continue;
    for (i = 0; i < g->ncloses && !pending; i++) pending = g->closes[i].owner == p;
    if (!pending) __atomic_store_n(&g->page->closed[p][g->rank], g->acked[p], __ATOMIC_RELEASE);
  }
}

/* The buffers the peers retired since this rank last looked (the flag page
   names the last CC_CUDA__NFREED of each): close their mappings here, once
   this rank's work queued so far is done. A peer that retired more than that
   meanwhile has every mapping of its buffers closed. */
static cc_result cc_cuda__peer_frees(cc_cuda_comm *g, const char *what) {
  int p, i;
  for (p = 0; p < g->size; p++) {
    unsigned int f, f2, k, seen = g->seen[p];
    if (p == g->rank || (f = __atomic_load_n(&g->page->frees[p], __ATOMIC_ACQUIRE)) == seen) continue;
    for (i = 0; i < CC_CUDA__NMAP; i++) {
      cc_cuda__map *m = &g->maps[p][i];
      int hit = f - seen > CC_CUDA__NFREED;
      for (k = seen + 1; !hit && m->base && k != f + 1; k++)
        hit = __atomic_load_n(&g->page->freed[p][(k - 1) % CC_CUDA__NFREED], __ATOMIC_ACQUIRE) == m->id;
      if (!hit || !m->base) continue;
      CC__TRY(cc_cuda__close_later(g, what, p, m->base, 1));
      memset(m, 0, sizeof *m);
    }
    f2 = __atomic_load_n(&g->page->frees[p], __ATOMIC_ACQUIRE);
    if (f2 - seen > CC_CUDA__NFREED)   /* the ring moved on while it was read: close them all */
      for (i = 0; i < CC_CUDA__NMAP; i++)
        if (g->maps[p][i].base) {
          CC__TRY(cc_cuda__close_later(g, what, p, g->maps[p][i].base, 1));
          memset(&g->maps[p][i], 0, sizeof g->maps[p][i]);
        }
    g->seen[p] = f;
    g->acked[p] = f;
  }
  cc_cuda__reap_closes(g, 0);
  return CC_OK;
}

/* Close rank p's stale mappings now, to map p's memory where they are:
   those this call does not use that overlap [src, src + size) in p (every
   one this call does not use with `all`), and the closes of p's mappings
   already sealed (no work of this call reads them). Only earlier calls' work
   can read them, so this waits for the previous call's end (g->ev): that
   work waits only for the peers' earlier calls, which they have queued (they
   made this call). Bounded by the timeout, speaking up after CC_WARN_AFTER. */
static cc_result cc_cuda__close_stale(cc_cuda_comm *g, const char *what, int p, unsigned long long src,
                                      unsigned long long size, int all) {
  uint64_t t0 = cc__now_ns(), warn = g->host->set.warn_ns;
  int i;
  while (g->have_last) {
    cudaError_t before = cudaPeekAtLastError(), e = cudaEventQuery(g->ev);
    uint64_t waited = cc__now_ns() - t0;
    if (e == cudaSuccess) break;
    cc_cuda__forgive(before);
    if (e != cudaErrorNotReady)
      return cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: cudaEventQuery of its previous call's end failed: %s (%s)",
                            what, g->rank, cudaGetErrorName(e), cudaGetErrorString(e));
    if (waited > g->host->set.timeout_ns)
      return cc_cuda__abort(g, CC_ERR_TIMEOUT, "%s: rank %d: to map a buffer of rank %d, mappings of memory it freed "
                            "must be closed first, once this rank's previous call is done; it was not done after "
                            "%.0f s (CC_TIMEOUT)", what, g->rank, p, waited / 1e9);
    if (warn && waited > warn) {
      cc__log(g->host, CC__LOG_WARN, "%s: rank %d: has waited %.0f s for its previous call to finish, to close "
              "mappings of memory rank %d freed", what, g->rank, waited / 1e9, p);
      warn *= 2;
    }
    cc__sleep_ns(20000);
  }
  for (i = 0; i < CC_CUDA__NMAP; i++) {
    cc_cuda__map *o = &g->maps[p][i];
    if (o->base && o->used <= g->mark && (all || (o->src < src + size && src < o->src + o->size))) {
      CC__TRY(cc_cuda__close_later(g, what, p, o->base, 0));
      g->closes[g->ncloses - 1].sealed = 1;
      memset(o, 0, sizeof *o);
    }
  }
  for (i = 0; i < g->ncloses; i++) {
    cc_cuda__closing *c = &g->closes[i];
    if (c->owner == p && c->sealed && c->ev) {
      cudaEventDestroy(c->ev);
      c->ev = NULL;
    }
  }
  cc_cuda__reap_closes(g, 0);          /* closes them, and tells p how far it may free */
  return CC_OK;
}

/* Where this rank reads bytes [off, off + len) of rank p's buffer b: its own
   pointer for itself, else through the mapping of p's allocation (opened on
   first use, cached; the least recently used one is closed later). Every
   offset is checked against the allocation's size.

   A mapping kept of memory that p has freed (a plain cudaMalloc buffer: p
   frees it without telling anyone) must be closed before p's new memory at
   the same addresses can be mapped: CUDA maps a peer's memory where the
   peer has it, and fails with cudaErrorAlreadyMapped while a stale mapping
   holds the place (seen on an H200 with every rank on it). One whose range
   in p overlaps b's is stale for certain (two live allocations never
   overlap): closed now. CUDA maps whole chunks, so a stale one beside b's
   range can hold the place too: on cudaErrorAlreadyMapped every mapping of
   p that this call does not use is closed, once the work queued so far is
   done, and the open is tried again. */
static cc_result cc_cuda__peer(cc_cuda_comm *g, const char *what, int p, const cc_cuda__buf *b, size_t off,
                               size_t len, const void **out) {
  cc_cuda__map *m = NULL, *lru;
  int i;
  *out = NULL;
  if (!len) return CC_OK;
  if (!b->ptr || b->off > b->size || off > b->size - b->off || len > b->size - b->off - off)
    return cc_cuda__abort(g, CC_ERR_MISMATCH, "%s: rank %d: rank %d's buffer holds %llu bytes; this call reads %zu at %zu",
                          what, g->rank, p, b->ptr ? b->size - b->off : 0ull, len, off);
  if (p == g->rank) { *out = (const unsigned char *)(uintptr_t)b->ptr + off; return CC_OK; }
  for (i = 0; i < CC_CUDA__NMAP; i++)
    if (g->maps[p][i].base && g->maps[p][i].id == b->id) { m = &g->maps[p][i]; break; }
  if (!m) {
    void *base = NULL;
    unsigned long long src = b->ptr - b->off;
    cudaError_t e = cudaSuccess, before;
    int stale = 0;
    for (i = 0; i < CC_CUDA__NMAP; i++) {
      cc_cuda__map *o = &g->maps[p][i];
      stale |= o->base && o->src < src + b->size && src < o->src + o->size;
    }
    if (stale) CC__TRY(cc_cuda__close_stale(g, what, p, src, b->size, 0));
    lru = &g->maps[p][0];
    for (i = 0; i < CC_CUDA__NMAP && lru->base; i++)
      if (!g->maps[p][i].base || g->maps[p][i].used < lru->used) lru = &g->maps[p][i];
    m = lru;
    if (m->base) {                     /* this call and earlier ones may still read it: closed after them */
      CC__TRY(cc_cuda__close_later(g, what, p, m->base, 0));
      m->base = NULL;
    }
    m->used = ++g->clock;              /* taken: close_stale leaves it */
    before = cudaPeekAtLastError();
    e = cudaIpcOpenMemHandle(&base, b->h, cudaIpcMemLazyEnablePeerAccess);
    if (e == cudaErrorAlreadyMapped) {
      cc_cuda__forgive(before);
      cc__log(g->host, CC__LOG_INFO, "%s: rank %d: rank %d's buffer at 0x%llx there maps where a mapping of memory "
              "it freed still is (cudaErrorAlreadyMapped): every mapping of rank %d this call does not use is closed",
              what, g->rank, p, src, p);
      CC__TRY(cc_cuda__close_stale(g, what, p, src, b->size, 1));
      before = cudaPeekAtLastError();
      e = cudaIpcOpenMemHandle(&base, b->h, cudaIpcMemLazyEnablePeerAccess);
    }
    if (e != cudaSuccess) {
      cc_cuda__forgive(before);
      return cc_cuda__abort(g, cc_cuda__code(e) == CC_ERR_INVALID_ARG ? CC_ERR_SYSTEM : cc_cuda__code(e),
                            "%s: rank %d: cudaIpcOpenMemHandle of rank %d's buffer (%llu bytes at 0x%llx there) "
                            "failed: %s (%s)", what, g->rank, p, b->size, src, cudaGetErrorName(e),
                            cudaGetErrorString(e));
    }
    m->base = (unsigned char *)base;
    m->id = b->id;
    m->size = b->size;
    m->src = src;
  }
  m->used = ++g->clock;
  *out = m->base + b->off + off;
  return CC_OK;
}

/* Own memory the peers may have open (named in a record): tell them (the
   flag page), free it once every live peer has closed it. */
static cc_result cc_cuda__retire(cc_cuda_comm *g, const char *what, void *p) {
  unsigned long long id = cc_cuda__buffer_id(g, p);
  int i;
  for (i = 0; i < CC_CUDA__NEXP; i++)
    if (id && g->exps[i].id == id) memset(&g->exps[i], 0, sizeof g->exps[i]);
  if (g->nretired == g->capretired) {
    int cap = g->capretired ? 2 * g->capretired : 16;
    cc_cuda__retired *q = (cc_cuda__retired *)CC_MALLOC(sizeof *q * (size_t)cap);
    if (!q) return cc_cuda__abort(g, CC_ERR_NO_MEMORY, "%s: rank %d: out of host memory", what, g->rank);
    if (g->nretired) memcpy(q, g->retired, sizeof *q * (size_t)g->nretired);
    CC_FREE(g->retired);
    g->retired = q;
    g->capretired = cap;
  }
  g->frees++;
  g->retired[g->nretired].p = p;
  g->retired[g->nretired++].seq = g->frees;
  __atomic_store_n(&g->page->freed[g->rank][(g->frees - 1) % CC_CUDA__NFREED], id, __ATOMIC_RELEASE);
  __atomic_store_n(&g->page->frees[g->rank], g->frees, __ATOMIC_RELEASE);
  return CC_OK;
}

/* Free the retired memory that no live peer maps any more (all of it with
   `all`: after destroy's barrier). cudaFree waits for the device: only the
   calls that free (cc_cuda_free, destroy) come here. */
static void cc_cuda__reap_own(cc_cuda_comm *g, int all) {
  int i, n = 0, p;
  for (i = 0; i < g->nretired; i++) {
    cc_cuda__retired *r = &g->retired[i];
    int open = 0;
    for (p = 0; p < g->size && !all && !open; p++)
      open = p != g->rank && (int)(__atomic_load_n(&g->page->closed[g->rank][p], __ATOMIC_ACQUIRE) - r->seq) < 0 &&
             cc__pid_alive(g->pids[p]);
    if (open) g->retired[n++] = *r;
    else cudaFree(r->p);
  }
  g->nretired = n;
}

/* Own device scratch of at least `bytes`, shared like any buffer. A larger one
   replaces it; the old one is retired (peers may still have it open).
   CC_ERR_NO_MEMORY (g untouched) when the device has no room: the caller
   tells its peers, and nobody runs the call. */
static cc_result cc_cuda__work(cc_cuda_comm *g, const char *what, size_t bytes, void **out) {
  *out = NULL;
  if (bytes > g->work_bytes) {
    size_t want = CC__MAX(bytes, CC__MAX(2 * g->work_bytes, (size_t)1 << 20));
    void *w = NULL;
    cudaError_t before = cudaPeekAtLastError(), e = cudaMalloc(&w, want);
    if (e == cudaErrorMemoryAllocation) {
      cc_cuda__forgive(before);
      return CC_ERR_NO_MEMORY;
    }
    if (e != cudaSuccess)
      return cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: cudaMalloc of %zu bytes of scratch failed: %s (%s)", what,
                            g->rank, want, cudaGetErrorName(e), cudaGetErrorString(e));
    if (g->work) CC__TRY(cc_cuda__retire(g, what, g->work));
    g->work = w;
    g->work_bytes = want;
  }
  *out = g->work;
  return CC_OK;
}

/* Pinned host memory of at least `bytes` for the staged path. */
static cc_result cc_cuda__stage(cc_cuda_comm *g, const char *what, size_t bytes) {
  if (bytes <= g->stage_bytes) return CC_OK;
  if (g->stage) {
    CC_CUDA__CALL(g, what, cudaFreeHost(g->stage));
    g->stage = NULL;
    g->stage_bytes = 0;
  }
  bytes = CC__MAX(bytes, CC__MAX(2 * g->stage_bytes, (size_t)1 << 20));
  CC_CUDA__CALL(g, what, cudaMallocHost((void **)&g->stage, bytes));
  g->stage_bytes = bytes;
  return CC_OK;
}

/* ============================================================== @cuda-sync */

static CUdeviceptr cc_cuda__dflag(cc_cuda_comm *g, unsigned int *flag) {
  return (CUdeviceptr)(uintptr_t)(g->dpage + ((unsigned char *)flag - (unsigned char *)g->page));
}

/* Calls run in the order they were made, whatever their streams (as NCCL
   orders a communicator's work): a call on another stream than the previous
   one first waits for the previous one's end (g->ev), and every call records
   its own end. Calls on one stream cost nothing more than the record. */
static cc_result cc_cuda__order(cc_cuda_comm *g, const char *what, cudaStream_t s) {
  if (g->have_last && s != g->last)
    CC_CUDA__CALL(g, what, cudaStreamWaitEvent(s, g->ev, 0));
  g->cur = s;
  g->mark = g->clock;
  return CC_OK;
}
static cc_result cc_cuda__ordered(cc_cuda_comm *g, const char *what, cudaStream_t s) {
  CC_CUDA__CALL(g, what, cudaEventRecord(g->ev, s));
  g->last = s;
  g->have_last = 1;
  return cc_cuda__seal_closes(g, what);
}

/* The calls cannot be captured into a CUDA graph: each call's phase numbers,
   peers' buffers and waits are fixed when it is made, and a graph would
   replay them. Refused (g stays usable). */
static cc_result cc_cuda__not_capturing(cc_cuda_comm *g, const char *what, cudaStream_t s) {
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  cudaError_t before = cudaPeekAtLastError(), e = cudaStreamIsCapturing(s, &st);
  if (e != cudaSuccess) {
    cc_cuda__forgive(before);
    return cc_cuda__fail(g, CC_ERR_UNSUPPORTED, "%s: rank %d: cudaStreamIsCapturing failed on its stream: %s (is "
                         "another stream being captured?); cc_cuda calls cannot be captured into CUDA graphs", what,
                         g->rank, cudaGetErrorName(e));
  }
  if (st != cudaStreamCaptureStatusNone)
    return cc_cuda__fail(g, CC_ERR_UNSUPPORTED, "%s: rank %d: its stream is being captured into a CUDA graph; "
                         "cc_cuda calls cannot be captured (each call's peers and phases are fixed when it is made)",
                         what, g->rank);
  return CC_OK;
}

static cc_result cc_cuda__launch(cc_cuda_comm *g, const char *what, const void *fn, dim3 grid, dim3 block, void *arg,
                                 cudaStream_t s) {
  void *args[1];
  cudaError_t e;
  args[0] = arg;
  e = cudaLaunchKernel(fn, grid, block, args, 0, s);   /* its own result: never the caller's pending error */
  if (e != cudaSuccess)
    return cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: a kernel launch failed: %s (%s)", what, g->rank,
                          cudaGetErrorName(e), cudaGetErrorString(e));
  return CC_OK;
}

/* On stream s: post pval to *post (if post), then wait until every waits[i]
   has reached vals[i]; `flags` are CU_STREAM_WAIT_VALUE_FLUSH for a wait that
   must make the peers' writes into this GPU's memory visible to the work
   after it. Stream memory operations where the device has them (the GPU's
   front end waits; no SM is held, so ranks that share a GPU do not take turns
   spinning), else a one-block kernel per 32 waits (after a system fence). */
static cc_result cc_cuda__sync(cc_cuda_comm *g, const char *what, cudaStream_t s, unsigned int *post,
                               unsigned int pval, unsigned int *const *waits, const unsigned int *vals, int nwait,
                               unsigned int flags, int kernel) {
  int i, j;
  if (g->memops && !kernel) {
    CUresult r = CUDA_SUCCESS;
    if (g->batch && nwait < CC_CUDA__MAXR + 1) {   /* the post and the waits in one call */
      CUstreamBatchMemOpParams op[CC_CUDA__MAXR + 2];
      unsigned int n = 0;
      memset(op, 0, sizeof op);
      if (post) {
        op[n].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        op[n].writeValue.address = cc_cuda__dflag(g, post);
        op[n++].writeValue.value = pval;
      }
      for (i = 0; i < nwait; i++) {
        op[n].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        op[n].waitValue.address = cc_cuda__dflag(g, waits[i]);
        op[n].waitValue.value = vals[i];
        op[n++].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ | flags;
      }
      if (n) r = g->batch((CUstream)s, n, op, 0);
      if (r != CUDA_SUCCESS)
        return cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: cuStreamBatchMemOp of %u stream memory operations "
                              "failed (CUresult %d)", what, g->rank, n, (int)r);
      return CC_OK;
    }
    if (post) r = g->write32((CUstream)s, cc_cuda__dflag(g, post), pval, 0);
    for (i = 0; i < nwait && r == CUDA_SUCCESS; i++)
      r = g->wait32((CUstream)s, cc_cuda__dflag(g, waits[i]), vals[i], CU_STREAM_WAIT_VALUE_GEQ | flags);
    if (r != CUDA_SUCCESS)
      return cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: a stream memory operation failed (CUresult %d)", what,
                            g->rank, (int)r);
    return CC_OK;
  }
  for (i = 0; i < nwait || (i == 0 && post); i += CC_CUDA__MAXR) {
    cc_cuda__sync_args a;
    memset(&a, 0, sizeof a);
    if (i == 0 && post) {
      a.post = (unsigned int *)(uintptr_t)cc_cuda__dflag(g, post);
      a.post_val = pval;
    }
    for (j = 0; j < CC_CUDA__MAXR && i + j < nwait; j++) {
      a.wait[j] = (unsigned int *)(uintptr_t)cc_cuda__dflag(g, waits[i + j]);
      a.wait_val[j] = vals[i + j];
    }
    a.nwait = j;
    a.abort = (const volatile unsigned int *)(uintptr_t)cc_cuda__dflag(g, &g->page->abort);
    CC__TRY(cc_cuda__launch(g, what, (const void *)cc_cuda__sync_kernel, dim3(1), dim3(CC_CUDA__MAXR), &a, s));
  }
  return CC_OK;
}

/* A barrier of every rank's stream: post the next phase, wait for everyone.
   `written`: peers wrote into this rank's memory before they posted (the
   closing barrier of two-shot all_reduce). A GPU may still reorder writes
   that came from other GPUs after they arrived, so the work after the wait
   must be ordered after them by a flush: the waits carry
   CU_STREAM_WAIT_VALUE_FLUSH where the device can flush remote writes; where
   it cannot (CAN_FLUSH_REMOTE_WRITES is 0 on most x86 hosts) and a peer is on
   another GPU, the barrier is the wait kernel, whose acquire of the flags
   (a system fence after the loads) orders the writes before the work after
   it. Writes from ranks on the same GPU need neither. */
static cc_result cc_cuda__bar(cc_cuda_comm *g, const char *what, cudaStream_t s, int written) {
  unsigned int *waits[CC_CUDA__MAXR], vals[CC_CUDA__MAXR], v = ++g->phase;
  int p, n = 0;
  for (p = 0; p < g->size; p++) {
    if (p == g->rank) continue;
    waits[n] = &g->page->post[p][0];
    vals[n++] = v;
  }
  return cc_cuda__sync(g, what, s, &g->page->post[g->rank][0], v, waits, vals, n, written ? g->flush : 0u,
                       written && g->far && !g->flush);
}

/* How many blocks of kernel fn (CC_CUDA__THREADS threads each) one SM runs at
   once: its registers decide (the fold kernels use 33 to 40 per thread, so 3
   of 512 threads fit where 4 would take 32). Asked of the runtime once per
   kernel. */
static unsigned int cc_cuda__per_sm(cc_cuda_comm *g, const void *fn) {
  int i, n = 0;
  cudaError_t before;
  for (i = 0; i < g->nocc; i++)
    if (g->occ[i].fn == fn) return g->occ[i].per_sm;
  before = cudaPeekAtLastError();
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, CC_CUDA__THREADS, 0) != cudaSuccess || n < 1) {
    cc_cuda__forgive(before);
    n = 1;
  }
  if (g->nocc < CC_CUDA__NOCC) {
    g->occ[g->nocc].fn = fn;
    g->occ[g->nocc++].per_sm = (unsigned int)n;
  }
  return (unsigned int)n;
}

/* The most blocks of one launch of kernel fn: CC_CUDA_BLOCKS (default 32,
   as NCCL runs 8 to 32 channels on a node), so that the collectives leave
   the other SMs to the caller's kernels, and never more than the device runs
   at once, so that every launch is one wave. */
static size_t cc_cuda__cap(cc_cuda_comm *g, const void *fn) {
  size_t cap = (size_t)g->sms * cc_cuda__per_sm(g, fn);
  return cap < g->max_blocks ? cap : g->max_blocks;
}

/* The grid of kernel fn for `items` units of work (each thread strides over
   the rest). */
static unsigned int cc_cuda__blocks(cc_cuda_comm *g, const void *fn, size_t items) {
  size_t b = (items + CC_CUDA__THREADS - 1) / CC_CUDA__THREADS, cap = cc_cuda__cap(g, fn);
  return (unsigned int)(b < 1 ? 1 : b > cap ? cap : b);
}

/* dst[0..ndst-1] = the fold of src[0..n-1] (rank order), count dtype elements each. */
static cc_result cc_cuda__fold(cc_cuda_comm *g, const char *what, cudaStream_t s, cc_dtype t, int op,
                               const void *const *src, void *const *dst, int ndst, size_t count) {
  cc_cuda__fold_args a;
  size_t scale, es;
  cc_cuda__fold_fn fn = cc_cuda__fold_pick(t, op, &scale, &es);
  uintptr_t bits = 0;
  int k;
  if (!count) return CC_OK;
  if (!fn)
    return cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: no GPU fold for %s %s", what, g->rank, cc__op_name(op),
                          cc__dtype_name(t));
  memset(&a, 0, sizeof a);
  a.n = g->size;
  a.ndst = ndst;
  a.count = count * scale;
  for (k = 0; k < ndst; k++) {
    a.dst[k] = dst[k];
    bits |= (uintptr_t)dst[k];
  }
  for (k = 0; k < g->size; k++) {
    a.src[k] = src[k];
    bits |= (uintptr_t)src[k];
    memcpy(a.scal[k], cc_cuda__recp(g, k)->scal, 16);
  }
  a.vec = (bits & 15) == 0;
  a.abort = (const volatile unsigned int *)(uintptr_t)cc_cuda__dflag(g, &g->page->abort);
  return cc_cuda__launch(g, what, (const void *)fn,
                         dim3(cc_cuda__blocks(g, (const void *)fn, a.vec ? count * scale * es / 16 : count * scale)),
                         dim3(CC_CUDA__THREADS), &a, s);
}

/* A list of copies, launched CC_CUDA__MAXR at a time. */
typedef struct cc_cuda__copies {
  cc_cuda__copy_args a;
  int n;
  size_t most;
} cc_cuda__copies;

static cc_result cc_cuda__copy_flush(cc_cuda_comm *g, const char *what, cudaStream_t s, cc_cuda__copies *c) {
  dim3 grid;
  unsigned int cap;
  if (!c->n) return CC_OK;
  cap = (unsigned int)(cc_cuda__cap(g, (const void *)cc_cuda__copy_kernel) / (size_t)c->n);   /* the copies share it */
  grid.x = cc_cuda__blocks(g, (const void *)cc_cuda__copy_kernel, c->most / 16 + 1);
  grid.x = grid.x < cap ? grid.x : cap ? cap : 1;
  grid.y = (unsigned int)c->n;
  grid.z = 1;
  c->a.abort = (const volatile unsigned int *)(uintptr_t)cc_cuda__dflag(g, &g->page->abort);
  c->n = 0;
  c->most = 0;
  return cc_cuda__launch(g, what, (const void *)cc_cuda__copy_kernel, grid, dim3(CC_CUDA__THREADS), &c->a, s);
}

static cc_result cc_cuda__copy_add(cc_cuda_comm *g, const char *what, cudaStream_t s, cc_cuda__copies *c,
                                   const void *src, void *dst, size_t bytes) {
  if (!bytes || src == dst) return CC_OK;
  if (c->n == CC_CUDA__MAXR) CC__TRY(cc_cuda__copy_flush(g, what, s, c));
  c->a.src[c->n] = src;
  c->a.dst[c->n] = dst;
  c->a.bytes[c->n] = bytes;
  c->n++;
  c->most = CC__MAX(c->most, bytes);
  return CC_OK;
}

/* src (bytes long) into every one of dst[0..ndst-1], each byte read once. */
static cc_result cc_cuda__fan(cc_cuda_comm *g, const char *what, cudaStream_t s, const void *src, void *const *dst,
                              int ndst, size_t bytes) {
  cc_cuda__fan_args a;
  int d;
  if (!bytes || !ndst) return CC_OK;
  memset(&a, 0, sizeof a);
  a.src = src;
  for (d = 0; d < ndst; d++) a.dst[d] = dst[d];
  a.ndst = ndst;
  a.bytes = bytes;
  a.abort = (const volatile unsigned int *)(uintptr_t)cc_cuda__dflag(g, &g->page->abort);
  return cc_cuda__launch(g, what, (const void *)cc_cuda__fan_kernel,
                         dim3(cc_cuda__blocks(g, (const void *)cc_cuda__fan_kernel, bytes / 16 + 1)),
                         dim3(CC_CUDA__THREADS), &a, s);
}

/* ============================================================== @cuda-watchdog */
/* One thread per ipc-mode communicator. Every 50 ms (or when woken) it checks
   that the peers' processes live, that this process's CUDA context lives (a
   kernel's fault kills it), and that no wait of this rank's stream has lasted
   beyond the timeout; on a failure it fails the communicator on the flag
   page. Once the page says failed (whoever said it), it releases every flag:
   each is set CC_CUDA__RELEASE ahead of what it was, once, and put back there
   should a stream in flight write an older value over it; waits on the GPU
   then pass and kernels see `abort` and do nothing. And it aborts the host
   communicator, so that a rank waiting in a host call for a rank that failed
   returns at once. */

static unsigned int *cc_cuda__flag(cc_cuda_comm *g, int i) {
  if (i < CC_CUDA__MAXR) return &g->page->post[i][0];
  i -= CC_CUDA__MAXR;
  if (i < CC_CUDA__MAXR * CC_CUDA__MAXR) return &g->page->ready[0][0] + i;
  i -= CC_CUDA__MAXR * CC_CUDA__MAXR;
  if (i < CC_CUDA__MAXR * CC_CUDA__MAXR) return &g->page->done[0][0] + i;
  return &g->page->want[0][0] + (i - CC_CUDA__MAXR * CC_CUDA__MAXR);
}

/* The watchdog's own verdict: fail the communicator for everyone. */
static void cc_cuda__declare(cc_cuda_comm *g, cc_result code, const char *fmt, ...) {
  char msg[244];
  unsigned int zero = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (__atomic_compare_exchange_n(&g->page->claim, &zero, 1u, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    g->page->abort_rank = g->rank;
    snprintf(g->page->abort_msg, sizeof g->page->abort_msg, "%s", msg);
    __atomic_store_n(&g->page->abort, (unsigned int)code, __ATOMIC_RELEASE);
    cc__log(g->host, CC__LOG_WARN, "%s (%s)", msg, cc_strerror(code));
  }
}

/* Has this rank's stream waited on `val` of slot `k` for longer than the timeout? */
static int cc_cuda__overdue(cc_cuda_comm *g, int k, int waiting, unsigned int val, uint64_t now) {
  if (!waiting) { g->since[k] = 0; return 0; }
  if (!g->since[k] || g->since_val[k] != val) { g->since[k] = now; g->since_val[k] = val; return 0; }
  return now - g->since[k] > g->host->set.timeout_ns;
}

/* One round; `closing` (read under the lock by the caller): destroy has
   begun, so peers that exit and waits that end are no failure any more. */
static void cc_cuda__watch(cc_cuda_comm *g, int closing) {
  cc_cuda__page *pg = g->page;
  unsigned int a = __atomic_load_n(&pg->abort, __ATOMIC_ACQUIRE), mine, x, y;
  uint64_t now = cc__now_ns();
  int p, i, me = g->rank;
  if (!a && !closing) {
    cudaError_t e = cc_cuda__context(g);
    if (e != cudaSuccess) {
      cc_cuda__declare(g, CC_ERR_SYSTEM, "rank %d's CUDA context failed: %s (%s)", me, cudaGetErrorName(e),
                       cudaGetErrorString(e));
      a = 1;
    }
    for (p = 0; p < g->size && !a; p++) {
      if (p == me || cc__pid_alive(g->pids[p])) continue;
      cc_cuda__declare(g, CC_ERR_PEER_LOST, "rank %d lost (pid %d exited)", p, g->pids[p]);
      a = 1;
    }
    mine = __atomic_load_n(&pg->post[me][0], __ATOMIC_ACQUIRE);
    for (p = 0; p < g->size && !a; p++) {
      if (p == me) continue;
      x = __atomic_load_n(&pg->post[p][0], __ATOMIC_ACQUIRE);
      if (cc_cuda__overdue(g, p, (int)(x - mine) < 0, mine, now)) {
        cc_cuda__declare(g, CC_ERR_TIMEOUT, "rank %d waited %.3g s on its GPU for rank %d to reach collective phase %u (it is at %u)",
                         me, g->host->set.timeout_ns / 1e9, p, mine, x);
        a = 1;
      }
      x = __atomic_load_n(&pg->want[p][me], __ATOMIC_ACQUIRE);
      y = __atomic_load_n(&pg->ready[p][me], __ATOMIC_ACQUIRE);
      if (!a && cc_cuda__overdue(g, CC_CUDA__MAXR + p, (int)(x - y) > 0, x, now)) {
        cc_cuda__declare(g, CC_ERR_TIMEOUT, "rank %d waited %.3g s on its GPU for message %u from rank %d",
                         me, g->host->set.timeout_ns / 1e9, x, p);
        a = 1;
      }
      x = __atomic_load_n(&pg->ready[me][p], __ATOMIC_ACQUIRE);
      y = __atomic_load_n(&pg->done[me][p], __ATOMIC_ACQUIRE);
      if (!a && cc_cuda__overdue(g, 2 * CC_CUDA__MAXR + p, (int)(x - y) > 0, x, now)) {
        cc_cuda__declare(g, CC_ERR_TIMEOUT, "rank %d waited %.3g s on its GPU for rank %d to receive message %u",
                         me, g->host->set.timeout_ns / 1e9, p, x);
        a = 1;
      }
    }
    a = __atomic_load_n(&pg->abort, __ATOMIC_ACQUIRE);
  }
  if (!a) return;
  pthread_mutex_lock(&g->lock);
  if (!g->async) {
    g->async = (cc_result)a;
    snprintf(g->async_msg, sizeof g->async_msg, "rank %d: the GPU communicator failed: rank %d: %s", me,
             pg->abort_rank, pg->abort_msg);
  }
  pthread_mutex_unlock(&g->lock);
  for (i = 0; i < CC_CUDA__NFLAGS; i++) {   /* hi[i]: released value; hi[NFLAGS + i]: released yet */
    unsigned int *f = cc_cuda__flag(g, i), cur = __atomic_load_n(f, __ATOMIC_ACQUIRE);
    if (!g->hi[CC_CUDA__NFLAGS + i]) {
      g->hi[CC_CUDA__NFLAGS + i] = 1;
      g->hi[i] = cur + CC_CUDA__RELEASE;
      __atomic_store_n(f, g->hi[i], __ATOMIC_RELEASE);
    } else if ((int)(cur - g->hi[i]) < 0) {
      __atomic_store_n(f, g->hi[i], __ATOMIC_RELEASE);
    } else {
      g->hi[i] = cur;
    }
  }
  if (!g->host_aborted) {              /* no rank waits in a host call for one that failed */
    g->host_aborted = 1;
    cc_comm_abort(g->host);
  }
}

static void *cc_cuda__watchdog(void *arg) {
  cc_cuda_comm *g = (cc_cuda_comm *)arg;
  int closing;
  cc_cuda__relaxed relaxed;            /* its probe must not break another thread's capture */
  if (g->probe) cudaSetDevice(g->dev);   /* its context, for the probe */
  pthread_mutex_lock(&g->lock);
  while (!g->wd_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&g->cond, &g->lock, &ts);
    if (g->wd_stop) break;
    closing = g->closing;
    pthread_mutex_unlock(&g->lock);
    cc_cuda__watch(g, closing);
    pthread_mutex_lock(&g->lock);
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

/* ============================================================== @cuda-init */

typedef struct cc_cuda__hello {        /* what each rank says at init */
  int code;                            /* CC_OK, or why this rank cannot join */
  int pid, ipc;                        /* ipc: wants and may use ipc mode */
  char busid[32];                      /* PCI bus id of its GPU (for messages) */
  unsigned char uuid[16];              /* its GPU (or MIG instance): what "the same GPU" means */
  cudaIpcMemHandle_t probe;            /* a small buffer of its GPU, for peers that cannot see that GPU */
  char msg[200];
} cc_cuda__hello;

static cc_cuda__memop_fn cc_cuda__entry(const char *name) {
  void *fn = NULL;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  cudaError_t before = cudaPeekAtLastError();
#if CUDART_VERSION >= 12050
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess) {
#else
  if (cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &q) != cudaSuccess) {
#endif
    cc_cuda__forgive(before);
    fn = NULL;
  }
  return q == cudaDriverEntryPointSuccess ? (cc_cuda__memop_fn)fn : NULL;
}

/* Does this build's device code keep float32 subnormals (*kept)? Run on a
   stream of its own, once (cc_cuda__ftz_kernel). */
static cudaError_t cc_cuda__subnormals(int *kept) {
  cc_cuda__ftz_args a;
  cudaStream_t s = NULL;
  float got = 0.0f;
  void *args[1];
  cudaError_t e;
  *kept = 1;
  a.out = NULL;
  a.x = cc__f32_from_bits(0x00800000u);   /* 2^-126: half of it is a subnormal */
  args[0] = &a;
  if ((e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) != cudaSuccess) return e;
  if ((e = cudaMalloc((void **)&a.out, sizeof(float))) == cudaSuccess &&
      (e = cudaLaunchKernel((const void *)cc_cuda__ftz_kernel, dim3(1), dim3(1), args, 0, s)) == cudaSuccess &&
      (e = cudaMemcpyAsync(&got, a.out, sizeof got, cudaMemcpyDeviceToHost, s)) == cudaSuccess)
    e = cudaStreamSynchronize(s);
  if (a.out) cudaFree(a.out);
  cudaStreamDestroy(s);
  if (e == cudaSuccess) *kept = got != 0.0f;
  return e;
}

/* This rank's side of init: the device, its context, the driver entry points,
   the probe buffer (freed after init). */
static void cc_cuda__init_local(cc_cuda_comm *g, cc_cuda__hello *h, void **probe) {
  int ndev = 0, flush = 0, kept = 1;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  const char *mode = getenv("CC_CUDA_TRANSPORT");
  struct cudaDeviceProp prop;
  h->pid = (int)getpid();
  h->ipc = !(mode && !strcmp(mode, "staged")) && g->size <= CC_CUDA__MAXR &&
           cc_comm_local_size(g->host) == g->size;
#define CC_CUDA__HELLO_FAIL(c, ...) do { h->code = (c); snprintf(h->msg, sizeof h->msg, __VA_ARGS__); return; } while (0)
  if (e != cudaSuccess)
    CC_CUDA__HELLO_FAIL(cc_cuda__code(e) == CC_ERR_INVALID_ARG ? CC_ERR_UNSUPPORTED : cc_cuda__code(e),
                        "cudaGetDeviceCount failed: %s (%s)%s", cudaGetErrorName(e), cudaGetErrorString(e),
                        access("/dev/nvidiactl", F_OK) != 0 ? "; this machine has no NVIDIA driver (no /dev/nvidiactl)"
                                                           : "");
  if (g->dev < 0 || g->dev >= ndev)
    CC_CUDA__HELLO_FAIL(CC_ERR_INVALID_ARG, "device %d is out of range (this process sees %d)", g->dev, ndev);
  if ((e = cudaSetDevice(g->dev)) != cudaSuccess || (e = cudaFree(0)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, g->dev)) != cudaSuccess ||
      (e = cudaDeviceGetPCIBusId(h->busid, (int)sizeof h->busid, g->dev)) != cudaSuccess ||
      (e = cudaGetDeviceProperties(&prop, g->dev)) != cudaSuccess ||
      (e = cudaEventCreateWithFlags(&g->ev, cudaEventDisableTiming)) != cudaSuccess ||
      (e = cudaEventCreateWithFlags(&g->probe, cudaEventDisableTiming)) != cudaSuccess)
    CC_CUDA__HELLO_FAIL(CC_ERR_SYSTEM, "device %d: %s (%s)", g->dev, cudaGetErrorName(e), cudaGetErrorString(e));
  if ((e = cc_cuda__subnormals(&kept)) != cudaSuccess)
    CC_CUDA__HELLO_FAIL(CC_ERR_SYSTEM, "device %d: a probe kernel failed: %s (%s)", g->dev, cudaGetErrorName(e),
                        cudaGetErrorString(e));
  if (!kept)
    CC_CUDA__HELLO_FAIL(CC_ERR_UNSUPPORTED, "device code built with --use_fast_math or -ftz=true (float32 "
                        "subnormals flushed): its folds would not give cc.h's bits; build cc_cuda.cuh without them");
#undef CC_CUDA__HELLO_FAIL
  memcpy(h->uuid, prop.uuid.bytes, sizeof h->uuid);
  if (cudaDeviceGetAttribute(&flush, cudaDevAttrCanFlushRemoteWrites, g->dev) == cudaSuccess && flush)
    g->flush = CU_STREAM_WAIT_VALUE_FLUSH;
  g->wait32 = cc_cuda__entry("cuStreamWaitValue32");
  g->write32 = cc_cuda__entry("cuStreamWriteValue32");
  g->batch = (cc_cuda__batch_fn)(void *)cc_cuda__entry("cuStreamBatchMemOp");
  g->attrs = (cc_cuda__attrs_fn)(void *)cc_cuda__entry("cuPointerGetAttributes");
  if (!g->attrs) h->ipc = 0;
  if (h->ipc) {                        /* a buffer peers that cannot see this GPU try to open */
    cudaError_t before = cudaPeekAtLastError();
    if (cudaMalloc(probe, 256) != cudaSuccess || cudaIpcGetMemHandle(&h->probe, *probe) != cudaSuccess) {
      cc_cuda__forgive(before);
      if (*probe) cudaFree(*probe);
      *probe = NULL;
      h->ipc = 0;
    }
  }
}

/* Can this rank's GPU reach every peer's? The same GPU (or MIG instance) is
   the same UUID; another GPU that this process sees must have peer access;
   one it does not see (each rank with its own CUDA_VISIBLE_DEVICES) must let
   this rank open the peer's probe buffer. */
static int cc_cuda__reach(cc_cuda_comm *g, const cc_cuda__hello *all) {
  int p, d, can, ndev = 0;
  for (p = 0; p < g->size; p++) {
    const char *why = NULL;
    cudaError_t before = cudaPeekAtLastError();
    if (!memcmp(all[p].uuid, all[g->rank].uuid, 16)) continue;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
    for (d = 0; d < ndev; d++) {
      struct cudaDeviceProp prop;
      if (cudaGetDeviceProperties(&prop, d) == cudaSuccess && !memcmp(prop.uuid.bytes, all[p].uuid, 16)) break;
    }
    if (d < ndev) {
      if (cudaDeviceCanAccessPeer(&can, g->dev, d) != cudaSuccess || !can) why = "no peer access between them";
    } else {
      void *m = NULL;
      if (cudaIpcOpenMemHandle(&m, all[p].probe, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess)
        why = "it is not visible here and CUDA IPC cannot open its memory";
      else
        cudaIpcCloseMemHandle(m);
    }
    if (why) {
      cc_cuda__forgive(before);
      cc__log(g->host, CC__LOG_INFO, "cuda_comm_init: rank %d: GPU %s cannot reach rank %d's GPU %s (%s): staged mode", g->rank,
              all[g->rank].busid, p, all[p].busid, why);
      return 0;
    }
  }
  return 1;
}

/* The flag page: rank 0 creates it under a random name, everyone maps it and
   registers it with CUDA; 1 when every rank has it. */
static int cc_cuda__page_setup(cc_cuda_comm *g) {
  char name[64];
  int ok = 1, all = 0;
  size_t bytes = 0;
  cudaError_t before = cudaPeekAtLastError();
  g->page_bytes = (sizeof(cc_cuda__page) + 4095) & ~(size_t)4095;
  if (g->rank == 0) {
    char hex[17];
    g->page = NULL;
    if (cc__random_hex(hex, 16) == 0) {  /* no random name: no page (cc.h's checks make this rare) */
      snprintf(name, sizeof name, "/cc-cuda-%d-%s", (int)getpid(), hex);
      g->page = (cc_cuda__page *)cc__shm_create(name, g->page_bytes);
    }
    if (!g->page) { ok = 0; name[0] = 0; }
  }
  if (cc_broadcast(g->host, name, sizeof name, CC_UINT8, 0) != CC_OK) return -1;
  if (g->rank != 0) {
    g->page = name[0] ? (cc_cuda__page *)cc__shm_open(name, g->page_bytes, &bytes) : NULL;
    if (!g->page) ok = 0;
  }
  if (ok && cudaHostRegister(g->page, g->page_bytes, cudaHostRegisterMapped | cudaHostRegisterPortable) != cudaSuccess) {
    cc_cuda__forgive(before);
    ok = 0;
  } else if (ok && cudaHostGetDevicePointer((void **)&g->dpage, g->page, 0) != cudaSuccess) {
    cc_cuda__forgive(before);
    cudaHostUnregister(g->page);
    ok = 0;
  }
  if (cc_all_reduce(g->host, &ok, &all, 1, CC_INT32, CC_MIN) != CC_OK) all = -1;
  if (g->rank == 0 && name[0]) cc__shm_unlink(name);
  if (all != 1 && g->page) {
    if (ok) cudaHostUnregister(g->page);
    cc__shm_unmap(g->page, g->page_bytes);
    g->page = NULL;
    g->dpage = NULL;
  }
  return all;
}

/* Does cuStreamBatchMemOp work here? The same probe as one batch, on the
   next two words of the page; without it (an older driver, or refused) each
   operation is a call of its own. */
static int cc_cuda__batch_works(cc_cuda_comm *g, cudaStream_t s) {
  unsigned int *probe = &g->page->post[g->rank][3];
  CUstreamBatchMemOpParams op[3];
  memset(op, 0, sizeof op);
  op[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op[0].writeValue.address = cc_cuda__dflag(g, probe);
  op[0].writeValue.value = 0x5eed5eefu;
  op[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  op[1].waitValue.address = cc_cuda__dflag(g, probe);
  op[1].waitValue.value = 0x5eed5eefu;
  op[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ | g->flush;
  op[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op[2].writeValue.address = cc_cuda__dflag(g, probe + 1);
  op[2].writeValue.value = 0x5eed5ef0u;
  return g->batch((CUstream)s, 3, op, 0) == CUDA_SUCCESS && cudaStreamSynchronize(s) == cudaSuccess &&
         __atomic_load_n(probe, __ATOMIC_ACQUIRE) == 0x5eed5eefu && __atomic_load_n(probe + 1, __ATOMIC_ACQUIRE) == 0x5eed5ef0u;
}

/* Do stream memory operations work here, on the registered page? One write,
   then a wait on what it wrote (with the flush flag where the device has it),
   read back; then the same as one batch. */
static int cc_cuda__memops_work(cc_cuda_comm *g) {
  const char *sync = getenv("CC_CUDA_SYNC");
  unsigned int *probe = &g->page->post[g->rank][1];
  cudaError_t before = cudaPeekAtLastError();
  cudaStream_t s;
  int ok;
  if (!g->wait32 || !g->write32 || (sync && !strcmp(sync, "kernel"))) {
    g->batch = NULL;
    return 0;
  }
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) { cc_cuda__forgive(before); return 0; }
  ok = g->write32((CUstream)s, cc_cuda__dflag(g, probe), 0x5eed5eedu, 0) == CUDA_SUCCESS &&
       g->wait32((CUstream)s, cc_cuda__dflag(g, probe), 0x5eed5eedu, CU_STREAM_WAIT_VALUE_GEQ | g->flush) == CUDA_SUCCESS &&
       g->write32((CUstream)s, cc_cuda__dflag(g, probe + 1), 0x5eed5eeeu, 0) == CUDA_SUCCESS &&
       cudaStreamSynchronize(s) == cudaSuccess && __atomic_load_n(probe, __ATOMIC_ACQUIRE) == 0x5eed5eedu &&
       __atomic_load_n(probe + 1, __ATOMIC_ACQUIRE) == 0x5eed5eeeu;
  if (!ok) cc_cuda__forgive(before);
  if (ok && g->batch && !cc_cuda__batch_works(g, s)) {
    cc_cuda__forgive(before);
    g->batch = NULL;
  }
  cudaStreamDestroy(s);
  return ok;
}

/* Close every mapping of the peers' memory: this rank's work must be done. */
static void cc_cuda__close_all(cc_cuda_comm *g) {
  int p, i;
  for (p = 0; p < CC_CUDA__MAXR; p++)
    for (i = 0; i < CC_CUDA__NMAP; i++)
      if (g->maps[p][i].base) {
        cudaIpcCloseMemHandle(g->maps[p][i].base);
        memset(&g->maps[p][i], 0, sizeof g->maps[p][i]);
      }
  cc_cuda__reap_closes(g, 1);
}

static void cc_cuda__free_all(cc_cuda_comm *g) {
  int i;
  cudaError_t before = cudaPeekAtLastError();
  cc_cuda__close_all(g);
  for (i = 0; i < g->nallocs; i++) cudaFree(g->allocs[i].p);
  if (g->page) cc_cuda__reap_own(g, 1);
  if (g->work) cudaFree(g->work);
  if (g->stage) cudaFreeHost(g->stage);
  if (g->page) {
    cudaHostUnregister(g->page);
    cc__shm_unmap(g->page, g->page_bytes);
  }
  if (g->ev) cudaEventDestroy(g->ev);
  if (g->probe) cudaEventDestroy(g->probe);
  cc_cuda__forgive(before);
  pthread_mutex_destroy(&g->lock);
  pthread_cond_destroy(&g->cond);
  CC_FREE(g->allocs);
  CC_FREE(g->retired);
  CC_FREE(g->closes);
  CC_FREE(g->recs);
  CC_FREE(g->q);
  CC_FREE(g->hi);
  CC_FREE(g);
}

/* Which mode the ranks run in, decided together: every rank learns who
   cannot join and why, then whether every pair reaches the other's GPU, the
   flag page, and what CC_CUDA_TRANSPORT asks. *ipc: 1 for ipc mode. */
static cc_result cc_cuda__pick_mode(cc_cuda_comm *g, cc_cuda__hello *mine, cc_cuda__hello *all, void *probe, int *ipc) {
  const char *w = "cuda_comm_init";
  cc_comm *host = g->host;
  cc_result r = cc_all_gather(host, mine, all, sizeof *mine, CC_UINT8);
  int p, reach = 0;
  *ipc = 1;
  for (p = 0; r == CC_OK && p < g->size; p++) {
    if (all[p].code == CC_OK) { *ipc &= all[p].ipc; continue; }
    r = (cc_result)all[p].code;
    if (r == CC_ERR_INVALID_ARG) cc__fail(host, CC_ERR_INVALID_ARG, "%s: rank %d: %s", w, p, all[p].msg);
    else snprintf(host->err, sizeof host->err, "%s: rank %d: %s", w, p, all[p].msg);
  }
  if (r == CC_OK && *ipc) {
    reach = cc_cuda__reach(g, all);
    r = cc_all_reduce(host, &reach, ipc, 1, CC_INT32, CC_MIN);   /* also: every rank is done with the probes */
  }
  if (probe) {
    cudaError_t before = cudaPeekAtLastError();
    if (cudaFree(probe) != cudaSuccess) cc_cuda__forgive(before);
  }
  if (r == CC_OK && *ipc) {
    int got = cc_cuda__page_setup(g);
    if (got < 0) r = host->failed ? host->failed : CC_ERR_SYSTEM;
    else if (!got) {
      *ipc = 0;
      cc__log(host, CC__LOG_WARN, "%s: rank %d: the shared flag page could not be set up: staged mode", w, g->rank);
    }
  }
  if (r == CC_OK) {
    const char *mode = getenv("CC_CUDA_TRANSPORT");
    if (!*ipc && mode && !strcmp(mode, "ipc")) {
      r = CC_ERR_UNSUPPORTED;
      snprintf(host->err, sizeof host->err, "%s: rank %d: CC_CUDA_TRANSPORT=ipc, but ipc mode is not possible here "
               "(ranks on several hosts, GPUs without peer access, more than %d ranks, or no CUDA IPC)", w, g->rank,
               CC_CUDA__MAXR);
    }
  }
  return r;
}

/* The mode's state: the call records, the flag counters and, in ipc mode,
   the peers' pids and the watchdog. */
static cc_result cc_cuda__start(cc_cuda_comm *g, int ipc, const cc_cuda__hello *all) {
  const char *w = "cuda_comm_init";
  int p;
  g->mode = ipc ? CC_CUDA__IPC : CC_CUDA__STAGED;
  g->rec_bytes = sizeof(cc_cuda__rec) + (size_t)g->size * 16;
  g->recs = (unsigned char *)CC_MALLOC(g->rec_bytes * (size_t)(g->size + 1));
  g->hi = (unsigned int *)CC_MALLOC(sizeof *g->hi * 2 * CC_CUDA__NFLAGS);
  if (!g->recs || !g->hi) return cc__fail(g->host, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", w, g->rank);
  if (g->mode != CC_CUDA__IPC) return CC_OK;
  memset(g->hi, 0, sizeof *g->hi * 2 * CC_CUDA__NFLAGS);
  for (p = 0; p < g->size; p++) {
    g->pids[p] = all[p].pid;
    if (memcmp(all[p].uuid, all[g->rank].uuid, sizeof all[p].uuid)) g->far = 1;
  }
  g->memops = cc_cuda__memops_work(g);
  if (pthread_create(&g->wd, NULL, cc_cuda__watchdog, g) != 0)
    return cc__fail(g->host, CC_ERR_SYSTEM, "%s: rank %d: cannot start the watchdog thread", w, g->rank);
  g->wd_started = 1;
  return CC_OK;
}

CC_API cc_result cc_cuda_comm_init(cc_comm *host, int device, cc_cuda_comm **out) {
  const char *w = "cuda_comm_init";
  cc_cuda__hello mine, *all;
  cc_cuda_comm *g;
  cc_result r;
  void *probe = NULL;
  int ipc = 0;
  if (!out) return cc__fail(host, CC_ERR_INVALID_ARG, "%s: out is NULL", w);
  *out = NULL;
  if (!host) return cc__fail(NULL, CC_ERR_INVALID_ARG, "%s: host communicator is NULL", w);
  CC__TRY(cc__ready(host, w));
  cc_cuda__device_guard guard(device);   /* the caller's current device is given back */
  cc_cuda__relaxed relaxed;
  g = (cc_cuda_comm *)CC_MALLOC(sizeof *g);
  all = (cc_cuda__hello *)CC_MALLOC(sizeof *all * (size_t)host->size);
  if (!g || !all) {
    CC_FREE(g);
    CC_FREE(all);
    return cc__fail(host, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", w, host->rank);
  }
  memset(g, 0, sizeof *g);
  memset(&mine, 0, sizeof mine);
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->cond, NULL);
  g->host = host;
  g->rank = host->rank;
  g->size = host->size;
  g->dev = device;
  g->sms = 1;
  g->oneshot = cc__env_size("CC_CUDA_ONESHOT_BYTES", 256u << 10, 0, (size_t)1 << 40);
  g->max_blocks = cc__env_size("CC_CUDA_BLOCKS", 32, 1, 1024);
  cc_cuda__init_local(g, &mine, &probe);
  r = cc_cuda__pick_mode(g, &mine, all, probe, &ipc);
  if (r == CC_OK) r = cc_cuda__start(g, ipc, all);
  CC_FREE(all);
  if (r != CC_OK) {
    cc_cuda__free_all(g);
    return r;
  }
  cc__log(host, CC__LOG_INFO, "%s: rank %d: device %d (%s), %s mode, %s waits%s, remote writes %s", w, g->rank, g->dev,
          mine.busid, g->mode == CC_CUDA__IPC ? "ipc" : "staged", g->memops ? "stream-memop" : "kernel",
          g->memops && g->batch ? " (batched)" : "",
          g->mode != CC_CUDA__IPC ? "none (staged)" : !g->far ? "none (every rank on this GPU)"
          : !g->memops ? "ordered by the wait kernel" : g->flush ? "flushed by the waits (CU_STREAM_WAIT_VALUE_FLUSH)"
          : "ordered by the wait kernel (the device cannot flush them)");
  *out = g;
  return CC_OK;
}

/* Wait for this communicator's work (every stream it used), close every
   mapping of the peers' memory, meet the peers (host barrier: then nobody
   maps this rank's memory any more), and only then free it. */
CC_API cc_result cc_cuda_comm_destroy(cc_cuda_comm *g) {
  cc_result r = CC_OK, rb;
  cudaError_t e = cudaSuccess;
  if (!g) return CC_OK;
  cc_cuda__device_guard guard(g->dev);
  cc_cuda__relaxed relaxed;
  cudaSetDevice(g->dev);
  if (g->have_last) e = cudaEventSynchronize(g->ev);   /* the watchdog still runs: a dead peer cannot hang this */
  if (e != cudaSuccess && !g->failed)
    r = cc_cuda__abort(g, CC_ERR_SYSTEM, "cuda_comm_destroy: rank %d: its work failed: %s (%s)", g->rank,
                       cudaGetErrorName(e), cudaGetErrorString(e));
  if (g->mode == CC_CUDA__IPC) {
    pthread_mutex_lock(&g->lock);
    g->closing = 1;                    /* peers that leave now are no failure */
    pthread_mutex_unlock(&g->lock);
    cc_cuda__close_all(g);
    rb = cc_barrier(g->host);          /* a failed rank's peers are let go by their watchdogs */
    if (r == CC_OK && !g->failed && rb != CC_OK)
      r = cc_cuda__fail(g, rb, "cuda_comm_destroy: rank %d: %s", g->rank, g->host->err);
  }
  if (g->wd_started) {
    pthread_mutex_lock(&g->lock);
    g->wd_stop = 1;
    pthread_cond_signal(&g->cond);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->wd, NULL);
  }
  if (r != CC_OK) snprintf(g->host->err, sizeof g->host->err, "%.*s", (int)sizeof g->host->err - 1, g->err);
  cc_cuda__free_all(g);
  return r;
}

/* ============================================================== @cuda-ipc */

/* Bytes of the send and receive side of call k on this rank (the extent of
   the v layouts), as the staged path copies them and records describe them:
   cc.h's plan of the call (@plan), the same for every transport. */
static void cc_cuda__extents(cc_cuda_comm *g, const cc__call *k, size_t *sx, size_t *rx) {
  *sx = cc__plan_extent(g->host, k, 0);
  *rx = cc__plan_extent(g->host, k, 1);
}

/* The fold's op: a premul_sum op (created on the host communicator) folds as
   CC__OP_PREMUL with every rank's scalar from its record. */
static int cc_cuda__gpu_op(const cc_cuda_comm *g, cc_op op) {
  if (op >= CC__OP_FIRST_USER && g->host->ops[op - CC__OP_FIRST_USER].kind == CC__OPK_PREMUL) return CC__OP_PREMUL;
  return op;
}

/* The call a record describes, as cc.h identifies calls (@plan). */
static void cc_cuda__rec_ident(const cc_cuda__rec *r, cc__ident *id) {
  memset(id, 0, sizeof *id);
  id->coll = (uint8_t)r->coll;
  id->dtype = (uint8_t)r->dtype;
  id->op = r->op;
  id->root = r->root;
  id->count = r->count;
}

/* Do the records of every rank describe the same call? The same rule as
   every cc.h transport's (cc__ident_same), then the v counts. */
static cc_result cc_cuda__agree(cc_cuda_comm *g, const char *what, const cc__call *k) {
  cc__ident mine, theirs;
  size_t es = cc__dtype_bytes(k->t);
  int p;
  cc_cuda__rec_ident(cc_cuda__recp(g, g->size), &mine);
  for (p = 0; p < g->size; p++) {
    const cc_cuda__rec *o = cc_cuda__recp(g, p);
    unsigned long long want = 0, got = 0;
    cc_cuda__rec_ident(o, &theirs);
    if (!cc__ident_same(&mine, &theirs)) {
      char a[128], b[128];
      cc__ident_str(&theirs, a, sizeof a);
      cc__ident_str(&mine, b, sizeof b);
      return cc_cuda__abort(g, CC_ERR_MISMATCH, "%s: rank %d called %s while rank %d called %s", what, p, a, g->rank, b);
    }
    switch (k->coll) {             /* the v counts: what p sends this rank, what this rank expects */
      case CC__ALL_GATHER_V: got = o->count; want = k->rc[p]; break;
      case CC__GATHER_V: if (g->rank == k->root) { got = o->count; want = k->rc[p]; } break;
      case CC__SCATTER_V: if (p == k->root) { got = cc_cuda__tab(g, p, g->rank)[1]; want = k->rcount; } break;
      case CC__ALL_TO_ALL_V: got = cc_cuda__tab(g, p, g->rank)[1]; want = k->rc[p]; break;
      default: break;
    }
    if (got != want)
      return cc_cuda__abort(g, CC_ERR_MISMATCH, "%s: rank %d sends %llu elements of %zu bytes to rank %d, which expects %llu",
                            what, p, got, es, g->rank, want);
  }
  return CC_OK;
}

/* The collectives in ipc mode. Every one is: a barrier of the streams (every
   rank's input is ready and its output may be written), the copies or folds,
   each rank reading its peers' buffers in place, and a closing barrier (nobody
   reads or writes this rank's buffers any more, so its stream may go on).
   All-reduce over CC_CUDA_ONESHOT_BYTES: each rank folds one slice of every
   input and writes it into every rank's output, so that every byte is read
   once and written once (the closing barrier then flushes those writes). */
static cc_result cc_cuda__staged(cc_cuda_comm *g, const cc__call *k, cudaStream_t s);

/* This rank's record of the call (its buffers, counts, op; a copy of an
   input that the peers read while this rank overwrites it), swapped with
   every rank's through the host communicator and checked. *staged: some
   rank needs the staged path. */
static cc_result cc_cuda__coll_swap(cc_cuda_comm *g, const char *what, const cc__call *k, cudaStream_t s, int sliced,
                                    int *staged) {
  size_t sx, rx;
  const void *sbuf = k->sbuf;
  unsigned char *rbuf = (unsigned char *)k->rbuf;
  cc_cuda__rec *me = cc_cuda__recp(g, g->size);
  int n = g->size, p, j;
  cc_result res;
  unsigned int nomem = 0;
  cc_cuda__extents(g, k, &sx, &rx);
  /* an input that the peers read while this rank overwrites it: read a copy
     (once the caller's buffer is known to be device memory). Without memory
     for it, the peers learn it from the record and nobody runs the call. */
  if (sx && ((k->coll == CC__ALL_REDUCE && !sliced) || k->coll == CC__ALL_TO_ALL) && sbuf == (const void *)rbuf) {
    void *w;
    unsigned int fl = 0;
    CC__TRY(cc_cuda__describe(g, what, "sendbuf", sbuf, sx, &me->b[0], &fl));
    res = cc_cuda__work(g, what, sx, &w);
    if (res == CC_ERR_NO_MEMORY) {
      nomem = CC_CUDA__NOMEM;
    } else {
      if (res != CC_OK) return res;
      CC_CUDA__CALL(g, what, cudaMemcpyAsync(w, sbuf, sx, cudaMemcpyDeviceToDevice, s));
      sbuf = w;
    }
  }
  memset(me, 0, g->rec_bytes);
  me->flags = nomem;
  me->need = nomem ? sx : 0;
  me->coll = k->coll;
  me->dtype = (int)k->t;
  me->op = cc__reduces(k->coll) ? k->op : 0;
  me->root = k->root;
  me->count = cc__is_v(k->coll) ? (k->coll == CC__SCATTER_V ? k->rcount : k->scount) : k->count;
  if (k->op >= CC__OP_FIRST_USER && cc__reduces(k->coll)) {
    const cc__opinfo *o = &g->host->ops[k->op - CC__OP_FIRST_USER];
    if (o->kind == CC__OPK_PREMUL) memcpy(me->scal, o->scal, sizeof me->scal);
    else me->flags |= CC_CUDA__STAGE;  /* a user function runs on the CPU */
  }
  CC__TRY(cc_cuda__describe(g, what, "sendbuf", sbuf, sx, &me->b[0], &me->flags));
  if (k->coll != CC__BROADCAST) CC__TRY(cc_cuda__describe(g, what, "recvbuf", rbuf, rx, &me->b[1], &me->flags));
  if ((k->coll == CC__SCATTER_V && g->rank == k->root) || k->coll == CC__ALL_TO_ALL_V)
    for (j = 0; j < n; j++) {
      cc_cuda__tab(g, g->size, j)[0] = k->sd[j];
      cc_cuda__tab(g, g->size, j)[1] = k->sc[j];
    }
  res = cc_all_gather(g->host, me, g->recs, g->rec_bytes, CC_UINT8);
  if (res != CC_OK) return cc_cuda__host_failed(g, res);
  CC__TRY(cc_cuda__agree(g, what, k));
  for (p = 0; p < n; p++)
    if (cc_cuda__recp(g, p)->flags & CC_CUDA__NOMEM)
      return cc_cuda__fail(g, CC_ERR_NO_MEMORY, "%s: rank %d could not allocate %llu bytes of device memory for the "
                           "call's scratch; no rank ran the call", what, p, cc_cuda__recp(g, p)->need);
  for (p = 0; p < n; p++)
    if (cc_cuda__recp(g, p)->flags & CC_CUDA__STAGE) *staged = 1;
  return CC_OK;
}

/* A call's shape, as cc.h's steps (@plan: cc__plan_step) lay it out.
   Direct (CC__WHOLE): each rank reads what it needs from its peers' buffers
   (the root's whole buffer, for a broadcast; every input, for the root of a
   reduce). Sliced (CC__OTHERS), over CC_CUDA_ONESHOT_BYTES: the data is cut
   into shares of whole 16-byte packs, and each share is read once, by the
   rank that owns it, and written into the buffers of every rank that needs
   it, so that every rank moves about the same bytes and no rank's link
   carries the others' (the root's does, direct: n-1 copies of its buffer go
   out of it, or come into it):
   - all_reduce ("two-shot"): rank r folds share r of every input and writes
     it into every rank's output (reduce-scatter and all-gather in one
     kernel);
   - broadcast: the n-1 ranks other than the root own a share each: read it
     from the root, write it into every non-root buffer;
   - reduce: the n-1 ranks other than the root own a share each: fold it
     from every input, write it into the root's output.
   Two ranks stay direct for broadcast and reduce (nothing to share). */
static int cc_cuda__sliced(const cc_cuda_comm *g, const cc__call *k) {
  if (k->count * cc__dtype_bytes(k->t) <= g->oneshot) return 0;
  if (k->coll == CC__ALL_REDUCE) return g->size > 1;
  return (k->coll == CC__BROADCAST || k->coll == CC__REDUCE) && g->size > 2;
}

/* Peers write into this rank's memory in a sliced call: its recvbuf is
   where their shares belong. */
static int cc_cuda__written(const cc_cuda_comm *g, const cc__call *k, int sliced) {
  cc__step st;
  cc__plan_step(k, g->size, g->rank, CC__OTHERS, 1, &st);
  return sliced && cc__step_to(&st, g->rank);
}

/* The copies and folds of a collective, each rank reading its peers'
   buffers in place (between the two barriers of cc_cuda__ipc_coll). */
static cc_result cc_cuda__coll_moves(cc_cuda_comm *g, const char *what, const cc__call *k, cudaStream_t s, int sliced,
                                     cc_cuda__copies *cp) {
  size_t es = cc__dtype_bytes(k->t);
  const void *src[CC_CUDA__MAXR];
  void *dst[CC_CUDA__MAXR];
  unsigned char *rbuf = (unsigned char *)k->rbuf;
  int n = g->size, p, nd = 0;
#define CC_CUDA__AT(p, side, off, len, out) CC__TRY(cc_cuda__peer(g, what, p, &cc_cuda__recp(g, p)->b[side], off, len, out))
#define CC_CUDA__COPY(srcp, dst, len) CC__TRY(cc_cuda__copy_add(g, what, s, cp, srcp, dst, len))
  switch (k->coll) {
    case CC__BROADCAST: case CC__REDUCE: case CC__ALL_REDUCE: case CC__REDUCE_SCATTER: {
      cc__step st;                     /* cc.h's step (@plan): whole, or shared among the non-roots */
      int side = k->coll == CC__BROADCAST ? 0 : 1;
      size_t off, len;
      cc__plan_step(k, g->size, g->rank, sliced ? CC__OTHERS : CC__WHOLE, es >= 16 ? 1 : 16 / es, &st);
      if (st.lo == st.hi) break;
      off = st.lo * es;
      len = (st.hi - st.lo) * es;
      for (p = 0; p < n; p++)
        if (st.from < 0 || p == st.from) CC_CUDA__AT(p, 0, st.src + off, len, &src[st.from < 0 ? p : 0]);
      for (p = 0; p < n; p++)
        if (cc__step_to(&st, p)) CC_CUDA__AT(p, side, off, len, (const void **)&dst[nd++]);
      if (st.from < 0) CC__TRY(cc_cuda__fold(g, what, s, k->t, cc_cuda__gpu_op(g, k->op), src, dst, nd, st.hi - st.lo));
      else if (nd == 1) CC_CUDA__COPY(src[0], dst[0], len);
      else CC__TRY(cc_cuda__fan(g, what, s, src[0], dst, nd, len));
      break;
    }
    case CC__GATHER: case CC__ALL_GATHER: case CC__SCATTER: case CC__ALL_TO_ALL:
    case CC__GATHER_V: case CC__ALL_GATHER_V: case CC__SCATTER_V: case CC__ALL_TO_ALL_V: {
      cc__plan pl;                     /* the pieces of cc.h's plan, read in place from each sender */
      cc__plan_move(g->host, k, &pl);
      if (pl.reader >= 0 && pl.reader != g->rank) break;
      for (p = 0; p < n; p++) {
        size_t off = cc__plan_src_off(g->host, k, p);
        if (!cc__plan_rlen(&pl, p) || (pl.writer >= 0 && pl.writer != p)) continue;
        if (off == (size_t)-1) off = cc_cuda__tab(g, p, g->rank)[0] * es;   /* the sender's displacement */
        CC_CUDA__AT(p, 0, off, cc__plan_rlen(&pl, p), &src[0]);
        CC_CUDA__COPY(src[0], rbuf + cc__plan_roff(&pl, p), cc__plan_rlen(&pl, p));
      }
      break;
    }
    default:
      return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: not a collective", what, g->rank);
  }
#undef CC_CUDA__AT
#undef CC_CUDA__COPY
  return CC_OK;
}

static cc_result cc_cuda__ipc_coll_queue(cc_cuda_comm *g, const cc__call *k, cudaStream_t s) {
  const char *what = cc__coll_names[k->coll];
  cc_cuda__copies cp;
  int sliced = cc_cuda__sliced(g, k), staged = 0;
  CC__TRY(cc_cuda__order(g, what, s));
  CC__TRY(cc_cuda__peer_frees(g, what));
  CC__TRY(cc_cuda__coll_swap(g, what, k, s, sliced, &staged));
  if (staged) return cc_cuda__staged(g, k, s);
  if (!cc__is_v(k->coll) && k->coll != CC__BARRIER && !k->count) return CC_OK;
  CC__TRY(cc_cuda__bar(g, what, s, 0));
  if (k->coll == CC__BARRIER) return cc_cuda__ordered(g, what, s);
  memset(&cp, 0, sizeof cp);
  CC__TRY(cc_cuda__coll_moves(g, what, k, s, sliced, &cp));
  CC__TRY(cc_cuda__copy_flush(g, what, s, &cp));
  CC__TRY(cc_cuda__bar(g, what, s, cc_cuda__written(g, k, sliced)));
  return cc_cuda__ordered(g, what, s);
}

/* A call that failed after its cache evicted mappings its queued work reads:
   they are closed after that work too. */
static cc_result cc_cuda__ipc_coll(cc_cuda_comm *g, const cc__call *k, cudaStream_t s) {
  cc_result r = cc_cuda__ipc_coll_queue(g, k, s);
  if (r != CC_OK) (void)cc_cuda__seal_closes(g, NULL);
  return r;
}

/* ============================================================== @cuda-p2p */
/* Sends and receives (a group, or one alone) in ipc mode. The records go
   through the host communicator in one host group (sender to receiver, in
   order, on a tag of their own); then on the stream: every send posts
   ready[me][peer], every receive posts want and waits for ready, copies from
   the sender's buffer, and posts done; every send waits for done last, so that
   the sender's buffer may be reused once its stream has passed the call. A
   send buffer that cannot be shared is first copied to the sender's scratch,
   each one to its own part of it. */

/* The outgoing records: each send's buffer described; a buffer CUDA IPC
   cannot share is copied into its own part of one scratch, grown before any
   part is named. When the scratch cannot grow, *nomem is this rank and
   those sends are marked (both sides skip them). */
static cc_result cc_cuda__p2p_records(cc_cuda_comm *g, const char *what, cc_cuda__p2p *ops, int nops, cudaStream_t s,
                                      cc_cuda__rec *recs, int *nomem) {
  cc_result r = CC_OK;
  size_t *at = (size_t *)CC_MALLOC(sizeof(size_t) * (size_t)nops), total = 0;
  unsigned char *w = NULL;
  int i, me = g->rank;
  if (!at) return cc_cuda__abort(g, CC_ERR_NO_MEMORY, "%s: rank %d: out of host memory", what, me);
  for (i = 0; i < nops && r == CC_OK; i++) {
    cc_cuda__p2p *o = &ops[i];
    size_t bytes = o->count * cc__dtype_bytes(o->t);
    at[i] = (size_t)-1;
    if (!o->send) continue;
    recs[i].coll = CC__SEND;
    recs[i].dtype = (int)o->t;
    recs[i].tag = o->tag;
    recs[i].count = o->count;
    r = cc_cuda__describe(g, what, "buf", o->sbuf, bytes, &recs[i].b[0], &recs[i].flags);
    if (r == CC_OK && (recs[i].flags & CC_CUDA__STAGE)) {   /* not shareable: a part of the scratch */
      at[i] = total;
      total += (bytes + 255) & ~(size_t)255;
    }
  }
  if (r == CC_OK && total) {
    r = cc_cuda__work(g, what, total, (void **)&w);
    if (r == CC_ERR_NO_MEMORY) *nomem = me;
    for (i = 0; i < nops && (r == CC_OK || *nomem >= 0); i++) {
      size_t bytes = ops[i].count * cc__dtype_bytes(ops[i].t);
      if (at[i] == (size_t)-1) continue;
      if (*nomem >= 0) {
        recs[i].flags = CC_CUDA__NOMEM;
        recs[i].need = total;
        continue;
      }
      cudaError_t e = cudaMemcpyAsync(w + at[i], ops[i].sbuf, bytes, cudaMemcpyDeviceToDevice, s);
      if (e != cudaSuccess)
        r = cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: cudaMemcpyAsync of a send buffer to the scratch failed: %s",
                           what, me, cudaGetErrorString(e));
      recs[i].flags = 0;
      if (r == CC_OK) r = cc_cuda__describe(g, what, "buf", w + at[i], bytes, &recs[i].b[0], &recs[i].flags);
      if (r == CC_OK && recs[i].flags)
        r = cc_cuda__abort(g, CC_ERR_UNSUPPORTED, "%s: rank %d: device memory cannot be shared here", what, me);
    }
    if (*nomem >= 0) r = CC_OK;
  }
  CC_FREE(at);
  return r;
}

/* The records through one host group (record numbers are given here, in
   issue order), then: does each incoming record match its receive? *nomem:
   a sender that had no scratch for its message, if this rank had none. */
static cc_result cc_cuda__p2p_swap(cc_cuda_comm *g, const char *what, cc_cuda__p2p *ops, int nops, cc_cuda__rec *recs,
                                   int *nomem) {
  cc_result r;
  int i, me = g->rank;
  cc_group_begin(g->host);
  for (i = 0; i < nops; i++) {
    if (ops[i].send) {
      recs[i].seq = ops[i].peer == me ? 0 : ++g->tx[ops[i].peer];
      ops[i].rec = recs[i];
      cc_send(g->host, &recs[i], sizeof recs[i], CC_UINT8, ops[i].peer, CC_CUDA__TAG);
    } else {
      cc_recv(g->host, &ops[i].rec, sizeof ops[i].rec, CC_UINT8, ops[i].peer, CC_CUDA__TAG);
    }
  }
  r = cc_group_end(g->host, NULL);
  if (r != CC_OK) return cc_cuda__host_failed(g, r);
  for (i = 0; i < nops && r == CC_OK; i++) {
    cc_cuda__p2p *o = &ops[i];
    const cc_cuda__rec *in = &o->rec;
    unsigned long long expect;
    if (o->send) continue;
    expect = o->peer == me ? 0 : ++g->rx[o->peer];
    if (in->coll != CC__SEND || in->seq != expect || in->tag != o->tag || in->dtype != (int)o->t || in->count != o->count)
      r = cc_cuda__abort(g, CC_ERR_MISMATCH,
                         "%s: rank %d receives %zu %s with tag %d from rank %d, whose message %llu is %llu %s with tag %d",
                         what, me, o->count, cc__dtype_name(o->t), o->tag, o->peer, in->seq, in->count,
                         cc__dtype_name((cc_dtype)in->dtype), in->tag);
    else if (in->flags & CC_CUDA__NOMEM && *nomem < 0)
      *nomem = o->peer;
  }
  return r;
}

/* On the stream: sends post ready, receives post want, wait for ready, copy
   and post done, sends wait for done. A message whose sender had no scratch
   for it is skipped by both sides. */
static cc_result cc_cuda__p2p_stream(cc_cuda_comm *g, const char *what, cc_cuda__p2p *ops, int nops, cudaStream_t s) {
  cc_cuda__copies cp;
  cc_result r = CC_OK;
  int i, me = g->rank;
  memset(&cp, 0, sizeof cp);
  for (i = 0; i < nops && r == CC_OK; i++)
    if (ops[i].send && ops[i].peer != me && !(ops[i].rec.flags & CC_CUDA__NOMEM))
      r = cc_cuda__sync(g, what, s, &g->page->ready[me][ops[i].peer], (unsigned int)ops[i].rec.seq, NULL, NULL, 0, 0, 0);
  for (i = 0; i < nops && r == CC_OK; i++) {
    cc_cuda__p2p *o = &ops[i];
    unsigned int *wt, v = (unsigned int)o->rec.seq;
    const void *from;
    if (o->send || (o->rec.flags & CC_CUDA__NOMEM)) continue;
    if (o->peer != me) {
      wt = &g->page->ready[o->peer][me];
      r = cc_cuda__sync(g, what, s, &g->page->want[o->peer][me], v, &wt, &v, 1, 0, 0);
    }
    if (r == CC_OK) r = cc_cuda__peer(g, what, o->peer, &o->rec.b[0], 0, o->count * cc__dtype_bytes(o->t), &from);
    if (r == CC_OK) r = cc_cuda__copy_add(g, what, s, &cp, from, o->rbuf, o->count * cc__dtype_bytes(o->t));
  }
  if (r == CC_OK) r = cc_cuda__copy_flush(g, what, s, &cp);
  for (i = 0; i < nops && r == CC_OK; i++)
    if (!ops[i].send && ops[i].peer != me && !(ops[i].rec.flags & CC_CUDA__NOMEM))
      r = cc_cuda__sync(g, what, s, &g->page->done[ops[i].peer][me], (unsigned int)ops[i].rec.seq, NULL, NULL, 0, 0, 0);
  for (i = 0; i < nops && r == CC_OK; i++) {
    unsigned int *wt, v;
    if (!ops[i].send || ops[i].peer == me || (ops[i].rec.flags & CC_CUDA__NOMEM)) continue;
    wt = &g->page->done[me][ops[i].peer];
    v = (unsigned int)ops[i].rec.seq;
    r = cc_cuda__sync(g, what, s, NULL, 0, &wt, &v, 1, 0, 0);
  }
  return r;
}

static cc_result cc_cuda__ipc_p2p(cc_cuda_comm *g, cc_cuda__p2p *ops, int nops, cudaStream_t s) {
  const char *what = nops == 1 ? (ops[0].send ? "send" : "recv") : "group_end";
  cc_cuda__rec *recs;
  cc_result r;
  int nomem = -1;
  CC__TRY(cc_cuda__order(g, what, s));
  CC__TRY(cc_cuda__peer_frees(g, what));
  recs = (cc_cuda__rec *)CC_MALLOC(sizeof *recs * (size_t)nops);
  if (!recs) return cc_cuda__abort(g, CC_ERR_NO_MEMORY, "%s: rank %d: out of host memory", what, g->rank);
  memset(recs, 0, sizeof *recs * (size_t)nops);
  r = cc_cuda__p2p_records(g, what, ops, nops, s, recs, &nomem);
  if (r == CC_OK) r = cc_cuda__p2p_swap(g, what, ops, nops, recs, &nomem);
  CC_FREE(recs);
  if (r == CC_OK) r = cc_cuda__p2p_stream(g, what, ops, nops, s);
  if (r == CC_OK) r = cc_cuda__ordered(g, what, s);
  else (void)cc_cuda__seal_closes(g, NULL);   /* what was queued before the failure may read them */
  if (r == CC_OK && nomem >= 0)
    r = cc_cuda__fail(g, CC_ERR_NO_MEMORY, "%s: rank %d could not allocate device memory to send from buffers CUDA "
                      "IPC cannot share; those messages were not sent (the others were)", what, nomem);
  return r;
}

/* ============================================================== @cuda-staged */
/* Through host memory: wait for the stream, copy the inputs to pinned host
   memory, run cc.h's host call (shared memory, TCP), copy the outputs back.
   The layout keeps the call's in-place relation (sendbuf inside recvbuf, or
   the reverse) by staging the union of both ranges. The v collectives copy
   the receive range down first, so that the gaps between blocks keep their
   bytes. */
static cc_result cc_cuda__staged(cc_cuda_comm *g, const cc__call *k, cudaStream_t s) {
  const char *what = cc__coll_names[k->coll];
  const unsigned char *sb = (const unsigned char *)k->sbuf;
  unsigned char *rb = (unsigned char *)k->rbuf, *hs, *hr;
  size_t sx, rx;
  int joint, down;
  cc__call hk = *k;
  cc_result r;
  CC__TRY(cc_cuda__order(g, what, s));
  cc_cuda__extents(g, k, &sx, &rx);
  if (!sx) sb = NULL;
  if (!rx) rb = NULL;
  joint = sb && rb && sb < rb + rx && rb < sb + sx;
  down = rb && (joint || cc__is_v(k->coll));
  if (joint) {
    const unsigned char *lo = sb < rb ? sb : rb;
    size_t span = (size_t)(CC__MAX((uintptr_t)(sb + sx), (uintptr_t)(rb + rx)) - (uintptr_t)lo);
    CC__TRY(cc_cuda__stage(g, what, span));
    hs = g->stage + (sb - lo);
    hr = g->stage + (rb - lo);
    CC_CUDA__CALL(g, what, cudaMemcpyAsync(g->stage, lo, span, cudaMemcpyDeviceToHost, s));
  } else {
    size_t at = (sx + 63) & ~(size_t)63;
    CC__TRY(cc_cuda__stage(g, what, at + rx));
    hs = g->stage;
    hr = g->stage + at;
    if (sb) CC_CUDA__CALL(g, what, cudaMemcpyAsync(hs, sb, sx, cudaMemcpyDeviceToHost, s));
    if (down) CC_CUDA__CALL(g, what, cudaMemcpyAsync(hr, rb, rx, cudaMemcpyDeviceToHost, s));
  }
  CC_CUDA__CALL(g, what, cudaStreamSynchronize(s));
  hk.sbuf = sb ? hs : NULL;
  hk.rbuf = rb ? hr : NULL;
  r = cc__submit(g->host, &hk);
  if (r != CC_OK) return cc_cuda__host_failed(g, r);
  if (rb) {
    CC_CUDA__CALL(g, what, cudaMemcpyAsync(rb, hr, rx, cudaMemcpyHostToDevice, s));
    CC_CUDA__CALL(g, what, cudaStreamSynchronize(s));
  }
  return cc_cuda__ordered(g, what, s);
}

/* Sends and receives through the host: one host group of a record and the
   data per message, on the tag of the ipc records. */
static cc_result cc_cuda__staged_p2p(cc_cuda_comm *g, cc_cuda__p2p *ops, int nops, cudaStream_t s) {
  const char *what = nops == 1 ? (ops[0].send ? "send" : "recv") : "group_end";
  size_t total = 0, *offs;
  cc_result r = CC_OK;
  cudaError_t e = cudaSuccess;
  int i;
  CC__TRY(cc_cuda__order(g, what, s));
  offs = (size_t *)CC_MALLOC(sizeof *offs * (size_t)nops);
  if (!offs) return cc_cuda__abort(g, CC_ERR_NO_MEMORY, "%s: rank %d: out of host memory", what, g->rank);
  for (i = 0; i < nops; i++) {
    offs[i] = total;
    total += (ops[i].count * cc__dtype_bytes(ops[i].t) + 63) & ~(size_t)63;
  }
  r = cc_cuda__stage(g, what, total + 1);
  for (i = 0; i < nops && r == CC_OK; i++) {
    cc_cuda__p2p *o = &ops[i];
    unsigned int flags = 0;
    cc_cuda__buf b;
    size_t bytes = o->count * cc__dtype_bytes(o->t);
    r = cc_cuda__describe(g, what, "buf", o->send ? o->sbuf : o->rbuf, bytes, &b, &flags);
    if (r == CC_OK && o->send && bytes &&
        (e = cudaMemcpyAsync(g->stage + offs[i], o->sbuf, bytes, cudaMemcpyDeviceToHost, s)) != cudaSuccess)
      r = cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: cudaMemcpyAsync to host failed: %s", what, g->rank,
                         cudaGetErrorString(e));
  }
  if (r == CC_OK && (e = cudaStreamSynchronize(s)) != cudaSuccess)
    r = cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: cudaStreamSynchronize failed: %s", what, g->rank,
                       cudaGetErrorString(e));
  if (r == CC_OK) {
    cc_group_begin(g->host);
    for (i = 0; i < nops; i++) {
      cc_cuda__p2p *o = &ops[i];
      size_t bytes = o->count * cc__dtype_bytes(o->t);
      if (o->send) {
        memset(&o->rec, 0, sizeof o->rec);
        o->rec.coll = CC__SEND;
        o->rec.dtype = (int)o->t;
        o->rec.tag = o->tag;
        o->rec.count = o->count;
        cc_send(g->host, &o->rec, sizeof o->rec, CC_UINT8, o->peer, CC_CUDA__TAG);
        cc_send(g->host, g->stage + offs[i], bytes, CC_UINT8, o->peer, CC_CUDA__TAG);
      } else {
        cc_recv(g->host, &o->rec, sizeof o->rec, CC_UINT8, o->peer, CC_CUDA__TAG);
        cc_recv(g->host, g->stage + offs[i], bytes, CC_UINT8, o->peer, CC_CUDA__TAG);
      }
    }
    r = cc_group_end(g->host, NULL);
    if (r != CC_OK) r = cc_cuda__host_failed(g, r);
  }
  for (i = 0; i < nops && r == CC_OK; i++) {
    cc_cuda__p2p *o = &ops[i];
    size_t bytes = o->count * cc__dtype_bytes(o->t);
    if (o->send) continue;
    if (o->rec.coll != CC__SEND || o->rec.tag != o->tag || o->rec.dtype != (int)o->t || o->rec.count != o->count)
      r = cc_cuda__abort(g, CC_ERR_MISMATCH, "%s: rank %d receives %zu %s with tag %d from rank %d, whose message is %llu %s with tag %d",
                        what, g->rank, o->count, cc__dtype_name(o->t), o->tag, o->peer, o->rec.count,
                        cc__dtype_name((cc_dtype)o->rec.dtype), o->rec.tag);
    else if (bytes && (e = cudaMemcpyAsync(o->rbuf, g->stage + offs[i], bytes, cudaMemcpyHostToDevice, s)) != cudaSuccess)
      r = cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: cudaMemcpyAsync to the device failed: %s", what, g->rank,
                         cudaGetErrorString(e));
  }
  if (r == CC_OK && (e = cudaStreamSynchronize(s)) != cudaSuccess)
    r = cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: cudaStreamSynchronize failed: %s", what, g->rank,
                       cudaGetErrorString(e));
  CC_FREE(offs);
  if (r == CC_OK) r = cc_cuda__ordered(g, what, s);
  return r;
}

/* ============================================================== @cuda-api */

/* Every public call: a communicator, not failed, this rank's device current. */
#define CC_CUDA__ENTER(g, what)                                                      \
  if (!(g)) return cc__fail(NULL, CC_ERR_INVALID_ARG, "cuda %s: communicator is NULL", what); \
  cc_cuda__device_guard cc_cuda__guard_((g)->dev);                                 \
  cc_cuda__relaxed cc_cuda__relaxed_;                                              \
  do {                                                                             \
    cc_result cc_cuda__r_;                                                         \
    if ((cc_cuda__r_ = cc_cuda__ready(g, what)) != CC_OK) return cc_cuda__r_;      \
    cudaError_t cc_cuda__e_ = cudaSuccess;                                         \
    if (cc_cuda__guard_.prev != (g)->dev && (cc_cuda__e_ = cudaSetDevice((g)->dev)) != cudaSuccess) \
      return cc_cuda__abort(g, CC_ERR_SYSTEM, "%s: rank %d: cudaSetDevice(%d) failed: %s", what, (g)->rank, \
                            (g)->dev, cudaGetErrorString(cc_cuda__e_));            \
  } while (0)

/* The fold reads and writes whole elements: pointers of a reduction must be
   aligned to their element (to its real part's size for complex types), as a
   GPU faults on a misaligned load. Moving data needs no alignment. */
static cc_result cc_cuda__aligned(cc_cuda_comm *g, const char *what, const cc__call *k) {
  size_t a = cc__dtype_bytes(k->t);
  if (!cc__reduces(k->coll)) return CC_OK;
  if (k->t == CC_COMPLEX64 || k->t == CC_COMPLEX128) a /= 2;
  if ((uintptr_t)k->sbuf % a)
    return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: sendbuf %p is not aligned to %zu bytes, as %s elements "
                         "must be", what, g->rank, k->sbuf, a, cc__dtype_name(k->t));
  if ((uintptr_t)k->rbuf % a)
    return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: recvbuf %p is not aligned to %zu bytes, as %s elements "
                         "must be", what, g->rank, k->rbuf, a, cc__dtype_name(k->t));
  return CC_OK;
}

/* A collective, its descriptor filled as cc.h's public calls fill theirs and
   its arguments checked by the same rules (cc__args: `made`). */
static cc_result cc_cuda__coll(cc_cuda_comm *g, cc_result made, const cc__call *k, cudaStream_t s) {
  const char *what;
  if (made != CC_OK) return cc_cuda__host_failed(g, made);   /* k is not made: only cc.h's message */
  what = cc__coll_names[k->coll];
  if (g->group_depth)
    return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: collectives cannot be queued in a cc_cuda group "
                         "(only sends and receives)", what, g->rank);
  CC__TRY(cc_cuda__aligned(g, what, k));
  CC__TRY(cc_cuda__not_capturing(g, what, s));
  if (g->mode == CC_CUDA__IPC) return cc_cuda__ipc_coll(g, k, s);
  {                                    /* staged: check the pointers all the same */
    cc_cuda__buf b;
    unsigned int flags = 0;
    size_t sx, rx;
    cc_cuda__extents(g, k, &sx, &rx);
    CC__TRY(cc_cuda__describe(g, what, "sendbuf", k->sbuf, sx, &b, &flags));
    CC__TRY(cc_cuda__describe(g, what, "recvbuf", k->rbuf, rx, &b, &flags));
  }
  return cc_cuda__staged(g, k, s);
}

#define CC_CUDA__COLL(what, fill)                                                    \
  cc__call k;                                                                      \
  CC_CUDA__ENTER(g, what);                                                         \
  fill;                                                                            \
  return cc_cuda__coll(g, cc__args(g->host, &k), &k, s)

CC_API cc_result cc_cuda_barrier(cc_cuda_comm *g, cudaStream_t s) {
  CC_CUDA__COLL("barrier", cc__call_init(&k, CC__BARRIER, NULL, NULL, 0, CC_UINT8, 0, 0));
}
CC_API cc_result cc_cuda_broadcast(cc_cuda_comm *g, void *buf, size_t count, cc_dtype t, int root, cudaStream_t s) {
  CC_CUDA__COLL("broadcast", cc__call_init(&k, CC__BROADCAST, buf, buf, count, t, 0, root));
}
CC_API cc_result cc_cuda_reduce(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t,
                                cc_op op, int root, cudaStream_t s) {
  CC_CUDA__COLL("reduce", cc__call_init(&k, CC__REDUCE, sendbuf, recvbuf, count, t, op, root));
}
CC_API cc_result cc_cuda_all_reduce(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t,
                                    cc_op op, cudaStream_t s) {
  CC_CUDA__COLL("all_reduce", cc__call_init(&k, CC__ALL_REDUCE, sendbuf, recvbuf, count, t, op, 0));
}
CC_API cc_result cc_cuda_gather(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t,
                                int root, cudaStream_t s) {
  CC_CUDA__COLL("gather", cc__call_init(&k, CC__GATHER, sendbuf, recvbuf, count, t, 0, root));
}
CC_API cc_result cc_cuda_all_gather(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t,
                                    cudaStream_t s) {
  CC_CUDA__COLL("all_gather", cc__call_init(&k, CC__ALL_GATHER, sendbuf, recvbuf, count, t, 0, 0));
}
CC_API cc_result cc_cuda_scatter(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t,
                                 int root, cudaStream_t s) {
  CC_CUDA__COLL("scatter", cc__call_init(&k, CC__SCATTER, sendbuf, recvbuf, count, t, 0, root));
}
CC_API cc_result cc_cuda_reduce_scatter(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                        cc_dtype t, cc_op op, cudaStream_t s) {
  CC_CUDA__COLL("reduce_scatter", cc__call_init(&k, CC__REDUCE_SCATTER, sendbuf, recvbuf, count, t, op, 0));
}
CC_API cc_result cc_cuda_all_to_all(cc_cuda_comm *g, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t,
                                    cudaStream_t s) {
  CC_CUDA__COLL("all_to_all", cc__call_init(&k, CC__ALL_TO_ALL, sendbuf, recvbuf, count, t, 0, 0));
}
CC_API cc_result cc_cuda_gather_v(cc_cuda_comm *g, const void *sendbuf, size_t send_count, void *recvbuf,
                                  const size_t *recv_counts, const size_t *displs, cc_dtype t, int root,
                                  cudaStream_t s) {
  CC_CUDA__COLL("gather_v", (cc__call_init(&k, CC__GATHER_V, sendbuf, recvbuf, 0, t, 0, root),
                             cc__call_v(&k, send_count, NULL, NULL, 0, recv_counts, displs)));
}
CC_API cc_result cc_cuda_all_gather_v(cc_cuda_comm *g, const void *sendbuf, size_t send_count, void *recvbuf,
                                      const size_t *recv_counts, const size_t *displs, cc_dtype t, cudaStream_t s) {
  CC_CUDA__COLL("all_gather_v", (cc__call_init(&k, CC__ALL_GATHER_V, sendbuf, recvbuf, 0, t, 0, 0),
                                 cc__call_v(&k, send_count, NULL, NULL, 0, recv_counts, displs)));
}
CC_API cc_result cc_cuda_scatter_v(cc_cuda_comm *g, const void *sendbuf, const size_t *send_counts,
                                   const size_t *displs, void *recvbuf, size_t recv_count, cc_dtype t, int root,
                                   cudaStream_t s) {
  CC_CUDA__COLL("scatter_v", (cc__call_init(&k, CC__SCATTER_V, sendbuf, recvbuf, 0, t, 0, root),
                              cc__call_v(&k, 0, send_counts, displs, recv_count, NULL, NULL)));
}
CC_API cc_result cc_cuda_all_to_all_v(cc_cuda_comm *g, const void *sendbuf, const size_t *send_counts,
                                      const size_t *send_displs, void *recvbuf, const size_t *recv_counts,
                                      const size_t *recv_displs, cc_dtype t, cudaStream_t s) {
  CC_CUDA__COLL("all_to_all_v", (cc__call_init(&k, CC__ALL_TO_ALL_V, sendbuf, recvbuf, 0, t, 0, 0),
                                 cc__call_v(&k, 0, send_counts, send_displs, 0, recv_counts, recv_displs)));
}

/* ---------------------------------------------------------------- point to point and groups */

static cc_result cc_cuda__p2p_run(cc_cuda_comm *g, cc_cuda__p2p *ops, int n, cudaStream_t s) {
  CC__TRY(cc_cuda__not_capturing(g, n == 1 ? (ops[0].send ? "send" : "recv") : "group_end", s));
  return g->mode == CC_CUDA__IPC ? cc_cuda__ipc_p2p(g, ops, n, s) : cc_cuda__staged_p2p(g, ops, n, s);
}

static cc_result cc_cuda__p2p_add(cc_cuda_comm *g, const char *what, cc_result made, const cc__call *k,
                                  cudaStream_t s) {
  cc_cuda__p2p o;
  if (made != CC_OK) return cc_cuda__host_failed(g, made);
  memset(&o, 0, sizeof o);
  o.send = k->coll == CC__SEND;
  o.peer = k->peer;
  o.tag = k->tag;
  o.sbuf = k->sbuf;
  o.rbuf = k->rbuf;
  o.count = k->count;
  o.t = k->t;
  if (!g->group_depth) {
    if (k->peer == g->rank)
      return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: a send to oneself and its receive must be in one "
                           "cc_cuda group", what, g->rank);
    return cc_cuda__p2p_run(g, &o, 1, s);
  }
  if (g->nq && s != g->qstream) {
    g->qerr = cc_cuda__fail(g, CC_ERR_INVALID_ARG, "%s: rank %d: every call of a cc_cuda group uses one stream",
                            what, g->rank);
    return g->qerr;
  }
  if (g->nq == g->capq) {
    int cap = g->capq ? 2 * g->capq : 16;
    cc_cuda__p2p *q = (cc_cuda__p2p *)CC_MALLOC(sizeof *q * (size_t)cap);
    if (!q) return g->qerr = cc_cuda__abort(g, CC_ERR_NO_MEMORY, "%s: rank %d: out of host memory", what, g->rank);
    if (g->nq) memcpy(q, g->q, sizeof *q * (size_t)g->nq);
    CC_FREE(g->q);
    g->q = q;
    g->capq = cap;
  }
  g->qstream = s;
  g->q[g->nq++] = o;
  return CC_OK;
}

CC_API cc_result cc_cuda_send(cc_cuda_comm *g, const void *buf, size_t count, cc_dtype t, int peer, int tag,
                              cudaStream_t s) {
  cc__call k;
  CC_CUDA__ENTER(g, "send");
  cc__call_init(&k, CC__SEND, buf, NULL, count, t, 0, 0);
  cc__call_p2p(&k, peer, tag, NULL);
  return cc_cuda__p2p_add(g, "send", cc__args(g->host, &k), &k, s);
}

CC_API cc_result cc_cuda_recv(cc_cuda_comm *g, void *buf, size_t count, cc_dtype t, int peer, int tag,
                              cudaStream_t s) {
  cc__call k;
  CC_CUDA__ENTER(g, "recv");
  if (peer == CC_ANY_SOURCE)
    return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "recv: rank %d: cc_cuda receives from a named rank only "
                         "(CC_ANY_SOURCE is for host buffers, cc_recv_any)", g->rank);
  cc__call_init(&k, CC__RECV, NULL, buf, count, t, 0, 0);
  cc__call_p2p(&k, peer, tag, NULL);
  return cc_cuda__p2p_add(g, "recv", cc__args(g->host, &k), &k, s);
}

CC_API cc_result cc_cuda_group_begin(cc_cuda_comm *g) {
  if (!g) return cc__fail(NULL, CC_ERR_INVALID_ARG, "cuda group_begin: communicator is NULL");
  if (!g->group_depth++) { g->nq = 0; g->qerr = CC_OK; }
  return CC_OK;
}

CC_API cc_result cc_cuda_group_end(cc_cuda_comm *g) {
  cc_result r;
  int n;
  if (!g) return cc__fail(NULL, CC_ERR_INVALID_ARG, "cuda group_end: communicator is NULL");
  if (g->group_depth <= 0) return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "group_end: rank %d: no group is open", g->rank);
  if (--g->group_depth > 0) return CC_OK;
  n = g->nq;
  g->nq = 0;
  CC_CUDA__ENTER(g, "group_end");
  r = g->qerr;
  if (r == CC_OK && n) r = cc_cuda__p2p_run(g, g->q, n, g->qstream);
  return r;
}

/* ---------------------------------------------------------------- memory, errors */

/* Not collective: a failure here is this call's, never the communicator's. */
CC_API cc_result cc_cuda_malloc(cc_cuda_comm *g, void **ptr, size_t bytes) {
  cc_cuda__buf b;
  unsigned int flags = 0;
  void *p = NULL;
  cudaError_t e, before;
  CC_CUDA__ENTER(g, "cuda_malloc");
  if (!ptr) return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "cuda_malloc: rank %d: ptr is NULL", g->rank);
  *ptr = NULL;
  if (!bytes) return CC_OK;
  if (g->nallocs == g->capallocs) {
    int cap = g->capallocs ? 2 * g->capallocs : 16;
    cc_cuda__alloc *a = (cc_cuda__alloc *)CC_MALLOC(sizeof *a * (size_t)cap);
    if (!a) return cc_cuda__fail(g, CC_ERR_NO_MEMORY, "cuda_malloc: rank %d: out of host memory", g->rank);
    if (g->nallocs) memcpy(a, g->allocs, sizeof *a * (size_t)g->nallocs);
    CC_FREE(g->allocs);
    g->allocs = a;
    g->capallocs = cap;
  }
  before = cudaPeekAtLastError();
  if ((e = cudaMalloc(&p, bytes)) != cudaSuccess) {
    cc_cuda__forgive(before);
    return cc_cuda__fail(g, cc_cuda__code(e) == CC_ERR_NO_MEMORY ? CC_ERR_NO_MEMORY : CC_ERR_SYSTEM,
                         "cuda_malloc: rank %d: cudaMalloc of %zu bytes failed: %s (%s)", g->rank, bytes,
                         cudaGetErrorName(e), cudaGetErrorString(e));
  }
  g->allocs[g->nallocs].p = p;
  g->allocs[g->nallocs++].named = 0;
  if (g->mode == CC_CUDA__IPC) {       /* its handle, now; not named until a record names it */
    int i;
    (void)cc_cuda__describe(g, "cuda_malloc", "ptr", p, bytes, &b, &flags);
    for (i = 0; i < CC_CUDA__NEXP; i++)
      if (b.id && g->exps[i].id == b.id) g->exps[i].named = 0;
    g->allocs[g->nallocs - 1].named = 0;
  }
  *ptr = p;
  return CC_OK;
}

/* In ipc mode, memory that a record named (peers may have it open) is
   retired: the peers close their mappings at their next call, and it is
   freed by a later cc_cuda_free or by destroy, once every live peer has. */
CC_API cc_result cc_cuda_free(cc_cuda_comm *g, void *ptr) {
  cc_cuda__alloc *a;
  int named;
  if (!g) return cc__fail(NULL, CC_ERR_INVALID_ARG, "cuda_free: communicator is NULL");
  if (!ptr) return CC_OK;
  if (!(a = cc_cuda__find_alloc(g, ptr)))
    return cc_cuda__fail(g, CC_ERR_INVALID_ARG, "cuda_free: rank %d: %p is not from cc_cuda_malloc of this communicator",
                         g->rank, ptr);
  named = a->named;
  *a = g->allocs[--g->nallocs];
  cc_cuda__device_guard guard(g->dev);
  cc_cuda__relaxed relaxed;
  cudaSetDevice(g->dev);
  if (g->mode == CC_CUDA__IPC && named) {
    CC__TRY(cc_cuda__retire(g, "cuda_free", ptr));
    cc_cuda__reap_closes(g, 0);
    cc_cuda__reap_own(g, 0);
    return CC_OK;
  }
  if (g->mode == CC_CUDA__IPC) {
    unsigned long long id = cc_cuda__buffer_id(g, ptr);
    int i;
    for (i = 0; i < CC_CUDA__NEXP; i++)
      if (id && g->exps[i].id == id) memset(&g->exps[i], 0, sizeof g->exps[i]);
    cc_cuda__reap_own(g, 0);
  }
  CC_CUDA__CALL(g, "cuda_free", cudaFree(ptr));   /* waits for the device: no call in flight reads it */
  return CC_OK;
}

CC_API void cc_cuda_comm_abort(cc_cuda_comm *g) {
  if (!g) return;
  if (g->page) {
    cc_cuda__declare(g, CC_ERR_ABORTED, "rank %d called cc_cuda_comm_abort", g->rank);
    pthread_mutex_lock(&g->lock);
    pthread_cond_signal(&g->cond);     /* the watchdog releases the waits now */
    pthread_mutex_unlock(&g->lock);
  }
  cc_comm_abort(g->host);
}

CC_API const char *cc_cuda_comm_last_error(const cc_cuda_comm *g) {
  return g ? g->err : cc_comm_last_error(NULL);
}

CC_API cc_result cc_cuda_comm_check(cc_cuda_comm *g) {
  cc_result a;
  if (!g) return cc__fail(NULL, CC_ERR_INVALID_ARG, "cuda comm_check: communicator is NULL");
  pthread_mutex_lock(&g->lock);
  if (!g->async && g->page && (a = (cc_result)__atomic_load_n(&g->page->abort, __ATOMIC_ACQUIRE)) != CC_OK) {
    g->async = a;                      /* the watchdog releases the flags on its next round */
    snprintf(g->async_msg, sizeof g->async_msg, "rank %d: the GPU communicator failed: rank %d: %.240s", g->rank,
             g->page->abort_rank, g->page->abort_msg);
    pthread_cond_signal(&g->cond);
  }
  a = g->async;
  if (a) snprintf(g->err, sizeof g->err, "%s", g->async_msg);
  pthread_mutex_unlock(&g->lock);
  if (!a && g->failed) a = (cc_result)g->failed;
  if (a && !g->failed) g->failed = a;
  return a;
}

CC_API const char *cc_cuda_comm_mode(const cc_cuda_comm *g) {
  return !g ? "?" : g->mode == CC_CUDA__IPC ? "ipc" : "staged";
}

#endif /* CC_IMPLEMENTATION && !CC_CUDA__IMPLEMENTED */
