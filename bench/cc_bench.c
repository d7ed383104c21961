/* cc_bench.c - an nccl-tests twin for cc: time every collective over a range of
   sizes, out of place and in place, and check every result.

       build/ccrun -n 2 build/cc_bench -o all_reduce -b 8 -e 64M -f 4
       build/ccrun -n 4 build/cc_bench -o all -d float -R sum -b 8 -e 64M -f 4

   Rows follow bench_mpi.c of the peer baselines (shared/bench/peers), so that its
   summarize.py reads ours the same way: the first ten columns are bench_mpi's

       coll size_bytes count type op time_us algbw_GBps busbw_GBps #wrong iters

   (time/algbw/busbw/#wrong out of place), followed by nccl-tests' root and the
   in-place group `time_us algbw_GBps busbw_GBps #wrong`. "size" and "count" mean
   what they mean in nccl-tests and bench_mpi: the largest buffer involved, in
   bytes and in elements (all_gather, gather: the whole output; reduce_scatter,
   scatter, all_to_all: the whole input of a rank). Per-rank blocks are count/n
   elements, at least 1, so tiny sizes round up to n elements. The time is the
   maximum over the ranks of the average time per iteration, in microseconds;
   algbw = size / time with GB = 1e9 bytes; busbw = algbw * the nccl-tests factor.

   Inputs are small integers chosen per dtype and op so that the reduction is
   exact in every dtype (sums stay below the dtype's exact-integer range, products
   are of 1, 2 and units, averages come out whole), so each result is compared
   bitwise with a reference computed locally from the same formulas (a zero may
   have either sign). The check runs after the timed loop and is not timed.

   Flags (sizes take K, M, G suffixes, powers of 1024):
     -b MINBYTES  -e MAXBYTES  -f FACTOR | -i INCREMENT  -x SIZE,SIZE (extra sizes)
     -o COLL[,COLL] | all     all_reduce all_gather reduce_scatter broadcast reduce
                              gather scatter all_to_all sendrecv barrier (and copy,
                              which "all" leaves out)
     -R OP[,OP] | all         sum prod min max avg
     -d TYPE[,TYPE] | all     int8 uint8 int32 uint32 int64 uint64 half bfloat16
                              float double complex64 complex128
     -r ROOT  -n ITERS  -w WARMUP  -c CHECK(0/1)  -t SECONDS (target time per size)
     -G 0|1  -M 1|0           GPU mode and its buffers (CUDA builds, below)
   -t calibrates the iterations on the out-of-place column (batches growing 4x up
   to 20 ms, as bench_mpi) and uses them for both columns, at least -n of them.
   sendrecv has no in-place form and broadcast one buffer (both columns time the
   same call); columns not measured or not checked read N/A, which summarize.py
   cannot read, so runs meant for it keep -c 1. Exit status: 0, 1 when any result
   was wrong or a call failed (cc_comm_last_error on stderr), 2 for bad flags.

   -o copy (not part of -o all) times a plain copy of `size` bytes from the send
   buffer to the receive buffer, as a yardstick: memcpy here, cudaMemcpyAsync
   device to device in GPU mode. Its left column times rank 0 alone (the others
   wait), its right column every rank at once. Its busbw counts the bytes read
   plus the bytes written by every rank that copies: 2*size/time on the left,
   2*n*size/time on the right (with every rank on one GPU, that GPU's memory
   bandwidth as n copies in parallel get it).

   CUDA mode. The file is also C++17 for nvcc, which builds it as CUDA:

       nvcc -x cu -std=c++17 -O2 -I. -o build/cc_bench_cuda bench/cc_bench.c -lpthread
       build/ccrun -n 2 build/cc_bench_cuda -G 1 -o all_reduce,copy -b 8 -e 64M -f 4

   Built so, it includes cc_cuda.cuh and takes two more flags: -G 1 (GPU mode;
   -G 0, the default, is the CPU mode above) and -M 1|0 (device buffers from
   cc_cuda_malloc, the default, or plain cudaMalloc). In GPU mode, as in
   nccl-tests: each rank makes a cc_cuda_comm on device local_rank %
   cudaGetDeviceCount() (local_rank = rank on one host; several ranks may share
   a GPU) and one stream (cudaStreamCreateWithFlags, non-blocking); the send and
   receive buffers are device buffers; inputs are made on the host as above and
   copied in; the calls are the cc_cuda_ twins on that stream; the time of a
   batch runs from a host barrier (the stream idle) to cudaStreamSynchronize
   after its last call, so it includes the GPU work, and is divided by the batch
   (max over ranks as above); the check copies the results back to the host.
   The header gains a "# cuda: device N name, mode ipc|staged" line. Without a
   usable device, -G 1 exits 2 ("cc_bench: no CUDA device: ..."); a build
   without CUDA refuses -G 1 as a bad flag.

   Comparing an all_reduce with the copy: ranks sharing one GPU have no links
   between them, so nccl-tests' busbw (what crosses links) says little there.
   Count instead what any all_reduce must move through the GPU's memory: read n
   inputs and write n outputs of `size` bytes, 2*n*size bytes in all, i.e. a
   "memory bandwidth" of 2*n*algbw. Divided by the copy's right-hand busbw at
   the same size and n (same run), 1.0 means the all_reduce moves its
   unavoidable bytes at copy speed; the algorithm's extra traffic (reading
   peers' blocks, writing partial sums) shows as a ratio below 1.
*/
#define CC_IMPLEMENTATION
#include "cc.h"
#ifdef __CUDACC__
#include "cc_cuda.cuh"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ tables */

enum { K_ALL_REDUCE, K_ALL_GATHER, K_REDUCE_SCATTER, K_BROADCAST, K_REDUCE,
       K_GATHER, K_SCATTER, K_ALL_TO_ALL, K_SENDRECV, K_BARRIER, K_COPY, K_COUNT };

typedef struct coll_info {
  const char *name;   /* cc's name, the -o argument                           */
  const char *row;    /* the row's first column: bench_mpi's name where it has one */
  const char *alias;  /* another accepted -o spelling                         */
  int reduces;        /* takes an op                                          */
  int rooted;         /* takes a root                                         */
  double bus;         /* 0: 2(n-1)/n, 1: (n-1)/n, 2: 1, 3: copy (bus_factor)  */
} coll_info;

static const coll_info colls[K_COUNT] = {
  { "all_reduce",     "allreduce",      "allreduce",     1, 0, 0 },
  { "all_gather",     "allgather",      "allgather",     0, 0, 1 },
  { "reduce_scatter", "reduce_scatter", "reducescatter", 1, 0, 1 },
  { "broadcast",      "broadcast",      "bcast",         0, 1, 2 },
  { "reduce",         "reduce",         "reduce",        1, 1, 2 },
  { "gather",         "gather",         "gather",        0, 1, 1 },
  { "scatter",        "scatter",        "scatter",       0, 1, 1 },
  { "all_to_all",     "alltoall",       "alltoall",      0, 0, 1 },
  { "sendrecv",       "sendrecv",       "send_recv",     0, 0, 2 },
  { "barrier",        "barrier",        "barrier",       0, 0, 2 },
  { "copy",           "copy",           "memcpy",        0, 0, 3 },   /* not in "all" */
};

enum { DK_SINT, DK_UINT, DK_FLOAT, DK_CPLX };

typedef struct dtype_info {
  const char *name;    /* nccl-tests' name, printed in the type column */
  const char *alias;
  cc_dtype t;
  int kind;
  double lim;          /* magnitudes up to lim are exact and in range */
} dtype_info;

/* uint8 stops at 160 and int8 at 127 so that the sentinel byte 0xA5 (165, -91)
   is never an expected value. */
