/* test_cuda_fold.cu - the GPU reduction kernels, run on the CPU.
 *
 * cc_cuda.cuh's fold kernel is a __host__ __device__ body run by every GPU
 * thread; its CPU twin (cc_cuda__pick<cc_cuda__as_host>) runs the very same
 * body here, thread after thread, on machines without a GPU too: the 16-byte
 * pack path, the element path, several destinations and in place. For
 * every dtype and every op (premul_sum included), 1 to 5 sources, it must give
 * the bits of cc.h's own CPU fold cc__reduce_n (which tests/unit/test_reduce.c checks
 * against an independent reference): random bit patterns (NaNs, infinities,
 * subnormals, signed zeros) and moderate values. The pairs that cc.h refuses
 * must have no kernel. On the GPU the same functions run with __fmul_rn and
 * friends instead of the plain operators: tests/cuda/test_cuda.cu compares the
 * kernels' results with a host reference there. */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "cc_cuda.cuh"
#include "test_util.h"

#define N_ELEMS 1031   /* odd, over two of cc.h's blocks */
#define MAX_SRC 5

/* element i of source k: random bits (mode 0) or a moderate value (mode 1) */
static void fill(cc_dtype t, unsigned char *buf, size_t count, int k, int mode) {
  size_t es = cc__dtype_bytes(t), i, j;
  for (i = 0; i < count; i++) {
    uint64_t h = tu_hash3((uint64_t)t, (uint64_t)k * 1000003u + (uint64_t)mode, i);
    unsigned char *e = buf + i * es;
    if (mode == 0) {
      for (j = 0; j < es; j++) e[j] = (unsigned char)(tu_hash2(h, j) >> 24);
      continue;
    }
    double v = (tu_unit(h) - 0.5) * 8.0;
    switch (t) {
      case CC_FLOAT16: { uint16_t x = tu_f32_to_f16((float)v); memcpy(e, &x, 2); break; }
      case CC_BFLOAT16: { uint16_t x = tu_f32_to_bf16((float)v); memcpy(e, &x, 2); break; }
      case CC_FLOAT32: { float x = (float)v; memcpy(e, &x, 4); break; }
      case CC_FLOAT64: { memcpy(e, &v, 8); break; }
      case CC_COMPLEX64: {
        float x[2] = {(float)v, (float)((tu_unit(tu_mix64(h)) - 0.5) * 8.0)};
        memcpy(e, x, 8);
        break;
      }
      case CC_COMPLEX128: {
        double x[2] = {v, (tu_unit(tu_mix64(h)) - 0.5) * 8.0};
        memcpy(e, x, 16);
        break;
      }
      default: for (j = 0; j < es; j++) e[j] = (unsigned char)(h >> (8 * j)); break;
    }
  }
}

static unsigned char src[MAX_SRC][N_ELEMS * 16] __attribute__((aligned(16)));
static unsigned char want[N_ELEMS * 16], got[3][N_ELEMS * 16] __attribute__((aligned(16)));
static unsigned char inplace[N_ELEMS * 16] __attribute__((aligned(16)));
static const char *const path_names[3] = {"16-byte packs", "elements", "three destinations, one in place"};

/* One (dtype, op) pair under test: its kernel, and the sources of its current case. */
typedef struct fold_case {
  cc_dtype t;
  int op, mode, n;               /* mode: random bits (0) or moderate values (1); n sources */
  size_t scale, esize, es;       /* the kernel's elements: scale of esize bytes each; es: the dtype's */
  cc_cuda__host_fold_fn fn;
  const char *name;
  const void *srcs[MAX_SRC], *scals[MAX_SRC];
  unsigned char scal[MAX_SRC][16];
  unsigned int no_abort;
} fold_case;

/* Every destination of a must hold want's bits: 1 (and one failure) when one does not. */
static int fold_differs(const fold_case *fc, int path, const cc_cuda__fold_args *a) {
  size_t i, es = fc->es;
  int d, bad = 0;
  for (d = 0; d < a->ndst && !bad; d++) {
    const unsigned char *res = (const unsigned char *)a->dst[d];
    for (i = 0; i < N_ELEMS && !bad; i++) {
      char hw[40] = "", hg[40] = "";
      size_t j;
      if (memcmp(want + i * es, res + i * es, es) == 0) continue;
      for (j = 0; j < es && j < 16; j++) {
        snprintf(hw + 2 * j, 3, "%02x", want[i * es + es - 1 - j]);
        snprintf(hg + 2 * j, 3, "%02x", res[i * es + es - 1 - j]);
      }
      tu_fail(fc->name, "%s values, %d sources, %s, destination %d, element %zu: cc.h gives %s, the kernel %s",
              fc->mode ? "moderate" : "random-bit", fc->n, path_names[path], d, i, hw, hg);
      bad = 1;
    }
  }
  return bad;
}

