/* test_cuda - cc_cuda.cuh on a GPU, every result checked bitwise against a
 * plain host reference (test_ref.h) computed from every rank's inputs.
 *
 * Ranks are started with cc_spawn; rank r uses GPU r % (device count), so on a
 * one-GPU machine every rank shares GPU 0. Each rank checks its own results and
 * records them in memory shared with this process, which prints one PASS/FAIL
 * line per (world, collective, buffer kind) or per (world, group), naming the
 * first failed check. Device buffers are staged and read back on the stream of
 * the call, with 256 sentinel bytes before and after every region: bytes
 * written outside a buffer, into a send buffer or into a buffer a rank does
 * not use are failures too.
 *
 *   cuda n=N COLL KIND       N = 2, 3, 4; COLL: broadcast, reduce, all_reduce,
 *                            gather, all_gather, scatter, reduce_scatter,
 *                            all_to_all and the four _v; KIND: "registered"
 *                            (cc_cuda_malloc) or "cudaMalloc". Every dtype,
 *                            every (dtype, op) pair cc.h allows (all of them
 *                            on registered buffers, sum and one more per dtype
 *                            on cudaMalloc ones), counts 0 (NULL buffers), 1,
 *                            7, 4099 (sum), large odd counts (> 1 MiB per
 *                            rank, above the 256 KiB one-shot limit) for a
 *                            subset of pairs, and all_reduce at 64K-1, 64K,
 *                            64K+1 float32 (the one-shot/two-shot switch);
 *                            in and out of place (api.md's forms); roots 0 and
 *                            N-1; NULL root-only buffers on other ranks in
 *                            half of the cases; pointers one element past an
 *                            aligned address in half of the count >= 7 cases;
 *                            the legacy default stream in about 1 call of 4.
 *                            The _v variants: uneven counts with a zero count
 *                            for rank 1, gaps and reversed block order.
 *   cuda n=N mode            cc_cuda_comm_mode is "ipc" (when every GPU used
 *                            can reach the others), cc_cuda_comm_check CC_OK
 *   cuda n=N barrier         a late rank (host sleep, then a GPU spin kernel
 *                            on its stream): nobody's stream passes the
 *                            barrier before the late rank's spin ended
 *   cuda n=N stream_order    one rank's stream is held back by a spin kernel
 *                            before each call, and every rank overwrites its
 *                            send buffer on its stream right after the call:
 *                            results stay right (a rank's stream must not pass
 *                            a call before its peers have read its buffers);
 *                            in ipc mode the held-back rank's call returns
 *                            before its stream gets to it
 *   cuda n=N premul_sum      cc_op_create_premul_sum (each rank its own
 *                            scalar) through all_reduce (in and out of
 *                            place), reduce and reduce_scatter
 *   cuda n=N user_op         cc_op_create with host functions (largest
 *                            magnitude, saturating uint8 sum, int64 sum)
 *   cuda n=N p2p_*           ring exchanges (one and both directions) in one
 *                            group; a send to oneself and its receive in one
 *                            group; messages between a pair matched in order
 *                            (grouped and not); every pair at once in a group
 *   cuda n=N buffer_reuse    cudaMalloc / cc_cuda_malloc buffers freed and
 *                            allocated again between calls (the same address
 *                            comes back: a cached mapping must not be reused)
 *   cuda n=N invalid_args    host memory as a device pointer, NULL with a
 *                            count, a bad dtype/op pair, a root out of range,
 *                            overlapping buffers: CC_ERR_INVALID_ARG on every
 *                            rank, and the communicator still works
 *   cuda n=N mismatch        rank 0 all_reduce count 8, the others 9:
 *                            CC_ERR_MISMATCH everywhere; the stream drains
 *   cuda n=N destroy         cc_cuda_comm_destroy returns (CC_OK when nothing
 *                            failed before)
 *   cuda staged n=3 ...      the same with CC_CUDA_TRANSPORT=staged (sum and
 *                            one more op per dtype, counts 0, 7, 4099, large
 *                            float32); mode must be "staged"
 *   cuda twoshot n=3|4 ...   all_reduce, reduce_scatter, broadcast and reduce
 *                            with CC_CUDA_ONESHOT_BYTES=0 (two-shot all_reduce
 *                            and sliced broadcast and reduce from 1 element:
 *                            counts 1..2N+2, every root, slices some ranks
 *                            find empty), premul, user, stream_order; in the
 *                            emulation each rank on a GPU of its own, so that
 *                            peers write into other GPUs' memory: at 3 ranks
 *                            GPUs that cannot flush remote writes
 *                            (CC_EMU_FLUSH=0), at 4 GPUs that can, on a
 *                            driver without cuStreamBatchMemOp
 *   cuda n=3 peer_exit ...   rank 1 _exit(3)s just before an all_reduce, or
 *                            right after queueing one behind a long spin
 *                            kernel; with CC_TIMEOUT=5 the others' call or
 *                            cc_cuda_comm_check reports CC_ERR_PEER_LOST,
 *                            CC_ERR_TIMEOUT or CC_ERR_ABORTED within a few
 *                            seconds, their cudaStreamSynchronize returns,
 *                            later calls fail, cc_cuda_comm_destroy returns
 *
 *   cuda emulated n=N ...    test_cuda_emu: this file linked with
 *                            tests/cuda/cuda_emu.cpp, a CUDA runtime on the CPU
 *                            (one emulated device, no kernels, no IPC), so
 *                            that CI without a GPU runs cc_cuda.cuh's staged
 *                            path: init falls back to it by itself (mode
 *                            "staged"), then every group above with the
 *                            matrix of "cuda n=N", and peer_exit before_call
 *
 * Without a usable GPU (cudaGetDeviceCount fails or finds none) it prints one
 * line "SKIP: cuda: no CUDA device (...)" and exits 0. The device count is
 * asked in a forked child: CUDA does not survive fork, and the ranks are
 * forked from this process.
 *
 *   test_cuda                     everything
 *   test_cuda 3 staged death      only world size 3, the staged pass, the peer_exit cases
 *                                 (words: 2 3 4 staged twoshot death regress,
 *                                 regress:NAME for one regression world)
 *   CC_TEST_QUICK=1               world size 3 only, fewer large cases
 *   CC_TEST_VERBOSE=1             timings on stderr */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "cc_cuda.cuh"
#include "test_util.h"
#include "test_ref.h"
#include "cuda_emu.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#define MAXR TR_MAXR
#define GUARD 256            /* sentinel bytes before and after every device region */
#define SENT TR_SENTINEL

/* ------------------------------------------------------------ what runs */

enum { W_IPC, W_STAGED, W_TWOSHOT };                /* world types */
static const char *const w_prefixes[] = {"", "staged ", "twoshot "};

/* cc_cuda_emulated is defined by tests/cuda/cuda_emu.cpp, the CPU emulation of the
 * CUDA runtime that test_cuda_emu is linked with; absent (NULL) in test_cuda. */
static int emulated(void) { return cc_cuda_emulated && cc_cuda_emulated(); }

/* "emulated tcp twoshot ": the emulation also runs over TCP (CC_TRANSPORT=tcp);
 * "kernel-waits ": CC_CUDA_SYNC=kernel (waits by a kernel, not stream memory operations) */
static const char *w_prefix(int wtype) {
  static char buf[64];
  const char *tr = getenv("CC_TRANSPORT"), *sync = getenv("CC_CUDA_SYNC");
  snprintf(buf, sizeof buf, "%s%s%s%s", emulated() ? "emulated " : "", tr && !strcmp(tr, "tcp") ? "tcp " : "",
           sync && !strcmp(sync, "kernel") ? "kernel-waits " : "", w_prefixes[wtype]);
  return buf;
}

enum { BK_REG, BK_PLAIN, BK_COUNT };                 /* buffer kinds */
static const char *const bk_names[BK_COUNT] = {"registered", "cudaMalloc"};

enum { T_REG = BK_REG, T_PLAIN = BK_PLAIN, T_MISC, T_COUNT }; /* result tables */

enum {
  K_BROADCAST, K_REDUCE, K_ALL_REDUCE, K_GATHER, K_ALL_GATHER, K_SCATTER, K_REDUCE_SCATTER,
  K_ALL_TO_ALL, K_GATHER_V, K_ALL_GATHER_V, K_SCATTER_V, K_ALL_TO_ALL_V, K_COUNT,
  K_P2P = 100 /* labels of the p2p groups */
};
static const char *const k_names[K_COUNT] = {
  "broadcast", "reduce", "all_reduce", "gather", "all_gather", "scatter", "reduce_scatter",
  "all_to_all", "gather_v", "all_gather_v", "scatter_v", "all_to_all_v"};

static int is_red(int k) { return k == K_REDUCE || k == K_ALL_REDUCE || k == K_REDUCE_SCATTER; }
static int has_root(int k) {
  return k == K_BROADCAST || k == K_REDUCE || k == K_GATHER || k == K_SCATTER ||
         k == K_GATHER_V || k == K_SCATTER_V;
}
static int has_inplace(int k) { return k != K_BROADCAST && k < K_GATHER_V; }
static int is_v(int k) { return k >= K_GATHER_V && k <= K_ALL_TO_ALL_V; }

enum {
  M_MODE, M_BARRIER, M_ORDER, M_PREMUL, M_USER, M_P2P_RING, M_P2P_SELF, M_P2P_ORDER, M_P2P_ALL,
  M_REUSE, M_INVALID, M_MISMATCH, M_DESTROY, M_COUNT
};
static const char *const m_names[M_COUNT] = {
  "mode", "barrier", "stream_order", "premul_sum", "user_op", "p2p_ring", "p2p_self",
  "p2p_in_order", "p2p_all_pairs", "buffer_reuse", "invalid_args", "mismatch", "destroy"};

/* Coverage of one collective group, gathered by rank 0 as it runs. */
typedef struct gstat {
  uint32_t dtypes;
  uint8_t ops[CC_DTYPE_COUNT]; /* bit op: the pair ran */
  int ncounts;
  size_t counts[32];
  int inplace;                 /* bit 0: out of place ran, bit 1: in place */
  long misaligned, legacy, nullroot, cases;
} gstat;

typedef struct wshared {
  tr_table tab[T_COUNT];
  gstat st[BK_COUNT][K_COUNT];
  char cover[M_COUNT][300];    /* misc groups: what ran, written by rank 0 */
  int64_t barrier_count[64];
  int64_t barrier_enq_ns[64];  /* when the late rank queued its spin */
  int64_t met;                 /* ranks that reached the mismatch group */
  int64_t order_arrive[6][64]; /* stream_order: when each rank made round k's call */
} wshared;

typedef struct warg {
  wshared *sh;
  int wtype, n, quick, ndev, expect_ipc;
  int emu_devices, emu_flush;          /* emulation: a GPU per rank (CC_EMU_DEVICES), CC_EMU_FLUSH */
} warg;

static int plan_coll(int wtype, int k) {
  if (wtype == W_TWOSHOT) return k == K_ALL_REDUCE || k == K_REDUCE_SCATTER || k == K_BROADCAST || k == K_REDUCE;
  return 1;
}
static int plan_misc(int wtype, int m) {
  if (wtype == W_TWOSHOT)
    return m == M_MODE || m == M_ORDER || m == M_PREMUL || m == M_USER || m == M_DESTROY;
  return 1;
}

/* ------------------------------------------------------------ a rank */

typedef struct tcase tcase;
typedef void (*ref_fn)(void *out, size_t first, size_t n, const tcase *cs, int nranks);

struct tcase {
  int k;
  cc_dtype t;
  cc_op op;
  size_t count;
  int inplace, root, null_nonroot, off; /* off: data one element past aligned */
  int bk;                               /* buffer kind */
  int pattern, layout;                  /* _v */
  int gkind;                            /* tr_gen kind of the inputs */
  uint64_t seed;
  ref_fn ref;                           /* NULL: the builtin op's tr_reference */
  const void *env;                      /* for ref */
  const char *opname;                   /* NULL: tr_op_name(op) */
};

typedef struct ctx {
  tr_ctx t;
  warg *w;
  cc_cuda_comm *g;
  cudaStream_t s;
  int dev, dead, verbose;
  size_t cap;                              /* bytes of each device arena */
  unsigned char *A[BK_COUNT], *B[BK_COUNT]; /* device arenas */
  unsigned char *hA, *hB;                   /* host images, cap bytes each */
  long variant;                             /* case counter, the same on every rank */
  long ncalls;                              /* calls made here (stream choice) */
} ctx;

static int group_begin(ctx *x, int tab, int g) {
  x->t.tab = &x->w->sh->tab[tab];
  return tr_group_begin(&x->t, g);
}
static void group_end(ctx *x) {
  tr_group_end(&x->t);
  x->t.cur = NULL;
}

static void misc_cover(ctx *x, int m, const char *fmt, ...) {
  va_list ap;
  if (x->t.rank != 0) return;
  va_start(ap, fmt);
  vsnprintf(x->w->sh->cover[m], sizeof x->w->sh->cover[m], fmt, ap);
  va_end(ap);
}

/* 1 when rc is CC_OK, else records the failure with the GPU communicator's detail. */
static int cc_ok(ctx *x, cc_result rc, const char *call) {
  if (rc == CC_OK) return 1;
  tr_fail(&x->t, "%s returned %s (%s)", call, cc_strerror(rc),
          x->g ? cc_cuda_comm_last_error(x->g) : cc_comm_last_error(x->t.c));
  return 0;
}

/* A CUDA runtime call of the test itself failed: the context may be gone, this
 * rank stops. */
static int cu_ok(ctx *x, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 1;
  tr_fail(&x->t, "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
  x->dead = 1;
  return 0;
}

static int64_t now_ns(void) { return (int64_t)(tu_now() * 1e9); }

/* ------------------------------------------------------------ GPU delay */

static __global__ void tc_spin_kernel(unsigned long long ns) {
#ifdef __CUDA_ARCH__
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
#else
  (void)ns;
#endif
}
/* its CPU twin, for the emulation (tests/cuda/cuda_emu.h) */
static void tc_spin_twin(void **args, dim3 grid, dim3 block) {
  (void)grid, (void)block;
  tu_sleep_us((long)(*(const unsigned long long *)args[0] / 1000u));
}

/* Hold stream s back for at least ns nanoseconds, counted from now. */
static cudaError_t stream_spin(cudaStream_t s, unsigned long long ns) {
  void *args[1] = {&ns};
  return cudaLaunchKernel((const void *)tc_spin_kernel, dim3(1), dim3(1), args, 0, s);
}

static __global__ void tc_fault_kernel(int *p);
static void tc_fault_twin(void **args, dim3 grid, dim3 block);

/* The emulation's hook (tests/cuda/cuda_emu.h): the CPU twins of cc_cuda.cuh's
 * kernels and of this file's. */
extern "C" int cc_emu_kernel_twin(const void *stub, cc_emu_twin *out) {
  size_t bytes = 0;
  cc_cuda__twin_fn f = cc_cuda__twin(stub, &bytes);
  if (!f && stub == (const void *)tc_spin_kernel) {
    f = tc_spin_twin;
    bytes = sizeof(unsigned long long);
  }
  if (!f && stub == (const void *)tc_fault_kernel) {
    f = tc_fault_twin;
    bytes = sizeof(int *);
  }
  if (!f) return 0;
  out->run = f;
  out->nargs = 1;
  out->size[0] = bytes;
  return 1;
}

/* ------------------------------------------------------------ device regions */

/* A device region: GUARD sentinel bytes, the data at base + doff, GUARD more. */
typedef struct region {
  unsigned char *base;
  size_t doff, bytes;
  unsigned char *img; /* host image of the whole span after fetch */
  int used;
} region;

static size_t rspan(const region *r) { return r->doff + r->bytes + GUARD; }
static unsigned char *rdata(const region *r) { return r->used ? r->base + r->doff : NULL; }

static void rset(ctx *x, region *r, unsigned char *arena, const tcase *cs, size_t bytes, int used) {
  (void)x;
  r->base = arena;
  r->doff = GUARD + (cs->off ? tr_size(cs->t) : 0);
  r->bytes = bytes;
  r->img = NULL;
  r->used = used;
}

/* Fill the region's span with the sentinel and upload init (ibytes) at data
 * offset `at`, on stream st. */
static int stage(ctx *x, cudaStream_t st, const region *r, const void *init, size_t at,
                 size_t ibytes) {
  if (!r->used) return 1;
  if (rspan(r) > x->cap) {
    tr_fail(&x->t, "test bug: a region of %zu bytes does not fit the %zu-byte arena", rspan(r),
            x->cap);
    return 0;
  }
  if (!cu_ok(x, cudaMemsetAsync(r->base, SENT, rspan(r), st), "cudaMemsetAsync")) return 0;
  if (init && ibytes &&
      !cu_ok(x, cudaMemcpyAsync(r->base + r->doff + at, init, ibytes, cudaMemcpyHostToDevice, st),
             "cudaMemcpyAsync(host to device)"))
    return 0;
  return 1;
}

static int fetch(ctx *x, cudaStream_t st, region *r, unsigned char *host) {
  if (!r->used) return 1;
  r->img = host;
  return cu_ok(x, cudaMemcpyAsync(host, r->base, rspan(r), cudaMemcpyDeviceToHost, st),
               "cudaMemcpyAsync(device to host)");
}

static int sync_stream(ctx *x, cudaStream_t st) {
  return cu_ok(x, cudaStreamSynchronize(st), "cudaStreamSynchronize");
}

/* After a collective was queued: it must have returned CC_OK (call names it),
 * then regions A (may be NULL) and B come back to host images ha and hb. */
static int settle(ctx *x, cudaStream_t st, cc_result rc, const char *call, region *A,
                  unsigned char *ha, region *B, unsigned char *hb) {
  if (!cc_ok(x, rc, call)) {
    sync_stream(x, st);
    return 0;
  }
  return (!A || fetch(x, st, A, ha)) && fetch(x, st, B, hb) && sync_stream(x, st);
}

static void chk_guards(ctx *x, const char *what, const region *r) {
  size_t i, span;
  if (!r->used || !r->img) return;
  span = rspan(r);
  for (i = 0; i < r->doff; i++)
    if (r->img[i] != SENT) {
      tr_fail(&x->t, "%s: written %zu bytes before its start", what, r->doff - i);
      return;
    }
  for (i = r->doff + r->bytes; i < span; i++)
    if (r->img[i] != SENT) {
      tr_fail(&x->t, "%s: written %zu bytes after its end", what, i - r->doff - r->bytes + 1);
      return;
    }
}

/* n elements at data offset at_bytes must equal want, bitwise. */
static void chk_data(ctx *x, const char *what, const region *r, size_t at_bytes, const void *want,
                     size_t n, cc_dtype t) {
  char m[300];
  if (!r->used || !r->img || !n) return;
  if (tr_compare(r->img + r->doff + at_bytes, want, n, t, m, sizeof m))
    tr_fail(&x->t, "%s: %s", what, m);
}

static void chk_untouched(ctx *x, const char *what, const region *r) {
  size_t i, span;
  if (!r->used || !r->img) return;
  span = rspan(r);
  i = tr_first_not_sentinel(r->img, span);
  if (i < span)
    tr_fail(&x->t, "%s: written at byte %lld of the data although this rank does not use it", what,
            (long long)i - (long long)r->doff);
}

static unsigned char *hbuf(size_t bytes) { return (unsigned char *)malloc(bytes ? bytes : 1); }

/* ------------------------------------------------------------ references */

static int gen_kind(cc_op op) { return op == CC_PROD ? TR_GEN_NEAR_ONE : TR_GEN_ANY; }

static void ref_builtin(void *out, size_t first, size_t n, const tcase *cs, int nranks) {
  tr_reference(out, cs->t, cs->op, cs->gkind, cs->seed, nranks, first, n);
}

static void reference(void *out, size_t first, size_t n, const tcase *cs, int nranks) {
  if (!n) return;
  (cs->ref ? cs->ref : ref_builtin)(out, first, n, cs, nranks);
}

/* premul_sum: the scalar of rank r, exactly representable in t (as test_ops) */
static void premul_scalar(cc_dtype t, int r, void *out) {
  double re = t == CC_INT32 ? (double)(r + 1) : 0.75 * (double)(r + 1);
  double im = 0.5 - 0.25 * (double)r;
  switch (t) {
  case CC_INT32: { int32_t v = (int32_t)re; memcpy(out, &v, 4); break; }
  case CC_COMPLEX64: { float z[2]; z[0] = (float)re; z[1] = (float)im; memcpy(out, z, 8); break; }
  default: tr_store_real(out, t, re); break;
  }
}

/* sum over ranks in rank order of (scalar_r * x_r), half types in float32 rounded once */
static void ref_premul(void *outp, size_t first, size_t n, const tcase *cs, int nranks) {
  unsigned char *out = (unsigned char *)outp, scal[MAXR][16];
  size_t i, es = tr_size(cs->t);
  int r;
  for (r = 0; r < nranks; r++) premul_scalar(cs->t, r, scal[r]);
  for (i = 0; i < n; i++)
    tr_premul_reference(out + i * es, cs->t, cs->gkind, cs->seed, nranks, first + i, (const unsigned char (*)[16])scal);
}

/* user ops (host functions): associative and commutative, so that the result
 * does not depend on how the library groups the operands */
#define USER_MAGIC 0x5ca1ab1eu
typedef struct user_state {
  unsigned magic;
  cc_dtype expect;
  long calls, bad_user, bad_dtype;
} user_state;
static user_state g_user[3];
enum { U_MAXABS, U_SATADD, U_SUM64 };
static const char *const u_names[3] = {"maxabs", "satadd", "wrapsum"};

static void user_record(void *user, int which, cc_dtype t, int ok_dtype) {
  user_state *u = (user_state *)user;
  if (u != &g_user[which] || u->magic != USER_MAGIC) {
    __atomic_add_fetch(&g_user[which].bad_user, 1, __ATOMIC_RELAXED);
    return;
  }
  __atomic_add_fetch(&u->calls, 1, __ATOMIC_RELAXED);
  (void)t;
  if (!ok_dtype) __atomic_add_fetch(&u->bad_dtype, 1, __ATOMIC_RELAXED);
}

/* larger |x| wins; on equal magnitudes the larger bit pattern (a total order) */
static int maxabs_b_wins_f(float a, float b) {
  float fa = fabsf(a), fb = fabsf(b);
  return fb > fa || (fb == fa && tu_f32_bits(b) > tu_f32_bits(a));
}
static int maxabs_b_wins_d(double a, double b) {
  double fa = fabs(a), fb = fabs(b);
  uint64_t ua, ub;
  memcpy(&ua, &a, 8);
  memcpy(&ub, &b, 8);
  return fb > fa || (fb == fa && ub > ua);
}

static void op_maxabs(void *inout, const void *in, size_t count, cc_dtype t, void *user) {
  size_t i;
  user_record(user, U_MAXABS, t, t == CC_FLOAT32 || t == CC_FLOAT64);
  if (t == CC_FLOAT32) {
    float *a = (float *)inout;
    const float *b = (const float *)in;
    for (i = 0; i < count; i++)
      if (maxabs_b_wins_f(a[i], b[i])) a[i] = b[i];
  } else if (t == CC_FLOAT64) {
    double *a = (double *)inout;
    const double *b = (const double *)in;
    for (i = 0; i < count; i++)
      if (maxabs_b_wins_d(a[i], b[i])) a[i] = b[i];
  }
}
static void op_satadd(void *inout, const void *in, size_t count, cc_dtype t, void *user) {
  uint8_t *a = (uint8_t *)inout;
  const uint8_t *b = (const uint8_t *)in;
  size_t i;
  user_record(user, U_SATADD, t, t == CC_UINT8);
  for (i = 0; i < count; i++) a[i] = (uint8_t)(a[i] + b[i] > 255 ? 255 : a[i] + b[i]);
}
static void op_sum64(void *inout, const void *in, size_t count, cc_dtype t, void *user) {
  uint64_t *a = (uint64_t *)inout;
  const uint64_t *b = (const uint64_t *)in;
  size_t i;
  user_record(user, U_SUM64, t, t == CC_INT64);
  for (i = 0; i < count; i++) a[i] += b[i];
}

typedef struct user_env { int which; } user_env;

static void ref_user(void *outp, size_t first, size_t n, const tcase *cs, int nranks) {
  const user_env *e = (const user_env *)cs->env;
  unsigned char *out = (unsigned char *)outp, xv[16], acc[16];
  size_t i, es = tr_size(cs->t);
  int r;
  for (i = 0; i < n; i++) {
    for (r = 0; r < nranks; r++) {
      tr_gen_at(xv, cs->t, cs->gkind, cs->seed, r, first + i);
      if (r == 0) {
        memcpy(acc, xv, es);
        continue;
      }
      switch (e->which) {
      case U_MAXABS:
        if (cs->t == CC_FLOAT32) {
          float a, b;
          memcpy(&a, acc, 4);
          memcpy(&b, xv, 4);
          if (maxabs_b_wins_f(a, b)) memcpy(acc, xv, 4);
        } else {
          double a, b;
          memcpy(&a, acc, 8);
          memcpy(&b, xv, 8);
          if (maxabs_b_wins_d(a, b)) memcpy(acc, xv, 8);
        }
        break;
      case U_SATADD: acc[0] = (uint8_t)(acc[0] + xv[0] > 255 ? 255 : acc[0] + xv[0]); break;
      default: {
        uint64_t a, b;
        memcpy(&a, acc, 8);
        memcpy(&b, xv, 8);
        a += b;
        memcpy(acc, &a, 8);
        break;
      }
      }
    }
    memcpy(out + i * es, acc, es);
  }
}

/* ------------------------------------------------------------ _v layouts */

enum { P_SMALL, P_IRREGULAR, P_LARGE, P_ONE, P_ZERO, P_COUNT };
static const char *const p_names[P_COUNT] = {"small", "irregular", "large", "one-sender",
                                             "all-zero"};

/* elements rank r contributes (gather_v, all_gather_v, scatter_v); rank 1 none */
static size_t count_of(const tcase *cs, int n, int r) {
  uint64_t h = tu_hash3(cs->seed, 11, (uint64_t)r);
  switch (cs->pattern) {
  case P_SMALL: return r == 1 ? 0 : (size_t)(h % 8) + 1;
  case P_IRREGULAR: return r == 1 ? 0 : (size_t)(h % 3000) + 1;
  case P_LARGE:
    if (r == n - 1) return tr_big_block(cs->t);
    return r == 1 ? 0 : (size_t)(h % 3000) + 1;
  case P_ONE: return r == n - 1 ? 5 : 0;
  default: return 0;
  }
}

/* elements rank r sends to rank j (all_to_all_v, p2p all pairs) */
static size_t pair_count(const tcase *cs, int n, int r, int j) {
  uint64_t h = tu_hash4(cs->seed, 12, (uint64_t)r, (uint64_t)j);
  switch (cs->pattern) {
  case P_SMALL: return (r + 2 * j) % 3 == 0 ? 0 : (size_t)(h % 8) + 1;
  case P_IRREGULAR: return (r + 2 * j) % 3 == 0 ? 0 : (size_t)(h % 2000) + 1;
  case P_LARGE:
    if (r == 0 && j == n - 1) return tr_big_block(cs->t);
    return (r + 2 * j) % 3 == 0 ? 0 : (size_t)(h % 2000) + 1;
  case P_ONE: return r == n - 1 && j == 0 ? 7 : 0;
  default: return 0;
  }
}

/* ------------------------------------------------------------ the collectives */

/* rank 0 keeps what ran, for the PASS line */
static void note_case(ctx *x, const tcase *cs, cudaStream_t st) {
  gstat *g;
  int i;
  if (x->t.rank != 0 || cs->k < 0 || cs->k >= K_COUNT) return;
  g = &x->w->sh->st[cs->bk][cs->k];
  g->cases++;
  g->dtypes |= 1u << cs->t;
  if (cs->op >= 0 && cs->op < 8) g->ops[cs->t] |= (uint8_t)(1u << cs->op);
  g->inplace |= cs->inplace ? 2 : 1;
  if (cs->off) g->misaligned++;
  if (!st) g->legacy++;
  if (cs->null_nonroot) g->nullroot++;
  for (i = 0; i < g->ncounts; i++)
    if (g->counts[i] == cs->count) return;
  if (g->ncounts < 32) g->counts[g->ncounts++] = cs->count;
}

/* The stream of the next call: the created one, or in about 1 call of 4 the
 * legacy default stream. */
static cudaStream_t pick_stream(ctx *x) {
  x->ncalls++;
  return ((x->ncalls + x->t.rank) & 3) == 3 ? (cudaStream_t)0 : x->s;
}

static void label_case(ctx *x, const tcase *cs, cudaStream_t st) {
  int red = cs->k == K_REDUCE || cs->k == K_ALL_REDUCE || cs->k == K_REDUCE_SCATTER;
  int v = cs->k >= K_GATHER_V && cs->k <= K_ALL_TO_ALL_V;
  char extra[120], roots[24];
  extra[0] = roots[0] = 0;
  if (has_root(cs->k)) snprintf(roots, sizeof roots, " root=%d", cs->root);
  if (v)
    snprintf(extra, sizeof extra, " %s/%s", p_names[cs->pattern], tr_layout_name(cs->layout));
  else
    snprintf(extra, sizeof extra, " count=%zu %s", cs->count,
             cs->inplace ? "in-place" : "out-of-place");
  tr_label(&x->t, "%s %s%s%s%s %s%s%s%s%s", k_names[cs->k], tr_dtype_name(cs->t),
           red ? "/" : "", red ? (cs->opname ? cs->opname : tr_op_name(cs->op)) : "", extra,
           bk_names[cs->bk], cs->off ? " misaligned(+1 element)" : "",
           st ? "" : " stream=legacy-default",
           cs->null_nonroot && has_root(cs->k) ? " NULL-root-only-args-elsewhere" : "", roots);
  note_case(x, cs, st);
}

static void run_broadcast(ctx *x, const tcase *cs, cudaStream_t st) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es;
  unsigned char *in = hbuf(bytes);
  region B;
  cc_result rc;
  rset(x, &B, x->B[cs->bk], cs, bytes, cnt > 0);
  tr_fill(in, cs->t, TR_GEN_ANY, cs->seed, cs->root, 0, cnt);
  if (!stage(x, st, &B, x->t.rank == cs->root ? in : NULL, 0, bytes)) goto out;
  rc = cc_cuda_broadcast(x->g, rdata(&B), cnt, cs->t, cs->root, st);
  if (!settle(x, st, rc, "cc_cuda_broadcast", NULL, NULL, &B, x->hB)) goto out;
  chk_data(x, "buf", &B, 0, in, cnt, cs->t);
  chk_guards(x, "buf", &B);
out:
  free(in);
}