static const dtype_info dtypes[] = {
  { "int8",       "char",       CC_INT8,       DK_SINT,  127.0 },
  { "uint8",      "uchar",      CC_UINT8,      DK_UINT,  160.0 },
  { "int32",      "int",        CC_INT32,      DK_SINT,  1048576.0 },
  { "uint32",     "uint",       CC_UINT32,     DK_UINT,  1048576.0 },
  { "int64",      "long",       CC_INT64,      DK_SINT,  1048576.0 },
  { "uint64",     "ulong",      CC_UINT64,     DK_UINT,  1048576.0 },
  { "half",       "float16",    CC_FLOAT16,    DK_FLOAT, 2048.0 },
  { "bfloat16",   "bf16",       CC_BFLOAT16,   DK_FLOAT, 256.0 },
  { "float",      "float32",    CC_FLOAT32,    DK_FLOAT, 1048576.0 },
  { "double",     "float64",    CC_FLOAT64,    DK_FLOAT, 1048576.0 },
  { "complex64",  "cfloat",     CC_COMPLEX64,  DK_CPLX,  1048576.0 },
  { "complex128", "cdouble",    CC_COMPLEX128, DK_CPLX,  1048576.0 },
};
#define N_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

typedef struct op_info { const char *name; cc_op op; } op_info;
static const op_info ops[] = {
  { "sum", CC_SUM }, { "prod", CC_PROD }, { "min", CC_MIN }, { "max", CC_MAX },
  { "avg", CC_AVG },
};
#define N_OPS ((int)(sizeof ops / sizeof ops[0]))

#define SENTINEL 0xA5
#define DEV_DESC 128   /* bytes of a rank's device description */
#define MAX_SIZES 1024

/* ------------------------------------------------------------------ state */

static cc_comm *g_comm;
static int g_rank, g_n;
static char g_ctx[256] = "startup";   /* what is running, for error messages */

static void fail_cc(cc_result r, const char *call, int line)
{
  fprintf(stderr, "cc_bench: rank %d: %s returned %s\n  during: %s\n  detail: %s\n  (cc_bench.c:%d)\n",
          g_rank, call, cc_strerror(r), g_ctx, cc_comm_last_error(g_comm), line);
  fflush(stderr);
  exit(1);
}
#define CHECK(call) do { cc_result r_ = (call); if (r_ != CC_OK) fail_cc(r_, #call, __LINE__); } while (0)