/* The kernel's paths: 16-byte packs (7 threads) or elements only (vec 0, 1
 * thread), one destination or three, the last of them in place over source 0
 * (a copy of it). 1 when the kernel's result differs from want. */
static int fold_path(fold_case *fc, int path) {
  cc_cuda__fold_args a;
  int d, k, n = fc->n;
  memset(&a, 0, sizeof a);
  memcpy(inplace, src[0], N_ELEMS * fc->es);
  for (k = 0; k < n; k++) {
    a.src[k] = k == 0 && path == 2 ? (const void *)inplace : fc->srcs[k];
    memcpy(a.scal[k], fc->scal[k], 16);
  }
  a.n = n;
  a.count = N_ELEMS * fc->scale;
  a.vec = path != 1;
  a.ndst = path == 2 ? 3 : 1;
  a.abort = &fc->no_abort;
  for (d = 0; d < a.ndst; d++) {
    memset(got[d], 0x5a, sizeof got[d]);
    a.dst[d] = d == 2 ? (void *)inplace : (void *)got[d];
  }
  fc->fn(&a, path == 1 ? 1 : 7);
  return fold_differs(fc, path, &a);
}

/* Both value kinds, 1, 2, 3 and 5 sources, every path: 1 when one differed. */
static int fold_pair(fold_case *fc) {
  static const int nsrcs[] = {1, 2, 3, 5};
  int ni, k, path, bad = 0;
  for (fc->mode = 0; fc->mode < 2 && !bad; fc->mode++) {
    for (ni = 0; ni < (int)(sizeof nsrcs / sizeof nsrcs[0]) && !bad; ni++) {
      int n = nsrcs[ni];
      fc->n = n;
      for (k = 0; k < n; k++) {
        fill(fc->t, src[k], N_ELEMS, k, fc->mode);
        fill(fc->t, fc->scal[k], 1, 100 + k, 1);   /* premul scalars: moderate values */
        fc->srcs[k] = src[k];
        fc->scals[k] = fc->scal[k];
      }
      memset(want, 0xa5, sizeof want);
      cc__reduce_n(want, fc->srcs, n, N_ELEMS, fc->t, fc->op, fc->scals);
      for (path = 0; path < 3 && !bad; path++) bad = fold_path(fc, path);
    }
  }
  return bad;
}

int main(void) {
  fold_case fc;
  int t, op, pairs = 0, refused = 0;
  memset(&fc, 0, sizeof fc);
  for (t = 0; t < (int)CC_DTYPE_COUNT; t++) {
    for (op = 0; op <= CC__OP_PREMUL; op++) {
      char name[96];
      fc.t = (cc_dtype)t;
      fc.op = op;
      fc.es = cc__dtype_bytes((cc_dtype)t);
      fc.fn = cc_cuda__pick<cc_cuda__as_host>((cc_dtype)t, op, &fc.scale, &fc.esize);
      fc.name = name;
      snprintf(name, sizeof name, "cuda fold %s %s", cc__dtype_name((cc_dtype)t), cc__op_name(op));
      if (cc__op_check((cc_dtype)t, op)) {
        if (fc.fn) tu_fail(name, "cc.h refuses the pair, yet a kernel exists");
        refused++;
        continue;
      }
      if (!fc.fn) { tu_fail(name, "no kernel for a pair cc.h allows"); continue; }
      if (fc.scale * fc.esize != fc.es) {
        tu_fail(name, "kernel elements of %zu x %zu bytes for a %zu-byte dtype", fc.scale, fc.esize, fc.es);
        continue;
      }
      if (!fold_pair(&fc)) pairs++;
    }
  }
  if (!tu_failures())
    tu_pass("cuda fold: every dtype and op, the kernel's body gives cc.h's bits",
            "%d pairs x 1, 2, 3, 5 sources x 3 paths x %d elements x 2 value kinds; %d refused pairs have no kernel",
            pairs, N_ELEMS, refused);
  return tu_exit_code();
}