/* reduce (all == 0) and all_reduce (all == 1) */
static void run_reduce(ctx *x, const tcase *cs, int all, cudaStream_t st) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es;
  int is_root = all || x->t.rank == cs->root;
  unsigned char *in = hbuf(bytes), *want = hbuf(bytes);
  region S, R;
  cc_result rc;
  tr_fill(in, cs->t, cs->gkind, cs->seed, x->t.rank, 0, cnt);
  if (cs->inplace) {
    rset(x, &R, x->B[cs->bk], cs, bytes, cnt > 0);
    S = R;
    S.used = 0; /* the same memory: staged, fetched and checked as R */
    if (!stage(x, st, &R, in, 0, bytes)) goto out;
  } else {
    rset(x, &S, x->A[cs->bk], cs, bytes, cnt > 0);
    rset(x, &R, x->B[cs->bk], cs, bytes, cnt > 0 && (is_root || !cs->null_nonroot));
    if (!stage(x, st, &S, in, 0, bytes) || !stage(x, st, &R, NULL, 0, 0)) goto out;
  }
  if (is_root) reference(want, 0, cnt, cs, x->t.n);
  if (all)
    rc = cc_cuda_all_reduce(x->g, cs->inplace ? rdata(&R) : rdata(&S), rdata(&R), cnt, cs->t,
                            cs->op, st);
  else
    rc = cc_cuda_reduce(x->g, cs->inplace ? rdata(&R) : rdata(&S), rdata(&R), cnt, cs->t, cs->op,
                        cs->root, st);
  if (!settle(x, st, rc, all ? "cc_cuda_all_reduce" : "cc_cuda_reduce", &S, x->hA, &R, x->hB))
    goto out;
  if (is_root)
    chk_data(x, "recvbuf", &R, 0, want, cnt, cs->t);
  else if (cs->inplace)
    chk_data(x, "buffer of a non-root rank (in place; only read)", &R, 0, in, cnt, cs->t);
  else
    chk_untouched(x, "recvbuf of a non-root rank", &R);
  chk_data(x, "sendbuf (only read)", &S, 0, in, cnt, cs->t);
  chk_guards(x, "sendbuf", &S);
  chk_guards(x, cs->inplace ? "buffer" : "recvbuf", &R);
out:
  free(in);
  free(want);
}

/* gather (all == 0) and all_gather (all == 1) */
static void run_gather(ctx *x, const tcase *cs, int all, cudaStream_t st) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es, tot = bytes * (size_t)x->t.n;
  int is_root = all || x->t.rank == cs->root, r, inplace = cs->inplace && is_root;
  unsigned char *in = hbuf(bytes), *want = hbuf(tot), *send;
  region S, R;
  cc_result rc;
  tr_fill(in, cs->t, TR_GEN_ANY, cs->seed, x->t.rank, 0, cnt);
  for (r = 0; r < x->t.n; r++)
    tr_fill(want + (size_t)r * bytes, cs->t, TR_GEN_ANY, cs->seed, r, 0, cnt);
  rset(x, &R, x->B[cs->bk], cs, tot, cnt > 0 && (is_root || !cs->null_nonroot));
  if (inplace) {
    rset(x, &S, x->A[cs->bk], cs, bytes, 0);
    if (!stage(x, st, &R, in, (size_t)x->t.rank * bytes, bytes)) goto out;
    send = rdata(&R) ? rdata(&R) + (size_t)x->t.rank * bytes : NULL;
  } else {
    rset(x, &S, x->A[cs->bk], cs, bytes, cnt > 0);
    if (!stage(x, st, &S, in, 0, bytes) || !stage(x, st, &R, NULL, 0, 0)) goto out;
    send = rdata(&S);
  }
  if (all)
    rc = cc_cuda_all_gather(x->g, send, rdata(&R), cnt, cs->t, st);
  else
    rc = cc_cuda_gather(x->g, send, rdata(&R), cnt, cs->t, cs->root, st);
  if (!settle(x, st, rc, all ? "cc_cuda_all_gather" : "cc_cuda_gather", &S, x->hA, &R, x->hB))
    goto out;
  if (is_root)
    chk_data(x, "recvbuf", &R, 0, want, cnt * (size_t)x->t.n, cs->t);
  else
    chk_untouched(x, "recvbuf of a non-root rank", &R);
  chk_data(x, "sendbuf (only read)", &S, 0, in, cnt, cs->t);
  chk_guards(x, "sendbuf", &S);
  chk_guards(x, "recvbuf", &R);
out:
  free(in);
  free(want);
}

static void run_scatter(ctx *x, const tcase *cs, cudaStream_t st) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es, tot = bytes * (size_t)x->t.n;
  int is_root = x->t.rank == cs->root, inplace = cs->inplace && is_root;
  unsigned char *in = hbuf(tot), *want = hbuf(bytes), *recv;
  region S, R;
  cc_result rc;
  tr_fill(in, cs->t, TR_GEN_ANY, cs->seed, cs->root, 0, cnt * (size_t)x->t.n);
  tr_fill(want, cs->t, TR_GEN_ANY, cs->seed, cs->root, (size_t)x->t.rank * cnt, cnt);
  rset(x, &S, x->B[cs->bk], cs, tot, cnt > 0 && (is_root || !cs->null_nonroot));
  rset(x, &R, x->A[cs->bk], cs, bytes, cnt > 0 && !inplace);
  if (!stage(x, st, &S, is_root ? in : NULL, 0, tot) || !stage(x, st, &R, NULL, 0, 0)) goto out;
  recv = inplace ? (rdata(&S) ? rdata(&S) + (size_t)x->t.rank * bytes : NULL) : rdata(&R);
  rc = cc_cuda_scatter(x->g, rdata(&S), recv, cnt, cs->t, cs->root, st);
  if (!settle(x, st, rc, "cc_cuda_scatter", &S, x->hB, &R, x->hA)) goto out;
  if (inplace)
    chk_data(x, "recvbuf (in place, in sendbuf)", &S, (size_t)x->t.rank * bytes, want, cnt, cs->t);
  else
    chk_data(x, "recvbuf", &R, 0, want, cnt, cs->t);
  if (is_root)
    chk_data(x, "sendbuf (only read)", &S, 0, in, cnt * (size_t)x->t.n, cs->t);
  else
    chk_untouched(x, "sendbuf of a non-root rank", &S);
  chk_guards(x, "sendbuf", &S);
  chk_guards(x, "recvbuf", &R);
out:
  free(in);
  free(want);
}

static void run_reduce_scatter(ctx *x, const tcase *cs, cudaStream_t st) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es, tot = bytes * (size_t)x->t.n;
  unsigned char *in = hbuf(tot), *want = hbuf(bytes), *recv;
  region S, R;
  cc_result rc;
  tr_fill(in, cs->t, cs->gkind, cs->seed, x->t.rank, 0, cnt * (size_t)x->t.n);
  reference(want, (size_t)x->t.rank * cnt, cnt, cs, x->t.n);
  if (cs->inplace) {
    rset(x, &S, x->B[cs->bk], cs, tot, cnt > 0);
    rset(x, &R, x->A[cs->bk], cs, bytes, 0);
    if (!stage(x, st, &S, in, 0, tot)) goto out;
    recv = rdata(&S) ? rdata(&S) + (size_t)x->t.rank * bytes : NULL;
  } else {
    rset(x, &S, x->A[cs->bk], cs, tot, cnt > 0);
    rset(x, &R, x->B[cs->bk], cs, bytes, cnt > 0);
    if (!stage(x, st, &S, in, 0, tot) || !stage(x, st, &R, NULL, 0, 0)) goto out;
    recv = rdata(&R);
  }
  rc = cc_cuda_reduce_scatter(x->g, rdata(&S), recv, cnt, cs->t, cs->op, st);
  if (!settle(x, st, rc, "cc_cuda_reduce_scatter", &S, x->hA, &R, x->hB)) goto out;
  if (cs->inplace) {
    chk_data(x, "recvbuf (in place, in sendbuf)", &S, (size_t)x->t.rank * bytes, want, cnt, cs->t);
  } else {
    chk_data(x, "recvbuf", &R, 0, want, cnt, cs->t);
    chk_data(x, "sendbuf (only read)", &S, 0, in, cnt * (size_t)x->t.n, cs->t);
  }
  chk_guards(x, "sendbuf", &S);
  chk_guards(x, "recvbuf", &R);
out:
  free(in);
  free(want);
}

static void run_all_to_all(ctx *x, const tcase *cs, cudaStream_t st) {
  size_t es = tr_size(cs->t), cnt = cs->count, bytes = cnt * es, tot = bytes * (size_t)x->t.n;
  unsigned char *in = hbuf(tot), *want = hbuf(tot);
  region S, R;
  cc_result rc;
  int r;
  tr_fill(in, cs->t, TR_GEN_ANY, cs->seed, x->t.rank, 0, cnt * (size_t)x->t.n);
  for (r = 0; r < x->t.n; r++) /* block r: block `rank` of rank r's input */
    tr_fill(want + (size_t)r * bytes, cs->t, TR_GEN_ANY, cs->seed, r, (size_t)x->t.rank * cnt, cnt);
  rset(x, &R, x->B[cs->bk], cs, tot, cnt > 0);
  if (cs->inplace) {
    rset(x, &S, x->A[cs->bk], cs, tot, 0);
    if (!stage(x, st, &R, in, 0, tot)) goto out;
  } else {
    rset(x, &S, x->A[cs->bk], cs, tot, cnt > 0);
    if (!stage(x, st, &S, in, 0, tot) || !stage(x, st, &R, NULL, 0, 0)) goto out;
  }
  rc = cc_cuda_all_to_all(x->g, cs->inplace ? rdata(&R) : rdata(&S), rdata(&R), cnt, cs->t, st);
  if (!settle(x, st, rc, "cc_cuda_all_to_all", &S, x->hA, &R, x->hB)) goto out;
  chk_data(x, "recvbuf", &R, 0, want, cnt * (size_t)x->t.n, cs->t);
  chk_data(x, "sendbuf (only read)", &S, 0, in, cnt * (size_t)x->t.n, cs->t);
  chk_guards(x, "sendbuf", &S);
  chk_guards(x, "recvbuf", &R);
out:
  free(in);
  free(want);
}

/* gather_v (all == 0) and all_gather_v (all == 1) */
static void run_gather_v(ctx *x, const tcase *cs, int all, cudaStream_t st) {
  int n = x->t.n, me = x->t.rank, r, is_root = all || me == cs->root;
  int pass_args = is_root || !cs->null_nonroot;
  size_t es = tr_size(cs->t), counts[MAXR] = {0}, displs[MAXR] = {0}, L, mine;
  unsigned char *in, *want;
  region S, R;
  cc_result rc;
  for (r = 0; r < n; r++) counts[r] = count_of(cs, n, r);
  L = tr_layout(cs->layout, cs->seed, n, counts, displs, 1);
  mine = counts[me];
  in = hbuf(mine * es);
  want = hbuf(L * es);
  tr_fill(in, cs->t, TR_GEN_ANY, cs->seed, me, 0, mine);
  memset(want, SENT, L * es);
  for (r = 0; r < n; r++)
    tr_fill(want + displs[r] * es, cs->t, TR_GEN_ANY, cs->seed, r, 0, counts[r]);
  rset(x, &S, x->A[cs->bk], cs, mine * es, mine > 0);
  rset(x, &R, x->B[cs->bk], cs, L * es, L > 0 && pass_args);
  if (!stage(x, st, &S, in, 0, mine * es) || !stage(x, st, &R, NULL, 0, 0)) goto out;
  if (all)
    rc = cc_cuda_all_gather_v(x->g, rdata(&S), mine, rdata(&R), counts, displs, cs->t, st);
  else
    rc = cc_cuda_gather_v(x->g, rdata(&S), mine, rdata(&R), pass_args ? counts : NULL,
                          pass_args ? displs : NULL, cs->t, cs->root, st);
  if (!settle(x, st, rc, all ? "cc_cuda_all_gather_v" : "cc_cuda_gather_v", &S, x->hA, &R, x->hB))
    goto out;
  if (is_root)
    chk_data(x, "recvbuf (0xa5.. marks gaps that must stay untouched)", &R, 0, want, L, cs->t);
  else
    chk_untouched(x, "recvbuf of a non-root rank", &R);
  chk_data(x, "sendbuf (only read)", &S, 0, in, mine, cs->t);
  chk_guards(x, "sendbuf", &S);
  chk_guards(x, "recvbuf", &R);
out:
  free(in);
  free(want);
}

static void run_scatter_v(ctx *x, const tcase *cs, cudaStream_t st) {
  int n = x->t.n, me = x->t.rank, r, is_root = me == cs->root;
  int pass_args = is_root || !cs->null_nonroot;
  size_t es = tr_size(cs->t), counts[MAXR] = {0}, displs[MAXR] = {0}, L, mine;
  unsigned char *in, *want;
  region S, R;
  cc_result rc;
  for (r = 0; r < n; r++) counts[r] = count_of(cs, n, r);
  L = tr_layout(cs->layout, cs->seed, n, counts, displs, 3);
  mine = counts[me];
  in = hbuf(L * es);
  want = hbuf(mine * es);
  tr_fill(in, cs->t, TR_GEN_ANY, cs->seed, cs->root, 0, L);
  tr_fill(want, cs->t, TR_GEN_ANY, cs->seed, cs->root, displs[me], mine);
  rset(x, &S, x->B[cs->bk], cs, L * es, L > 0 && pass_args);
  rset(x, &R, x->A[cs->bk], cs, mine * es, mine > 0);
  if (!stage(x, st, &S, is_root ? in : NULL, 0, L * es) || !stage(x, st, &R, NULL, 0, 0)) goto out;
  rc = cc_cuda_scatter_v(x->g, rdata(&S), pass_args ? counts : NULL, pass_args ? displs : NULL,
                         rdata(&R), mine, cs->t, cs->root, st);
  if (!settle(x, st, rc, "cc_cuda_scatter_v", &S, x->hB, &R, x->hA)) goto out;
  chk_data(x, "recvbuf", &R, 0, want, mine, cs->t);
  if (is_root)
    chk_data(x, "sendbuf (only read)", &S, 0, in, L, cs->t);
  else
    chk_untouched(x, "sendbuf of a non-root rank", &S);
  chk_guards(x, "sendbuf", &S);
  chk_guards(x, "recvbuf", &R);
out:
  free(in);
  free(want);
}

/* rank j's send layout for all_to_all_v: counts to every peer and displacements */
static size_t a2av_send_layout(const tcase *cs, int n, int j, size_t *counts, size_t *displs) {
  int k;
  for (k = 0; k < n; k++) counts[k] = pair_count(cs, n, j, k);
  return tr_layout(cs->layout, cs->seed, n, counts, displs, 100 + (uint64_t)j);
}
static size_t a2av_recv_layout(const tcase *cs, int n, int me, size_t *counts, size_t *displs) {
  int j;
  for (j = 0; j < n; j++) counts[j] = pair_count(cs, n, j, me);
  return tr_layout(cs->layout, cs->seed, n, counts, displs, 200 + (uint64_t)me);
}

/* The image rank me must receive in all_to_all_v: block j at rdispl[j] is the
 * slice of rank j's send buffer it sends to me. */
static void a2av_want(const tcase *cs, int n, int me, unsigned char *want, size_t Lr,
                      const size_t *rdispl) {
  size_t es = tr_size(cs->t), sc[MAXR] = {0}, sd[MAXR] = {0};
  int j;
  memset(want, SENT, Lr * es);
  for (j = 0; j < n; j++) {
    a2av_send_layout(cs, n, j, sc, sd);
    tr_fill(want + rdispl[j] * es, cs->t, TR_GEN_ANY, cs->seed, j, sd[me], sc[me]);
  }
}

static void run_all_to_all_v(ctx *x, const tcase *cs, cudaStream_t st) {
  int n = x->t.n, me = x->t.rank;
  size_t es = tr_size(cs->t), sc[MAXR] = {0}, sd[MAXR] = {0}, rc_[MAXR] = {0}, rd[MAXR] = {0}, Ls, Lr;
  unsigned char *in, *want;
  region S, R;
  cc_result rc;
  Ls = a2av_send_layout(cs, n, me, sc, sd);
  Lr = a2av_recv_layout(cs, n, me, rc_, rd);
  in = hbuf(Ls * es);
  want = hbuf(Lr * es);
  tr_fill(in, cs->t, TR_GEN_ANY, cs->seed, me, 0, Ls);
  a2av_want(cs, n, me, want, Lr, rd);
  rset(x, &S, x->A[cs->bk], cs, Ls * es, Ls > 0);
  rset(x, &R, x->B[cs->bk], cs, Lr * es, Lr > 0);
  if (!stage(x, st, &S, in, 0, Ls * es) || !stage(x, st, &R, NULL, 0, 0)) goto out;
  rc = cc_cuda_all_to_all_v(x->g, rdata(&S), sc, sd, rdata(&R), rc_, rd, cs->t, st);
  if (!settle(x, st, rc, "cc_cuda_all_to_all_v", &S, x->hA, &R, x->hB)) goto out;
  chk_data(x, "recvbuf (0xa5.. marks gaps that must stay untouched)", &R, 0, want, Lr, cs->t);
  chk_data(x, "sendbuf (only read)", &S, 0, in, Ls, cs->t);
  chk_guards(x, "sendbuf", &S);
  chk_guards(x, "recvbuf", &R);
out:
  free(in);
  free(want);
}