static void usage(const char *why)
{
  if (why && g_rank == 0) fprintf(stderr, "cc_bench: %s\n", why);
  if (g_rank == 0)
    fprintf(stderr,
      "usage: ccrun -n N cc_bench [-o COLL[,COLL]|all] [-d TYPE[,TYPE]|all] [-R OP[,OP]|all]\n"
      "         [-b MINBYTES] [-e MAXBYTES] [-f FACTOR | -i INCREMENT] [-x SIZE,...]\n"
      "         [-r ROOT] [-n ITERS] [-w WARMUP] [-c 0|1] [-t SECONDS] [-G 0|1] [-M 1|0]\n"
      "  COLL: all_reduce all_gather reduce_scatter broadcast reduce gather scatter\n"
      "        all_to_all sendrecv barrier (= all), and copy (a memcpy yardstick)\n"
      "  TYPE: int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double\n"
      "        complex64 complex128      OP: sum prod min max avg\n"
      "  -G 1: GPU mode (cc_cuda_ calls on device buffers; CUDA builds only)\n"
      "  -M 1: GPU buffers from cc_cuda_malloc, -M 0: from cudaMalloc\n"
      "  defaults: -o all_reduce -d float -R sum -b 8 -e 64M -f 2 -r 0 -n 20 -w 5 -c 1 -G 0 -M 1\n");
  exit(2);
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ parsing */

static int parse_size(const char *s, size_t *out)
{
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  unsigned long long mul = 1;
  if (end == s) return -1;
  switch (*end) {
  case 'k': case 'K': mul = 1ull << 10; end++; break;
  case 'm': case 'M': mul = 1ull << 20; end++; break;
  case 'g': case 'G': mul = 1ull << 30; end++; break;
  default: break;
  }
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0' || (mul > 1 && v > (~0ull) / mul)) return -1;
  *out = (size_t)(v * mul);
  return 0;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* A comma list of names; sets sel[i] for each name matching table entry i
   (name or alias), or all of them for "all". Returns 1 for "all", 0, or -1. */
static int parse_list(const char *arg, int n, const char *(*name_of)(int, int), int *sel)
{
  char buf[512];
  char *tok, *p;
  int i;
  if (strlen(arg) >= sizeof buf) return -1;
  strcpy(buf, arg);
  for (i = 0; i < n; i++) sel[i] = 0;
  if (strcmp(arg, "all") == 0) {
    for (i = 0; i < n; i++) sel[i] = 1;
    return 1;
  }
  for (tok = buf; tok && *tok; tok = p) {
    int found = 0;
    p = strchr(tok, ',');
    if (p) *p++ = '\0';
    for (i = 0; i < n; i++)
      if (strcmp(tok, name_of(i, 0)) == 0 || strcmp(tok, name_of(i, 1)) == 0) { sel[i] = 1; found = 1; }
    if (!found) return -1;
  }
  return 0;
}

static const char *coll_name_of(int i, int alias) { return alias ? colls[i].alias : colls[i].name; }
static const char *dtype_name_of(int i, int alias) { return alias ? dtypes[i].alias : dtypes[i].name; }
static const char *op_name_of(int i, int alias) { (void)alias; return ops[i].name; }

static int op_valid(const dtype_info *d, cc_op op)
{
  if (op == CC_AVG) return d->kind == DK_FLOAT || d->kind == DK_CPLX;
  if (op == CC_MIN || op == CC_MAX) return d->kind != DK_CPLX;
  return 1;
}

/* ------------------------------------------------------------------ values */

/* A small hash: element k of rank r, stream `salt`. */
static uint32_t mix3(uint32_t a, uint32_t b, uint32_t c)
{
  uint32_t h = a * 2654435761u;
  h ^= (b + 0x9e3779b9u) * 2246822519u;
  h ^= c * 3266489917u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return h;
}

static uint16_t f32_to_f16(float f)
{
  uint32_t x, sign, man, h, rem;
  int e;
  memcpy(&x, &f, 4);
  sign = (x >> 16) & 0x8000u;
  man = x & 0x7fffffu;
  e = (int)((x >> 23) & 0xffu);
  if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0u));
  e = e - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {                          /* subnormal half (or zero) */
    uint32_t shift, halfway;
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000u;
    shift = (uint32_t)(14 - e);
    h = man >> shift;
    rem = man & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  h = ((uint32_t)e << 10) | (man >> 13);
  rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;   /* may carry into inf */
  return (uint16_t)(sign | h);
}

static uint16_t f32_to_bf16(float f)
{
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* Store (re, im) as element i of an array of dtype t. */
static void put(cc_dtype t, void *base, size_t i, double re, double im)
{
  switch (t) {
  case CC_INT8:    ((int8_t *)base)[i] = (int8_t)re; break;
  case CC_UINT8:   ((uint8_t *)base)[i] = (uint8_t)re; break;
  case CC_INT32:   ((int32_t *)base)[i] = (int32_t)re; break;
  case CC_UINT32:  ((uint32_t *)base)[i] = (uint32_t)re; break;
  case CC_INT64:   ((int64_t *)base)[i] = (int64_t)re; break;
  case CC_UINT64:  ((uint64_t *)base)[i] = (uint64_t)re; break;
  case CC_FLOAT16: ((uint16_t *)base)[i] = f32_to_f16((float)re); break;
  case CC_BFLOAT16:((uint16_t *)base)[i] = f32_to_bf16((float)re); break;
  case CC_FLOAT32: ((float *)base)[i] = (float)re; break;
  case CC_FLOAT64: ((double *)base)[i] = re; break;
  case CC_COMPLEX64:
    ((float *)base)[2 * i] = (float)re;
    ((float *)base)[2 * i + 1] = (float)im;
    break;
  case CC_COMPLEX128:
    ((double *)base)[2 * i] = re;
    ((double *)base)[2 * i + 1] = im;
    break;
  default: break;
  }
}

/* The run's value generator: which op, which dtype, and the value range. */
typedef struct gen {
  const dtype_info *d;
  cc_op op;           /* -1: data movement only */
  uint32_t m;         /* values are in [0, m) shifted by off */
  double off;
} gen;

static void gen_init(gen *g, const dtype_info *d, cc_op op)
{
  double lim = d->lim, m;
  int sgn = d->kind != DK_UINT;
  g->d = d;
  g->op = op;
  if (op == CC_SUM) m = floor(lim / g_n);               /* |sum| <= lim (or lim/2) */
  else if (op == CC_AVG) m = floor(lim / g_n) - 2.0;    /* |partial sums| <= lim/2 */
  else m = lim < 1000.0 ? lim : 1000.0;                 /* min, max, data */
  if (m < 1.0) m = 1.0;
  g->m = (uint32_t)m;
  g->off = sgn ? (double)(g->m / 2) : 0.0;
}

/* Input element k of rank r for a reduction. */
static void gen_red(const gen *g, int r, size_t k, double *re, double *im)
{
  uint32_t kk = (uint32_t)k, rr = (uint32_t)r;
  *im = 0.0;
  switch (g->op) {
  case CC_SUM:
    *re = (double)(mix3(kk, rr, 1) % g->m) - g->off;
    if (g->d->kind == DK_CPLX) *im = (double)(mix3(kk, rr, 2) % g->m) - g->off;
    break;
  case CC_AVG: {             /* base(k) + d(r), the d(r) summing to 0: avg = base */
    double dr = (g_n % 2 == 1 && r == g_n - 1) ? 0.0 : (r % 2 ? -1.0 : 1.0);
    *re = (double)(mix3(kk, 0, 3) % g->m) - g->off + dr;
    if (g->d->kind == DK_CPLX) *im = (double)(mix3(kk, 0, 4) % g->m) - g->off - dr;
    break;
  }
  case CC_MIN: case CC_MAX:
    *re = (double)(mix3(kk, rr, 5) % g->m) - g->off;
    break;
  case CC_PROD: {            /* units, and 2 (or 1+i) at most once per element */
    int big = (k + (size_t)r) % (size_t)(g_n + 1) == 0;
    uint32_t h = mix3(kk, rr, 6);
    if (g->d->kind == DK_CPLX) {
      static const double ur[4] = { 1, 0, -1, 0 }, ui[4] = { 0, 1, 0, -1 };
      *re = ur[h % 4];
      *im = ui[h % 4];
      if (big) { double a = *re, b = *im; *re = a - b; *im = a + b; }   /* * (1+i) */
    } else {
      *re = big ? 2.0 : 1.0;
      if (g->d->kind != DK_UINT && h % 5 == 0) *re = -*re;
    }
    break;
  }
  default:
    *re = 0.0;
    break;
  }
}

/* Element k of the data that rank `src` contributes (stream `salt`). */
static void gen_data(const gen *g, int src, size_t k, uint32_t salt, double *re, double *im)
{
  *re = (double)(mix3((uint32_t)k, (uint32_t)src, salt) % g->m) - g->off;
  *im = g->d->kind == DK_CPLX ? (double)(mix3((uint32_t)k, (uint32_t)src, salt + 7777u) % g->m) - g->off : 0.0;
}

/* The reference reduction of element k over all ranks, in rank order. */
static void ref_red(const gen *g, size_t k, double *re, double *im)
{
  double ar, ai, xr, xi;
  int r;
  gen_red(g, 0, k, &ar, &ai);
  for (r = 1; r < g_n; r++) {
    gen_red(g, r, k, &xr, &xi);
    switch (g->op) {
    case CC_SUM: case CC_AVG: ar += xr; ai += xi; break;
    case CC_PROD: {
      double tr = ar * xr - ai * xi;
      ai = ar * xi + ai * xr;
      ar = tr;
      break;
    }
    case CC_MIN: ar = fmin(ar, xr); break;
    case CC_MAX: ar = fmax(ar, xr); break;
    default: break;
    }
  }
  if (g->op == CC_AVG) { ar /= g_n; ai /= g_n; }
  *re = ar;
  *im = ai;
}

static int is_zero_bits(const unsigned char *p, size_t bytes)
{
  /* +0 or -0 of a float of `bytes` bytes: every bit but the sign bit is clear */
  uint16_t one = 1;
  unsigned char low;
  size_t top, i;
  memcpy(&low, &one, 1);
  top = low ? bytes - 1 : 0;   /* the byte holding the sign */
  for (i = 0; i < bytes; i++)
    if ((i == top ? (p[i] & 0x7fu) : p[i]) != 0) return 0;
  return 1;
}

/* Elements of `got` that differ from `want` (a zero of either sign matches). */
static long count_wrong(const void *got, const void *want, size_t nelem, const dtype_info *d)
{
  size_t ts = cc_dtype_size(d->t), i, part, parts, cb;
  const unsigned char *a = (const unsigned char *)got, *b = (const unsigned char *)want;
  long wrong = 0;
  if (nelem == 0 || memcmp(got, want, nelem * ts) == 0) return 0;
  parts = d->kind == DK_CPLX ? 2 : 1;
  cb = ts / parts;
  for (i = 0; i < nelem; i++) {
    int bad = 0;
    for (part = 0; part < parts; part++) {
      const unsigned char *x = a + i * ts + part * cb, *y = b + i * ts + part * cb;
      if (memcmp(x, y, cb) == 0) continue;
      if ((d->kind == DK_FLOAT || d->kind == DK_CPLX) && is_zero_bits(x, cb) && is_zero_bits(y, cb)) continue;
      bad = 1;
    }
    wrong += bad;
  }
  return wrong;
}

/* ------------------------------------------------------------------ one case */

typedef struct bench_case {
  int k;                  /* collective */
  const dtype_info *d;
  const op_info *o;       /* NULL: no op */
  int root;
  size_t ts;              /* element bytes */
  size_t count;           /* elements of the nominal size */
  size_t blk;             /* per-rank block (count/n, at least 1) */
  size_t scount, rcount;  /* elements sent / received by this rank */
  size_t sizeb;           /* the row's size in bytes */
  unsigned char *sbuf, *rbuf;   /* the call's buffers (host or device memory) */
  unsigned char *inp, *ref;     /* host: this rank's input, its expected result */
  unsigned char *res;           /* host: the result copied back (GPU mode), or NULL */
} bench_case;

static void case_counts(bench_case *bc, size_t nominal)
{
  size_t n = (size_t)g_n;
  bc->count = nominal / bc->ts;
  if (bc->count < 1) bc->count = 1;
  bc->blk = bc->count / n;
  if (bc->blk < 1) bc->blk = 1;
  switch (bc->k) {
  case K_ALL_REDUCE: case K_BROADCAST: case K_REDUCE: case K_SENDRECV: case K_COPY:
    bc->scount = bc->rcount = bc->count;
    bc->sizeb = bc->count * bc->ts;
    break;
  case K_ALL_GATHER: case K_GATHER:
    bc->scount = bc->blk;
    bc->rcount = bc->blk * n;
    bc->sizeb = bc->rcount * bc->ts;
    break;
  case K_REDUCE_SCATTER: case K_SCATTER:
    bc->scount = bc->blk * n;
    bc->rcount = bc->blk;
    bc->sizeb = bc->scount * bc->ts;
    break;
  case K_ALL_TO_ALL:
    bc->scount = bc->rcount = bc->blk * n;
    bc->sizeb = bc->scount * bc->ts;
    break;
  default:
    bc->count = bc->blk = bc->scount = bc->rcount = bc->sizeb = 0;
    break;
  }
}

/* inp: this rank's input (scount elements); ref: its expected output (rcount). */
static void case_fill(const bench_case *bc, const gen *g, int want_ref)
{
  size_t i, j, n = (size_t)g_n;
  double re, im;
  cc_dtype t = bc->d->t;
  int me = g_rank;
  switch (bc->k) {
  case K_ALL_REDUCE: case K_REDUCE: case K_REDUCE_SCATTER:
    for (i = 0; i < bc->scount; i++) { gen_red(g, me, i, &re, &im); put(t, bc->inp, i, re, im); }
    if (want_ref) {
      size_t first = bc->k == K_REDUCE_SCATTER ? (size_t)me * bc->blk : 0;
      for (i = 0; i < bc->rcount; i++) { ref_red(g, first + i, &re, &im); put(t, bc->ref, i, re, im); }
    }
    break;
  case K_ALL_GATHER: case K_GATHER:
    for (i = 0; i < bc->blk; i++) { gen_data(g, me, i, 11, &re, &im); put(t, bc->inp, i, re, im); }
    if (want_ref)
      for (j = 0; j < n; j++)
        for (i = 0; i < bc->blk; i++) { gen_data(g, (int)j, i, 11, &re, &im); put(t, bc->ref, j * bc->blk + i, re, im); }
    break;
  case K_BROADCAST:
    if (me == bc->root)
      for (i = 0; i < bc->count; i++) { gen_data(g, bc->root, i, 12, &re, &im); put(t, bc->inp, i, re, im); }
    else
      memset(bc->inp, SENTINEL, bc->count * bc->ts);
    if (want_ref)
      for (i = 0; i < bc->count; i++) { gen_data(g, bc->root, i, 12, &re, &im); put(t, bc->ref, i, re, im); }
    break;
  case K_SCATTER:
    if (me == bc->root)
      for (i = 0; i < bc->scount; i++) { gen_data(g, bc->root, i, 13, &re, &im); put(t, bc->inp, i, re, im); }
    else
      memset(bc->inp, SENTINEL, bc->scount * bc->ts);
    if (want_ref)
      for (i = 0; i < bc->blk; i++) { gen_data(g, bc->root, (size_t)me * bc->blk + i, 13, &re, &im); put(t, bc->ref, i, re, im); }
    break;
  case K_ALL_TO_ALL:   /* block d of rank s: stream 100 + d */
    for (j = 0; j < n; j++)
      for (i = 0; i < bc->blk; i++) { gen_data(g, me, i, 100u + (uint32_t)j, &re, &im); put(t, bc->inp, j * bc->blk + i, re, im); }
    if (want_ref)
      for (j = 0; j < n; j++)
        for (i = 0; i < bc->blk; i++) { gen_data(g, (int)j, i, 100u + (uint32_t)me, &re, &im); put(t, bc->ref, j * bc->blk + i, re, im); }
    break;
  case K_SENDRECV:
    for (i = 0; i < bc->count; i++) { gen_data(g, me, i, 14, &re, &im); put(t, bc->inp, i, re, im); }
    if (want_ref)
      for (i = 0; i < bc->count; i++) { gen_data(g, (me + g_n - 1) % g_n, i, 14, &re, &im); put(t, bc->ref, i, re, im); }
    break;
  case K_COPY:
    for (i = 0; i < bc->count; i++) { gen_data(g, me, i, 15, &re, &im); put(t, bc->inp, i, re, im); }
    if (want_ref) memcpy(bc->ref, bc->inp, bc->count * bc->ts);
    break;
  default:
    break;
  }
}

/* ------------------------------------------------------------------ backends */

/* Where sbuf and rbuf live and how the calls are made: host memory and cc.h's
   calls (cpu_backend, below case_run), or in CUDA builds device memory and
   cc_cuda.cuh's calls on the rank's stream (gpu_backend, in the CUDA block).
   inp, ref and res are host memory in both. */
typedef struct backend {
  const char *prefix;                                     /* of the calls: "cc_", "cc_cuda_" */
  const char *copy_call;                                  /* what -o copy times */
  void *(*alloc)(size_t bytes);                           /* zeroed; NULL: out of memory */
  void (*release)(void *p);
  void (*put)(void *dst, const void *src, size_t bytes);  /* host -> buffer, done on return */
  void (*fill)(void *dst, int byte, size_t bytes);
  void (*get)(void *dst, const void *src, size_t bytes);  /* buffer -> host; NULL: read in place */
  void (*run)(const bench_case *bc, int inplace);         /* one call, done or queued */
  void (*sync)(void);                                     /* wait for what run queued */
  void (*describe)(char *buf, size_t size);               /* NULL: "cpu" in "Using devices" */
  void (*header)(void);                                   /* rank 0's extra header lines, or NULL */
  void (*finish)(void);                                   /* after the last release, or NULL */
} backend;

static const backend *g_be;   /* set first thing in main */

/* Put the inputs in place for one column (0 out of place, 1 in place). */
static void case_setup(const bench_case *bc, int inplace)
{
  size_t ts = bc->ts, off = (size_t)g_rank * bc->blk * ts;
  switch (bc->k) {
  case K_BROADCAST:   /* one buffer: rbuf for the first column, sbuf for the second */
    g_be->put(inplace ? bc->sbuf : bc->rbuf, bc->inp, bc->count * ts);
    break;
  case K_ALL_GATHER: case K_GATHER:
    if (!inplace) {
      g_be->put(bc->sbuf, bc->inp, bc->scount * ts);
      g_be->fill(bc->rbuf, SENTINEL, bc->rcount * ts);
    } else {
      g_be->fill(bc->rbuf, SENTINEL, bc->rcount * ts);
      g_be->put(bc->rbuf + off, bc->inp, bc->scount * ts);
    }
    break;
  default:   /* copy: both columns copy sbuf to rbuf */
    g_be->put(bc->sbuf, bc->inp, bc->scount * ts);
    if (!inplace || bc->k == K_COPY) g_be->fill(bc->rbuf, SENTINEL, bc->rcount * ts);
    break;
  }
}

/* The result of one column on this rank, and how many elements it should hold. */
static const unsigned char *case_result(const bench_case *bc, int inplace, size_t *nelem)
{
  size_t off = (size_t)g_rank * bc->blk * bc->ts;
  *nelem = bc->rcount;
  if ((bc->k == K_REDUCE || bc->k == K_GATHER) && g_rank != bc->root) { *nelem = 0; return NULL; }
  if (bc->k == K_COPY && !inplace && g_rank != 0) { *nelem = 0; return NULL; }   /* rank 0 alone */
  if (!inplace || bc->k == K_COPY) return bc->rbuf;
  switch (bc->k) {
  case K_ALL_GATHER: case K_GATHER: return bc->rbuf;
  case K_REDUCE_SCATTER: case K_SCATTER: return bc->sbuf + off;
  default: return bc->sbuf;
  }
}

static void case_run(const bench_case *bc, int inplace)
{
  cc_comm *c = g_comm;
  unsigned char *s = bc->sbuf, *r = bc->rbuf;
  size_t off = (size_t)g_rank * bc->blk * bc->ts;
  cc_dtype t = bc->d->t;
  cc_op op = bc->o ? bc->o->op : CC_SUM;
  switch (bc->k) {
  case K_ALL_REDUCE:
    CHECK(cc_all_reduce(c, s, inplace ? s : r, bc->count, t, op));
    break;
  case K_ALL_GATHER:
    CHECK(cc_all_gather(c, inplace ? r + off : s, r, bc->blk, t));
    break;
  case K_REDUCE_SCATTER:
    CHECK(cc_reduce_scatter(c, s, inplace ? s + off : r, bc->blk, t, op));
    break;
  case K_BROADCAST:
    CHECK(cc_broadcast(c, inplace ? s : r, bc->count, t, bc->root));
    break;
  case K_REDUCE:
    CHECK(cc_reduce(c, s, inplace ? s : r, bc->count, t, op, bc->root));
    break;
  case K_GATHER:
    CHECK(cc_gather(c, inplace ? r + off : s, r, bc->blk, t, bc->root));
    break;
  case K_SCATTER:
    CHECK(cc_scatter(c, s, inplace ? s + off : r, bc->blk, t, bc->root));
    break;
  case K_ALL_TO_ALL:
    CHECK(cc_all_to_all(c, s, inplace ? s : r, bc->blk, t));
    break;
  case K_SENDRECV:   /* a ring step in one group; out of place only */
    CHECK(cc_group_begin(c));
    CHECK(cc_send(c, s, bc->count, t, (g_rank + 1) % g_n, 0));
    CHECK(cc_recv(c, r, bc->count, t, (g_rank + g_n - 1) % g_n, 0));
    CHECK(cc_group_end(c, NULL));
    break;
  case K_BARRIER:
    CHECK(cc_barrier(c));
    break;
  case K_COPY:        /* left column: rank 0 alone; right: every rank */
    if (inplace || g_rank == 0) memcpy(r, s, bc->sizeb);
    break;
  default:
    break;
  }
}

static void *cpu_alloc(size_t bytes)
{
  void *p = NULL;
  if (posix_memalign(&p, 4096, bytes) != 0) return NULL;
  memset(p, 0, bytes);
  return p;
}
static void cpu_put(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
static void cpu_fill(void *dst, int byte, size_t bytes) { memset(dst, byte, bytes); }
static void cpu_sync(void) {}

static const backend cpu_backend = {
  "cc_", "memcpy", cpu_alloc, free, cpu_put, cpu_fill, NULL, case_run, cpu_sync, NULL, NULL, NULL
};

/* ------------------------------------------------------------------ CUDA */

#ifdef __CUDACC__
/* GPU mode (-G 1), compiled by nvcc only: the GPU backend. Each rank owns one
   cc_cuda_comm over g_comm, on device local_rank % count, and one non-blocking
   stream; the calls, copies and fills are all queued on that stream. */
static cc_cuda_comm *g_gc;
static cudaStream_t g_stream;
static int g_dev, g_cc_malloc;
static void *g_deferred[2];   /* cudaMalloc'ed buffers: freed after cc_cuda_comm_destroy, */
static int g_ndeferred;       /* when no peer has them mapped any more                    */

static void fail_cuda(cudaError_t e, const char *call, int line)
{
  fprintf(stderr, "cc_bench: rank %d: %s failed: %s: %s\n  during: %s\n  (cc_bench.c:%d)\n",
          g_rank, call, cudaGetErrorName(e), cudaGetErrorString(e), g_ctx, line);
  fflush(stderr);
  exit(1);
}
#define CUCHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) fail_cuda(e_, #call, __LINE__); } while (0)

static void fail_gpu(cc_result r, const char *call, int line)
{
  fprintf(stderr, "cc_bench: rank %d: %s returned %s\n  during: %s\n  detail: %s\n  (cc_bench.c:%d)\n",
          g_rank, call, cc_strerror(r), g_ctx,
          g_gc ? cc_cuda_comm_last_error(g_gc) : cc_comm_last_error(g_comm), line);
  fflush(stderr);
  exit(1);
}
#define GCHECK(call) do { cc_result r_ = (call); if (r_ != CC_OK) fail_gpu(r_, #call, __LINE__); } while (0)

static void *gpu_alloc(size_t bytes)
{
  void *p = NULL;
  if (g_cc_malloc) {
    cc_result r = cc_cuda_malloc(g_gc, &p, bytes);
    if (r != CC_OK) {
      fprintf(stderr, "cc_bench: rank %d: cc_cuda_malloc: %s\n", g_rank, cc_cuda_comm_last_error(g_gc));
      return NULL;
    }
  } else {
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      fprintf(stderr, "cc_bench: rank %d: cudaMalloc: %s\n", g_rank, cudaGetErrorString(e));
      return NULL;
    }
  }
  CUCHECK(cudaMemsetAsync(p, 0, bytes, g_stream));
  CUCHECK(cudaStreamSynchronize(g_stream));
  return p;
}

static void gpu_release(void *p)
{
  if (g_cc_malloc) GCHECK(cc_cuda_free(g_gc, p));
  else if (p) g_deferred[g_ndeferred++] = p;
}

/* Copies and fills are synchronous for the caller: done on return. */
static void gpu_put(void *dst, const void *src, size_t bytes)
{
  if (bytes == 0) return;
  CUCHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream));
  CUCHECK(cudaStreamSynchronize(g_stream));
}

static void gpu_fill(void *dst, int byte, size_t bytes)
{
  if (bytes == 0) return;
  CUCHECK(cudaMemsetAsync(dst, byte, bytes, g_stream));
  CUCHECK(cudaStreamSynchronize(g_stream));
}

static void gpu_get(void *dst, const void *src, size_t bytes)
{
  if (bytes == 0) return;
  CUCHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g_stream));
  CUCHECK(cudaStreamSynchronize(g_stream));
}

/* The stream drained, then what the watchdog may have found meanwhile. */
static void gpu_sync(void)
{
  CUCHECK(cudaStreamSynchronize(g_stream));
  GCHECK(cc_cuda_comm_check(g_gc));
}

/* case_run's twin: the same buffers and forms, on device memory and g_stream. */
static void gpu_run(const bench_case *bc, int inplace)
{
  cc_cuda_comm *c = g_gc;
  cudaStream_t st = g_stream;
  unsigned char *s = bc->sbuf, *r = bc->rbuf;
  size_t off = (size_t)g_rank * bc->blk * bc->ts;
  cc_dtype t = bc->d->t;
  cc_op op = bc->o ? bc->o->op : CC_SUM;
  switch (bc->k) {
  case K_ALL_REDUCE:
    GCHECK(cc_cuda_all_reduce(c, s, inplace ? s : r, bc->count, t, op, st));
    break;
  case K_ALL_GATHER:
    GCHECK(cc_cuda_all_gather(c, inplace ? r + off : s, r, bc->blk, t, st));
    break;
  case K_REDUCE_SCATTER:
    GCHECK(cc_cuda_reduce_scatter(c, s, inplace ? s + off : r, bc->blk, t, op, st));
    break;
  case K_BROADCAST:
    GCHECK(cc_cuda_broadcast(c, inplace ? s : r, bc->count, t, bc->root, st));
    break;
  case K_REDUCE:
    GCHECK(cc_cuda_reduce(c, s, inplace ? s : r, bc->count, t, op, bc->root, st));
    break;
  case K_GATHER:
    GCHECK(cc_cuda_gather(c, inplace ? r + off : s, r, bc->blk, t, bc->root, st));
    break;
  case K_SCATTER:
    GCHECK(cc_cuda_scatter(c, s, inplace ? s + off : r, bc->blk, t, bc->root, st));
    break;
  case K_ALL_TO_ALL:
    GCHECK(cc_cuda_all_to_all(c, s, inplace ? s : r, bc->blk, t, st));
    break;
  case K_SENDRECV:
    GCHECK(cc_cuda_group_begin(c));
    GCHECK(cc_cuda_send(c, s, bc->count, t, (g_rank + 1) % g_n, 0, st));
    GCHECK(cc_cuda_recv(c, r, bc->count, t, (g_rank + g_n - 1) % g_n, 0, st));
    GCHECK(cc_cuda_group_end(c));
    break;
  case K_BARRIER:
    GCHECK(cc_cuda_barrier(c, st));
    break;
  case K_COPY:
    if (inplace || g_rank == 0) CUCHECK(cudaMemcpyAsync(r, s, bc->sizeb, cudaMemcpyDeviceToDevice, st));
    break;
  default:
    break;
  }
}