/* Run one case: picks the stream, the seed (unless set), labels it. */
static void run_case(ctx *x, tcase *cs) {
  cudaStream_t st;
  if (x->dead) return;
  if (!cs->seed)
    cs->seed = tu_hash4((uint64_t)cs->k * 131 + (uint64_t)cs->t, (uint64_t)cs->op * 7 + 1,
                        cs->count, (uint64_t)x->variant * 977 + (uint64_t)x->t.n * 13 +
                                       (uint64_t)x->w->wtype);
  if (!cs->gkind) cs->gkind = is_red(cs->k) && !cs->ref ? gen_kind(cs->op) : TR_GEN_ANY;
  x->variant++;
  st = pick_stream(x);
  label_case(x, cs, st);
  switch (cs->k) {
  case K_BROADCAST: run_broadcast(x, cs, st); break;
  case K_REDUCE: run_reduce(x, cs, 0, st); break;
  case K_ALL_REDUCE: run_reduce(x, cs, 1, st); break;
  case K_GATHER: run_gather(x, cs, 0, st); break;
  case K_ALL_GATHER: run_gather(x, cs, 1, st); break;
  case K_SCATTER: run_scatter(x, cs, st); break;
  case K_REDUCE_SCATTER: run_reduce_scatter(x, cs, st); break;
  case K_ALL_TO_ALL: run_all_to_all(x, cs, st); break;
  case K_GATHER_V: run_gather_v(x, cs, 0, st); break;
  case K_ALL_GATHER_V: run_gather_v(x, cs, 1, st); break;
  case K_SCATTER_V: run_scatter_v(x, cs, st); break;
  case K_ALL_TO_ALL_V: run_all_to_all_v(x, cs, st); break;
  default: break;
  }
}

/* ------------------------------------------------------------ the matrix */

typedef struct pair { cc_dtype t; cc_op op; } pair;
static const pair large_pairs[] = {
  {CC_FLOAT32, CC_SUM},  {CC_FLOAT16, CC_SUM},     {CC_BFLOAT16, CC_AVG},
  {CC_INT64, CC_SUM},    {CC_FLOAT64, CC_MAX},     {CC_COMPLEX128, CC_PROD},
  {CC_UINT8, CC_BXOR},   {CC_INT32, CC_MIN},       {CC_COMPLEX64, CC_AVG},
  {CC_BFLOAT16, CC_PROD}};
#define N_LARGE_PAIRS (sizeof large_pairs / sizeof large_pairs[0])
static const cc_dtype move_types[] = {CC_FLOAT32, CC_INT8, CC_COMPLEX128, CC_FLOAT16};

/* the full matrix: every pair and every large pair (registered buffers, ipc) */
static int full_here(const ctx *x, int bk) {
  return bk == BK_REG && !x->w->quick && x->w->wtype != W_STAGED;
}

/* an op other than SUM for dtype t (rotating with t and the buffer kind) */
static cc_op alt_op(cc_dtype t, int bk) {
  cc_op ops[8];
  int n = 0, op;
  for (op = 1; op < CC_OP_BUILTIN_COUNT; op++)
    if (tr_valid_pair(t, op)) ops[n++] = op;
  return ops[((int)t + bk * 3) % n];
}

static void base_case(tcase *cs, int k, int bk, cc_dtype t, cc_op op, size_t count) {
  memset(cs, 0, sizeof *cs);
  cs->k = k;
  cs->bk = bk;
  cs->t = t;
  cs->op = op;
  cs->count = count;
}

/* The _v collectives: the count patterns by dtype, layouts and roots rotating with the case counter. */
static void matrix_v(ctx *x, int bk, int k) {
  int n = x->t.n, full = full_here(x, bk), ti;
  tcase cs;
  for (ti = 0; ti < CC_DTYPE_COUNT && !x->dead; ti++) {
    int pats[4], np = 0, pi;
    if (full || ti % 2 == 0) pats[np++] = P_SMALL;
    pats[np++] = P_IRREGULAR;
    if (ti == CC_FLOAT32) pats[np++] = P_ONE;
    if (ti == CC_INT8) pats[np++] = P_ZERO;
    if ((full && (ti == CC_FLOAT32 || ti == CC_INT8)) || (!x->w->quick && ti == CC_FLOAT32))
      pats[np++] = P_LARGE;
    for (pi = 0; pi < np; pi++) {
      base_case(&cs, k, bk, (cc_dtype)ti, CC_SUM, 0);
      cs.pattern = pats[pi];
      cs.layout = (int)(x->variant % TR_L_COUNT);
      cs.root = has_root(k) && (x->variant & 1) ? n - 1 : 0;
      cs.null_nonroot = (int)((tu_mix64((uint64_t)x->variant) >> 7) & 1);
      cs.off = (int)((x->variant >> 1) & 1);
      run_case(x, &cs);
    }
  }
}

/* Counts 0, 1, 7 and 4099 for every dtype (and, for the reductions, the ops
 * the plan picks), in place and out. */
static void matrix_small(ctx *x, int bk, int k) {
  static const size_t small_counts[] = {0, 1, 7, 4099};
  int n = x->t.n, full = full_here(x, bk), ip, ci, ti, op, nops;
  int twoshot = x->w->wtype == W_TWOSHOT;
  tcase cs;
  for (ti = 0; ti < CC_DTYPE_COUNT && !x->dead; ti++) {
    nops = is_red(k) ? CC_OP_BUILTIN_COUNT : 1;
    for (op = 0; op < nops; op++) {
      if (is_red(k)) {
        if (!tr_valid_pair((cc_dtype)ti, op)) continue;
        if (!full && !twoshot && op != CC_SUM && op != alt_op((cc_dtype)ti, bk)) continue;
        if (twoshot && bk != BK_REG && op != CC_SUM) continue;
      }
      for (ci = 0; ci < 4; ci++) {
        size_t cnt = small_counts[ci];
        if (cnt == 4099 && ((is_red(k) && op != CC_SUM) || (!full && !twoshot && ti % 3))) continue;
        if (cnt == 1 && x->w->wtype == W_STAGED) continue; /* the staged pass is a subset */
        for (ip = 0; ip < (has_inplace(k) ? 2 : 1); ip++) {
          base_case(&cs, k, bk, (cc_dtype)ti, op, cnt);
          cs.inplace = ip;
          cs.root = has_root(k) && (x->variant & 1) ? n - 1 : 0;
          cs.null_nonroot = (int)((tu_mix64((uint64_t)x->variant) >> 7) & 1);
          cs.off = cnt >= 7 && ((x->variant >> 1) & 1);
          run_case(x, &cs);
        }
      }
    }
  }
}

/* Two-shot: every count up to 2n+2 (splits of a few elements, some ranks with
 * none), and one above 256 KiB. */
static void matrix_twoshot(ctx *x, int bk, int k) {
  static const pair tp[] = {{CC_FLOAT32, CC_SUM}, {CC_FLOAT16, CC_SUM}, {CC_INT8, CC_BXOR},
                            {CC_COMPLEX128, CC_PROD}, {CC_BFLOAT16, CC_AVG}};
  int n = x->t.n, li;
  size_t c;
  tcase cs;
  for (li = 0; li < 5; li++) {
    if (bk != BK_REG && li) break;
    for (c = 1; c <= (size_t)(2 * n + 2); c++) {
      base_case(&cs, k, bk, tp[li].t, tp[li].op, c);
      cs.inplace = has_inplace(k) && (c & 1);
      cs.off = (int)((c >> 1) & 1);
      cs.root = has_root(k) ? (int)(c % (size_t)n) : 0;
      cs.null_nonroot = (int)((c >> 2) & 1);
      run_case(x, &cs);
    }
    base_case(&cs, k, bk, tp[li].t, tp[li].op,
              k == K_REDUCE_SCATTER ? (tr_large_count(tp[li].t) / (size_t)n) | 1
                                    : tr_large_count(tp[li].t));
    cs.inplace = has_inplace(k) && (li & 1);
    cs.root = has_root(k) ? li % n : 0;
    run_case(x, &cs);
  }
}

/* The reductions' large counts, then all_reduce around the one-shot limit
 * (256 KiB by default). */
static void matrix_large_red(ctx *x, int bk, int k) {
  int n = x->t.n, full = full_here(x, bk), ip, li;
  tcase cs;
  for (li = 0; li < (int)N_LARGE_PAIRS && !x->dead; li++) {
    if (li && !full) {
      /* outside the full matrix: float32/sum, and one more pair by world size */
      if (x->w->quick || li != 1 + (n + bk) % ((int)N_LARGE_PAIRS - 1)) continue;
    }
    for (ip = 0; ip < 2; ip++) {
      if (k != K_ALL_REDUCE && ip != ((li + n) & 1)) continue;
      base_case(&cs, k, bk, large_pairs[li].t, large_pairs[li].op,
                k == K_REDUCE_SCATTER ? (tr_large_count(large_pairs[li].t) / (size_t)n) | 1
                                      : tr_large_count(large_pairs[li].t));
      cs.inplace = ip;
      cs.root = (li / 2) % 2 ? n - 1 : 0;
      cs.null_nonroot = li & 1;
      cs.off = (int)((li >> 1) & 1);
      run_case(x, &cs);
    }
  }
  /* around the one-shot limit (256 KiB by default) */
  if (k == K_ALL_REDUCE && (full || !x->w->quick)) {
    static const pair bp[] = {{CC_FLOAT32, CC_SUM}, {CC_FLOAT16, CC_SUM}};
    static const size_t bc[2][3] = {{65535, 65536, 65537}, {131071, 131072, 131073}};
    int bi, j;
    for (bi = 0; bi < 2; bi++)
      for (j = 0; j < 3; j++) {
        if (!full && (bi || j != 2)) continue;
        base_case(&cs, k, bk, bp[bi].t, bp[bi].op, bc[bi][j]);
        cs.inplace = j == 1;
        run_case(x, &cs);
      }
  }
}

/* The moving collectives' large counts: float32, and in the full matrix one more dtype by world size. */
static void matrix_large_move(ctx *x, int bk, int k) {
  int n = x->t.n, full = full_here(x, bk), ip, mi, nm = full ? 2 : 1;
  tcase cs;
  for (mi = 0; mi < nm && !x->dead; mi++) {
    cc_dtype t = mi == 0 ? CC_FLOAT32 : move_types[1 + (size_t)n % 3];
    if (x->w->quick && mi) break;
    for (ip = 0; ip < (has_inplace(k) ? 2 : 1); ip++) {
      /* all_to_all moves count elements to every peer: keep it near 1 MiB per rank */
      base_case(&cs, k, bk, t, CC_SUM,
                k == K_ALL_TO_ALL ? (tr_large_count(t) / (size_t)n) | 1 : tr_large_count(t));
      cs.inplace = ip;
      cs.root = ip % 2 ? n - 1 : 0;
      cs.null_nonroot = ip;
      cs.off = mi;
      run_case(x, &cs);
    }
  }
}

static void run_matrix(ctx *x, int bk, int k) {
  if (is_v(k)) {
    matrix_v(x, bk, k);
    return;
  }
  matrix_small(x, bk, k);
  if (x->dead) return;
  if (x->w->wtype == W_TWOSHOT) {
    matrix_twoshot(x, bk, k);
    return;
  }
  /* large counts */
  if (is_red(k))
    matrix_large_red(x, bk, k);
  else
    matrix_large_move(x, bk, k);
}

/* ------------------------------------------------------------ misc groups */

static void run_mode(ctx *x) {
  const char *m = cc_cuda_comm_mode(x->g);
  int staged = x->w->wtype == W_STAGED;
  const char *want = !staged && x->w->expect_ipc ? "ipc" : "staged";
  cc_result rc;
  tr_label(&x->t, "cc_cuda_comm_mode");
  if (!m || strcmp(m, want) != 0)
    tr_fail(&x->t, "cc_cuda_comm_mode returned \"%s\", want \"%s\"%s", m ? m : "(null)", want,
            x->w->wtype == W_STAGED ? " (CC_CUDA_TRANSPORT=staged was set before cc_cuda_comm_init)"
            : x->w->expect_ipc ? " (every rank on this host, every GPU used reaches the others)"
                               : " (some GPUs used have no peer access to each other)");
  tr_label(&x->t, "cc_cuda_comm_check after init");
  rc = cc_cuda_comm_check(x->g);
  if (rc != CC_OK) tr_fail(&x->t, "returned %s, want CC_OK", cc_strerror(rc));
  tr_label(&x->t, "cc_cuda_comm_last_error after init");
  if (!cc_cuda_comm_last_error(x->g)) tr_fail(&x->t, "returned NULL (want a string, \"\" when nothing failed)");
  misc_cover(x, M_MODE, "mode \"%s\" on GPU %d of %d%s; cc_cuda_comm_check CC_OK", want, x->dev, x->w->ndev,
             !x->w->emu_devices ? "" : x->w->emu_flush ? ", devices that flush remote writes"
                                                       : ", devices that cannot flush remote writes");
}

#define BARRIER_ROUNDS 6
#define BARRIER_SPIN_NS 30000000ull

static void run_barrier(ctx *x) {
  wshared *sh = x->w->sh;
  int k, late;
  int64_t t_end, enq, v;
  for (k = 0; k < BARRIER_ROUNDS && !x->dead; k++) {
    late = k % x->t.n;
    tr_label(&x->t, "barrier round %d (late rank %d: host sleep 20 ms, then a 30 ms spin kernel)",
             k, late);
    if (x->t.rank == late) {
      tu_sleep_us(20000);
      __atomic_add_fetch(&sh->barrier_count[k], 1, __ATOMIC_SEQ_CST);
      __atomic_store_n(&sh->barrier_enq_ns[k], now_ns(), __ATOMIC_SEQ_CST);
      if (!cu_ok(x, stream_spin(x->s, BARRIER_SPIN_NS), "spin kernel launch")) return;
    } else {
      __atomic_add_fetch(&sh->barrier_count[k], 1, __ATOMIC_SEQ_CST);
    }
    if (!cc_ok(x, cc_cuda_barrier(x->g, x->s), "cc_cuda_barrier")) {
      sync_stream(x, x->s);
      return;
    }
    if (!sync_stream(x, x->s)) return;
    t_end = now_ns();
    v = __atomic_load_n(&sh->barrier_count[k], __ATOMIC_SEQ_CST);
    enq = __atomic_load_n(&sh->barrier_enq_ns[k], __ATOMIC_SEQ_CST);
    if (v != x->t.n)
      tr_fail(&x->t, "the stream passed the barrier when %d of %d ranks had called it", (int)v,
              x->t.n);
    else if (!enq || t_end < enq + (int64_t)BARRIER_SPIN_NS)
      tr_fail(&x->t, "the stream passed the barrier %.1f ms after rank %d queued a 30 ms spin "
              "kernel before it", enq ? (double)(t_end - enq) / 1e6 : -1.0, late);
  }
  misc_cover(x, M_BARRIER, "%d rounds, a late rank each (host and stream)", BARRIER_ROUNDS);
}

/* One rank's stream is held back before the call; every rank overwrites its
 * send buffer on its stream right after the call, then reads the result. */
static void run_stream_order(ctx *x) {
  int it, late, which, n = x->t.n, me = x->t.rank;
  size_t cnt, es = 4, bytes, tot, first;
  unsigned char *in, *want;
  region S, R;
  tcase cs;
  cc_result rc;
  double t0, dt;
  const unsigned long long spin = 100000000ull; /* 100 ms */
  for (it = 0; it < 6 && !x->dead; it++) {
    late = it % n;
    which = it % 3; /* all_reduce, reduce_scatter, all_gather */
    cnt = it < 3 ? 4099 : 300007;
    base_case(&cs, which == 0 ? K_ALL_REDUCE : which == 1 ? K_REDUCE_SCATTER : K_ALL_GATHER, BK_REG,
              CC_FLOAT32, CC_SUM, cnt);
    if (which != 0) cnt = cs.count = cnt / (size_t)n | 1;
    cs.seed = tu_hash3(555, (uint64_t)it, (uint64_t)n);
    cs.gkind = TR_GEN_ANY;
    bytes = cnt * es;
    tot = which == 0 ? bytes : bytes * (size_t)n;
    tr_label(&x->t, "%s float32/sum count=%zu, rank %d's stream held back 100 ms before it; send "
             "buffers overwritten on the stream right after the call", k_names[cs.k], cnt, late);
    in = hbuf(tot);
    want = hbuf(tot);
    if (which == 2) {
      int r;
      tr_fill(in, CC_FLOAT32, TR_GEN_ANY, cs.seed, me, 0, cnt);
      for (r = 0; r < n; r++) tr_fill(want + (size_t)r * bytes, CC_FLOAT32, TR_GEN_ANY, cs.seed, r, 0, cnt);
    } else {
      first = which == 1 ? (size_t)me * cnt : 0;
      tr_fill(in, CC_FLOAT32, TR_GEN_ANY, cs.seed, me, 0, which == 1 ? cnt * (size_t)n : cnt);
      reference(want, first, cnt, &cs, n);
    }
    rset(x, &S, x->A[BK_REG], &cs, which == 1 ? tot : bytes, 1);
    rset(x, &R, x->B[BK_REG], &cs, which == 1 ? bytes : tot, 1);
    if (!stage(x, x->s, &S, in, 0, S.bytes) || !stage(x, x->s, &R, NULL, 0, 0)) goto next;
    if (me == late && !cu_ok(x, stream_spin(x->s, spin), "spin kernel launch")) goto next;
    t0 = tu_now();
    __atomic_store_n(&x->w->sh->order_arrive[it][me], now_ns(), __ATOMIC_SEQ_CST);
    if (which == 0)
      rc = cc_cuda_all_reduce(x->g, rdata(&S), rdata(&R), cnt, CC_FLOAT32, CC_SUM, x->s);
    else if (which == 1)
      rc = cc_cuda_reduce_scatter(x->g, rdata(&S), rdata(&R), cnt, CC_FLOAT32, CC_SUM, x->s);
    else
      rc = cc_cuda_all_gather(x->g, rdata(&S), rdata(&R), cnt, CC_FLOAT32, x->s);
    dt = tu_now() - t0;
    if (!cc_ok(x, rc, k_names[cs.k])) {
      sync_stream(x, x->s);
      goto next;
    }
    if (me == late) {                /* from the last rank's arrival: a peer late to the call is no fault */
      int64_t last = 0, back = now_ns();
      int r;
      for (r = 0; r < n; r++) last = CC__MAX(last, __atomic_load_n(&x->w->sh->order_arrive[it][r], __ATOMIC_SEQ_CST));
      dt = (double)(back - last) / 1e9;
    }
    if (me == late && x->w->wtype != W_STAGED && !strcmp(cc_cuda_comm_mode(x->g), "ipc") &&
        dt > 0.08)
      tr_fail(&x->t, "in ipc mode the call took %.1f ms on the held-back rank after the last rank made it: it "
              "waited for the GPU (its stream was busy for 100 ms)", dt * 1e3);
    if (!cu_ok(x, cudaMemsetAsync(rdata(&S), 0x5A, S.bytes, x->s), "cudaMemsetAsync")) goto next;
    if (!fetch(x, x->s, &R, x->hB) || !sync_stream(x, x->s)) goto next;
    chk_data(x, "recvbuf", &R, 0, want, which == 2 ? cnt * (size_t)n : cnt, CC_FLOAT32);
    chk_guards(x, "recvbuf", &R);
  next:
    free(in);
    free(want);
  }
  misc_cover(x, M_ORDER, "6 rounds of all_reduce, reduce_scatter, all_gather (4099 and 300007 "
             "elements) with a rotating held-back rank");
}

static void run_premul(ctx *x) {
  static const cc_dtype types[] = {CC_FLOAT32, CC_FLOAT64, CC_FLOAT16, CC_BFLOAT16, CC_INT32,
                                   CC_COMPLEX64};
  static const size_t counts[] = {0, 1, 7, 4099, 300007};
  size_t ti, ci;
  int which, n = x->t.n, k = 0, ip;
  unsigned char s[16];
  cc_op op;
  tcase cs;
  for (ti = 0; ti < sizeof types / sizeof types[0] && !x->dead; ti++) {
    premul_scalar(types[ti], x->t.rank, s);
    tr_label(&x->t, "cc_op_create_premul_sum(%s, scalar of rank %d)", tr_dtype_name(types[ti]),
             x->t.rank);
    if (!cc_ok(x, cc_op_create_premul_sum(x->t.c, types[ti], s, &op), "cc_op_create_premul_sum"))
      continue;
    for (ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
      if (counts[ci] > 4099 && (types[ti] != CC_FLOAT32 || (x->w->quick && n != 3))) continue;
      for (which = 0; which < 3; which++) {
        for (ip = 0; ip < 2; ip++) {
          int kk = which == 0 ? K_ALL_REDUCE : which == 1 ? K_REDUCE : K_REDUCE_SCATTER;
          size_t cnt = counts[ci];
          if (kk != K_ALL_REDUCE && ip != (k & 1)) continue;
          if (kk == K_REDUCE_SCATTER && cnt > 4099) cnt = (cnt / (size_t)n) | 1;
          base_case(&cs, kk, (cnt == 7 && ip) ? BK_PLAIN : BK_REG, types[ti], op, cnt);
          cs.inplace = ip;
          cs.root = (k++ & 2) ? n - 1 : 0;
          cs.ref = ref_premul;
          cs.opname = "premul_sum";
          cs.gkind = TR_GEN_ANY;
          cs.seed = tu_hash4(77, (uint64_t)types[ti], (uint64_t)which * 2 + (uint64_t)ip, cnt);
          cs.off = cnt >= 7 && (k & 4);
          x->variant++;
          {
            cudaStream_t st = pick_stream(x);
            tr_label(&x->t, "%s premul_sum %s (rank r's scalar (r+1)*0.75%s) count=%zu %s %s%s root=%d",
                     k_names[kk], tr_dtype_name(cs.t), cs.t == CC_COMPLEX64 ? " + (0.5-0.25r)i" : "",
                     cnt, ip ? "in-place" : "out-of-place", bk_names[cs.bk],
                     cs.off ? " misaligned" : "", cs.root);
            switch (kk) {
            case K_ALL_REDUCE: run_reduce(x, &cs, 1, st); break;
            case K_REDUCE: run_reduce(x, &cs, 0, st); break;
            default: run_reduce_scatter(x, &cs, st); break;
            }
          }
        }
      }
    }
    tr_label(&x->t, "cc_op_destroy(premul_sum %s)", tr_dtype_name(types[ti]));
    cc_ok(x, cc_op_destroy(x->t.c, op), "cc_op_destroy");
  }
  misc_cover(x, M_PREMUL, "float32, float64, float16, bfloat16, int32, complex64, a scalar per "
             "rank; counts 0,1,7,4099 (300007 float32); all_reduce in/out of place, reduce, "
             "reduce_scatter");
}

static void run_user(ctx *x) {
  static const struct { int which; cc_dtype t; } uops[] = {
    {U_MAXABS, CC_FLOAT32}, {U_MAXABS, CC_FLOAT64}, {U_SATADD, CC_UINT8}, {U_SUM64, CC_INT64}};
  static const cc_reduce_fn fns[3] = {op_maxabs, op_satadd, op_sum64};
  static const size_t counts[] = {0, 1, 7, 4099, 300007};
  cc_op ops[3];
  user_env envs[3];
  size_t ui, ci;
  int i, which, ip, n = x->t.n, k = 0;
  tcase cs;
  for (i = 0; i < 3; i++) {
    memset(&g_user[i], 0, sizeof g_user[i]);
    g_user[i].magic = USER_MAGIC;
    envs[i].which = i;
    tr_label(&x->t, "cc_op_create(%s)", u_names[i]);
    if (!cc_ok(x, cc_op_create(x->t.c, fns[i], &g_user[i], &ops[i]), "cc_op_create")) return;
  }
  for (ui = 0; ui < sizeof uops / sizeof uops[0] && !x->dead; ui++) {
    for (ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
      if (counts[ci] > 4099 && (ui != 0 || x->w->quick)) continue;
      for (which = 0; which < 3; which++) {
        for (ip = 0; ip < 2; ip++) {
          int kk = which == 0 ? K_ALL_REDUCE : which == 1 ? K_REDUCE : K_REDUCE_SCATTER;
          size_t cnt = counts[ci];
          if (kk != K_ALL_REDUCE && ip != (k & 1)) continue;
          if (kk == K_REDUCE_SCATTER && cnt > 4099) cnt = (cnt / (size_t)n) | 1;
          base_case(&cs, kk, (cnt == 7 && ip) ? BK_PLAIN : BK_REG, uops[ui].t,
                    ops[uops[ui].which], cnt);
          cs.inplace = ip;
          cs.root = (k++ & 2) ? n - 1 : 0;
          cs.ref = ref_user;
          cs.env = &envs[uops[ui].which];
          cs.opname = u_names[uops[ui].which];
          cs.gkind = TR_GEN_ANY;
          cs.seed = tu_hash4(88, ui, (uint64_t)which * 2 + (uint64_t)ip, cnt);
          x->variant++;
          {
            cudaStream_t st = pick_stream(x);
            tr_label(&x->t, "%s user op %s %s count=%zu %s %s root=%d", k_names[kk],
                     u_names[uops[ui].which], tr_dtype_name(cs.t), cnt,
                     ip ? "in-place" : "out-of-place", bk_names[cs.bk], cs.root);
            switch (kk) {
            case K_ALL_REDUCE: run_reduce(x, &cs, 1, st); break;
            case K_REDUCE: run_reduce(x, &cs, 0, st); break;
            default: run_reduce_scatter(x, &cs, st); break;
            }
          }
        }
      }
    }
  }
  for (i = 0; i < 3; i++) {
    tr_label(&x->t, "user op %s: its calls", u_names[i]);
    if (__atomic_load_n(&g_user[i].bad_user, __ATOMIC_RELAXED))
      tr_fail(&x->t, "called %ld times with a user pointer other than the one given",
              g_user[i].bad_user);
    if (__atomic_load_n(&g_user[i].bad_dtype, __ATOMIC_RELAXED))
      tr_fail(&x->t, "called %ld times with a dtype other than the call's", g_user[i].bad_dtype);
    tr_label(&x->t, "cc_op_destroy(%s)", u_names[i]);
    cc_ok(x, cc_op_destroy(x->t.c, ops[i]), "cc_op_destroy");
  }
  misc_cover(x, M_USER, "maxabs float32/float64, saturating uint8 sum, int64 sum; counts "
             "0,1,7,4099 (300007 maxabs float32); all_reduce in/out of place, reduce, reduce_scatter");
}