static void gpu_describe(char *buf, size_t size)
{
  cudaDeviceProp prop;
  CUCHECK(cudaGetDeviceProperties(&prop, g_dev));
  snprintf(buf, size, "device %2d [%04x:%02x:%02x] %s", g_dev, (unsigned)prop.pciDomainID,
           (unsigned)prop.pciBusID, (unsigned)prop.pciDeviceID, prop.name);
}

static void gpu_header(void)
{
  cudaDeviceProp prop;
  int rt = 0, drv = 0, count = 0;
  const char *tr = getenv("CC_CUDA_TRANSPORT");
  CUCHECK(cudaGetDeviceProperties(&prop, g_dev));
  CUCHECK(cudaRuntimeGetVersion(&rt));
  CUCHECK(cudaDriverGetVersion(&drv));
  CUCHECK(cudaGetDeviceCount(&count));
  printf("# cuda: device %d %s, mode %s, buffers %s (-M %d), sm_%d%d, %d SMs, %.1f GiB,"
         " %d visible, runtime %d.%d driver %d.%d, CC_CUDA_TRANSPORT=%s\n",
         g_dev, prop.name, cc_cuda_comm_mode(g_gc), g_cc_malloc ? "cc_cuda_malloc" : "cudaMalloc",
         g_cc_malloc, prop.major, prop.minor, prop.multiProcessorCount,
         (double)prop.totalGlobalMem / (double)(1u << 30), count, rt / 1000, rt % 1000 / 10,
         drv / 1000, drv % 1000 / 10, tr ? tr : "(auto)");
  printf("# cuda: calls on one non-blocking stream per rank; a batch is timed from a host barrier\n"
         "#       (stream idle) to cudaStreamSynchronize after its last call\n");
}