/* ------------------------------------------------------------ point to point */

/* payload of message `msg` from rank r: tr_fill(seed, r, msg * count) */
static void p2p_payload(void *out, cc_dtype t, uint64_t seed, int r, int msg, size_t count) {
  tr_fill(out, t, TR_GEN_ANY, seed, r, (size_t)msg * count, count);
}

static void run_p2p_ring(ctx *x) {
  static const struct { cc_dtype t; size_t count; } cases[] = {
    {CC_FLOAT32, 0}, {CC_FLOAT32, 1}, {CC_INT8, 7}, {CC_COMPLEX128, 7}, {CC_FLOAT16, 4099},
    {CC_FLOAT32, 300007}};
  int n = x->t.n, me = x->t.rank, right = (me + 1) % n, left = (me + n - 1) % n, bk, bi, ci;
  size_t es, cnt, bytes;
  unsigned char *in, *want;
  uint64_t seed;
  region S, R;
  tcase cs;
  cc_result rc, rc2;
  for (bk = 0; bk < BK_COUNT; bk++)
    for (bi = 0; bi < 2; bi++) /* one direction, both directions */
      for (ci = 0; ci < (int)(sizeof cases / sizeof cases[0]) && !x->dead; ci++) {
        cudaStream_t st;
        cnt = cases[ci].count;
        es = tr_size(cases[ci].t);
        bytes = cnt * es;
        seed = tu_hash4(99, (uint64_t)bk, (uint64_t)bi, (uint64_t)ci);
        base_case(&cs, K_P2P, bk, cases[ci].t, CC_SUM, cnt);
        cs.off = (ci + bi) & 1;
        st = pick_stream(x);
        tr_label(&x->t, "ring %s in one group: %s count=%zu %s%s%s", bi ? "both ways" : "to the right",
                 tr_dtype_name(cs.t), cnt, bk_names[bk], cs.off ? " misaligned" : "",
                 st ? "" : " stream=legacy-default");
        in = hbuf(2 * bytes);
        want = hbuf(2 * bytes);
        p2p_payload(in, cs.t, seed, me, 0, cnt);          /* to the right */
        p2p_payload(in + bytes, cs.t, seed, me, 1, cnt);  /* to the left */
        p2p_payload(want, cs.t, seed, left, 0, cnt);      /* from the left */
        p2p_payload(want + bytes, cs.t, seed, right, 1, cnt);
        rset(x, &S, x->A[bk], &cs, 2 * bytes, cnt > 0);
        rset(x, &R, x->B[bk], &cs, 2 * bytes, cnt > 0);
        if (!stage(x, st, &S, in, 0, 2 * bytes) || !stage(x, st, &R, NULL, 0, 0)) goto next;
        rc = cc_cuda_group_begin(x->g);
        if (!cc_ok(x, rc, "cc_cuda_group_begin")) goto next;
        rc = cc_cuda_send(x->g, rdata(&S), cnt, cs.t, right, 3, st);
        if (rc == CC_OK && bi) rc = cc_cuda_send(x->g, cnt ? rdata(&S) + bytes : NULL, cnt, cs.t, left, 4, st);
        if (rc == CC_OK) rc = cc_cuda_recv(x->g, rdata(&R), cnt, cs.t, left, 3, st);
        if (rc == CC_OK && bi) rc = cc_cuda_recv(x->g, cnt ? rdata(&R) + bytes : NULL, cnt, cs.t, right, 4, st);
        rc2 = cc_cuda_group_end(x->g);
        if (!cc_ok(x, rc, "cc_cuda_send/recv in the group") || !cc_ok(x, rc2, "cc_cuda_group_end")) {
          sync_stream(x, st);
          goto next;
        }
        if (!fetch(x, st, &S, x->hA) || !fetch(x, st, &R, x->hB) || !sync_stream(x, st)) goto next;
        chk_data(x, "message from the left", &R, 0, want, cnt, cs.t);
        if (bi)
          chk_data(x, "message from the right", &R, bytes, want + bytes, cnt, cs.t);
        else if (cnt) {
          size_t i;
          for (i = bytes; i < 2 * bytes; i++)
            if (R.img[R.doff + i] != SENT) {
              tr_fail(&x->t, "recv buffer written past the message");
              break;
            }
        }
        chk_data(x, "send buffer (only read)", &S, 0, in, 2 * cnt, cs.t);
        chk_guards(x, "send buffer", &S);
        chk_guards(x, "recv buffer", &R);
      next:
        free(in);
        free(want);
      }
  misc_cover(x, M_P2P_RING, "one and both directions in one group; counts 0,1,7,4099,300007; "
             "float32, int8, complex128, float16; both buffer kinds");
}

static void run_p2p_self(ctx *x) {
  static const size_t counts[] = {7, 300007};
  int me = x->t.rank, ci, order, bk;
  size_t cnt, bytes, es = 4;
  unsigned char *in;
  region S, R;
  tcase cs;
  cc_result rc, rc2;
  for (bk = 0; bk < BK_COUNT; bk++)
    for (ci = 0; ci < 2; ci++)
      for (order = 0; order < 3 && !x->dead; order++) {
        /* 0: send then recv; 1: recv then send; 2: two sends then two recvs */
        int nmsg = order == 2 ? 2 : 1, m;
        cnt = counts[ci];
        bytes = cnt * es;
        base_case(&cs, K_P2P, bk, CC_INT32, CC_SUM, cnt);
        tr_label(&x->t, "send to self and its recv in one group: %s, int32 count=%zu %s",
                 order == 0 ? "send first" : order == 1 ? "recv first" : "two messages in order",
                 cnt, bk_names[bk]);
        in = hbuf(2 * bytes);
        for (m = 0; m < 2; m++) p2p_payload(in + (size_t)m * bytes, CC_INT32, 7 + (uint64_t)order, me, m, cnt);
        rset(x, &S, x->A[bk], &cs, 2 * bytes, 1);
        rset(x, &R, x->B[bk], &cs, 2 * bytes, 1);
        if (!stage(x, x->s, &S, in, 0, 2 * bytes) || !stage(x, x->s, &R, NULL, 0, 0)) goto next;
        if (!cc_ok(x, cc_cuda_group_begin(x->g), "cc_cuda_group_begin")) goto next;
        rc = CC_OK;
        if (order == 1) rc = cc_cuda_recv(x->g, rdata(&R), cnt, CC_INT32, me, 1, x->s);
        for (m = 0; m < nmsg && rc == CC_OK; m++)
          rc = cc_cuda_send(x->g, rdata(&S) + (size_t)m * bytes, cnt, CC_INT32, me, 1, x->s);
        if (order != 1)
          for (m = 0; m < nmsg && rc == CC_OK; m++)
            rc = cc_cuda_recv(x->g, rdata(&R) + (size_t)m * bytes, cnt, CC_INT32, me, 1, x->s);
        rc2 = cc_cuda_group_end(x->g);
        if (!cc_ok(x, rc, "cc_cuda_send/recv to self") || !cc_ok(x, rc2, "cc_cuda_group_end")) {
          sync_stream(x, x->s);
          goto next;
        }
        if (!fetch(x, x->s, &R, x->hB) || !sync_stream(x, x->s)) goto next;
        chk_data(x, "first message", &R, 0, in, cnt, CC_INT32);
        if (nmsg == 2) chk_data(x, "second message (matched in order)", &R, bytes, in + bytes, cnt, CC_INT32);
        chk_guards(x, "recv buffer", &R);
      next:
        free(in);
      }
  misc_cover(x, M_P2P_SELF, "send first, recv first, two messages in order; int32 counts 7, "
             "300007; both buffer kinds");
}

/* run_p2p_order's three messages, one after another in one buffer. */
typedef struct order_msg { cc_dtype t; size_t count; int tag; } order_msg;
static const order_msg order_msgs[3] = {{CC_INT32, 5, 1}, {CC_FLOAT64, 0, 2}, {CC_FLOAT32, 100003, 3}};

/* One rank of a pair in run_p2p_order: its partner, its side, the messages' layout. */
typedef struct order_pair {
  int me, peer, sender;
  size_t offs[4], tot;   /* where each message starts; tot: all of them, 8-byte aligned */
  unsigned char *in;     /* the messages' contents, tot bytes */
} order_pair;

/* The three messages from the even rank to the odd one, in one group each side
 * or one call each: 1 when the pass goes on to the message back. */
static int p2p_order_three(ctx *x, order_pair *o, int grouped, int bk, uint64_t seed, tcase *cs) {
  int me = o->me, sender = o->sender, m;
  region S, R;
  cc_result rc, rc2;
  base_case(cs, K_P2P, bk, CC_UINT8, CC_SUM, o->tot);
  tr_label(&x->t, "rank %d -> rank %d: 3 messages %s, %s", me & ~1, me | 1,
           grouped ? "in one group each side" : "one call each", bk_names[bk]);
  memset(o->in, 0, o->tot);
  for (m = 0; m < 3; m++)
    tr_fill(o->in + o->offs[m], order_msgs[m].t, TR_GEN_ANY, seed, 0, (size_t)m * 1000000, order_msgs[m].count);
  rset(x, &S, x->A[bk], cs, o->tot, 1);
  rset(x, &R, x->B[bk], cs, o->tot, 1);
  if (!stage(x, x->s, &S, sender ? o->in : NULL, 0, o->tot) || !stage(x, x->s, &R, NULL, 0, 0)) return 0;
  rc = CC_OK;
  if (grouped) rc = cc_cuda_group_begin(x->g);
  for (m = 0; m < 3 && rc == CC_OK; m++) {
    void *p = order_msgs[m].count ? (void *)((sender ? rdata(&S) : rdata(&R)) + o->offs[m]) : NULL;
    if (sender)
      rc = cc_cuda_send(x->g, p, order_msgs[m].count, order_msgs[m].t, o->peer, order_msgs[m].tag, x->s);
    else
      rc = cc_cuda_recv(x->g, p, order_msgs[m].count, order_msgs[m].t, o->peer, order_msgs[m].tag, x->s);
  }
  rc2 = grouped ? cc_cuda_group_end(x->g) : CC_OK;
  if (!cc_ok(x, rc, sender ? "cc_cuda_send" : "cc_cuda_recv") ||
      !cc_ok(x, rc2, "cc_cuda_group_end")) {
    sync_stream(x, x->s);
    return 0;
  }
  if (!fetch(x, x->s, &R, x->hB) || !sync_stream(x, x->s)) return 0;
  if (!sender) {
    for (m = 0; m < 3; m++) {
      char what[80];
      snprintf(what, sizeof what, "message %d (%s x%zu, tag %d)", m + 1, tr_dtype_name(order_msgs[m].t),
               order_msgs[m].count, order_msgs[m].tag);
      chk_data(x, what, &R, o->offs[m], o->in + o->offs[m], order_msgs[m].count, order_msgs[m].t);
    }
  } else {
    chk_untouched(x, "recv buffer of the sender", &R);
  }
  chk_guards(x, "recv buffer", &R);
  return 1;
}

/* One message back, int8 x 7, not grouped: 1 when the pass goes on. */
static int p2p_order_back(ctx *x, order_pair *o, int bk, uint64_t seed, const tcase *cs) {
  int me = o->me, sender = o->sender;
  size_t es = 1;
  region S, R;
  cc_result rc;
  tr_label(&x->t, "rank %d -> rank %d: one message back (int8 x7), %s", me | 1, me & ~1,
           bk_names[bk]);
  tr_fill(o->in, CC_INT8, TR_GEN_ANY, seed, 1, 0, 7);
  rset(x, &S, x->A[bk], cs, 7 * es, 1);
  rset(x, &R, x->B[bk], cs, 7 * es, 1);
  if (!stage(x, x->s, &S, o->in, 0, 7) || !stage(x, x->s, &R, NULL, 0, 0)) return 0;
  rc = sender ? cc_cuda_recv(x->g, rdata(&R), 7, CC_INT8, o->peer, 9, x->s)
              : cc_cuda_send(x->g, rdata(&S), 7, CC_INT8, o->peer, 9, x->s);
  if (!cc_ok(x, rc, sender ? "cc_cuda_recv" : "cc_cuda_send")) {
    sync_stream(x, x->s);
    return 0;
  }
  if (!fetch(x, x->s, &R, x->hB) || !sync_stream(x, x->s)) return 0;
  if (sender) chk_data(x, "message back", &R, 0, o->in, 7, CC_INT8);
  chk_guards(x, "recv buffer", &R);
  return 1;
}

/* Pairs (2i, 2i+1): the even rank sends three messages of different sizes and
 * dtypes, the odd one receives them in order; then one message back. */
static void run_p2p_order(ctx *x) {
  int n = x->t.n, grouped, m;
  order_pair o;
  tcase cs;
  o.me = x->t.rank;
  o.peer = o.me ^ 1;
  o.sender = !(o.me & 1);
  o.tot = 0;
  if (o.peer >= n) {
    tr_label(&x->t, "no partner (odd world size, last rank)");
    misc_cover(x, M_P2P_ORDER, "pairs (0,1), (2,3): 3 messages (int32 x5, float64 x0, float32 "
               "x100003, tags 1,2,3) matched in order, in a group and one call each; one back");
    return;
  }
  for (m = 0; m < 3; m++) {
    o.offs[m] = o.tot;
    o.tot += order_msgs[m].count * tr_size(order_msgs[m].t);
    o.tot = (o.tot + 7) & ~(size_t)7;
  }
  o.offs[3] = o.tot;
  o.in = hbuf(o.tot);
  for (grouped = 0; grouped < 2 && !x->dead; grouped++) {
    int bk = grouped ? BK_PLAIN : BK_REG;
    uint64_t seed = tu_hash3(31, (uint64_t)grouped, (uint64_t)(o.me / 2));
    if (!p2p_order_three(x, &o, grouped, bk, seed, &cs) || !p2p_order_back(x, &o, bk, seed, &cs)) break;
  }
  free(o.in);
  misc_cover(x, M_P2P_ORDER, "pairs (0,1), (2,3): 3 messages (int32 x5, float64 x0, float32 "
             "x100003, tags 1,2,3) matched in order, in a group and one call each; one back");
}

/* Every pair at once in one group (with oneself), counts of all_to_all_v. */
static void run_p2p_all(ctx *x) {
  static const struct { cc_dtype t; int pattern; } cases[] = {
    {CC_INT32, P_SMALL}, {CC_FLOAT16, P_IRREGULAR}, {CC_FLOAT32, P_LARGE}, {CC_UINT64, P_ONE}};
  int n = x->t.n, me = x->t.rank, ci, order, j;
  size_t es, sc[MAXR] = {0}, sd[MAXR] = {0}, rcn[MAXR] = {0}, rd[MAXR] = {0}, Ls, Lr;
  unsigned char *in, *want;
  region S, R;
  tcase cs;
  cc_result rc, rc2;
  for (ci = 0; ci < 4; ci++)
    for (order = 0; order < 2 && !x->dead; order++) {
      if (x->w->quick && cases[ci].pattern == P_LARGE) continue;
      base_case(&cs, K_P2P, order ? BK_PLAIN : BK_REG, cases[ci].t, CC_SUM, 0);
      cs.pattern = cases[ci].pattern;
      cs.layout = (ci + order) % TR_L_COUNT;
      cs.seed = tu_hash3(41, (uint64_t)ci, (uint64_t)order);
      es = tr_size(cs.t);
      tr_label(&x->t, "every pair in one group (%s): %s %s/%s %s",
               order ? "receives first, peers in reverse order" : "sends first", tr_dtype_name(cs.t),
               p_names[cs.pattern], tr_layout_name(cs.layout), bk_names[cs.bk]);
      Ls = a2av_send_layout(&cs, n, me, sc, sd);
      Lr = a2av_recv_layout(&cs, n, me, rcn, rd);
      in = hbuf(Ls * es);
      want = hbuf(Lr * es);
      tr_fill(in, cs.t, TR_GEN_ANY, cs.seed, me, 0, Ls);
      a2av_want(&cs, n, me, want, Lr, rd);
      rset(x, &S, x->A[cs.bk], &cs, Ls * es, Ls > 0);
      rset(x, &R, x->B[cs.bk], &cs, Lr * es, Lr > 0);
      if (!stage(x, x->s, &S, in, 0, Ls * es) || !stage(x, x->s, &R, NULL, 0, 0)) goto next;
      if (!cc_ok(x, cc_cuda_group_begin(x->g), "cc_cuda_group_begin")) goto next;
      rc = CC_OK;
      if (!order) {
        for (j = 0; j < n && rc == CC_OK; j++)
          rc = cc_cuda_send(x->g, sc[j] ? rdata(&S) + sd[j] * es : NULL, sc[j], cs.t, j, 0, x->s);
        for (j = 0; j < n && rc == CC_OK; j++)
          rc = cc_cuda_recv(x->g, rcn[j] ? rdata(&R) + rd[j] * es : NULL, rcn[j], cs.t, j, 0, x->s);
      } else {
        for (j = n - 1; j >= 0 && rc == CC_OK; j--)
          rc = cc_cuda_recv(x->g, rcn[j] ? rdata(&R) + rd[j] * es : NULL, rcn[j], cs.t, j, 0, x->s);
        for (j = n - 1; j >= 0 && rc == CC_OK; j--)
          rc = cc_cuda_send(x->g, sc[j] ? rdata(&S) + sd[j] * es : NULL, sc[j], cs.t, j, 0, x->s);
      }
      rc2 = cc_cuda_group_end(x->g);
      if (!cc_ok(x, rc, "cc_cuda_send/recv in the group") || !cc_ok(x, rc2, "cc_cuda_group_end")) {
        sync_stream(x, x->s);
        goto next;
      }
      if (!fetch(x, x->s, &S, x->hA) || !fetch(x, x->s, &R, x->hB) || !sync_stream(x, x->s)) goto next;
      chk_data(x, "recv buffer (0xa5.. marks gaps that must stay untouched)", &R, 0, want, Lr, cs.t);
      chk_data(x, "send buffer (only read)", &S, 0, in, Ls, cs.t);
      chk_guards(x, "send buffer", &S);
      chk_guards(x, "recv buffer", &R);
    next:
      free(in);
      free(want);
    }
  misc_cover(x, M_P2P_ALL, "every pair incl. oneself in one group, uneven counts with zeros, "
             "sends first or receives first");
}

/* ------------------------------------------------------------ buffers freed and allocated again */

static void run_reuse(ctx *x) {
  long mapped0 = cc_emu_count ? cc_emu_count("freed_while_mapped") : 0;
  long stale0 = cc_emu_count ? cc_emu_count("already_mapped") : 0;
  int round, n = x->t.n, me = x->t.rank, kind;
  size_t cnt, bytes;
  unsigned char *sd = NULL, *rd = NULL, *in, *want;
  float *held = NULL;
  tcase cs;
  cudaStream_t st = x->s;
  cc_result rc;
  for (round = 0; round < 8 && !x->dead; round++) {
    /* rounds 0-2 same size (the allocator hands the same address back), then
     * other sizes; kind 0 cudaMalloc, 1 cc_cuda_malloc; round 7: a registered
     * sendbuf and a fresh cudaMalloc recvbuf */
    kind = round >= 3 && round < 6 ? 1 : 0;
    /* from round 3 on, in the emulation, a stale mapping anywhere holds the
     * place of the owner's new memory (on a GPU: one in the same chunk); round
     * 3 makes one that no new buffer overlaps */
    if (round == 3 && cc_emu_count) setenv("CC_EMU_IPC_CHUNK", "1099511627776", 1);
    cnt = round < 3 ? 5003 : 5003 + 7919 * (size_t)round;
    bytes = cnt * 4;
    base_case(&cs, K_ALL_REDUCE, BK_PLAIN, CC_FLOAT32, CC_SUM, cnt);
    cs.gkind = TR_GEN_ANY;
    cs.seed = tu_hash3(61, (uint64_t)round, (uint64_t)n);
    tr_label(&x->t, "round %d: %s buffers of %zu bytes allocated, all_reduce float32/sum, freed",
             round, round == 7 ? "registered send, cudaMalloc recv" : kind ? "cc_cuda_malloc" : "cudaMalloc",
             bytes);
    in = hbuf(bytes);
    want = hbuf(bytes);
    tr_fill(in, CC_FLOAT32, TR_GEN_ANY, cs.seed, me, 0, cnt);
    reference(want, 0, cnt, &cs, n);
    sd = rd = NULL;
    if (round == 3 && cc_emu_count) {  /* a plain buffer the peers map, alive while round 3's are allocated */
      if (!cu_ok(x, cudaMalloc((void **)&held, 4096 * 4), "cudaMalloc") ||
          !cu_ok(x, cudaMemsetAsync(held, 0, 4096 * 4, st), "cudaMemsetAsync") ||
          !cc_ok(x, cc_cuda_all_reduce(x->g, held, held, 4096, CC_FLOAT32, CC_SUM, st), "cc_cuda_all_reduce") ||
          !sync_stream(x, st))
        goto next;
    }
    if (kind) {
      if (!cc_ok(x, cc_cuda_malloc(x->g, (void **)&sd, bytes), "cc_cuda_malloc") ||
          !cc_ok(x, cc_cuda_malloc(x->g, (void **)&rd, bytes), "cc_cuda_malloc"))
        goto next;
    } else {
      if (round == 7)
        sd = x->A[BK_REG] + GUARD;
      else if (!cu_ok(x, cudaMalloc((void **)&sd, bytes), "cudaMalloc"))
        goto next;
      if (!cu_ok(x, cudaMalloc((void **)&rd, bytes), "cudaMalloc")) goto next;
    }
    if (held) {                        /* freed: the peers' mapping of it is stale, and elsewhere than sd's, rd's */
      cu_ok(x, cudaFree(held), "cudaFree");
      held = NULL;
    }
    if (!cu_ok(x, cudaMemcpyAsync(sd, in, bytes, cudaMemcpyHostToDevice, st), "cudaMemcpyAsync") ||
        !cu_ok(x, cudaMemsetAsync(rd, 0, bytes, st), "cudaMemsetAsync"))
      goto next;
    rc = cc_cuda_all_reduce(x->g, sd, rd, cnt, CC_FLOAT32, CC_SUM, st);
    if (!cc_ok(x, rc, "cc_cuda_all_reduce")) {
      sync_stream(x, st);
      goto next;
    }
    if (!cu_ok(x, cudaMemcpyAsync(x->hB, rd, bytes, cudaMemcpyDeviceToHost, st), "cudaMemcpyAsync") ||
        !sync_stream(x, st))
      goto next;
    {
      char m[300];
      if (tr_compare(x->hB, want, cnt, CC_FLOAT32, m, sizeof m)) tr_fail(&x->t, "recvbuf: %s", m);
    }
  next:
    if (held) cu_ok(x, cudaFree(held), "cudaFree");
    held = NULL;
    if (kind) {
      if (sd) cc_ok(x, cc_cuda_free(x->g, sd), "cc_cuda_free");
      if (rd) cc_ok(x, cc_cuda_free(x->g, rd), "cc_cuda_free");
    } else {
      if (sd && round != 7) cu_ok(x, cudaFree(sd), "cudaFree");
      if (rd) cu_ok(x, cudaFree(rd), "cudaFree");
    }
    free(in);
    free(want);
  }
  unsetenv("CC_EMU_IPC_CHUNK");
  if (cc_emu_count && !strcmp(cc_cuda_comm_mode(x->g), "ipc") && me == 0 &&
      cc_emu_count("already_mapped") == stale0 && !x->dead)
    tr_fail(&x->t, "the emulation never refused an open with cudaErrorAlreadyMapped: the path that closes stale "
            "mappings and tries again went untested");
  if (cc_emu_count && !strcmp(cc_cuda_comm_mode(x->g), "ipc"))
    misc_cover(x, M_REUSE, "8 rounds of buffers freed and allocated again; rank 0 freed %ld plain ones peers had "
               "open (docs/cuda.md), %ld of its opens met cudaErrorAlreadyMapped (a stale mapping in the place; "
               "from round 3 any: CC_EMU_IPC_CHUNK) and went on",
               cc_emu_count("freed_while_mapped") - mapped0, cc_emu_count("already_mapped") - stale0);
  else
    misc_cover(x, M_REUSE, "8 rounds: cudaMalloc and cc_cuda_malloc buffers freed and allocated "
               "again (same size, then others), a registered/cudaMalloc mix");
}

/* ------------------------------------------------------------ refused arguments */

static void expect_invalid(ctx *x, cc_result rc, const char *what) {
  tr_label(&x->t, "%s", what);
  if (rc != CC_ERR_INVALID_ARG)
    tr_fail(&x->t, "returned %s, want CC_ERR_INVALID_ARG (%s)", cc_strerror(rc),
            cc_cuda_comm_last_error(x->g));
}

static void run_invalid(ctx *x) {
  float *host = (float *)calloc(64, sizeof(float));
  unsigned char *dv = x->A[BK_REG] + GUARD, *dv2 = x->B[BK_REG] + GUARD;
  int n = x->t.n, me = x->t.rank;
  cc_result rc;
  float v[4], got[4];
  int i;
  expect_invalid(x, cc_cuda_all_reduce(x->g, host, dv2, 8, CC_FLOAT32, CC_SUM, x->s),
                 "all_reduce with a host (malloc) sendbuf");
  expect_invalid(x, cc_cuda_all_reduce(x->g, dv, host, 8, CC_FLOAT32, CC_SUM, x->s),
                 "all_reduce with a host (malloc) recvbuf");
  expect_invalid(x, cc_cuda_all_reduce(x->g, host, host, 8, CC_FLOAT32, CC_SUM, x->s),
                 "all_reduce in place on host (malloc) memory");
  expect_invalid(x, cc_cuda_broadcast(x->g, host, 8, CC_FLOAT32, 0, x->s),
                 "broadcast of a host (malloc) buffer");
  expect_invalid(x, cc_cuda_all_gather(x->g, dv, host, 4, CC_INT32, x->s),
                 "all_gather into a host (malloc) recvbuf");
  expect_invalid(x, cc_cuda_all_reduce(x->g, NULL, dv2, 8, CC_FLOAT32, CC_SUM, x->s),
                 "all_reduce with sendbuf NULL and count 8");
  expect_invalid(x, cc_cuda_all_reduce(x->g, dv, dv2, 8, CC_COMPLEX64, CC_MIN, x->s),
                 "all_reduce complex64/min (a refused pair)");
  expect_invalid(x, cc_cuda_all_reduce(x->g, dv, dv2, 8, CC_FLOAT32, CC_BXOR, x->s),
                 "all_reduce float32/bxor (a refused pair)");
  expect_invalid(x, cc_cuda_all_reduce(x->g, dv, dv2, 8, CC_INT32, CC_AVG, x->s),
                 "all_reduce int32/avg (a refused pair)");
  expect_invalid(x, cc_cuda_broadcast(x->g, dv, 8, CC_FLOAT32, n, x->s),
                 "broadcast with root == size");
  expect_invalid(x, cc_cuda_all_reduce(x->g, dv, dv2, 8, (cc_dtype)15, CC_SUM, x->s),
                 "all_reduce with dtype 15 (unknown)");
  expect_invalid(x, cc_cuda_all_gather_v(x->g, dv, 4, dv2, NULL, NULL, CC_FLOAT32, x->s),
                 "all_gather_v with recv_counts NULL");
  expect_invalid(x, cc_cuda_send(x->g, dv, 4, CC_FLOAT32, (me + 1) % n, -1, x->s), "send with tag -1");
  expect_invalid(x, cc_cuda_recv(x->g, dv2, 4, CC_FLOAT32, (me + 1) % n, -1, x->s), "recv with tag -1");
  expect_invalid(x, cc_cuda_recv(x->g, dv2, 4, CC_FLOAT32, CC_ANY_SOURCE, 0, x->s),
                 "recv from CC_ANY_SOURCE (cc_cuda receives from a named rank)");
  expect_invalid(x, cc_cuda_recv(x->g, dv2, 4, CC_FLOAT32, n, 0, x->s), "recv from rank == size");
  /* sendbuf one element into recvbuf: overlapping but not the in-place form on any rank */
  expect_invalid(x, cc_cuda_all_gather(x->g, dv2 + 4, dv2, 4, CC_FLOAT32, x->s),
                 "all_gather with sendbuf == recvbuf + 1 element (an overlap that is not in place)");
  tr_label(&x->t, "stream drains after the refused calls");
  sync_stream(x, x->s);
  tr_label(&x->t, "cc_cuda_comm_check after the refused calls");
  rc = cc_cuda_comm_check(x->g);
  if (rc != CC_OK) tr_fail(&x->t, "returned %s, want CC_OK", cc_strerror(rc));
  tr_label(&x->t, "all_reduce float32/sum count 4 after the refused calls (still usable)");
  for (i = 0; i < 4; i++) v[i] = (float)(me + 1) * (float)(i + 1);
  if (!x->dead &&
      cu_ok(x, cudaMemcpyAsync(dv, v, sizeof v, cudaMemcpyHostToDevice, x->s), "cudaMemcpyAsync") &&
      cc_ok(x, cc_cuda_all_reduce(x->g, dv, dv2, 4, CC_FLOAT32, CC_SUM, x->s), "cc_cuda_all_reduce") &&
      cu_ok(x, cudaMemcpyAsync(got, dv2, sizeof got, cudaMemcpyDeviceToHost, x->s), "cudaMemcpyAsync") &&
      sync_stream(x, x->s)) {
    for (i = 0; i < 4; i++)
      if (got[i] != (float)(n * (n + 1) / 2) * (float)(i + 1)) {
        tr_fail(&x->t, "[%d] = %g, want %g", i, (double)got[i],
                (double)((float)(n * (n + 1) / 2) * (float)(i + 1)));
        break;
      }
  }
  free(host);
  misc_cover(x, M_INVALID, "host pointers (send, recv, in place, broadcast, all_gather), NULL "
             "with a count, NULL v counts, refused dtype/op pairs, root out of range, unknown dtype, "
             "a negative tag, a receive from any source or from no rank, an overlap: "
             "CC_ERR_INVALID_ARG on every rank; then an all_reduce works");
}

/* rank 0 all_reduce count 8, the others 9: CC_ERR_MISMATCH everywhere. The
 * communicator is failed afterwards: this runs last. */
static void run_mismatch(ctx *x) {
  unsigned char *dv = x->A[BK_REG] + GUARD, *dv2 = x->B[BK_REG] + GUARD;
  cc_result rc;
  cudaError_t e;
  double t0;
  int64_t deadline = now_ns() + 60 * 1000000000LL;
  /* The failure below ends the communicator: no rank may still be finishing an
   * earlier call (over TCP a rank can leave a call before its peers have read
   * all of it), or that call fails too, and that rank sees CC_ERR_ABORTED. So
   * the ranks meet first in the test's shared memory, out of every call (a
   * barrier of the communicator would have the same race). */
  tr_label(&x->t, "every rank out of its earlier calls");
  __atomic_add_fetch(&x->w->sh->met, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&x->w->sh->met, __ATOMIC_SEQ_CST) < x->t.n) {
    if (now_ns() > deadline) {
      tr_fail(&x->t, "only %lld of %d ranks got here in 60 s", (long long)x->w->sh->met, x->t.n);
      return;
    }
    tu_sleep_us(200);
  }
  tr_label(&x->t, "rank 0 all_reduce float32/sum count 8, others count 9");
  t0 = tu_now();
  rc = cc_cuda_all_reduce(x->g, dv, dv2, x->t.rank == 0 ? 8 : 9, CC_FLOAT32, CC_SUM, x->s);
  if (rc != CC_ERR_MISMATCH)
    tr_fail(&x->t, "returned %s after %.2f s, want CC_ERR_MISMATCH (%s)", cc_strerror(rc),
            tu_now() - t0, cc_cuda_comm_last_error(x->g));
  tr_label(&x->t, "cudaStreamSynchronize after the mismatch");
  t0 = tu_now();
  e = cudaStreamSynchronize(x->s);
  if (e != cudaSuccess) tr_fail(&x->t, "cudaStreamSynchronize: %s", cudaGetErrorString(e));
  if (tu_now() - t0 > 5) tr_fail(&x->t, "cudaStreamSynchronize took %.1f s", tu_now() - t0);
  tr_label(&x->t, "all_reduce after the mismatch");
  rc = cc_cuda_all_reduce(x->g, dv, dv2, 4, CC_FLOAT32, CC_SUM, x->s);
  if (rc == CC_OK) tr_fail(&x->t, "returned CC_OK on a communicator that failed (want CC_ERR_ABORTED)");
  cudaStreamSynchronize(x->s);
  misc_cover(x, M_MISMATCH, "count 8 vs 9: CC_ERR_MISMATCH on every rank, the stream drains, the "
             "next call fails");
}

/* ------------------------------------------------------------ a rank's main */

static size_t arena_bytes(int n) { return (size_t)n * 1300000 + 65536; }

/* Setup, reported in the mode group: the device, a stream, the GPU
 * communicator, the arenas; then the mode group's checks. 0 when all worked,
 * else the rank's exit status. */