static void gpu_finish(void)
{
  cc_result r;
  int i;
  snprintf(g_ctx, sizeof g_ctx, "cc_bench: cc_cuda_comm_destroy at the end");
  CUCHECK(cudaStreamSynchronize(g_stream));
  r = cc_cuda_comm_destroy(g_gc);
  g_gc = NULL;
  if (r != CC_OK) fail_gpu(r, "cc_cuda_comm_destroy(g_gc)", __LINE__);
  for (i = 0; i < g_ndeferred; i++) CUCHECK(cudaFree(g_deferred[i]));
  g_ndeferred = 0;
  CUCHECK(cudaStreamDestroy(g_stream));
}

static const backend gpu_backend_ops = {
  "cc_cuda_", "cudaMemcpyAsync device to device", gpu_alloc, gpu_release, gpu_put, gpu_fill, gpu_get,
  gpu_run, gpu_sync, gpu_describe, gpu_header, gpu_finish
};

/* Every rank: a device, a stream, the cc_cuda_comm. Without a device on some
   rank, the first such rank says why and every rank exits 2. */
static const backend *gpu_backend(int cc_malloc)
{
  int count = 0, first;
  char why[256] = "";
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    snprintf(why, sizeof why, "cudaGetDeviceCount: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
  else if (count < 1)
    snprintf(why, sizeof why, "cudaGetDeviceCount found none");
  first = why[0] ? g_rank : g_n;
  snprintf(g_ctx, sizeof g_ctx, "cc_bench startup: looking for CUDA devices");
  CHECK(cc_all_reduce(g_comm, &first, &first, 1, CC_INT32, CC_MIN));
  if (first < g_n) {
    if (g_rank == first) {
      fprintf(stderr, "cc_bench: no CUDA device: %s (rank %d of %d)\n", why, g_rank, g_n);
      fflush(stderr);
    }
    CHECK(cc_barrier(g_comm));   /* before anyone exits, so that ccrun cannot cut the message */
    exit(2);
  }
  g_cc_malloc = cc_malloc;
  g_dev = cc_comm_local_rank(g_comm) % count;
  snprintf(g_ctx, sizeof g_ctx, "cc_bench startup: device %d, its stream, cc_cuda_comm_init", g_dev);
  CUCHECK(cudaSetDevice(g_dev));
  CUCHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  CHECK(cc_cuda_comm_init(g_comm, g_dev, &g_gc));
  return &gpu_backend_ops;
}

#else  /* a build without CUDA */

static const backend *gpu_backend(int cc_malloc)
{
  (void)cc_malloc;
  usage("-G 1: this cc_bench is built without CUDA (build it with nvcc -x cu: see the top of bench/cc_bench.c)");
  return &cpu_backend;
}

#endif /* __CUDACC__ */

/* Run `iters` iterations back to back; the maximum over the ranks of the time. */
static double case_time(const bench_case *bc, int inplace, long iters)
{
  double t0, dt;
  long it;
  g_be->sync();   /* GPU: the stream idle (warm-up, earlier batches) before the barrier */
  CHECK(cc_barrier(g_comm));
  t0 = now_s();
  for (it = 0; it < iters; it++) g_be->run(bc, inplace);
  g_be->sync();   /* GPU: cudaStreamSynchronize after the last call of the batch */
  dt = now_s() - t0;
  CHECK(cc_all_reduce(g_comm, &dt, &dt, 1, CC_FLOAT64, CC_MAX));
  return dt;
}

typedef struct column {
  int done;       /* measured */
  double t_us, algbw, busbw;
  long wrong;     /* -1: not checked */
} column;

typedef struct options {
  int warmup;
  long iters;
  int check;
  double target;  /* seconds per size; 0: use iters */
} options;

static double bus_factor(int k, int right)
{
  double n = (double)g_n;
  if (colls[k].bus == 0) return 2.0 * (n - 1.0) / n;
  if (colls[k].bus == 1) return (n - 1.0) / n;
  if (colls[k].bus == 3) return right ? 2.0 * n : 2.0;   /* copy: read + written, by 1 or n ranks */
  return 1.0;
}

static void set_ctx(const bench_case *bc, const char *what)
{
  snprintf(g_ctx, sizeof g_ctx, "cc_bench %s: %s count=%zu (block %zu) dtype=%s op=%s root=%d, %s",
           colls[bc->k].name, colls[bc->k].name, bc->count, bc->blk,
           bc->d ? bc->d->name : "-", bc->o ? bc->o->name : "-", bc->root, what);
}

static void case_column(bench_case *bc, const options *opt, int inplace, long *iters, column *col)
{
  int w;
  double dt;
  set_ctx(bc, inplace ? "in place, timing" : "out of place, timing");
  case_setup(bc, inplace);
  for (w = 0; w < opt->warmup; w++) g_be->run(bc, inplace);
  if (*iters <= 0) {   /* calibrate: grow a batch 4x until it lasts 20 ms (or the target) */
    double until = opt->target < 0.02 ? opt->target : 0.02, per;
    long n = 1, want;
    for (;;) {
      dt = case_time(bc, inplace, n);
      if (dt >= until || n >= 1000000) break;
      n *= 4;
    }
    per = dt / (double)n;
    want = (long)ceil(opt->target / (per > 0 ? per : 1e-9));
    if (want < opt->iters) want = opt->iters;
    if (want > 1000000) want = 1000000;
    *iters = want;
  }
  dt = case_time(bc, inplace, *iters);
  col->done = 1;
  col->t_us = dt / (double)*iters * 1e6;
  col->algbw = bc->k == K_BARRIER || dt <= 0 ? 0.0 : (double)bc->sizeb / 1e9 / (col->t_us * 1e-6);
  col->busbw = col->algbw * bus_factor(bc->k, inplace);
  col->wrong = -1;
  if (opt->check && bc->k != K_BARRIER) {
    size_t nelem;
    const unsigned char *res;
    int64_t wrong;
    set_ctx(bc, inplace ? "in place, checked run" : "out of place, checked run");
    case_setup(bc, inplace);
    g_be->run(bc, inplace);
    g_be->sync();
    res = case_result(bc, inplace, &nelem);
    if (res && g_be->get) {   /* GPU: copy the result back */
      g_be->get(bc->res, res, nelem * bc->ts);
      res = bc->res;
    }
    wrong = res ? (int64_t)count_wrong(res, bc->ref, nelem, bc->d) : 0;
    CHECK(cc_all_reduce(g_comm, &wrong, &wrong, 1, CC_INT64, CC_SUM));
    col->wrong = (long)wrong;
  } else if (opt->check) {
    col->wrong = 0;
  }
}

/* ------------------------------------------------------------------ output */

static void print_num(double v, int width, int prec, int ok)
{
  if (ok) printf(" %*.*f", width, prec, v);
  else printf(" %*s", width, "N/A");
}

static void print_wrong(long w, int ok)
{
  if (ok && w >= 0) printf(" %8ld", w);
  else printf(" %8s", "N/A");
}

static void print_row(const bench_case *bc, long iters, const column *oop, const column *ip)
{
  const char *type = bc->k == K_BARRIER ? "-" : bc->d->name;
  const char *op = bc->o ? bc->o->name : "-";
  printf("  %-14s %12zu %12zu %6s %5s", colls[bc->k].row, bc->sizeb,
         bc->ts ? bc->sizeb / bc->ts : 0, type, op);
  print_num(oop->t_us, 12, 2, oop->done);
  print_num(oop->algbw, 11, 3, oop->done);
  print_num(oop->busbw, 11, 3, oop->done);
  print_wrong(oop->wrong, oop->done);
  printf(" %9ld %5d", iters, colls[bc->k].rooted ? bc->root : -1);
  print_num(ip->t_us, 12, 2, ip->done);
  print_num(ip->algbw, 11, 3, ip->done);
  print_num(ip->busbw, 11, 3, ip->done);
  print_wrong(ip->wrong, ip->done);
  printf("\n");
  fflush(stdout);
}

static void print_header(int k)
{
  static const char *notes[K_COUNT] = {
    "in place: sendbuf == recvbuf",
    "in place: sendbuf == recvbuf + rank*count",
    "in place: recvbuf == sendbuf + rank*count",
    "cc_broadcast has one buffer: both columns time the same call (on two buffers)",
    "in place: sendbuf == recvbuf",
    "in place: sendbuf == recvbuf + rank*count",
    "in place: recvbuf == sendbuf + rank*count",
    "in place: sendbuf == recvbuf",
    "send to rank+1, receive from rank-1, in one group; no in-place form",
    "size 0; both columns time cc_barrier",
    "a yardstick: left rank 0 alone, right every rank; busbw = bytes read + written per s, all ranks",
  };
  const char *p = g_be->prefix;
  if (k == K_COPY)
    printf("#\n# Copy test: copy (%s) - %s\n", g_be->copy_call, notes[k]);
  else if (k == K_SENDRECV)
    printf("#\n# Collective test: %s (%ssend + %srecv) - %s\n", colls[k].name, p, p, notes[k]);
  else
    printf("#\n# Collective test: %s (%s%s) - %s\n", colls[k].name, p, colls[k].name, notes[k]);
  if (k == K_COPY)
    printf("# %53s %-45s %15s %s\n", "", "|--------------- rank 0 alone --------------|", "",
           "|------------ every rank at once -----------|");
  else
    printf("# %53s %-45s %15s %s\n", "", "|-------------- out-of-place ---------------|", "",
           "|---------------- in-place -----------------|");
  printf("# %-14s %12s %12s %6s %5s %12s %11s %11s %8s %9s %5s %12s %11s %11s %8s\n",
         "coll", "size_bytes", "count", "type", "op", "time_us", "algbw_GBps", "busbw_GBps",
         "#wrong", "iters", "root", "time_us", "algbw_GBps", "busbw_GBps", "#wrong");
  fflush(stdout);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
  size_t minb = 8, maxb = (size_t)64 << 20, factor = 2, incr = 0, nominal;
  size_t sizes[MAX_SIZES], biggest, bytes;
  int nsizes = 0, ai, i, j, k, ri;
  int sel_coll[K_COUNT], sel_dt[N_DTYPES], sel_op[N_OPS];
  int dt_all = 0, op_all = 0, root = 0, use_gpu = 0, cc_malloc = 1;
  const char *extra = NULL;
  options opt;
  long total_wrong = 0, v;
  double bw_sum = 0.0;
  int bw_count = 0;
  unsigned char *bufs[5] = { NULL, NULL, NULL, NULL, NULL };   /* sbuf rbuf inp ref res */

  opt.warmup = 5;
  opt.iters = 20;
  opt.check = 1;
  opt.target = 0.0;
  for (i = 0; i < K_COUNT; i++) sel_coll[i] = i == K_ALL_REDUCE;
  for (i = 0; i < N_DTYPES; i++) sel_dt[i] = dtypes[i].t == CC_FLOAT32;
  for (i = 0; i < N_OPS; i++) sel_op[i] = ops[i].op == CC_SUM;

  g_be = &cpu_backend;
  CHECK(cc_comm_init(&g_comm, NULL));
  g_rank = cc_comm_rank(g_comm);
  g_n = cc_comm_size(g_comm);

  /* ---- flags: -X VALUE or -XVALUE */
  for (ai = 1; ai < argc; ai++) {
    const char *a = argv[ai], *val;
    char flag;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) usage(NULL);
    if (a[0] != '-' || a[1] == '\0') usage("unexpected argument");
    flag = a[1];
    if (a[2] != '\0') val = a + 2;
    else if (ai + 1 < argc) val = argv[++ai];
    else usage("missing value");
    switch (flag) {
    case 'b': if (parse_size(val, &minb)) usage("bad -b"); break;
    case 'e': if (parse_size(val, &maxb)) usage("bad -e"); break;
    case 'f': if (parse_int(val, 2, 1 << 20, &v)) usage("bad -f (an integer >= 2)"); factor = (size_t)v; incr = 0; break;
    case 'i': if (parse_size(val, &incr) || incr == 0) usage("bad -i"); break;
    case 'x': extra = val; break;
    case 'o':
      if ((v = parse_list(val, K_COUNT, coll_name_of, sel_coll)) < 0) usage("bad -o");
      if (v == 1) sel_coll[K_COPY] = 0;   /* "all" is the collectives */
      break;
    case 'd': if ((dt_all = parse_list(val, N_DTYPES, dtype_name_of, sel_dt)) < 0) usage("bad -d"); break;
    case 'R': if ((op_all = parse_list(val, N_OPS, op_name_of, sel_op)) < 0) usage("bad -R"); break;
    case 'r': if (parse_int(val, 0, g_n - 1, &v)) usage("bad -r (0 .. size-1)"); root = (int)v; break;
    case 'n': if (parse_int(val, 1, 1000000000L, &v)) usage("bad -n"); opt.iters = v; break;
    case 'w': if (parse_int(val, 0, 1000000000L, &v)) usage("bad -w"); opt.warmup = (int)v; break;
    case 'c': if (parse_int(val, 0, 1, &v)) usage("bad -c (0 or 1)"); opt.check = (int)v; break;
    case 'G': if (parse_int(val, 0, 1, &v)) usage("bad -G (0 or 1)"); use_gpu = (int)v; break;
    case 'M': if (parse_int(val, 0, 1, &v)) usage("bad -M (1 or 0)"); cc_malloc = (int)v; break;
    case 't': {
      char *end;
      opt.target = strtod(val, &end);
      if (end == val || *end != '\0' || !(opt.target >= 0.0)) usage("bad -t");
      break;
    }
    default: usage("unknown flag");
    }
  }

  /* ---- sizes: minb, then *factor or +incr up to maxb, plus -x, sorted, unique */
  for (nominal = minb; nominal <= maxb && nsizes < MAX_SIZES;) {
    size_t next = incr ? nominal + incr : nominal * factor;
    sizes[nsizes++] = nominal;
    if (next <= nominal) break;   /* overflow, or a minimum of 0 */
    nominal = next;
  }
  if (extra) {
    char buf[512], *tok, *p;
    if (strlen(extra) >= sizeof buf) usage("bad -x");
    strcpy(buf, extra);
    for (tok = buf; tok && *tok; tok = p) {
      p = strchr(tok, ',');
      if (p) *p++ = '\0';
      if (parse_size(tok, &nominal)) usage("bad -x");
      for (i = 0; i < nsizes && sizes[i] != nominal; i++) {}
      if (i == nsizes && nsizes < MAX_SIZES) sizes[nsizes++] = nominal;
    }
  }
  for (i = 1; i < nsizes; i++)
    for (j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) { nominal = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = nominal; }
  if (nsizes == 0) usage("no sizes: -b is above -e");

  /* ---- a named dtype/op pair that cc refuses is a usage error; with "all" it is skipped */
  for (k = 0; k < K_COUNT; k++) {
    if (!sel_coll[k] || !colls[k].reduces) continue;
    for (i = 0; i < N_DTYPES; i++)
      for (j = 0; j < N_OPS; j++)
        if (sel_dt[i] && sel_op[j] && !op_valid(&dtypes[i], ops[j].op) && !dt_all && !op_all) {
          char msg[160];
          snprintf(msg, sizeof msg, "op %s is not defined for %s", ops[j].name, dtypes[i].name);
          usage(msg);
        }
  }

  /* ---- GPU mode: exits 2 without a CUDA build or a device */
  if (use_gpu) g_be = gpu_backend(cc_malloc);

  /* ---- buffers: the largest block rounded up to n elements, of the widest dtype;
     sbuf and rbuf from the backend, the others on the host (res for GPU mode only) */
  biggest = sizes[nsizes - 1];
  bytes = biggest + (size_t)g_n * 16 + 64;
  for (i = 0; i < (g_be->get ? 5 : 4); i++) {
    bufs[i] = (unsigned char *)(i < 2 ? g_be->alloc(bytes) : cpu_alloc(bytes));
    if (!bufs[i]) {
      fprintf(stderr, "cc_bench: rank %d: cannot allocate %zu bytes\n", g_rank, bytes);
      return 1;
    }
  }

  /* ---- header: nccl-tests' and bench_mpi's */
  {
    char host[64];
    int64_t pid = (int64_t)getpid(), *pids;
    char *hosts, *devs = NULL;
    memset(host, 0, sizeof host);
    gethostname(host, sizeof host - 1);
    pids = (int64_t *)calloc((size_t)g_n, sizeof *pids);
    hosts = (char *)calloc((size_t)g_n, sizeof host);
    if (!pids || !hosts) { fprintf(stderr, "cc_bench: out of memory\n"); return 1; }
    snprintf(g_ctx, sizeof g_ctx, "cc_bench startup: all_gather of pids and host names");
    CHECK(cc_all_gather(g_comm, &pid, pids, 1, CC_INT64));
    CHECK(cc_all_gather(g_comm, host, hosts, sizeof host, CC_UINT8));
    if (g_be->describe) {   /* each rank's device, for "Using devices" */
      char dev[DEV_DESC];
      memset(dev, 0, sizeof dev);
      g_be->describe(dev, sizeof dev);
      devs = (char *)calloc((size_t)g_n, sizeof dev);
      if (!devs) { fprintf(stderr, "cc_bench: out of memory\n"); return 1; }
      snprintf(g_ctx, sizeof g_ctx, "cc_bench startup: all_gather of device names");
      CHECK(cc_all_gather(g_comm, dev, devs, sizeof dev, CC_UINT8));
    }
    if (g_rank == 0) {
      printf("# cc_bench nranks=%d host=%s nprocs_online=%ld\n", g_n, host, sysconf(_SC_NPROCESSORS_ONLN));
      printf("# library: cc %s (cc.h) local_size=%d CC_TRANSPORT=%s\n", CC_VERSION_STRING,
             cc_comm_local_size(g_comm), getenv("CC_TRANSPORT") ? getenv("CC_TRANSPORT") : "(auto)");
      if (g_be->header) g_be->header();
      printf("# minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %ld%s validation: %d root: %d\n",
             minb, maxb, incr ? incr : factor, incr ? "bytes" : "factor", opt.warmup, opt.iters,
             opt.target > 0 ? " (minimum)" : "", opt.check, root);
      if (opt.target > 0)
        printf("# target_s=%.3f per size and column (iterations calibrated on the out-of-place column)\n", opt.target);
      printf("# GB=1e9 bytes; time_us = max over ranks of the average per iteration\n#\n# Using devices\n");
      for (ri = 0; ri < g_n; ri++)
        printf("#  Rank %2d Pid %7lld on %10s %s\n", ri, (long long)pids[ri], hosts + (size_t)ri * sizeof host,
               devs ? devs + (size_t)ri * DEV_DESC : "cpu");
      fflush(stdout);
    }
    free(pids);
    free(hosts);
    free(devs);
  }

  /* ---- every collective, dtype, op, size */
  for (k = 0; k < K_COUNT; k++) {
    if (!sel_coll[k]) continue;
    if (g_rank == 0) print_header(k);
    for (i = 0; i < N_DTYPES; i++) {
      if (k == K_BARRIER ? dtypes[i].t != CC_FLOAT32 : !sel_dt[i]) continue;
      for (j = 0; j < N_OPS; j++) {
        int si;
        gen g;
        if (colls[k].reduces ? !sel_op[j] : j != 0) continue;
        if (colls[k].reduces && !op_valid(&dtypes[i], ops[j].op)) {
          if (g_rank == 0) printf("# %s: op %s is not defined for %s (skipped)\n", colls[k].name, ops[j].name, dtypes[i].name);
          continue;
        }
        gen_init(&g, &dtypes[i], colls[k].reduces ? ops[j].op : -1);
        for (si = 0; si < (k == K_BARRIER ? 1 : nsizes); si++) {
          bench_case bc;
          column oop, ip;
          long iters = opt.target > 0 ? 0 : opt.iters;
          memset(&bc, 0, sizeof bc);
          memset(&oop, 0, sizeof oop);
          memset(&ip, 0, sizeof ip);
          bc.k = k;
          bc.d = &dtypes[i];
          bc.o = colls[k].reduces ? &ops[j] : NULL;
          bc.root = root;
          bc.ts = k == K_BARRIER ? 0 : cc_dtype_size(dtypes[i].t);
          bc.sbuf = bufs[0];
          bc.rbuf = bufs[1];
          bc.inp = bufs[2];
          bc.ref = bufs[3];
          bc.res = bufs[4];
          if (k != K_BARRIER) {
            if (bc.ts == 0) { fprintf(stderr, "cc_bench: cc_dtype_size(%s) is 0\n", dtypes[i].name); return 1; }
            case_counts(&bc, sizes[si]);
            case_fill(&bc, &g, opt.check);
          }
          case_column(&bc, &opt, 0, &iters, &oop);
          if (k != K_SENDRECV) case_column(&bc, &opt, 1, &iters, &ip);
          if (oop.wrong > 0) total_wrong += oop.wrong;
          if (ip.wrong > 0) total_wrong += ip.wrong;
          if (k != K_BARRIER && k != K_COPY) {
            bw_sum += oop.busbw;
            bw_count++;
            if (ip.done) { bw_sum += ip.busbw; bw_count++; }
          }
          if (g_rank == 0) print_row(&bc, iters, &oop, &ip);
        }
      }
    }
  }

  if (g_rank == 0) {
    printf("# %-20s : %ld %s\n", "Out of bounds values", total_wrong, total_wrong ? "FAILED" : "OK");
    printf("# %-20s : %g \n#\n", "Avg bus bandwidth", bw_count ? bw_sum / bw_count : 0.0);
    fflush(stdout);
  }
  snprintf(g_ctx, sizeof g_ctx, "cc_bench: cc_comm_destroy at the end");
  g_be->release(bufs[0]);
  g_be->release(bufs[1]);
  for (i = 2; i < 5; i++) free(bufs[i]);
  if (g_be->finish) g_be->finish();   /* GPU: cc_cuda_comm_destroy, before the host comm's */
  CHECK(cc_comm_destroy(g_comm));
  g_comm = NULL;
  return total_wrong ? 1 : 0;
}