static int rank_setup(ctx *x, cc_comm *c) {
  cc_result rc;
  if (!group_begin(x, T_MISC, M_MODE)) return 99;
  tr_label(&x->t, "setup: cudaSetDevice(%d), stream, cc_cuda_comm_init, 2 x %zu-byte arenas per "
           "buffer kind", x->dev, x->cap);
  if (!cu_ok(x, cudaSetDevice(x->dev), "cudaSetDevice") ||
      !cu_ok(x, cudaStreamCreateWithFlags(&x->s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"))
    return 1;
  rc = cc_cuda_comm_init(c, x->dev, &x->g);
  if (rc != CC_OK) {
    tr_fail(&x->t, "cc_cuda_comm_init(device %d) returned %s (%s)", x->dev, cc_strerror(rc),
            cc_comm_last_error(c));
    return 1;
  }
  if (!cc_ok(x, cc_cuda_malloc(x->g, (void **)&x->A[BK_REG], x->cap), "cc_cuda_malloc") ||
      !cc_ok(x, cc_cuda_malloc(x->g, (void **)&x->B[BK_REG], x->cap), "cc_cuda_malloc") ||
      !cu_ok(x, cudaMalloc((void **)&x->A[BK_PLAIN], x->cap), "cudaMalloc") ||
      !cu_ok(x, cudaMalloc((void **)&x->B[BK_PLAIN], x->cap), "cudaMalloc"))
    return 1;
  x->hA = hbuf(x->cap);
  x->hB = hbuf(x->cap);
  if (!x->hA || !x->hB) {
    tr_fail(&x->t, "out of host memory");
    return 1;
  }
  run_mode(x);
  group_end(x);
  return 0;
}

/* The collectives, per buffer kind: 0, or 99 when a group could not begin. */
static int rank_collectives(ctx *x) {
  warg *w = x->w;
  int bk, k;
  double t0;
  for (bk = 0; bk < BK_COUNT && !x->dead; bk++)
    for (k = 0; k < K_COUNT && !x->dead; k++) {
      if (!plan_coll(w->wtype, k)) continue;
      t0 = tu_now();
      if (!group_begin(x, bk, k)) return 99;
      run_matrix(x, bk, k);
      group_end(x);
      if (x->verbose && x->t.rank == 0)
        fprintf(stderr, "  %sn=%d %s %s: %.2f s\n", w_prefix(w->wtype), x->t.n, k_names[k],
                bk_names[bk], tu_now() - t0);
    }
  return 0;
}

/* The destroy group: the arenas freed, the GPU communicator destroyed, then
 * the plain buffers; after the mismatch (failed_comm) each must only return.
 * *t0: when destroy began, for the verbose timing. */
static void rank_destroy(ctx *x, cc_comm *c, int failed_comm, double *t0) {
  cc_result rc;
  tr_label(&x->t, "cc_cuda_free of the arenas, cc_cuda_comm_destroy, cudaFree of the others%s",
           failed_comm ? " (after the mismatch: it must return)" : "");
  rc = cc_cuda_free(x->g, x->A[BK_REG]);
  if (!failed_comm) cc_ok(x, rc, "cc_cuda_free");
  rc = cc_cuda_free(x->g, x->B[BK_REG]);
  if (!failed_comm) cc_ok(x, rc, "cc_cuda_free");
  *t0 = tu_now();
  rc = cc_cuda_comm_destroy(x->g);
  x->g = NULL;
  /* plain cudaMalloc buffers after destroy: until then peers may map them */
  cu_ok(x, cudaFree(x->A[BK_PLAIN]), "cudaFree");
  cu_ok(x, cudaFree(x->B[BK_PLAIN]), "cudaFree");
  if (!failed_comm) {
    if (rc != CC_OK)
      tr_fail(&x->t, "cc_cuda_comm_destroy returned %s (%s)", cc_strerror(rc),
              cc_comm_last_error(c));
  }
  if (tu_now() - *t0 > 10) tr_fail(&x->t, "cc_cuda_comm_destroy took %.1f s", tu_now() - *t0);
  misc_cover(x, M_DESTROY, "%s", failed_comm ? "after the mismatch: returns" : "CC_OK");
}

/* The other groups, the destroy last: 0, or 99 when a group could not begin. */
static int rank_misc(ctx *x, cc_comm *c) {
  warg *w = x->w;
  int m, failed_comm = 0;
  double t0;
  for (m = M_BARRIER; m < M_COUNT && !x->dead; m++) {
    if (!plan_misc(w->wtype, m)) continue;
    t0 = tu_now();
    if (!group_begin(x, T_MISC, m)) return 99;
    switch (m) {
    case M_BARRIER: run_barrier(x); break;
    case M_ORDER: run_stream_order(x); break;
    case M_PREMUL: run_premul(x); break;
    case M_USER: run_user(x); break;
    case M_P2P_RING: run_p2p_ring(x); break;
    case M_P2P_SELF: run_p2p_self(x); break;
    case M_P2P_ORDER: run_p2p_order(x); break;
    case M_P2P_ALL: run_p2p_all(x); break;
    case M_REUSE: run_reuse(x); break;
    case M_INVALID: run_invalid(x); break;
    case M_MISMATCH: run_mismatch(x); failed_comm = 1; break;
    case M_DESTROY: rank_destroy(x, c, failed_comm, &t0); break;
    default: break;
    }
    group_end(x);
    if (x->verbose && x->t.rank == 0)
      fprintf(stderr, "  %sn=%d %s: %.2f s\n", w_prefix(w->wtype), x->t.n, m_names[m], tu_now() - t0);
  }
  return 0;
}

static int rank_main(cc_comm *c, void *argp) {
  static ctx x; /* large; one per process */
  warg *w = (warg *)argp;
  wshared *sh = w->sh;
  int rc;
  memset(&x, 0, sizeof x);
  tr_ctx_init(&x.t, c, &sh->tab[T_MISC]);
  x.w = w;
  x.verbose = getenv("CC_TEST_VERBOSE") != NULL;
  x.dev = x.t.rank % (w->ndev > 0 ? w->ndev : 1);
  x.cap = arena_bytes(x.t.n);
  if (w->wtype == W_STAGED) setenv("CC_CUDA_TRANSPORT", "staged", 1);
  if (w->wtype == W_TWOSHOT) setenv("CC_CUDA_ONESHOT_BYTES", "0", 1);
  if (w->emu_devices) {                /* before this process's first CUDA call */
    char v[16];
    snprintf(v, sizeof v, "%d", w->emu_devices);
    setenv("CC_EMU_DEVICES", v, 1);
    setenv("CC_EMU_FLUSH", w->emu_flush ? "1" : "0", 1);
    if (w->emu_flush) setenv("CC_EMU_NO_BATCH", "1", 1);   /* and one call per stream memory operation */
  }
  if ((rc = rank_setup(&x, c)) != 0 || (rc = rank_collectives(&x)) != 0 || (rc = rank_misc(&x, c)) != 0) return rc;
  if (x.dead) return 1;
  cudaStreamDestroy(x.s);
  free(x.hA);
  free(x.hB);
  return 0;
}

/* ------------------------------------------------------------ the parent */

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

static void coll_cover(char *out, size_t cap, const gstat *g, int k) {
  size_t m = 0, counts[32];
  int t, npairs = 0, ndt = 0, i;
  for (t = 0; t < CC_DTYPE_COUNT; t++) {
    if (g->dtypes & (1u << t)) ndt++;
    for (i = 0; i < 8; i++) npairs += (g->ops[t] >> i) & 1;
  }
  if (is_red(k))
    m += (size_t)snprintf(out + m, cap - m, "%d dtypes, %d dtype/op pairs", ndt, npairs);
  else
    m += (size_t)snprintf(out + m, cap - m, "%d dtypes", ndt);
  if (!is_v(k) && g->ncounts) {
    memcpy(counts, g->counts, sizeof(size_t) * (size_t)g->ncounts);
    qsort(counts, (size_t)g->ncounts, sizeof(size_t), cmp_size);
    m += (size_t)snprintf(out + m, cap - m, ", counts");
    for (i = 0; i < g->ncounts && m < cap; i++)
      m += (size_t)snprintf(out + m, cap - m, "%s%zu", i ? "," : " ", counts[i]);
  }
  if (m < cap && is_v(k))
    m += (size_t)snprintf(out + m, cap - m, ", uneven counts (rank 1: 0), gaps, reversed blocks");
  if (m < cap && has_inplace(k))
    m += (size_t)snprintf(out + m, cap - m, ", %s", g->inplace == 3 ? "in+out of place"
                          : g->inplace == 2 ? "in place" : "out of place");
  if (m < cap)
    snprintf(out + m, cap - m, ", %ld misaligned, %ld on the legacy stream (rank 0)", g->misaligned,
             g->legacy);
}

static void report_world(const warg *w, int spawn_rc) {
  char name[160], cov[600];
  int bk, k, m;
  for (bk = 0; bk < BK_COUNT; bk++)
    for (k = 0; k < K_COUNT; k++) {
      if (!plan_coll(w->wtype, k)) continue;
      snprintf(name, sizeof name, "cuda %sn=%d %s %s", w_prefix(w->wtype), w->n, k_names[k],
               bk_names[bk]);
      coll_cover(cov, sizeof cov, &w->sh->st[bk][k], k);
      tr_report_group(&w->sh->tab[bk], w->n, k, name, cov, spawn_rc);
    }
  for (m = 0; m < M_COUNT; m++) {
    if (!plan_misc(w->wtype, m)) continue;
    snprintf(name, sizeof name, "cuda %sn=%d %s", w_prefix(w->wtype), w->n, m_names[m]);
    tr_report_group(&w->sh->tab[T_MISC], w->n, m, name, w->sh->cover[m], spawn_rc);
  }
  if (spawn_rc != 0) {
    snprintf(name, sizeof name, "cuda %sn=%d spawn", w_prefix(w->wtype), w->n);
    tu_fail(name, "cc_spawn returned %d (%s)", spawn_rc, cc_comm_last_error(NULL));
  }
}

static int g_ndev, g_peer[MAXR][MAXR];

static int expect_ipc(int n) {
  int i, j, di, dj;
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++) {
      di = i % g_ndev;
      dj = j % g_ndev;
      if (di != dj && !g_peer[di][dj]) return 0;
    }
  return 1;
}

static void run_world(int wtype, int n, int quick) {
  static warg w;
  double t0 = tu_now();
  int rc;
  memset(&w, 0, sizeof w);
  w.sh = (wshared *)tu_shared_alloc(sizeof(wshared));
  if (!w.sh) {
    tu_fail("cuda setup", "cannot map %zu bytes of shared memory", sizeof(wshared));
    return;
  }
  w.wtype = wtype;
  w.n = n;
  w.quick = quick;
  w.ndev = g_ndev;
  w.expect_ipc = expect_ipc(n);
  if (emulated() && wtype == W_TWOSHOT) {   /* peers write into each other's GPU: flushed (4) or not (3) */
    w.ndev = w.emu_devices = n;
    w.emu_flush = n == 4;
    w.expect_ipc = 1;
  }
  rc = tu_spawn(n, rank_main, &w);
  report_world(&w, rc);
  fprintf(stderr, "test_cuda: %sworld size %d took %.2f s\n", w_prefix(wtype), n, tu_now() - t0);
  tu_shared_free(w.sh, sizeof(wshared));
}

/* ------------------------------------------------------------ a rank exits */

typedef struct drep {
  int reached, init_ok;
  int call_rc, check_rc, after_rc, destroy_rc, sync_err;
  int64_t t_call0, t_call1, t_sync1, t_check, t_after, t_destroy;
  char err[256], sync_msg[128];
} drep;

typedef struct dshared {
  int64_t t_exit;
  int64_t victim_call_ns; /* how long rank 1's queued all_reduce call took (with_call_queued) */
  drep r[MAXR];
} dshared;

typedef struct darg {
  dshared *sh;
  int variant; /* 0: exits before the call; 1: exits with the call queued behind a spin */
  int ndev;
} darg;

#define DEATH_COUNT 300007

static int death_main(cc_comm *c, void *argp) {
  darg *a = (darg *)argp;
  dshared *sh = a->sh;
  int me = cc_comm_rank(c), dev = me % (a->ndev > 0 ? a->ndev : 1);
  drep *r = &sh->r[me];
  cc_cuda_comm *g = NULL;
  cudaStream_t s;
  float *buf = NULL;
  cc_result rc;
  int64_t deadline;
  cudaError_t e;
  if (cudaSetDevice(dev) != cudaSuccess || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return 1;
  if (cc_cuda_comm_init(c, dev, &g) != CC_OK) {
    snprintf(r->err, sizeof r->err, "cc_cuda_comm_init: %.200s", cc_comm_last_error(c));
    return 1;
  }
  if (cc_cuda_malloc(g, (void **)&buf, DEATH_COUNT * sizeof(float)) != CC_OK ||
      cudaMemsetAsync(buf, 0, DEATH_COUNT * sizeof(float), s) != cudaSuccess) {
    snprintf(r->err, sizeof r->err, "setup: %.200s", cc_cuda_comm_last_error(g));
    return 1;
  }
  /* one call that works, so that every peer has mapped the buffers */
  rc = cc_cuda_all_reduce(g, buf, buf, DEATH_COUNT, CC_FLOAT32, CC_SUM, s);
  if (rc != CC_OK || cudaStreamSynchronize(s) != cudaSuccess) {
    snprintf(r->err, sizeof r->err, "warm-up all_reduce: %.60s (%.150s)", cc_strerror(rc),
             cc_cuda_comm_last_error(g));
    return 1;
  }
  r->init_ok = 1;
  if (me == 1) {
    if (a->variant == 1) {
      int64_t t0;
      stream_spin(s, 2000000000ull); /* 2 s: the call below is still queued when we exit */
      t0 = now_ns();
      cc_cuda_all_reduce(g, buf, buf, DEATH_COUNT, CC_FLOAT32, CC_SUM, s);
      __atomic_store_n(&sh->victim_call_ns, now_ns() - t0, __ATOMIC_SEQ_CST);
    }
    __atomic_store_n(&sh->t_exit, now_ns(), __ATOMIC_SEQ_CST);
    _exit(3);
  }
  r->t_call0 = now_ns();
  r->call_rc = cc_cuda_all_reduce(g, buf, buf, DEATH_COUNT, CC_FLOAT32, CC_SUM, s);
  r->t_call1 = now_ns();
  snprintf(r->err, sizeof r->err, "%.200s", cc_cuda_comm_last_error(g));
  e = cudaStreamSynchronize(s);
  r->t_sync1 = now_ns();
  r->sync_err = (int)e;
  snprintf(r->sync_msg, sizeof r->sync_msg, "%.120s", cudaGetErrorString(e));
  /* the watchdog's verdict: poll for up to 15 s */
  deadline = now_ns() + 15 * 1000000000LL;
  do {
    r->check_rc = cc_cuda_comm_check(g);
    if (r->check_rc != CC_OK) break;
    tu_sleep_us(10000);
  } while (now_ns() < deadline);
  r->t_check = now_ns();
  if (r->call_rc == CC_OK) snprintf(r->err, sizeof r->err, "%.200s", cc_cuda_comm_last_error(g));
  r->after_rc = cc_cuda_all_reduce(g, buf, buf, 1, CC_FLOAT32, CC_SUM, s);
  cudaStreamSynchronize(s);
  r->t_after = now_ns();
  cc_cuda_free(g, buf);
  r->destroy_rc = cc_cuda_comm_destroy(g);
  r->t_destroy = now_ns();
  __atomic_store_n(&r->reached, 1, __ATOMIC_SEQ_CST);
  return 0;
}

/* append to a message, never past cap */
static void app(char *buf, size_t cap, size_t *m, const char *fmt, ...) {
  va_list ap;
  int k;
  if (*m >= cap - 1) return;
  va_start(ap, fmt);
  k = vsnprintf(buf + *m, cap - *m, fmt, ap);
  va_end(ap);
  if (k > 0) *m = *m + (size_t)k < cap - 1 ? *m + (size_t)k : cap - 1;
}

/* "CC_ERR_PEER_LOST" (cc_strerror without its explanation) */
static const char *res_name(int rc) {
  static const char *const names[] = {"CC_OK", "CC_ERR_INVALID_ARG", "CC_ERR_MISMATCH",
                                      "CC_ERR_TIMEOUT", "CC_ERR_PEER_LOST", "CC_ERR_ABORTED",
                                      "CC_ERR_SYSTEM", "CC_ERR_AUTH", "CC_ERR_NO_MEMORY",
                                      "CC_ERR_UNSUPPORTED"};
  return rc >= 0 && rc < (int)(sizeof names / sizeof names[0]) ? names[rc] : "?";
}

static int lost_code(int rc) {
  return rc == CC_ERR_PEER_LOST || rc == CC_ERR_TIMEOUT || rc == CC_ERR_ABORTED;
}

static void run_death(int variant) {
  static darg a;
  const int n = 3;
  char name[120], why[600];
  int rc, i, ok = 1;
  size_t m = 0;
  const char *old_to = getenv("CC_TIMEOUT"), *old_grace = getenv("CC_SPAWN_GRACE_MS");
  char save_to[64], save_grace[64];
  snprintf(save_to, sizeof save_to, "%s", old_to ? old_to : "");
  snprintf(save_grace, sizeof save_grace, "%s", old_grace ? old_grace : "");
  const char *what = variant ? "rank 1 queued an all_reduce behind a 2 s spin kernel, then _exit(3)"
                             : "rank 1 _exit(3)ed instead of calling all_reduce";
  snprintf(name, sizeof name, "cuda %sn=3 peer_exit %s", w_prefix(W_IPC),
           variant ? "with_call_queued" : "before_call");
  memset(&a, 0, sizeof a);
  a.sh = (dshared *)tu_shared_alloc(sizeof(dshared));
  if (!a.sh) {
    tu_fail(name, "cannot map shared memory");
    return;
  }
  a.variant = variant;
  a.ndev = g_ndev;
  setenv("CC_TIMEOUT", "5", 1);
  setenv("CC_SPAWN_GRACE_MS", "25000", 1); /* the survivors report before cc_spawn stops them */
  rc = tu_spawn(n, death_main, &a);
  if (old_to) setenv("CC_TIMEOUT", save_to, 1); else unsetenv("CC_TIMEOUT");
  if (old_grace) setenv("CC_SPAWN_GRACE_MS", save_grace, 1); else unsetenv("CC_SPAWN_GRACE_MS");
  why[0] = 0;
#define WHY(...) (app(why, sizeof why, &m, __VA_ARGS__), ok = 0)
  if (!a.sh->t_exit) WHY("rank 1 never got to exit (%s); ", a.sh->r[1].err[0] ? a.sh->r[1].err : "setup failed");
  for (i = 0; i < n && ok; i++) {
    const drep *r = &a.sh->r[i];
    double t_detect, t_sync;
    int seen;
    if (i == 1) continue;
    if (!r->init_ok) { WHY("rank %d: setup failed: %s; ", i, r->err); break; }
    if (!r->reached) { WHY("rank %d never finished (it hung in the call, cudaStreamSynchronize, "
                           "cc_cuda_comm_check or cc_cuda_comm_destroy and was killed); ", i); break; }
    seen = r->call_rc != CC_OK ? r->call_rc : r->check_rc;
    t_detect = (double)((r->call_rc != CC_OK ? r->t_call1 : r->t_check) - a.sh->t_exit) / 1e9;
    t_sync = (double)(r->t_sync1 - a.sh->t_exit) / 1e9;
    if (seen == CC_OK && variant == 1 && a.sh->victim_call_ns > 1000000000LL)
      WHY("rank 1's all_reduce took %.2f s: it waited for its stream (held by a 2 s spin kernel) "
          "instead of returning once queued, so nothing was in flight when it exited; ",
          (double)a.sh->victim_call_ns / 1e9);
    else if (seen == CC_OK)
      WHY("rank %d: the all_reduce returned CC_OK and cc_cuda_comm_check still said CC_OK 15 s "
          "later; ", i);
    else if (!lost_code(seen))
      WHY("rank %d: reported %s, want CC_ERR_PEER_LOST, CC_ERR_TIMEOUT or CC_ERR_ABORTED; ", i,
          res_name(seen));
    else if (t_detect > 8.0)
      WHY("rank %d: noticed it %.1f s after rank 1 exited (CC_TIMEOUT=5); ", i, t_detect);
    if (t_sync > 10.0)
      WHY("rank %d: cudaStreamSynchronize returned %.1f s after rank 1 exited; ", i, t_sync);
    if (r->after_rc == CC_OK) WHY("rank %d: an all_reduce after the failure returned CC_OK; ", i);
    if (ok && i == 0)
      app(why, sizeof why, &m,
                            "rank 0: call %s, check %s, noticed after %.2f s, stream drained after "
                            "%.2f s (%s), later call %s, destroy %s; ",
                            res_name(r->call_rc), res_name(r->check_rc), t_detect, t_sync,
                            r->sync_msg, res_name(r->after_rc), res_name(r->destroy_rc));
  }
  if (ok && rc == 0) WHY("cc_spawn returned 0 although rank 1 exited with status 3; ");
#undef WHY
  if (m > 2 && m < sizeof why) why[m - 2] = 0; /* drop the last "; " */
  if (ok)
    tu_pass(name, "%s, CC_TIMEOUT=5: %s; cc_spawn returned %d", what, why, rc);
  else
    tu_fail(name, "%s, CC_TIMEOUT=5: %s (cc_spawn returned %d; rank 0 saw: %s)", what, why, rc,
            a.sh->r[0].err);
  tu_shared_free(a.sh, sizeof(dshared));
}

/* ------------------------------------------------------------ regressions
 *
 * Each in a world of its own (fresh processes), for a defect each; each
 * failed before its fix (the commit that fixed it says how):
 *
 *   two_streams        calls alternate between two streams with no
 *                      synchronization between them; the first stream is
 *                      held back 50 ms, so that the second runs ahead
 *   p2p_staged_sends   a group of four sends from managed memory (which CUDA
 *                      IPC refuses, so each goes through the sender's
 *                      scratch), growing sizes
 *   one_rank_oom       rank 0's cc_cuda_malloc of 2^60 bytes fails; then a
 *                      collective whose scratch rank 0 cannot allocate
 *                      (emulation: CC_EMU_MEM_LIMIT); every rank returns
 *                      within 2 s, the communicator goes on working
 *   context_killed     rank 1's kernel faults (a sticky CUDA error); every
 *                      rank learns it within 2 s, destroy returns
 *   free_mapped        cc_cuda_malloc'd buffers freed after use (12 at once),
 *                      scratch growth, destroy: no memory is freed while a
 *                      peer still has it open (the emulation counts it)
 *   misaligned         element pointers not aligned to their element:
 *                      CC_ERR_INVALID_ARG on every rank, still usable
 *   graph_capture      a call on a capturing stream: CC_ERR_UNSUPPORTED on
 *                      every rank, still usable
 *   visible_devices    each rank sees only its own GPU (CUDA_VISIBLE_DEVICES):
 *                      ipc mode; MIG instances of one GPU: staged mode
 *                      (emulation: CC_EMU_DEVICES, CC_EMU_MIG)
 *   no_device_sync     another stream of the rank is busy for 1 s; calls
 *                      that grow the scratch and evict mapped buffers return
 *                      at once
 *   user_error         the user's own pending CUDA error is neither taken for
 *                      the library's nor cleared
 *   flush              two-shot all_reduce writes into the peers' memory: the
 *                      waits that publish it flush remote writes (emulation);
 *                      each barrier is one cuStreamBatchMemOp (and, with
 *                      flush_unbatched, one call per operation without it)
 *   evict_in_call      one group of 40 receives from one peer, each from its
 *                      own cudaMalloc (the cache maps 32 per peer), and a
 *                      call right after it: a mapping the group itself
 *                      evicts is closed only after the group's copies
 *
 * One world alone: test_cuda_emu regress:NAME. */

typedef struct rshared {
  int nfail[MAXR], done[MAXR];
  char fail[MAXR][400];
  char note[400];
  int64_t t_mark;                      /* when a rank failed on purpose */
} rshared;

typedef struct rctx {
  cc_comm *c;
  rshared *sh;
  int me, n;
  cc_cuda_comm *g;
  cudaStream_t s;
} rctx;

typedef void (*reg_fn)(rctx *r);
typedef struct rarg {
  rshared *sh;
  reg_fn fn;
} rarg;

static void rfail(rctx *r, const char *fmt, ...) {
  va_list ap;
  if (r->sh->nfail[r->me]++) return;   /* the first one says it */
  va_start(ap, fmt);
  vsnprintf(r->sh->fail[r->me], sizeof r->sh->fail[r->me], fmt, ap);
  va_end(ap);
}

static void rnote(rctx *r, const char *fmt, ...) {
  va_list ap;
  if (r->me != 0) return;
  va_start(ap, fmt);
  vsnprintf(r->sh->note, sizeof r->sh->note, fmt, ap);
  va_end(ap);
}

/* cudaSetDevice, a stream, cc_cuda_comm_init: 1 when all worked. Where there
 * are several devices, another one is current when init is called, and must
 * be again after it. */
static int rinit(rctx *r) {
  int ndev = 1, other, cur = -1;
  cc_result rc;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) ndev = 1;
  other = (r->me + 1) % ndev;
  if (cudaSetDevice(r->me % ndev) != cudaSuccess ||
      cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking) != cudaSuccess || cudaSetDevice(other) != cudaSuccess) {
    rfail(r, "cudaSetDevice or cudaStreamCreateWithFlags failed");
    return 0;
  }
  if ((rc = cc_cuda_comm_init(r->c, r->me % ndev, &r->g)) != CC_OK) {
    rfail(r, "cc_cuda_comm_init: %s (%s)", cc_strerror(rc), cc_comm_last_error(r->c));
    return 0;
  }
  if (cudaGetDevice(&cur) != cudaSuccess || cur != other) {
    rfail(r, "cc_cuda_comm_init(device %d) left device %d current; the caller's was %d", r->me % ndev, cur, other);
    return 0;
  }
  if (cudaSetDevice(r->me % ndev) != cudaSuccess) {
    rfail(r, "cudaSetDevice(%d) failed", r->me % ndev);
    return 0;
  }
  return 1;
}

static int rok(rctx *r, cc_result rc, const char *what) {
  if (rc == CC_OK) return 1;
  rfail(r, "%s returned %s (%s)", what, res_name(rc), r->g ? cc_cuda_comm_last_error(r->g) : "");
  return 0;
}
static int rcu(rctx *r, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 1;
  rfail(r, "%s: %s", what, cudaGetErrorName(e));
  return 0;
}

static void rdestroy(rctx *r) {
  if (r->g) {
    cc_result rc = cc_cuda_comm_destroy(r->g);
    if (rc != CC_OK) rfail(r, "cc_cuda_comm_destroy returned %s (%s)", res_name(rc), cc_comm_last_error(r->c));
    r->g = NULL;
  }
  if (r->s) cudaStreamDestroy(r->s);
}

static int reg_main(cc_comm *c, void *argp) {
  rarg *a = (rarg *)argp;
  rctx r;
  memset(&r, 0, sizeof r);
  r.c = c;
  r.sh = a->sh;
  r.me = cc_comm_rank(c);
  r.n = cc_comm_size(c);
  a->fn(&r);
  __atomic_store_n(&a->sh->done[r.me], 1, __ATOMIC_SEQ_CST);
  return 0;
}

/* Run fn on n ranks with environment `env` ("K=V K=V", restored after) and
 * report it as one line. */
static void run_reg(const char *name, int n, reg_fn fn, const char *env, const char *what) {
  static rarg a;
  char full[160], saved[8][160], keys[8][64], buf[400], *tok, *save = NULL;
  int had[8], nk = 0, i, rc, bad = 0;
  size_t m = 0;
  snprintf(full, sizeof full, "cuda %sn=%d regress %s", w_prefix(W_IPC), n, name);
  a.sh = (rshared *)tu_shared_alloc(sizeof(rshared));
  if (!a.sh) {
    tu_fail(full, "cannot map shared memory");
    return;
  }
  a.fn = fn;
  snprintf(buf, sizeof buf, "%s", env ? env : "");
  for (tok = strtok_r(buf, " ", &save); tok && nk < 8; tok = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(tok, '=');
    const char *old;
    if (!eq) continue;
    *eq = 0;
    snprintf(keys[nk], sizeof keys[nk], "%s", tok);
    old = getenv(tok);
    had[nk] = old != NULL;
    snprintf(saved[nk], sizeof saved[nk], "%s", old ? old : "");
    setenv(tok, eq + 1, 1);
    nk++;
  }
  rc = tu_spawn(n, reg_main, &a);
  for (i = 0; i < nk; i++) {
    if (had[i]) setenv(keys[i], saved[i], 1);
    else unsetenv(keys[i]);
  }
  buf[0] = 0;
  for (i = 0; i < n; i++) {
    if (!a.sh->done[i]) {
      app(buf, sizeof buf, &m, "rank %d did not finish (%s); ", i, a.sh->nfail[i] ? a.sh->fail[i] : "hung or crashed");
      bad = 1;
    } else if (a.sh->nfail[i]) {
      app(buf, sizeof buf, &m, "rank %d: %s%s; ", i, a.sh->fail[i],
          a.sh->nfail[i] > 1 ? " (and more)" : "");
      bad = 1;
    }
  }
  if (!bad && rc != 0) {
    app(buf, sizeof buf, &m, "cc_spawn returned %d; ", rc);
    bad = 1;
  }
  if (bad)
    tu_fail(full, "%s: %s", what, buf);
  else
    tu_pass(full, "%s%s%s", what, a.sh->note[0] ? "; " : "", a.sh->note);
  tu_shared_free(a.sh, sizeof(rshared));
}

/* float32 inputs of rank r for case `seed`, count elements, into device p on s */
static int rput(rctx *r, cudaStream_t s, void *p, uint64_t seed, int rank, size_t count, float *host) {
  tr_fill(host, CC_FLOAT32, TR_GEN_ANY, seed, rank, 0, count);
  return rcu(r, cudaMemcpyAsync(p, host, count * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
}

/* device p (count float32) must be the sum over ranks of case seed's inputs */
static void rcheck_sum(rctx *r, const char *what, const void *p, uint64_t seed, size_t count) {
  float *got = (float *)malloc(count * 4 + 4), *want = (float *)malloc(count * 4 + 4);
  char m[300];
  tr_reference(want, CC_FLOAT32, CC_SUM, TR_GEN_ANY, seed, r->n, 0, count);
  if (rcu(r, cudaMemcpy(got, p, count * 4, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
      tr_compare(got, want, count, CC_FLOAT32, m, sizeof m))
    rfail(r, "%s: %s", what, m);
  free(got);
  free(want);
}

/* ---- two_streams */
#define TS_CALLS 12

/* reg_two_streams' streams and buffers, and where each call's data lies in the arena. */
typedef struct ts_state {
  cudaStream_t st[2], s3;
  unsigned char *arena, *small;
  size_t counts[TS_CALLS], offs[TS_CALLS], tot;
  float *host;
  int kind[TS_CALLS];   /* 0: all_reduce in place, 1: out of place, 2: all_gather */
} ts_state;

/* Each call's kind and count, and its place in the arena (tot: the arena's size). */
static void ts_layout(rctx *r, ts_state *ts) {
  size_t i;
  for (i = 0; i < TS_CALLS; i++) {
    ts->kind[i] = (int)(i % 3);
    ts->counts[i] = i % 4 == 3 ? 70001 : 1000 + 777 * i;  /* 70001 floats: above the one-shot limit */
    ts->offs[i] = ts->tot;
    ts->tot += (ts->counts[i] * (ts->kind[i] == 2 ? (size_t)r->n + 1 : 2) * 4 + 255) & ~(size_t)255;
  }
}

/* The calls, alternating between the two streams: 0 when one failed. */
static int ts_queue(rctx *r, ts_state *ts) {
  size_t i;
  for (i = 0; i < TS_CALLS; i++) {
    cudaStream_t s = ts->st[i & 1];
    unsigned char *in = ts->arena + ts->offs[i], *out = in + ts->counts[i] * 4;
    cc_result rc;
    if (!rput(r, s, in, 500 + i, r->me, ts->counts[i], ts->host)) return 0;
    if (ts->kind[i] == 0) rc = cc_cuda_all_reduce(r->g, in, in, ts->counts[i], CC_FLOAT32, CC_SUM, s);
    else if (ts->kind[i] == 1) rc = cc_cuda_all_reduce(r->g, in, out, ts->counts[i], CC_FLOAT32, CC_SUM, s);
    else rc = cc_cuda_all_gather(r->g, in, out, ts->counts[i], CC_FLOAT32, s);
    if (!rok(r, rc, ts->kind[i] == 2 ? "cc_cuda_all_gather" : "cc_cuda_all_reduce")) return 0;
  }
  return 1;
}

/* Every call's result, until the first failure. */
static void ts_check(rctx *r, const ts_state *ts) {
  size_t i;
  int k;
  for (i = 0; i < TS_CALLS && !r->sh->nfail[r->me]; i++) {
    char what[80];
    unsigned char *in = ts->arena + ts->offs[i], *out = in + ts->counts[i] * 4;
    size_t count = ts->counts[i];
    snprintf(what, sizeof what, "call %zu (stream %zu, %s, %zu floats)", i, i & 1,
             ts->kind[i] == 0 ? "all_reduce in place" : ts->kind[i] == 1 ? "all_reduce" : "all_gather", count);
    if (ts->kind[i] < 2) {
      rcheck_sum(r, what, ts->kind[i] == 0 ? in : out, 500 + i, count);
    } else {
      float *got = (float *)malloc(count * 4 * (size_t)r->n), *want = (float *)malloc(count * 4);
      char m[300];
      if (rcu(r, cudaMemcpy(got, out, count * 4 * (size_t)r->n, cudaMemcpyDeviceToHost), "cudaMemcpy"))
        for (k = 0; k < r->n; k++) {
          tr_fill(want, CC_FLOAT32, TR_GEN_ANY, 500 + i, k, 0, count);
          if (tr_compare(got + (size_t)k * count, want, count, CC_FLOAT32, m, sizeof m)) {
            rfail(r, "%s: block %d: %s", what, k, m);
            break;
          }
        }
      free(got);
      free(want);
    }
  }
}

/* The stream of the latest call is destroyed; the arena is freed (the peers
 * close their mappings at their next call); that call is on a new stream. */
static void ts_after_destroy(rctx *r, ts_state *ts) {
  if (r->sh->nfail[r->me] || !rput(r, ts->st[0], ts->small, 598, r->me, 1000, ts->host) ||
      !rok(r, cc_cuda_all_reduce(r->g, ts->small, ts->small, 1000, CC_FLOAT32, CC_SUM, ts->st[0]), "all_reduce") ||
      !rcu(r, cudaStreamSynchronize(ts->st[0]), "cudaStreamSynchronize"))
    return;
  cudaStreamDestroy(ts->st[0]);
  ts->st[0] = 0;
  if (!rok(r, cc_cuda_free(r->g, ts->arena), "cc_cuda_free")) return;
  ts->arena = NULL;
  if (!rcu(r, cudaStreamCreateWithFlags(&ts->s3, cudaStreamNonBlocking), "cudaStreamCreateWithFlags") ||
      !rput(r, ts->s3, ts->small, 599, r->me, 1000, ts->host) ||
      !rok(r, cc_cuda_all_reduce(r->g, ts->small, ts->small, 1000, CC_FLOAT32, CC_SUM, ts->s3),
           "all_reduce on a new stream after the last call's stream was destroyed") ||
      !rcu(r, cudaStreamSynchronize(ts->s3), "cudaStreamSynchronize"))
    return;
  rcheck_sum(r, "all_reduce on a new stream", ts->small, 599, 1000);
  rnote(r, "%d calls alternating between two streams, no synchronization between them; then the last call's stream "
        "destroyed, a buffer freed, and a call on a new stream", TS_CALLS);
}

static void reg_two_streams(rctx *r) {
  ts_state ts;
  memset(&ts, 0, sizeof ts);
  if (!rinit(r)) return;
  ts_layout(r, &ts);
  ts.host = (float *)malloc(70001 * 4);
  if (!rcu(r, cudaStreamCreateWithFlags(&ts.st[0], cudaStreamNonBlocking), "cudaStreamCreateWithFlags") ||
      !rcu(r, cudaStreamCreateWithFlags(&ts.st[1], cudaStreamNonBlocking), "cudaStreamCreateWithFlags") ||
      !rok(r, cc_cuda_malloc(r->g, (void **)&ts.arena, ts.tot), "cc_cuda_malloc") ||
      !rok(r, cc_cuda_malloc(r->g, (void **)&ts.small, 4000), "cc_cuda_malloc"))
    goto out;
  /* stream 0 of rank 0 starts late: stream 1's calls run ahead of it */
  if (r->me == 0 && !rcu(r, stream_spin(ts.st[0], 50000000ull), "spin kernel")) goto out;
  if (!ts_queue(r, &ts)) goto out;
  if (!rcu(r, cudaStreamSynchronize(ts.st[0]), "cudaStreamSynchronize") ||
      !rcu(r, cudaStreamSynchronize(ts.st[1]), "cudaStreamSynchronize"))
    goto out;
  ts_check(r, &ts);
  ts_after_destroy(r, &ts);
out:
  if (ts.arena) cc_cuda_free(r->g, ts.arena);
  if (ts.small) cc_cuda_free(r->g, ts.small);
  if (ts.s3) cudaStreamDestroy(ts.s3);
  free(ts.host);
  rdestroy(r);
  if (ts.st[0]) cudaStreamDestroy(ts.st[0]);
  if (ts.st[1]) cudaStreamDestroy(ts.st[1]);
}

/* ---- p2p_staged_sends */
static void reg_p2p_staged(rctx *r) {
  static const size_t sizes[4] = {1000, 300001, 17, 700001};
  int right = (r->me + 1) % r->n, left = (r->me + r->n - 1) % r->n, i;
  float *sbuf[4] = {NULL, NULL, NULL, NULL}, *rbuf = NULL, *host = NULL;
  size_t roff[4], tot = 0;
  cc_result rc = CC_OK, rc2;
  if (!rinit(r)) return;
  for (i = 0; i < 4; i++) {
    roff[i] = tot;
    tot += (sizes[i] + 63) & ~(size_t)63;
  }
  host = (float *)malloc(700001 * 4);
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&rbuf, tot * 4), "cc_cuda_malloc")) goto out;
  for (i = 0; i < 4; i++)
    if (!rcu(r, cudaMallocManaged((void **)&sbuf[i], sizes[i] * 4, cudaMemAttachGlobal), "cudaMallocManaged") ||
        !rput(r, r->s, sbuf[i], 900 + (uint64_t)i, r->me, sizes[i], host))
      goto out;
  if (!rok(r, cc_cuda_group_begin(r->g), "cc_cuda_group_begin")) goto out;
  for (i = 0; i < 4 && rc == CC_OK; i++) rc = cc_cuda_send(r->g, sbuf[i], sizes[i], CC_FLOAT32, right, i, r->s);
  for (i = 0; i < 4 && rc == CC_OK; i++) rc = cc_cuda_recv(r->g, rbuf + roff[i], sizes[i], CC_FLOAT32, left, i, r->s);
  rc2 = cc_cuda_group_end(r->g);
  if (!rok(r, rc, "cc_cuda_send/recv") || !rok(r, rc2, "cc_cuda_group_end") ||
      !rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize"))
    goto out;
  for (i = 0; i < 4; i++) {
    float *got = (float *)malloc(sizes[i] * 4);
    char m[300];
    tr_fill(host, CC_FLOAT32, TR_GEN_ANY, 900 + (uint64_t)i, left, 0, sizes[i]);
    if (rcu(r, cudaMemcpy(got, rbuf + roff[i], sizes[i] * 4, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
        tr_compare(got, host, sizes[i], CC_FLOAT32, m, sizeof m))
      rfail(r, "message %d (%zu floats) from rank %d: %s", i, sizes[i], left, m);
    free(got);
  }
  rnote(r, "a ring, 4 messages each way in one group from cudaMallocManaged memory (1000, 300001, 17, 700001 floats)");
out:
  for (i = 0; i < 4; i++)
    if (sbuf[i]) cudaFree(sbuf[i]);
  if (rbuf) cc_cuda_free(r->g, rbuf);
  free(host);
  rdestroy(r);
}

/* ---- one_rank_oom */
static void reg_oom(rctx *r) {
  float *buf = NULL, *host = NULL;
  void *huge = NULL;
  size_t count = 40000;
  double t0, dt;
  cc_result rc;
  if (!rinit(r)) return;
  host = (float *)malloc(count * 4);
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&buf, 2 * count * 4), "cc_cuda_malloc")) goto out;
  if (r->me == 0) {
    rc = cc_cuda_malloc(r->g, &huge, (size_t)1 << 60);
    if (rc != CC_ERR_NO_MEMORY) rfail(r, "cc_cuda_malloc of 2^60 bytes returned %s, want CC_ERR_NO_MEMORY", res_name(rc));
  }
  /* a failed cc_cuda_malloc is not a failed communicator */
  if (!rput(r, r->s, buf, 41, r->me, count, host)) goto out;
  t0 = tu_now();
  rc = cc_cuda_all_reduce(r->g, buf, buf + count, count, CC_FLOAT32, CC_SUM, r->s);
  dt = tu_now() - t0;
  if (!rok(r, rc, "all_reduce after rank 0's failed cc_cuda_malloc")) goto out;
  if (dt > 2.0) rfail(r, "all_reduce after rank 0's failed cc_cuda_malloc took %.1f s", dt);
  if (!rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize")) goto out;
  rcheck_sum(r, "all_reduce after rank 0's failed cc_cuda_malloc", buf + count, 41, count);
  if (!emulated()) {
    rnote(r, "rank 0's cc_cuda_malloc(2^60): CC_ERR_NO_MEMORY, the next all_reduce right on every rank (a collective's "
          "own allocation failing on one rank needs the emulation's memory limit)");
    goto out;
  }
  /* the scratch of an in-place all_reduce cannot be had on rank 0 */
  if (!rput(r, r->s, buf, 42, r->me, count, host)) goto out;
  if (r->me == 0) setenv("CC_EMU_MEM_LIMIT", "1", 1);
  t0 = tu_now();
  rc = cc_cuda_all_reduce(r->g, buf, buf, count, CC_FLOAT32, CC_SUM, r->s);
  dt = tu_now() - t0;
  if (r->me == 0) unsetenv("CC_EMU_MEM_LIMIT");
  if (rc != CC_ERR_NO_MEMORY)
    rfail(r, "in-place all_reduce whose scratch rank 0 cannot allocate returned %s after %.2f s, want "
          "CC_ERR_NO_MEMORY on every rank (%s)", res_name(rc), dt, cc_cuda_comm_last_error(r->g));
  else if (dt > 2.0)
    rfail(r, "in-place all_reduce whose scratch rank 0 cannot allocate returned after %.1f s", dt);
  cudaStreamSynchronize(r->s);
  /* and the communicator still works */
  if (!rput(r, r->s, buf, 43, r->me, count, host)) goto out;
  t0 = tu_now();
  rc = cc_cuda_all_reduce(r->g, buf, buf, count, CC_FLOAT32, CC_SUM, r->s);
  if (!rok(r, rc, "in-place all_reduce after the failed one") || !rcu(r, cudaStreamSynchronize(r->s), "sync")) goto out;
  rcheck_sum(r, "in-place all_reduce after the failed one", buf, 43, count);
  rnote(r, "rank 0's cc_cuda_malloc(2^60): CC_ERR_NO_MEMORY, the next all_reduce right on every rank; rank 0 without "
        "memory for a collective's scratch: CC_ERR_NO_MEMORY on every rank within 2 s, the next call right");
out:
  if (buf) cc_cuda_free(r->g, buf);
  free(host);
  t0 = tu_now();
  rdestroy(r);
  if (tu_now() - t0 > 2.0) rfail(r, "cc_cuda_comm_destroy took %.1f s", tu_now() - t0);
}

/* ---- context_killed */
static __global__ void tc_fault_kernel(int *p) { *p = 1; }
static void tc_fault_twin(void **args, dim3 grid, dim3 block) {
  int *p = *(int *const *)args[0];
  (void)grid, (void)block;
  *(volatile int *)p = 1;
}

static void reg_context(rctx *r) {
  float *buf = NULL, *host = NULL;
  size_t count = 5000;
  double t0, t_seen = -1, t_dead;
  cc_result rc;
  int i;
  if (!rinit(r)) return;
  host = (float *)malloc(count * 4);
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&buf, count * 4), "cc_cuda_malloc") || !rput(r, r->s, buf, 7, r->me, count, host) ||
      !rok(r, cc_cuda_all_reduce(r->g, buf, buf, count, CC_FLOAT32, CC_SUM, r->s), "warm-up all_reduce") ||
      !rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize"))
    goto out;
  if (r->me == 1) {                    /* 300 ms from now, a kernel faults; behind it an all_reduce */
    int *bad = (int *)(uintptr_t)64;
    void *args[1] = {&bad};
    if (!rcu(r, stream_spin(r->s, 300000000ull), "spin kernel") ||
        !rcu(r, cudaLaunchKernel((const void *)tc_fault_kernel, dim3(1), dim3(1), args, 0, r->s), "fault kernel"))
      goto out;
  }
  rc = cc_cuda_all_reduce(r->g, buf, buf, count, CC_FLOAT32, CC_SUM, r->s);
  if (!rok(r, rc, "all_reduce queued before the fault")) goto out;
  t0 = tu_now();
  if (r->me == 1) {                    /* the context dies; this rank then does nothing for a while */
    if (cudaStreamSynchronize(r->s) == cudaSuccess) {
      rfail(r, "a kernel that writes to address 64 did not kill the context");
      goto out;
    }
    __atomic_store_n(&r->sh->t_mark, (int64_t)(tu_now() * 1e9), __ATOMIC_SEQ_CST);
    for (i = 0; i < r->n; i++)
      while (i != 1 && !__atomic_load_n(&r->sh->done[i], __ATOMIC_SEQ_CST) && tu_now() - t0 < 15) tu_sleep_us(10000);
  } else {                             /* the others' streams wait for rank 1's */
    cudaStreamSynchronize(r->s);
    while (t_seen < 0 && tu_now() - t0 < 15) {
      if (cc_cuda_comm_check(r->g) != CC_OK) t_seen = tu_now();
      else tu_sleep_us(10000);
    }
    while (!__atomic_load_n(&r->sh->t_mark, __ATOMIC_SEQ_CST) && tu_now() - t0 < 15) tu_sleep_us(1000);
    t_dead = (double)__atomic_load_n(&r->sh->t_mark, __ATOMIC_SEQ_CST) / 1e9;
    if (t_seen < 0)
      rfail(r, "nothing reported rank 1's dead context within 15 s (cudaStreamSynchronize and cc_cuda_comm_check)");
    else if (t_seen - t_dead > 2.0)
      rfail(r, "learned of rank 1's dead context %.1f s after it died", t_seen - t_dead);
    else if (cc_cuda_all_reduce(r->g, buf, buf, count, CC_FLOAT32, CC_SUM, r->s) == CC_OK)
      rfail(r, "a call after the failure returned CC_OK");
  }
  rnote(r, "rank 1's kernel faulted while every rank's all_reduce was queued; the others' streams were released "
        "and cc_cuda_comm_check failed within 2 s; destroy returned within 2 s");
out:
  free(host);
  if (r->me != 1) __atomic_store_n(&r->sh->done[r->me], 1, __ATOMIC_SEQ_CST);
  if (buf) cc_cuda_free(r->g, buf);
  t0 = tu_now();
  if (r->g) {
    cc_cuda_comm_destroy(r->g);        /* fails (the communicator failed): it must return */
    r->g = NULL;
  }
  if (tu_now() - t0 > 2.0) rfail(r, "cc_cuda_comm_destroy took %.1f s", tu_now() - t0);
}

/* ---- free_mapped */
static void reg_free_mapped(rctx *r) {
  float *bufs[12], *host = NULL;
  long before = cc_emu_count ? cc_emu_count("freed_while_mapped") : 0, after;
  int i, round;
  size_t count;
  memset(bufs, 0, sizeof bufs);
  if (!rinit(r)) return;
  host = (float *)malloc(((size_t)1 << 20) * 4);
  for (round = 0; round < 3 && !r->sh->nfail[r->me]; round++) {
    /* twelve buffers, each used once, all freed before the next call */
    for (i = 0; i < 12; i++) {
      count = 1000 + 100 * (size_t)i + 10 * (size_t)round;
      if (!rok(r, cc_cuda_malloc(r->g, (void **)&bufs[i], count * 4), "cc_cuda_malloc") ||
          !rput(r, r->s, bufs[i], 60 + (uint64_t)i, r->me, count, host) ||
          !rok(r, cc_cuda_all_reduce(r->g, bufs[i], bufs[i], count, CC_FLOAT32, CC_SUM, r->s), "all_reduce"))
        break;
    }
    if (!rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize")) break;
    for (i = 0; i < 12; i++)
      if (bufs[i]) {
        if (round == 2) rcheck_sum(r, "all_reduce in place", bufs[i], 60 + (uint64_t)i, 1000 + 100 * (size_t)i + 20);
        rok(r, cc_cuda_free(r->g, bufs[i]), "cc_cuda_free");
        bufs[i] = NULL;
      }
    /* the scratch grows: in-place all_to_all of 1, 2, 3 MiB per rank */
    count = ((size_t)(round + 1) << 18) / (size_t)r->n * (size_t)r->n;
    {
      float *big = NULL;
      if (!rok(r, cc_cuda_malloc(r->g, (void **)&big, count * 4), "cc_cuda_malloc") ||
          !rok(r, cc_cuda_all_to_all(r->g, big, big, count / (size_t)r->n, CC_FLOAT32, r->s), "all_to_all in place") ||
          !rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize"))
        break;
      rok(r, cc_cuda_free(r->g, big), "cc_cuda_free");
    }
  }
  free(host);
  rdestroy(r);
  if (!cc_emu_count) {
    rnote(r, "3 rounds of 12 buffers used and freed, scratch growth, destroy (no count of frees while mapped "
          "without the emulation)");
    return;
  }
  after = cc_emu_count("freed_while_mapped");
  if (after != before)
    rfail(r, "%ld buffers of this rank were freed while a peer still had them open (cudaIpcOpenMemHandle without "
          "cudaIpcCloseMemHandle first)", after - before);
  rnote(r, "3 rounds of 12 cc_cuda_malloc buffers used once and freed together, scratch growth, destroy: no buffer "
        "freed while a peer had it open");
}

/* ---- misaligned */
static void reg_misaligned(rctx *r) {
  static const struct { cc_dtype t; size_t off; int ok; } cases[] = {
    {CC_FLOAT32, 1, 0}, {CC_FLOAT32, 2, 0}, {CC_FLOAT64, 4, 0}, {CC_FLOAT16, 1, 0},
    {CC_INT64, 4, 0}, {CC_COMPLEX128, 4, 0}, {CC_COMPLEX128, 8, 1}, {CC_COMPLEX64, 4, 1}};
  unsigned char *a = NULL, *b = NULL;
  float *host = NULL;
  size_t i;
  cc_result rc;
  if (!rinit(r)) return;
  host = (float *)malloc(4096);
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&a, 65536), "cc_cuda_malloc") ||
      !rok(r, cc_cuda_malloc(r->g, (void **)&b, 65536), "cc_cuda_malloc") ||
      !rcu(r, cudaMemsetAsync(a, 0, 65536, r->s), "cudaMemsetAsync"))
    goto out;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rc = cc_cuda_all_reduce(r->g, a + cases[i].off, b, 100, cases[i].t, CC_SUM, r->s);
    if (cases[i].ok ? rc != CC_OK : rc != CC_ERR_INVALID_ARG)
      rfail(r, "all_reduce %s with sendbuf %zu bytes past an aligned address returned %s, want %s (%s)",
            tr_dtype_name(cases[i].t), cases[i].off, res_name(rc), cases[i].ok ? "CC_OK" : "CC_ERR_INVALID_ARG",
            cc_cuda_comm_last_error(r->g));
    rc = cc_cuda_reduce_scatter(r->g, a, b + cases[i].off, 10, cases[i].t, CC_SUM, r->s);
    if (cases[i].ok ? rc != CC_OK : rc != CC_ERR_INVALID_ARG)
      rfail(r, "reduce_scatter %s with recvbuf %zu bytes past an aligned address returned %s, want %s",
            tr_dtype_name(cases[i].t), cases[i].off, res_name(rc), cases[i].ok ? "CC_OK" : "CC_ERR_INVALID_ARG");
  }
  /* moving data needs no alignment */
  if (!rok(r, cc_cuda_all_gather(r->g, a + 1, b + 3, 33, CC_FLOAT32, r->s), "all_gather at odd addresses")) goto out;
  if (!rput(r, r->s, a, 77, r->me, 1000, host) ||
      !rok(r, cc_cuda_all_reduce(r->g, a, b, 1000, CC_FLOAT32, CC_SUM, r->s), "all_reduce after the refused ones") ||
      !rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize"))
    goto out;
  rcheck_sum(r, "all_reduce after the refused ones", b, 77, 1000);
  rnote(r, "reductions on element pointers off their element's alignment (float32 +1, +2; float64, int64 +4; "
        "float16 +1; complex128 +4): CC_ERR_INVALID_ARG on every rank; complex128 +8, complex64 +4 and an all_gather "
        "at odd addresses work; the communicator goes on");
out:
  free(host);
  if (a) cc_cuda_free(r->g, a);
  if (b) cc_cuda_free(r->g, b);
  rdestroy(r);
}

/* ---- graph_capture */
static void reg_capture(rctx *r) {
  float *buf = NULL, *host = NULL;
  cudaGraph_t graph = NULL;
  cc_result rc;
  cudaError_t e;
  if (!rinit(r)) return;
  host = (float *)malloc(4000);
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&buf, 8000), "cc_cuda_malloc")) goto out;
  if (!rcu(r, cudaStreamBeginCapture(r->s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture")) goto out;
  rc = cc_cuda_all_reduce(r->g, buf, buf + 1000, 1000, CC_FLOAT32, CC_SUM, r->s);
  e = cudaStreamEndCapture(r->s, &graph);
  if (rc != CC_ERR_UNSUPPORTED)
    rfail(r, "all_reduce on a capturing stream returned %s, want CC_ERR_UNSUPPORTED (%s)", res_name(rc),
          cc_cuda_comm_last_error(r->g));
  if (e != cudaSuccess) rfail(r, "cudaStreamEndCapture: %s (the call broke the capture)", cudaGetErrorName(e));
  if (graph) cudaGraphDestroy(graph);
  if (!rput(r, r->s, buf, 88, r->me, 1000, host) ||
      !rok(r, cc_cuda_all_reduce(r->g, buf, buf + 1000, 1000, CC_FLOAT32, CC_SUM, r->s), "all_reduce after") ||
      !rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize"))
    goto out;
  rcheck_sum(r, "all_reduce after the capture", buf + 1000, 88, 1000);
  rnote(r, "all_reduce on a capturing stream: CC_ERR_UNSUPPORTED on every rank, the capture intact, the next call right");
out:
  free(host);
  if (buf) cc_cuda_free(r->g, buf);
  rdestroy(r);
}

/* ---- capture_modes: graph captures made around the communicator, by another
 * thread (torch.cuda.graph's Global mode) and by the calling thread itself:
 * the watchdog and the calls must neither fail nor invalidate them */
typedef struct cap_helper {
  cudaStream_t s;
  void *buf;
  int hold_ms;                         /* >= 0: end the capture after it; -1: when `go` is set */
  int go;
  cudaError_t begin, end;
  int got_graph;
} cap_helper;

static void *cap_helper_main(void *arg) {
  cap_helper *h = (cap_helper *)arg;
  cudaGraph_t graph = NULL;
  h->begin = cudaStreamBeginCapture(h->s, cudaStreamCaptureModeGlobal);
  if (h->begin != cudaSuccess) return NULL;
  cudaMemsetAsync(h->buf, 1, 4096, h->s);   /* captured, not run */
  if (h->hold_ms >= 0) tu_sleep_us((long)h->hold_ms * 1000);
  else
    while (!__atomic_load_n(&h->go, __ATOMIC_ACQUIRE)) tu_sleep_us(1000);
  h->end = cudaStreamEndCapture(h->s, &graph);
  h->got_graph = graph != NULL;
  if (graph) cudaGraphDestroy(graph);
  return NULL;
}

/* h's capture ended right: 1; else a failure, named */
static int cap_helper_ok(rctx *r, const cap_helper *h, const char *phase) {
  if (h->begin != cudaSuccess) rfail(r, "%s: cudaStreamBeginCapture: %s", phase, cudaGetErrorName(h->begin));
  else if (h->end != cudaSuccess || !h->got_graph)
    rfail(r, "%s: the other thread's Global-mode capture was broken: cudaStreamEndCapture returned %s%s", phase,
          cudaGetErrorName(h->end), h->got_graph ? "" : " and no graph");
  else
    return 1;
  return 0;
}

static void reg_capture_modes(rctx *r) {
  static const cudaStreamCaptureMode modes[3] = {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                                 cudaStreamCaptureModeRelaxed};
  static const char *const mode_names[3] = {"Global", "ThreadLocal", "Relaxed"};
  cap_helper h;
  pthread_t th;
  cudaStream_t side = 0;
  cudaGraph_t graph = NULL;
  float *buf = NULL, *big = NULL, *host = NULL;
  void *side_buf = NULL;
  size_t count = 1000, bigc = 300007;
  cudaError_t e;
  cc_result rc;
  int i;
  memset(&h, 0, sizeof h);
  if (!rinit(r)) return;
  host = (float *)malloc(bigc * 4);
  if (!rcu(r, cudaStreamCreateWithFlags(&h.s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags") ||
      !rcu(r, cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreateWithFlags") ||
      !rcu(r, cudaMalloc(&h.buf, 4096), "cudaMalloc") || !rcu(r, cudaMalloc(&side_buf, 4096), "cudaMalloc") ||
      !rok(r, cc_cuda_malloc(r->g, (void **)&buf, 2 * count * 4), "cc_cuda_malloc") ||
      !rcu(r, cudaMalloc((void **)&big, bigc * 4), "cudaMalloc") || !rput(r, r->s, buf, 131, r->me, count, host) ||
      !rok(r, cc_cuda_all_reduce(r->g, buf, buf + count, count, CC_FLOAT32, CC_SUM, r->s), "all_reduce") ||
      !rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize"))
    goto out;
  /* 1: another thread captures in Global mode for 300 ms (six watchdog rounds) */
  h.hold_ms = 300;
  if (pthread_create(&th, NULL, cap_helper_main, &h) != 0) { rfail(r, "pthread_create"); goto out; }
  pthread_join(th, NULL);
  if (!cap_helper_ok(r, &h, "another thread's capture while the communicator was idle")) goto out;
  if ((rc = cc_cuda_comm_check(r->g)) != CC_OK) {
    rfail(r, "the communicator failed during another thread's capture: %s (%s)", res_name(rc),
          cc_cuda_comm_last_error(r->g));
    goto out;
  }
  /* 2: calls on this thread's own stream while another thread captures: a
     buffer's first use (peers map it) and a scratch that grows */
  if (!rput(r, r->s, big, 132, r->me, bigc, host)) goto out;
  h.hold_ms = -1;
  h.go = 0;
  if (!rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize") ||
      pthread_create(&th, NULL, cap_helper_main, &h) != 0)
    goto out;
  tu_sleep_us(20000);
  rc = cc_cuda_all_reduce(r->g, big, big, bigc, CC_FLOAT32, CC_SUM, r->s);
  __atomic_store_n(&h.go, 1, __ATOMIC_RELEASE);
  pthread_join(th, NULL);
  if (!rok(r, rc, "in-place all_reduce while another thread captures") ||
      !cap_helper_ok(r, &h, "calls during another thread's capture") ||
      !rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize"))
    goto out;
  rcheck_sum(r, "in-place all_reduce during another thread's capture", big, 132, bigc);
  /* 3: this thread captures a side stream (each mode) and calls on its own stream */
  for (i = 0; i < 3 && !r->sh->nfail[r->me]; i++) {
    if (!rput(r, r->s, buf, 140 + (uint64_t)i, r->me, count, host) ||
        !rcu(r, cudaStreamBeginCapture(side, modes[i]), "cudaStreamBeginCapture"))
      goto out;
    cudaMemsetAsync(side_buf, 2, 4096, side);
    rc = cc_cuda_all_reduce(r->g, buf, buf, count, CC_FLOAT32, CC_SUM, r->s);
    e = cudaStreamEndCapture(side, &graph);
    if (graph) cudaGraphDestroy(graph);
    if (!rok(r, rc, mode_names[i])) goto out;
    if (e != cudaSuccess || !graph) {
      rfail(r, "a call while this thread captured another stream (%s mode) broke the capture: %s", mode_names[i],
            cudaGetErrorName(e));
      goto out;
    }
    graph = NULL;
    if (!rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize")) goto out;
    rcheck_sum(r, mode_names[i], buf, 140 + (uint64_t)i, count);
  }
  /* 4: a call on the capturing stream itself, each mode: refused, the capture intact */
  for (i = 0; i < 3 && !r->sh->nfail[r->me]; i++) {
    if (!rcu(r, cudaStreamBeginCapture(side, modes[i]), "cudaStreamBeginCapture")) goto out;
    rc = cc_cuda_all_reduce(r->g, buf, buf + count, count, CC_FLOAT32, CC_SUM, side);
    e = cudaStreamEndCapture(side, &graph);
    if (graph) cudaGraphDestroy(graph);
    if (rc != CC_ERR_UNSUPPORTED || !strstr(cc_cuda_comm_last_error(r->g), "captured"))
      rfail(r, "all_reduce on a stream being captured (%s mode) returned %s (%s), want CC_ERR_UNSUPPORTED saying so",
            mode_names[i], res_name(rc), cc_cuda_comm_last_error(r->g));
    else if (e != cudaSuccess || !graph)
      rfail(r, "the refused call broke the %s-mode capture: %s", mode_names[i], cudaGetErrorName(e));
    graph = NULL;
  }
  if ((rc = cc_cuda_comm_check(r->g)) != CC_OK)
    rfail(r, "the communicator failed: %s (%s)", res_name(rc), cc_cuda_comm_last_error(r->g));
  rnote(r, "another thread's Global-mode capture for 300 ms, then during an in-place all_reduce (new mappings, "
        "scratch growth); this thread capturing another stream in each mode during an all_reduce; a call on a "
        "capturing stream refused in each mode: every capture intact, every result right");
out:
  if (r->g && r->sh->nfail[r->me]) cc_cuda_comm_abort(r->g);  /* the others must not wait for this rank */
  free(host);
  if (buf) cc_cuda_free(r->g, buf);
  rdestroy(r);
  if (big) cudaFree(big);
  if (h.buf) cudaFree(h.buf);
  if (side_buf) cudaFree(side_buf);
  if (h.s) cudaStreamDestroy(h.s);
  if (side) cudaStreamDestroy(side);
}

static void grid_calls_with(rctx *r, float *a, float *b, size_t big, size_t one, uint64_t seed, float *host) {
  if (!rput(r, r->s, a, seed, r->me, one, host) ||
      !rok(r, cc_cuda_all_reduce(r->g, a, b, one, CC_FLOAT32, CC_SUM, r->s), "one-shot all_reduce") ||
      !rcu(r, cudaStreamSynchronize(r->s), "sync"))
    return;
  rcheck_sum(r, "one-shot all_reduce", b, seed, one);
  if (!rput(r, r->s, a, seed + 1, r->me, big, host) ||
      !rok(r, cc_cuda_all_reduce(r->g, a, b, big, CC_FLOAT32, CC_SUM, r->s), "two-shot all_reduce") ||
      !rcu(r, cudaStreamSynchronize(r->s), "sync"))
    return;
  rcheck_sum(r, "two-shot all_reduce", b, seed + 1, big);
  if (!rok(r, cc_cuda_all_gather(r->g, a, b, big, CC_FLOAT32, r->s), "all_gather")) return;
  rcu(r, cudaStreamSynchronize(r->s), "sync");
}

/* ---- grid: launches sized to the device (CC_EMU_SMS SMs, CC_EMU_REGS
 * registers per thread) and to CC_CUDA_BLOCKS: never more blocks than run at
 * once, and the whole of the bound for large calls; every result right with
 * many blocks */
static void grid_calls(rctx *r, float *a, float *b, size_t big, size_t one, uint64_t seed) {
  float *host = (float *)malloc(big * 4);
  if (host) grid_calls_with(r, a, b, big, one, seed, host);
  else rfail(r, "out of memory");
  free(host);
}

static void reg_grid(rctx *r) {
  float *a = NULL, *b = NULL;
  size_t big = 1000003, one = 60001, scale, es;
  long most = 0, most7 = 0, waves;
  int sms = 0, per = 0, dev = 0;
  if (!rinit(r)) return;
  if (!rcu(r, cudaGetDevice(&dev), "cudaGetDevice") ||
      !rcu(r, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute") ||
      !rok(r, cc_cuda_malloc(r->g, (void **)&a, big * 4), "cc_cuda_malloc") ||
      !rok(r, cc_cuda_malloc(r->g, (void **)&b, big * 4 * (size_t)r->n), "cc_cuda_malloc"))
    goto out;
  if (cc_emu_count) cc_emu_count("max_blocks");   /* from here */
  grid_calls(r, a, b, big, one, 151);
  if (cc_emu_count) most = cc_emu_count("max_blocks");
  /* a communicator bounded to 7 blocks */
  cc_cuda_free(r->g, a);
  cc_cuda_free(r->g, b);
  a = b = NULL;
  if (!rok(r, cc_cuda_comm_destroy(r->g), "cc_cuda_comm_destroy")) goto out;
  r->g = NULL;
  setenv("CC_CUDA_BLOCKS", "7", 1);
  if (!rok(r, cc_cuda_comm_init(r->c, dev, &r->g), "cc_cuda_comm_init with CC_CUDA_BLOCKS=7") ||
      !rok(r, cc_cuda_malloc(r->g, (void **)&a, big * 4), "cc_cuda_malloc") ||
      !rok(r, cc_cuda_malloc(r->g, (void **)&b, big * 4 * (size_t)r->n), "cc_cuda_malloc"))
    goto out;
  grid_calls(r, a, b, big, one, 161);
  if (!cc_emu_count || r->sh->nfail[r->me]) {
    rnote(r, "one-shot and two-shot all_reduce, all_gather of %zu floats, with CC_CUDA_BLOCKS unset and 7: right", big);
    goto out;
  }
  most7 = cc_emu_count("max_blocks");
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, (const void *)cc_cuda__fold_pick(CC_FLOAT32, CC_SUM, &scale, &es),
                                                    CC_CUDA__THREADS, 0) != cudaSuccess)
    per = 0;
  waves = cc_emu_count("over_one_wave");
  if (waves) rfail(r, "%ld launches had more blocks than the device runs at once (%d SMs x %d)", waves, sms, per);
  else if (most != (long)sms * per) rfail(r, "the largest launch had %ld blocks; the device runs %d at once (%d SMs x %d)",
                                          most, sms * per, sms, per);
  else if (most7 != 7) rfail(r, "with CC_CUDA_BLOCKS=7 the largest launch had %ld blocks", most7);
  rnote(r, "%d SMs, %d blocks of %d threads per SM: the largest launch %ld blocks (CC_CUDA_BLOCKS=7: %ld), none "
        "larger than one wave; one-shot and two-shot all_reduce and all_gather right", sms, per, CC_CUDA__THREADS,
        most, most7);
out:
  unsetenv("CC_CUDA_BLOCKS");
  if (a) cc_cuda_free(r->g, a);
  if (b) cc_cuda_free(r->g, b);
  rdestroy(r);
}

/* ---- visible_devices (the emulation's devices) */
static void reg_devices(rctx *r, int mig) {
  float *buf = NULL, *host = NULL;
  const char *want = mig ? "staged" : "ipc";
  char v[16];
  if (!mig) {                          /* each rank sees one GPU, its own, as device 0 */
    snprintf(v, sizeof v, "%d", r->me % 2);
    setenv("CUDA_VISIBLE_DEVICES", v, 1);
  }
  if (!rinit(r)) return;
  host = (float *)malloc(4000);
  if (strcmp(cc_cuda_comm_mode(r->g), want) != 0)
    rfail(r, "mode \"%s\", want \"%s\"", cc_cuda_comm_mode(r->g), want);
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&buf, 8000), "cc_cuda_malloc") || !rput(r, r->s, buf, 99, r->me, 1000, host) ||
      !rok(r, cc_cuda_all_reduce(r->g, buf, buf + 1000, 1000, CC_FLOAT32, CC_SUM, r->s), "all_reduce") ||
      !rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize"))
    goto out;
  rcheck_sum(r, "all_reduce", buf + 1000, 99, 1000);
  rnote(r, mig ? "2 MIG instances of one GPU (one PCI bus id, no peer access): staged mode, all_reduce right"
               : "2 GPUs, each rank seeing only its own (CUDA_VISIBLE_DEVICES): ipc mode, all_reduce right");
out:
  free(host);
  if (buf) cc_cuda_free(r->g, buf);
  rdestroy(r);
}
static void reg_visible(rctx *r) { reg_devices(r, 0); }
static void reg_mig(rctx *r) { reg_devices(r, 1); }

/* ---- no_device_sync */
static void reg_nosync(rctx *r) {
  cudaStream_t other = 0;
  float *bufs[40], *big = NULL, *host = NULL;
  double t0, worst = 0;
  int i;
  memset(bufs, 0, sizeof bufs);
  if (!rinit(r)) return;
  host = (float *)malloc(4000);
  if (!rcu(r, cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "cudaStreamCreateWithFlags")) goto out;
  for (i = 0; i < 40; i++)
    if (!rok(r, cc_cuda_malloc(r->g, (void **)&bufs[i], 4000), "cc_cuda_malloc")) goto out;
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&big, (size_t)3 << 20), "cc_cuda_malloc")) goto out;
  /* the user's other stream is busy for a second */
  if (!rcu(r, stream_spin(other, 1000000000ull), "spin kernel")) goto out;
  for (i = 0; i < 40; i++) {           /* 40 buffers: the peers' caches of 32 evict */
    t0 = tu_now();
    if (!rok(r, cc_cuda_all_reduce(r->g, bufs[i], bufs[i], 1000, CC_FLOAT32, CC_SUM, r->s), "all_reduce")) goto out;
    worst = CC__MAX(worst, tu_now() - t0);
  }
  t0 = tu_now();                       /* the scratch grows to 3 MiB */
  if (!rok(r, cc_cuda_all_to_all(r->g, big, big, ((size_t)3 << 18) / (size_t)r->n, CC_FLOAT32, r->s), "all_to_all")) goto out;
  worst = CC__MAX(worst, tu_now() - t0);
  if (worst > 0.5)
    rfail(r, "a call took %.2f s while another stream of this rank was busy (it waited for the whole device)", worst);
  if (!rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize")) goto out;
  rnote(r, "another stream busy for 1 s; 40 buffers through the peers' caches of 32 and scratch growth: no call "
        "waited for the device (slowest %.0f ms)", worst * 1e3);
out:
  if (other) {
    cudaStreamSynchronize(other);
    cudaStreamDestroy(other);
  }
  for (i = 0; i < 40; i++)
    if (bufs[i]) cc_cuda_free(r->g, bufs[i]);
  if (big) cc_cuda_free(r->g, big);
  free(host);
  rdestroy(r);
}

/* ---- user_error */
static void reg_user_error(rctx *r) {
  float *buf = NULL, *host = NULL;
  int not_device = 0;
  cudaError_t mine, e;
  if (!rinit(r)) return;
  host = (float *)malloc(4000);
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&buf, 8000), "cc_cuda_malloc") || !rput(r, r->s, buf, 111, r->me, 1000, host))
    goto out;
  /* the user's own error, not yet read: a memset of host memory */
  mine = cudaMemsetAsync(&not_device, 0, sizeof not_device, r->s);
  if (mine == cudaSuccess) {
    rfail(r, "cudaMemsetAsync of host memory did not fail");
    goto out;
  }
  if (!rok(r, cc_cuda_all_reduce(r->g, buf, buf + 1000, 1000, CC_FLOAT32, CC_SUM, r->s), "all_reduce with the user's error pending"))
    goto out;
  e = cudaGetLastError();
  if (e != mine)
    rfail(r, "cudaGetLastError after the call returned %s, want the user's %s (the library cleared it)",
          cudaGetErrorName(e), cudaGetErrorName(mine));
  if (!rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize")) goto out;
  rcheck_sum(r, "all_reduce", buf + 1000, 111, 1000);
  rnote(r, "a pending cudaErrorInvalidValue of the user's: the all_reduce works and leaves it pending");
out:
  free(host);
  if (buf) cc_cuda_free(r->g, buf);
  rdestroy(r);
}

/* ---- flush: two-shot all_reduce writes into the peers' memory, the waits
 * after it flush (on GPUs that can); the barriers' stream memory operations
 * go as one cuStreamBatchMemOp each, or one call each where the driver has
 * none (CC_EMU_NO_BATCH) */
static void reg_flush(rctx *r) {
  float *buf = NULL, *host = NULL;
  long before = cc_emu_count ? cc_emu_count("flush_waits") : 0, b0 = 0, m0 = 0, db, dm;
  int unbatched = getenv("CC_EMU_NO_BATCH") != NULL;
  size_t count = 10001;
  if (!rinit(r)) return;
  host = (float *)malloc(count * 4);
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&buf, 2 * count * 4), "cc_cuda_malloc") ||
      !rput(r, r->s, buf, 123, r->me, count, host))
    goto out;
  if (cc_emu_count) {
    b0 = cc_emu_count("batch_calls");
    m0 = cc_emu_count("memop_calls");
  }
  if (!rok(r, cc_cuda_all_reduce(r->g, buf, buf + count, count, CC_FLOAT32, CC_SUM, r->s), "two-shot all_reduce") ||
      !rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize"))
    goto out;
  rcheck_sum(r, "two-shot all_reduce", buf + count, 123, count);
  if (!cc_emu_count) {
    rnote(r, "two-shot all_reduce (CC_CUDA_ONESHOT_BYTES=0) right");
    goto out;
  }
  if (cc_emu_count("flush_waits") == before)
    rfail(r, "no stream wait flushed remote writes after peers wrote into this rank's output (the device reports "
          "CAN_FLUSH_REMOTE_WRITES)");
  db = cc_emu_count("batch_calls") - b0;
  dm = cc_emu_count("memop_calls") - m0;
  if (!unbatched && (db != 2 || dm != 0))
    rfail(r, "the call's two barriers took %ld cuStreamBatchMemOp and %ld single stream memory operations, want 2 and 0",
          db, dm);
  if (unbatched && (db != 0 || dm != 2 * (long)r->n))
    rfail(r, "without cuStreamBatchMemOp the call's two barriers took %ld batches and %ld single operations, want 0 "
          "and %d", db, dm, 2 * r->n);
  rnote(r, "two-shot all_reduce (CC_CUDA_ONESHOT_BYTES=0): the waits after the peers' writes flush them; its barriers "
        "%s", unbatched ? "one stream memory operation per call (no cuStreamBatchMemOp)" : "one cuStreamBatchMemOp each");
out:
  free(host);
  if (buf) cc_cuda_free(r->g, buf);
  rdestroy(r);
}

/* ---- evict_in_call: one group receives more messages from one peer than
 * the per-peer mapping cache holds, each from its own allocation, so that
 * the call itself evicts mappings its own copies read; the next calls come
 * at once (their reap must not close a mapping a queued copy still reads) */
#define EV_MSGS 40
#define EV_ROUNDS 3
static void reg_evict_in_call(rctx *r) {
  float *sbuf[EV_MSGS], *rbuf = NULL, *host = NULL, *got = NULL;
  size_t count = 1000 + 64, i;
  int round, m;
  cc_result rc = CC_OK, rc2;
  memset(sbuf, 0, sizeof sbuf);
  if (!rinit(r)) return;
  host = (float *)malloc(count * 4);
  got = (float *)malloc(count * 4 * EV_MSGS);
  if (!rok(r, cc_cuda_malloc(r->g, (void **)&rbuf, count * 4 * EV_MSGS), "cc_cuda_malloc")) goto out;
  for (m = 0; m < EV_MSGS && r->me == 0; m++)   /* each message from its own cudaMalloc */
    if (!rcu(r, cudaMalloc((void **)&sbuf[m], count * 4), "cudaMalloc")) goto out;
  for (round = 0; round < EV_ROUNDS && !r->sh->nfail[r->me]; round++) {
    for (m = 0; m < EV_MSGS && r->me == 0; m++)
      if (!rput(r, r->s, sbuf[m], 700 + (uint64_t)(round * EV_MSGS + m), 0, count, host)) goto out;
    if (!rok(r, cc_cuda_group_begin(r->g), "cc_cuda_group_begin")) goto out;
    for (m = 0; m < EV_MSGS && rc == CC_OK; m++)
      rc = r->me == 0 ? cc_cuda_send(r->g, sbuf[m], count, CC_FLOAT32, 1, m, r->s)
                      : cc_cuda_recv(r->g, rbuf + (size_t)m * count, count, CC_FLOAT32, 0, m, r->s);
    rc2 = cc_cuda_group_end(r->g);
    if (!rok(r, rc, "cc_cuda_send/recv") || !rok(r, rc2, "cc_cuda_group_end")) goto out;
    /* the next call at once: its reap runs while the group's copies may still be queued */
    if (!rok(r, cc_cuda_barrier(r->g, r->s), "cc_cuda_barrier")) goto out;
    if (!rcu(r, cudaStreamSynchronize(r->s), "cudaStreamSynchronize")) goto out;
    if (r->me != 1) continue;
    if (!rcu(r, cudaMemcpy(got, rbuf, count * 4 * EV_MSGS, cudaMemcpyDeviceToHost), "cudaMemcpy")) goto out;
    for (m = 0; m < EV_MSGS; m++) {
      char msg[300];
      tr_fill(host, CC_FLOAT32, TR_GEN_ANY, 700 + (uint64_t)(round * EV_MSGS + m), 0, 0, count);
      if (tr_compare(got + (size_t)m * count, host, count, CC_FLOAT32, msg, sizeof msg)) {
        rfail(r, "round %d, message %d of %d from rank 0: %s", round, m, EV_MSGS, msg);
        break;
      }
    }
  }
  rnote(r, "%d rounds of one group of %d receives from rank 0, each from its own cudaMalloc (the cache holds 32 per "
        "peer), a call right after each: every message right", EV_ROUNDS, EV_MSGS);
out:
  rdestroy(r);
  for (i = 0; i < EV_MSGS; i++)
    if (sbuf[i]) cudaFree(sbuf[i]);
  free(host);
  free(got);
}

/* The regression worlds; `only`: just the one of that name (NULL: all). */
static void run_regressions(const char *only) {
  static const struct {
    const char *name;
    int n, emu_only;
    reg_fn fn;
    const char *env, *what;
  } regs[] = {
    {"two_streams", 3, 0, reg_two_streams, "CC_TIMEOUT=10", "calls alternating between two streams"},
    {"p2p_staged_sends", 3, 0, reg_p2p_staged, "CC_TIMEOUT=10", "a p2p group of sends that go through scratch"},
    {"one_rank_oom", 3, 0, reg_oom, "CC_TIMEOUT=10", "out of memory on rank 0"},
    {"context_killed", 3, 0, reg_context, "CC_TIMEOUT=10", "a dead context on rank 1"},
    {"free_mapped", 3, 0, reg_free_mapped, "CC_TIMEOUT=10", "buffers freed after use"},
    {"misaligned", 2, 0, reg_misaligned, "CC_TIMEOUT=10", "misaligned element pointers"},
    {"graph_capture", 2, 0, reg_capture, "CC_TIMEOUT=10", "a call during graph capture"},
    {"visible_devices", 2, 1, reg_visible, "CC_TIMEOUT=10 CC_EMU_DEVICES=2", "one GPU visible to each rank"},
    {"mig", 2, 1, reg_mig, "CC_TIMEOUT=10 CC_EMU_DEVICES=2 CC_EMU_MIG=1", "ranks on two MIG instances"},
    {"no_device_sync", 2, 0, reg_nosync, "CC_TIMEOUT=10", "another stream busy"},
    {"user_error", 2, 0, reg_user_error, "CC_TIMEOUT=10", "the user's pending CUDA error"},
    {"flush", 2, 0, reg_flush, "CC_TIMEOUT=10 CC_CUDA_ONESHOT_BYTES=0 CC_EMU_DEVICES=2 CC_EMU_FLUSH=1",
     "remote writes flushed, barriers batched"},
    {"flush_unbatched", 2, 1, reg_flush,
     "CC_TIMEOUT=10 CC_CUDA_ONESHOT_BYTES=0 CC_EMU_DEVICES=2 CC_EMU_FLUSH=1 CC_EMU_NO_BATCH=1",
     "remote writes flushed, a driver without cuStreamBatchMemOp"},
    {"evict_in_call", 2, 0, reg_evict_in_call, "CC_TIMEOUT=10",
     "a group evicting mappings its own copies read"},
    {"capture_modes", 2, 0, reg_capture_modes, "CC_TIMEOUT=10", "graph captures around the communicator"},
    {"grid", 3, 0, reg_grid, "CC_TIMEOUT=10 CC_EMU_SMS=5 CC_EMU_REGS=40",
     "launches sized to the device and to CC_CUDA_BLOCKS"},
  };
  size_t i;
  int ran = 0;
  for (i = 0; i < sizeof regs / sizeof regs[0]; i++) {
    char full[96];
    if (only && strcmp(only, regs[i].name) != 0) continue;
    ran = 1;
    snprintf(full, sizeof full, "cuda regress %s", regs[i].name);
    if (regs[i].emu_only && !emulated())
      tu_skip(full, "needs the emulation's devices (CC_EMU_DEVICES)");
    else
      run_reg(regs[i].name, regs[i].n, regs[i].fn, regs[i].env, regs[i].what);
  }
  if (only && !ran) tu_fail("cuda regress", "no regression world is named \"%s\"", only);
}

/* ------------------------------------------------------------ main */

typedef struct probe {
  int done, count, err, peer[MAXR][MAXR];
  char msg[256], names[MAXR][64];
} probe;

/* cudaGetDeviceCount in a child: CUDA set up in this process would not work in
 * the ranks cc_spawn forks from it. */
static void probe_devices(probe *p) {
  pid_t pid;
  int st = 0;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid == 0) {
    int n = 0, i, j;
    cudaError_t e = cudaGetDeviceCount(&n);
    p->err = (int)e;
    p->count = e == cudaSuccess ? n : 0;
    snprintf(p->msg, sizeof p->msg, "%.200s", cudaGetErrorString(e));
    for (i = 0; i < p->count && i < MAXR; i++) {
      struct cudaDeviceProp prop;
      if (cudaGetDeviceProperties(&prop, i) == cudaSuccess)
        snprintf(p->names[i], sizeof p->names[i], "%.63s", prop.name);
      for (j = 0; j < p->count && j < MAXR; j++) {
        int can = 0;
        if (i != j && cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess) p->peer[i][j] = can;
      }
    }
    p->done = 1;
    _exit(0);
  }
  if (pid < 0) {
    snprintf(p->msg, sizeof p->msg, "fork failed: %s", strerror(errno));
    return;
  }
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!p->done)
    snprintf(p->msg, sizeof p->msg, "the process that asked cudaGetDeviceCount died (status %d)", st);
}

int main(int argc, char **argv) {
  int quick = tu_quick(), i, n, want_n[MAXR + 1], want_staged = 1, want_twoshot = 1, want_death = 1, want_regress = 1;
  const char *only_regress[16];
  int n_only = 0;
  double t0 = tu_now();
  probe *p = (probe *)tu_shared_alloc(sizeof(probe));
  if (!p) {
    tu_fail("cuda setup", "cannot map shared memory");
    return 1;
  }
  probe_devices(p);
  if (!p->done || p->err != 0 || p->count <= 0) {
    tu_skip("cuda", "no CUDA device (%s)", p->msg);
    return 0;
  }
  g_ndev = p->count > MAXR ? MAXR : p->count;
  memcpy(g_peer, p->peer, sizeof g_peer);
  fprintf(stderr, "test_cuda: %d device(s); device 0: %s\n", p->count, p->names[0]);
  tu_default_timeout("60");

  memset(want_n, 0, sizeof want_n);
  if (argc > 1) {
    want_staged = want_twoshot = want_death = want_regress = 0;
    for (i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "staged")) want_staged = 1;
      else if (!strcmp(argv[i], "regress")) want_regress = 1;
      else if (!strncmp(argv[i], "regress:", 8) && n_only < 16) only_regress[n_only++] = argv[i] + 8;
      else if (!strcmp(argv[i], "twoshot")) want_twoshot = 1;
      else if (!strcmp(argv[i], "death")) want_death = 1;
      else if ((n = atoi(argv[i])) >= 2 && n <= 4) want_n[n] = 1;
    }
  } else if (quick) {
    want_n[3] = 1;
  } else {
    want_n[2] = want_n[3] = want_n[4] = 1;
  }
  if (emulated())
    fprintf(stderr, "test_cuda: on the CPU emulation of the CUDA runtime (tests/cuda/cuda_emu.cpp): ipc mode's "
                    "kernels run as their CPU twins\n");
  for (n = 2; n <= 4; n++)
    if (want_n[n]) run_world(W_IPC, n, quick);
  if (want_staged) run_world(W_STAGED, 3, quick);
  if (want_twoshot) {
    run_world(W_TWOSHOT, 3, quick);
    if (!quick) run_world(W_TWOSHOT, 4, quick);
  }
  if (want_death) {
    run_death(0);
    run_death(1);
  }
  if (want_regress) run_regressions(NULL);
  for (i = 0; i < n_only; i++) run_regressions(only_regress[i]);
  fprintf(stderr, "test_cuda: %.2f s\n", tu_now() - t0);
  tu_shared_free(p, sizeof(probe));
  return tu_exit_code();
}
