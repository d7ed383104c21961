/* cc_bench.c - nccl-tests for cc: time a collective over a range of sizes, out
   of place and in place, and check every result.

       build/ccrun -n 2 build/all_reduce_perf -b 8 -e 64M -f 4
       build/ccrun -n 4 build/cc_bench -k all -d float -o sum -b 8 -e 64M -f 4

   One source, several programs. `make` builds build/cc_bench and links it as
   nccl-tests' binaries: all_reduce_perf, all_gather_perf, broadcast_perf,
   reduce_perf, reduce_scatter_perf, alltoall_perf, gather_perf, scatter_perf
   and sendrecv_perf. A program whose name ends in "_perf" runs the collective
   its name says (argv[0]); cc_bench runs the ones -k picks (default
   all_reduce), each in its own section.

   Flags: nccl-tests' (its src/common.cu), with what cc does with them. A
   value may follow the flag (-o sum, -osum) or its long name (--op sum,
   --op=sum). Sizes take K, M, G suffixes (powers of 1024).

     -b --minbytes N       smallest size (default 8)
     -e --maxbytes N       largest size, always measured (default 64M). nccl-tests
                           stops at the last step <= N; here N itself is the last
                           row, so -b 8 -e 64M -f 4 ends at 32M and then 64M
     -f --stepfactor F     multiply the size by F (integer >= 2; default 2)
     -i --stepbytes N      or add N to it (the last of -f and -i wins)
     -o --op OP[,OP]|all   sum prod min max avg (default sum); dtype/op pairs
                           that cc refuses are skipped with "all", refused when named
     -d --datatype T[,T]|all  int8 uint8 int32 uint32 int64 uint64 half bfloat16
                           float double complex64 complex128 (default float)
     -r --root R           root of broadcast, reduce, gather, scatter (default 0)
     -n --iters N          timed iterations per size and column (default 20);
                           with -l, the least number of them
     -w --warmup_iters N   untimed iterations first (default 5)
     -c --check N          checked iterations per size and column after the
                           timed ones (default 1; 0: no check, #wrong reads N/A)
     -a --average 0-3      the time reported: 0 rank 0's, 1 the mean over the
                           ranks, 2 the least, 3 the greatest (default 3; nccl-tests
                           defaults to 1)
     -N --run_cycles N     run the sweep N times (0: until killed; default 1)
     -z --blocking 0|1     1: wait for each call (stream synchronized in GPU mode)
                           and a barrier after it, within the timed loop
     -C --report_cputime 0|1  1: time until the last call returned, before the
                           final synchronize (the same thing in CPU mode)
     -T --timeout S        seconds any wait may last (cc_config.timeout_ms;
                           default CC_TIMEOUT or 600)
     -t --nthreads 1       one thread per rank: start more ranks with ccrun -n
     -g --ngpus 0|1        0: host buffers and cc.h's calls (default); 1: a GPU
                           per rank and cc_cuda.cuh's calls (CUDA builds, below)
     -m --agg_iters 1      one call per iteration (cc does not group collectives)
     -p --parallel_init 0|1   accepted; one thread per rank inits alone anyway
     -y --stream_null 0|1  GPU mode: 1 issues on the legacy default stream
     -R --local_register 1|0  CPU mode: 1 buffers from cc_mem_alloc, which every
                           rank on the host maps (symmetric memory); 0 plain
                           memory (default). GPU mode: 1 buffers from
                           cc_cuda_malloc, which every peer maps once (default);
                           0 plain cudaMalloc, mapped on first use. nccl-tests'
                           default is 0 (unregistered)
     -G --cudagraph 0      CUDA graph capture is not done; only 0 is accepted
   and cc_bench's own, letters nccl-tests does not use:
     -k --coll C[,C]|all   cc_bench: the collectives: all_reduce all_gather
                           reduce_scatter broadcast reduce gather scatter
                           all_to_all (alltoall) sendrecv barrier (= all), and copy
     -s --extra_sizes N,N  sizes measured beside the -b/-e/-f sweep
     -l --time_per_size S  calibrate the iterations to about S seconds per size
                           and column (batches growing 4x up to 20 ms, then
                           S / time per iteration, at least -n); 0: -n as given
     -h --help
   nccl-tests' -J (output_file), -S (report_timestamps), -x (cta_policy), -D
   (device_implementation), -V (device_cta_count) and -M (memory_report) are
   refused as not implemented; any other flag as unknown. Exit status: 0, 1 when
   a result was wrong or a call failed (cc_comm_last_error on stderr), 2 for bad
   flags (the message names the flag).

   Output, as nccl-tests prints it: a header (flags, "# Using devices"), then per
   collective a line "# Collective test: NAME (CALL) - what in place means" and
   the column headings, one row per size:

       size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong | iters
                                   (out of place)            (in place)

   size: the largest buffer involved, in bytes; count: the count argument of
   the call (all_gather, gather, scatter, reduce_scatter, all_to_all: one
   rank's block, size/n elements, at least 1, so tiny sizes round up to n
   elements); redop "none" and root -1 where the collective has none; time in
   microseconds (-a says over which ranks), algbw = size / time with GB = 1e9
   bytes, busbw = algbw * nccl-tests' factor: all_reduce 2(n-1)/n; all_gather,
   reduce_scatter, all_to_all, gather, scatter (n-1)/n; broadcast, reduce,
   sendrecv 1. `iters` (not in nccl-tests) is the timed iterations per column.
   The footer's "Out of bounds values" sums #wrong; "Avg bus bandwidth" is the
   mean busbw of the rows. barrier rows have size 0.

   Inputs are small integers chosen per dtype and op so that the reduction is
   exact in every dtype (sums stay below the dtype's exact-integer range, products
   are of 1, 2 and units, averages come out whole), so each result is compared
   bitwise with a reference computed locally from the same formulas (a zero may
   have either sign). The check runs after the timed loop and is not timed.
   sendrecv (send to rank+1, receive from rank-1, in one group) has no in-place
   form and broadcast one buffer (both columns time the same call); columns not
   measured or not checked read N/A.

   -k copy (not part of -k all) times a plain copy of `size` bytes from the send
   buffer to the receive buffer, as a yardstick: memcpy here, cudaMemcpyAsync
   device to device in GPU mode. Its left column times rank 0 alone (the others
   wait), its right column every rank at once. Its busbw counts the bytes read
   plus the bytes written by every rank that copies: 2*size/time on the left,
   2*n*size/time on the right (with every rank on one GPU, that GPU's memory
   bandwidth as n copies in parallel get it).

   CUDA mode. The file is also C++17 for nvcc, which builds it as CUDA (`make
   cuda` builds build/cuda/cc_bench_cuda):

       nvcc -x cu -std=c++17 -O2 -I. -o build/cuda/cc_bench_cuda bench/cc_bench.c -lpthread
       build/ccrun -n 2 build/cuda/cc_bench_cuda -g 1 -k all_reduce,copy -b 8 -e 64M -f 4

   Built so, it includes cc_cuda.cuh and -g 1 selects GPU mode. In GPU mode, as
   in nccl-tests: each rank makes a cc_cuda_comm on device local_rank %
   cudaGetDeviceCount() (local_rank = rank on one host; several ranks may share
   a GPU) and one stream (cudaStreamCreateWithFlags, non-blocking; -y 1: the
   default stream); the send and receive buffers are device buffers (-R); inputs
   are made on the host as above and copied in; the calls are the cc_cuda_
   twins on that stream; the time of a batch runs from a host barrier (the
   stream idle) to cudaStreamSynchronize after its last call, so it includes the
   GPU work, and is divided by the batch; the check copies the results back to
   the host. The header gains a "# cuda: device N name, mode ipc|staged" line.
   Without a usable device, -g 1 exits 2 ("cc_bench: no CUDA device: ..."); a
   build without CUDA refuses -g 1 as a bad flag.

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
  const char *name;   /* cc's name, the -k argument                           */
  const char *alias;  /* another accepted -k spelling                         */
  const char *perf;   /* nccl-tests' program is <perf>_perf; NULL: none       */
  int reduces;        /* takes an op                                          */
  int rooted;         /* takes a root                                         */
  int block;          /* the call's count is one rank's block                 */
  double bus;         /* 0: 2(n-1)/n, 1: (n-1)/n, 2: 1, 3: copy (bus_factor)  */
} coll_info;

static const coll_info colls[K_COUNT] = {
  { "all_reduce",     "allreduce",     "all_reduce",     1, 0, 0, 0 },
  { "all_gather",     "allgather",     "all_gather",     0, 0, 1, 1 },
  { "reduce_scatter", "reducescatter", "reduce_scatter", 1, 0, 1, 1 },
  { "broadcast",      "bcast",         "broadcast",      0, 1, 0, 2 },
  { "reduce",         "reduce",        "reduce",         1, 1, 0, 2 },
  { "gather",         "gather",        "gather",         0, 1, 1, 1 },
  { "scatter",        "scatter",       "scatter",        0, 1, 1, 1 },
  { "all_to_all",     "alltoall",      "alltoall",       0, 0, 1, 1 },
  { "sendrecv",       "send_recv",     "sendrecv",       0, 0, 0, 2 },
  { "barrier",        "barrier",       NULL,             0, 0, 0, 2 },
  { "copy",           "memcpy",        NULL,             0, 0, 0, 3 },   /* not in "all" */
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
#define HOST_LEN 64    /* bytes of a rank's host name */
#define MAX_SIZES 1024

/* ------------------------------------------------------------------ state */

static cc_comm *g_comm;
static int g_rank, g_n;
static char g_ctx[256] = "startup";   /* what is running, for error messages */
static const char *g_prog = "cc_bench";   /* argv[0]'s last component */

static void fail_cc(cc_result r, const char *call, int line)
{
  fprintf(stderr, "%s: rank %d: %s returned %s\n  during: %s\n  detail: %s\n  (cc_bench.c:%d)\n",
          g_prog, g_rank, call, cc_strerror(r), g_ctx, cc_comm_last_error(g_comm), line);
  fflush(stderr);
  exit(1);
}
#define CHECK(call) do { cc_result r_ = (call); if (r_ != CC_OK) fail_cc(r_, #call, __LINE__); } while (0)

static void print_usage(FILE *f)
{
  fprintf(f,
    "usage: ccrun -n N %s [flags]        (nccl-tests' flags; see the top of bench/cc_bench.c)\n"
    "  -b,--minbytes N  -e,--maxbytes N (always measured)  -f,--stepfactor F | -i,--stepbytes N\n"
    "  -o,--op sum|prod|min|max|avg|all[,..]   -d,--datatype TYPE|all[,..]   -r,--root R\n"
    "  -n,--iters N  -w,--warmup_iters N  -c,--check N  -a,--average 0|1|2|3 (rank0 mean min max)\n"
    "  -N,--run_cycles N  -z,--blocking 0|1  -C,--report_cputime 0|1  -T,--timeout SECONDS\n"
    "  -t,--nthreads 1  -g,--ngpus 0|1  -m,--agg_iters 1  -p,--parallel_init 0|1\n"
    "  -y,--stream_null 0|1  -R,--local_register 1|0  -G,--cudagraph 0\n"
    "  cc_bench's own: -k,--coll COLL[,COLL]|all  -s,--extra_sizes N,N  -l,--time_per_size SECONDS\n"
    "  COLL: all_reduce all_gather reduce_scatter broadcast reduce gather scatter all_to_all\n"
    "        sendrecv barrier (= all), copy (a memcpy yardstick)\n"
    "  TYPE: int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double complex64 complex128\n"
    "  defaults: -k all_reduce -d float -o sum -b 8 -e 64M -f 2 -r 0 -n 20 -w 5 -c 1 -a 3 -g 0 -R 1\n",
    g_prog);
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ parsing */

typedef struct options {
  size_t minb, maxb, factor, incr;
  const char *extra;         /* -s */
  long iters;                /* -n */
  int warmup;                /* -w */
  int check;                 /* -c: checked iterations */
  int average;               /* -a */
  int cycles;                /* -N */
  int blocking;              /* -z */
  int cputime;               /* -C */
  long timeout_s;            /* -T; 0: cc's default */
  int ngpus;                 /* -g */
  int stream_null;           /* -y */
  int local_register;        /* -R */
  long root;                 /* -r, checked against the world size after init */
  double target;             /* -l: seconds per size; 0: use iters */
  int sel_coll[K_COUNT], sel_dt[N_DTYPES], sel_op[N_OPS];
  int dt_all, op_all;        /* -d all, -o all: skip the pairs cc refuses */
  int perf;                  /* -1: cc_bench; else the collective of *_perf */
  int help;
} options;

static char g_bad[512];      /* the first bad flag's message; "" when all were good */

static void bad(const char *fmt, const char *a, const char *b)
{
  if (g_bad[0]) return;
  if (snprintf(g_bad, sizeof g_bad, fmt, a, b ? b : "") >= (int)sizeof g_bad)
    strcpy(g_bad + sizeof g_bad - 5, "...");   /* cut short */
}

static int parse_size(const char *s, size_t *out)
{
  char *end;
  unsigned long long v, mul = 1;
  if (*s < '0' || *s > '9') return -1;
  v = strtoull(s, &end, 10);
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
  long v;
  if (*s == '\0') return -1;
  v = strtol(s, &end, 10);
  if (*end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* A comma list of names; sets sel[i] for each name matching table entry i
   (name or alias), or all of them for "all". Returns 1 for "all", 0, or -1
   with the first unknown name in *badname. */
static int parse_list(const char *arg, int n, const char *(*name_of)(int, int), int *sel,
                      char *badname, size_t badsize)
{
  char buf[512];
  char *tok, *p;
  int i;
  snprintf(badname, badsize, "%s", arg);
  if (strlen(arg) >= sizeof buf || arg[0] == '\0') return -1;
  strcpy(buf, arg);
  for (i = 0; i < n; i++) sel[i] = 0;
  if (strcmp(arg, "all") == 0) {
    for (i = 0; i < n; i++) sel[i] = 1;
    return 1;
  }
  for (tok = buf; tok; tok = p) {
    int found = 0;
    p = strchr(tok, ',');
    if (p) *p++ = '\0';
    for (i = 0; i < n; i++)
      if (strcmp(tok, name_of(i, 0)) == 0 || strcmp(tok, name_of(i, 1)) == 0) { sel[i] = 1; found = 1; }
    if (!found) {
      snprintf(badname, badsize, "%s", tok);
      return -1;
    }
  }
  return 0;
}

static const char *coll_name_of(int i, int alias) { return alias ? colls[i].alias : colls[i].name; }
static const char *dtype_name_of(int i, int alias) { return alias ? dtypes[i].alias : dtypes[i].name; }
static const char *op_name_of(int i, int alias) { (void)alias; return ops[i].name; }

/* nccl-tests' flags (src/common.cu), cc_bench's own, and the nccl-tests flags
   that cc_bench does not implement (what = NULL: accepted; else refused). */
typedef struct flag_info { char s; const char *l; const char *refused; } flag_info;
static const flag_info flags[] = {
  { 't', "nthreads", NULL }, { 'g', "ngpus", NULL }, { 'b', "minbytes", NULL },
  { 'e', "maxbytes", NULL }, { 'i', "stepbytes", NULL }, { 'f', "stepfactor", NULL },
  { 'n', "iters", NULL }, { 'm', "agg_iters", NULL }, { 'w', "warmup_iters", NULL },
  { 'N', "run_cycles", NULL }, { 'p', "parallel_init", NULL }, { 'c', "check", NULL },
  { 'o', "op", NULL }, { 'd', "datatype", NULL }, { 'r', "root", NULL },
  { 'z', "blocking", NULL }, { 'y', "stream_null", NULL }, { 'T', "timeout", NULL },
  { 'G', "cudagraph", NULL }, { 'C', "report_cputime", NULL }, { 'a', "average", NULL },
  { 'R', "local_register", NULL },
  { 'k', "coll", NULL }, { 's', "extra_sizes", NULL }, { 'l', "time_per_size", NULL },
  { 'J', "output_file", "writes no JSON file" },
  { 'S', "report_timestamps", "prints no timestamps" },
  { 'x', "cta_policy", "has no CTA policy" },
  { 'D', "device_implementation", "has no device implementation choice" },
  { 'V', "device_cta_count", "has no CTA count" },
  { 'M', "memory_report", "makes no memory report" },
};
#define N_FLAGS ((int)(sizeof flags / sizeof flags[0]))

/* The collective a program called <perf>_perf runs, or -1 (cc_bench). */
static int perf_of(const char *prog)
{
  size_t len = strlen(prog);
  int k;
  if (len <= 5 || strcmp(prog + len - 5, "_perf") != 0) return -1;
  for (k = 0; k < K_COUNT; k++)
    if (colls[k].perf && strlen(colls[k].perf) == len - 5 && strncmp(prog, colls[k].perf, len - 5) == 0) return k;
  return -1;
}

static void set_defaults(options *o, int perf)
{
  int i;
  memset(o, 0, sizeof *o);
  o->minb = 8;
  o->maxb = (size_t)64 << 20;
  o->factor = 2;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
  o->average = 3;
  o->cycles = 1;
  o->local_register = -1;   /* CPU mode 0, GPU mode 1 */
  o->perf = perf;
  for (i = 0; i < K_COUNT; i++) o->sel_coll[i] = i == (perf >= 0 ? perf : K_ALL_REDUCE);
  for (i = 0; i < N_DTYPES; i++) o->sel_dt[i] = dtypes[i].t == CC_FLOAT32;
  for (i = 0; i < N_OPS; i++) o->sel_op[i] = ops[i].op == CC_SUM;
}

/* -s: the extra sizes, a comma list; each is checked here, and make_sizes adds
   them to the sweep. */
static void parse_extra_sizes(options *o, const char *nm, const char *val)
{
  char buf[512], *tok, *p;
  size_t s;
  o->extra = val;
  snprintf(buf, sizeof buf, "%s", val);
  for (tok = buf; tok; tok = p) {
    p = strchr(tok, ',');
    if (p) *p++ = '\0';
    if (parse_size(tok, &s)) { bad("%s: '%s' is not a size (bytes, with K, M or G)", nm, tok); return; }
  }
}

/* -k: the collectives ("all" without copy); a *_perf program takes only its own. */
static void parse_colls(options *o, const char *nm, const char *val)
{
  char what[160];
  int sel[K_COUNT], k, r;
  r = parse_list(val, K_COUNT, coll_name_of, sel, what, sizeof what);
  if (r < 0) {
    bad("%s: '%s' is not a collective (all_reduce all_gather reduce_scatter broadcast reduce gather"
        " scatter all_to_all sendrecv barrier copy, or all)", nm, what);
    return;
  }
  if (r == 1) sel[K_COPY] = 0;   /* "all" is the collectives */
  if (o->perf >= 0) {
    for (k = 0; k < K_COUNT; k++)
      if (sel[k] != (k == o->perf)) {
        snprintf(what, sizeof what, "%s_perf runs %s only (its name picks it); cc_bench -k picks others",
                 colls[o->perf].perf, colls[o->perf].name);
        bad("%s: %s", nm, what);
        return;
      }
  }
  memcpy(o->sel_coll, sel, sizeof sel);
}

/* -l: seconds per size and column, 0 or more (0: -n as given). */
static void parse_time_per_size(options *o, const char *nm, const char *val)
{
  char *end;
  o->target = strtod(val, &end);
  if (end == val || *end != '\0' || !(o->target >= 0.0) || o->target > 1e6)
    bad("%s: '%s' is not a time in seconds (>= 0)", nm, val);
}

/* One flag's value; the first bad one is kept in g_bad. */
static void parse_value(options *o, char f, const char *name, const char *val)
{
  const char *nm = name;
  char what[160];
  long v;
  int r;
#define BAD_INT(lo, hi, why) \
  do { if (parse_int(val, lo, hi, &v)) { bad("%s: '%s' is not " why, nm, val); return; } } while (0)
  switch (f) {
  case 'b': if (parse_size(val, &o->minb)) bad("%s: '%s' is not a size (bytes, with K, M or G)", nm, val); break;
  case 'e': if (parse_size(val, &o->maxb)) bad("%s: '%s' is not a size (bytes, with K, M or G)", nm, val); break;
  case 'f': BAD_INT(2, 1 << 20, "a step factor (an integer >= 2)"); o->factor = (size_t)v; o->incr = 0; break;
  case 'i':
    if (parse_size(val, &o->incr) || o->incr == 0) bad("%s: '%s' is not a step (bytes > 0, with K, M or G)", nm, val);
    break;
  case 's': parse_extra_sizes(o, nm, val); break;
  case 'o':
    r = parse_list(val, N_OPS, op_name_of, o->sel_op, what, sizeof what);
    if (r < 0) bad("%s: '%s' is not a reduction op (sum, prod, min, max, avg, or all)", nm, what);
    o->op_all = r == 1;
    break;
  case 'd':
    r = parse_list(val, N_DTYPES, dtype_name_of, o->sel_dt, what, sizeof what);
    if (r < 0) bad("%s: '%s' is not a datatype (int8 uint8 int32 uint32 int64 uint64 half bfloat16 float"
                   " double complex64 complex128, or all)", nm, what);
    o->dt_all = r == 1;
    break;
  case 'k': parse_colls(o, nm, val); break;
  case 'r': BAD_INT(0, 1 << 30, "a root rank (an integer >= 0)"); o->root = v; break;
  case 'n': BAD_INT(1, 1000000000L, "an iteration count (>= 1)"); o->iters = v; break;
  case 'w': BAD_INT(0, 1000000000L, "a warmup iteration count (>= 0)"); o->warmup = (int)v; break;
  case 'c': BAD_INT(0, 1000000, "a check iteration count (>= 0)"); o->check = (int)v; break;
  case 'a': BAD_INT(0, 3, "0, 1, 2 or 3 (rank 0, mean, min, max)"); o->average = (int)v; break;
  case 'N': BAD_INT(0, 1000000000L, "a cycle count (>= 0; 0: until killed)"); o->cycles = (int)v; break;
  case 'z': BAD_INT(0, 1, "0 or 1"); o->blocking = (int)v; break;
  case 'C': BAD_INT(0, 1, "0 or 1"); o->cputime = (int)v; break;
  case 'p': BAD_INT(0, 1, "0 or 1"); break;
  case 'y': BAD_INT(0, 1, "0 or 1"); o->stream_null = (int)v; break;
  case 'R': BAD_INT(0, 1, "0 or 1"); o->local_register = (int)v; break;
  case 'T': BAD_INT(0, 2000000L, "a timeout in seconds (>= 0)"); o->timeout_s = v; break;
  case 't':
    if (parse_int(val, 1, 1, &v)) bad("%s: '%s': one thread per rank (-t 1); start more ranks with ccrun -n (seconds per size: -l)", nm, val);
    break;
  case 'm':
    if (parse_int(val, 1, 1, &v)) bad("%s: '%s': one call per iteration (-m 1); cc does not group collectives", nm, val);
    break;
  case 'G':
    if (parse_int(val, 0, 0, &v)) bad("%s: '%s': cc_bench does not capture CUDA graphs (-G 0); GPU mode is -g 1", nm, val);
    break;
  case 'g':
    if (parse_int(val, 0, 1, &v)) bad("%s: '%s': 0 (host buffers) or 1 (one GPU per rank; start more ranks for more GPUs)", nm, val);
    else o->ngpus = (int)v;
    break;
  case 'l': parse_time_per_size(o, nm, val); break;
  default: bad("%s: not handled%s", nm, NULL); break;
  }
#undef BAD_INT
}

static void parse_args(options *o, int argc, char **argv)
{
  int ai, i;
  for (ai = 1; ai < argc && !g_bad[0]; ai++) {
    const char *a = argv[ai], *val = NULL;
    const flag_info *fi = NULL;
    char name[96];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { o->help = 1; continue; }
    if (a[0] != '-' || a[1] == '\0' || (a[1] == '-' && a[2] == '\0')) {
      bad("unexpected argument '%s' (flags start with -)", a, NULL);
      break;
    }
    if (a[1] == '-') {   /* --name VALUE or --name=VALUE */
      const char *eq = strchr(a + 2, '=');
      size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
      for (i = 0; i < N_FLAGS; i++)
        if (strlen(flags[i].l) == len && strncmp(flags[i].l, a + 2, len) == 0) fi = &flags[i];
      snprintf(name, sizeof name, "--%.*s", (int)(len < 80 ? len : 80), a + 2);
      if (eq) val = eq + 1;
    } else {
      for (i = 0; i < N_FLAGS; i++)
        if (flags[i].s == a[1]) fi = &flags[i];
      snprintf(name, sizeof name, "-%c", a[1]);
      if (a[2] != '\0') val = a + 2;
    }
    if (!fi) { bad("unknown flag %s%s", name, " (-h lists the flags)"); break; }
    if (fi->refused) {
      char msg[160];
      snprintf(msg, sizeof msg, "nccl-tests' --%s, which cc_bench does not implement (it %s)", fi->l, fi->refused);
      bad("%s: %s", name, msg);
      break;
    }
    if (!val) {
      if (ai + 1 >= argc) { bad("%s: needs a value%s", name, NULL); break; }
      val = argv[++ai];
    }
    parse_value(o, fi->s, name, val);
  }
}

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

/* -R 1 in CPU mode: sbuf and rbuf from cc_mem_alloc (symmetric memory).
   CC_BENCH_NO_MEM_ALLOC: built against a cc.h from before cc_mem_alloc
   (dev/before_after.sh), where -R 1 fails. */
#ifdef CC_BENCH_NO_MEM_ALLOC
static void *sym_alloc(size_t bytes)
{
  (void)bytes;
  fprintf(stderr, "%s: -R 1: this cc_bench was built against a cc.h without cc_mem_alloc\n", g_prog);
  return NULL;
}
static void sym_release(void *p) { (void)p; }
#else
static void *sym_alloc(size_t bytes)
{
  void *p = NULL;
  if (cc_mem_alloc(g_comm, bytes, &p) != CC_OK) {
    fprintf(stderr, "%s: rank %d: cc_mem_alloc: %s\n", g_prog, g_rank, cc_comm_last_error(g_comm));
    return NULL;
  }
  return p;
}
static void sym_release(void *p)
{
  if (p) CHECK(cc_mem_free(g_comm, p));
}
#endif
static void sym_header(void) { printf("# buffers: cc_mem_alloc (-R 1): every rank on the host maps them\n"); }

static const backend cpu_sym_backend = {
  "cc_", "memcpy", sym_alloc, sym_release, cpu_put, cpu_fill, NULL, case_run, cpu_sync, NULL, sym_header, NULL
};

/* ------------------------------------------------------------------ CUDA */

#ifdef __CUDACC__
/* GPU mode (-g 1), compiled by nvcc only: the GPU backend. Each rank owns one
   cc_cuda_comm over g_comm, on device local_rank % count, and one non-blocking
   stream; the calls, copies and fills are all queued on that stream. */
static cc_cuda_comm *g_gc;
static cudaStream_t g_stream;
static int g_dev, g_cc_malloc, g_stream_null;
static void *g_deferred[2];   /* cudaMalloc'ed buffers: freed after cc_cuda_comm_destroy, */
static int g_ndeferred;       /* when no peer has them mapped any more                    */

static void fail_cuda(cudaError_t e, const char *call, int line)
{
  fprintf(stderr, "%s: rank %d: %s failed: %s: %s\n  during: %s\n  (cc_bench.c:%d)\n",
          g_prog, g_rank, call, cudaGetErrorName(e), cudaGetErrorString(e), g_ctx, line);
  fflush(stderr);
  exit(1);
}
#define CUCHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) fail_cuda(e_, #call, __LINE__); } while (0)

static void fail_gpu(cc_result r, const char *call, int line)
{
  fprintf(stderr, "%s: rank %d: %s returned %s\n  during: %s\n  detail: %s\n  (cc_bench.c:%d)\n",
          g_prog, g_rank, call, cc_strerror(r), g_ctx,
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
      fprintf(stderr, "%s: rank %d: cc_cuda_malloc: %s\n", g_prog, g_rank, cc_cuda_comm_last_error(g_gc));
      return NULL;
    }
  } else {
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      fprintf(stderr, "%s: rank %d: cudaMalloc: %s\n", g_prog, g_rank, cudaGetErrorString(e));
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
  printf("# cuda: device %d %s, mode %s, buffers %s (-R %d)%s, sm_%d%d, %d SMs, %.1f GiB,"
         " %d visible, runtime %d.%d driver %d.%d, CC_CUDA_TRANSPORT=%s\n",
         g_dev, prop.name, cc_cuda_comm_mode(g_gc), g_cc_malloc ? "cc_cuda_malloc" : "cudaMalloc",
         g_cc_malloc, g_stream_null ? ", default stream (-y 1)" : "", prop.major, prop.minor, prop.multiProcessorCount,
         (double)prop.totalGlobalMem / (double)(1u << 30), count, rt / 1000, rt % 1000 / 10,
         drv / 1000, drv % 1000 / 10, tr ? tr : "(auto)");
  printf("# cuda: calls on one stream per rank (non-blocking; -y 1: the default stream); a batch is timed from a host barrier\n"
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
  if (!g_stream_null) CUCHECK(cudaStreamDestroy(g_stream));
}

static const backend gpu_backend_ops = {
  "cc_cuda_", "cudaMemcpyAsync device to device", gpu_alloc, gpu_release, gpu_put, gpu_fill, gpu_get,
  gpu_run, gpu_sync, gpu_describe, gpu_header, gpu_finish
};

/* Every rank: a device, a stream, the cc_cuda_comm. Without a device on some
   rank, the first such rank says why and every rank exits 2. */
static const backend *gpu_backend(const options *o)
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
      fprintf(stderr, "%s: no CUDA device: %s (rank %d of %d)\n", g_prog, why, g_rank, g_n);
      fflush(stderr);
    }
    CHECK(cc_barrier(g_comm));   /* before anyone exits, so that ccrun cannot cut the message */
    exit(2);
  }
  g_cc_malloc = o->local_register != 0;
  g_stream_null = o->stream_null;
  g_dev = cc_comm_local_rank(g_comm) % count;
  snprintf(g_ctx, sizeof g_ctx, "cc_bench startup: device %d, its stream, cc_cuda_comm_init", g_dev);
  CUCHECK(cudaSetDevice(g_dev));
  if (g_stream_null) g_stream = 0;   /* -y 1: the legacy default stream */
  else CUCHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  CHECK(cc_cuda_comm_init(g_comm, g_dev, &g_gc));
  return &gpu_backend_ops;
}

#else  /* a build without CUDA */

static const backend *gpu_backend(const options *o)
{
  (void)o;
  return NULL;   /* main refuses -g 1 before it gets here */
}

#endif /* __CUDACC__ */


/* A time measured on each rank, combined over the ranks as -a says: 0 rank 0's,
   1 the mean, 2 the least, 3 the greatest. Collective. */
static double combine(double dt, int average)
{
  switch (average) {
  case 0: CHECK(cc_broadcast(g_comm, &dt, 1, CC_FLOAT64, 0)); break;
  case 1: CHECK(cc_all_reduce(g_comm, &dt, &dt, 1, CC_FLOAT64, CC_SUM)); dt /= (double)g_n; break;
  case 2: CHECK(cc_all_reduce(g_comm, &dt, &dt, 1, CC_FLOAT64, CC_MIN)); break;
  default: CHECK(cc_all_reduce(g_comm, &dt, &dt, 1, CC_FLOAT64, CC_MAX)); break;
  }
  return dt;
}

/* Run `iters` iterations back to back: the batch's time, combined as `average`
   says; *issued (when not NULL) the time until the last call returned, before
   the final synchronize (-C). */
static double case_time(const bench_case *bc, const options *o, int inplace, long iters, int average,
                        double *issued)
{
  double t0, t_issue, dt;
  long it;
  g_be->sync();   /* GPU: the stream idle (warm-up, earlier batches) before the barrier */
  CHECK(cc_barrier(g_comm));
  t0 = now_s();
  for (it = 0; it < iters; it++) {
    g_be->run(bc, inplace);
    if (o->blocking) {   /* -z 1: each call done everywhere before the next */
      g_be->sync();
      CHECK(cc_barrier(g_comm));
    }
  }
  t_issue = now_s() - t0;
  g_be->sync();   /* GPU: cudaStreamSynchronize after the last call of the batch */
  dt = now_s() - t0;
  if (issued) *issued = combine(t_issue, average);
  return combine(dt, average);
}

typedef struct column {
  int done;       /* measured */
  double t_us;    /* the time printed (-C: until the calls returned) */
  double algbw, busbw;
  long wrong;     /* -1: not checked */
} column;

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
  snprintf(g_ctx, sizeof g_ctx, "%s %s: count=%zu (block %zu) dtype=%s op=%s root=%d, %s",
           g_prog, colls[bc->k].name, bc->count, bc->blk,
           bc->d ? bc->d->name : "-", bc->o ? bc->o->name : "-", bc->root, what);
}

static void case_column(bench_case *bc, const options *opt, int inplace, long *iters, column *col)
{
  int w, c;
  double dt, issued;
  set_ctx(bc, inplace ? "in place, timing" : "out of place, timing");
  case_setup(bc, inplace);
  for (w = 0; w < opt->warmup; w++) g_be->run(bc, inplace);
  if (*iters <= 0) {   /* -l: grow a batch 4x until it lasts 20 ms (or the target) */
    double until = opt->target < 0.02 ? opt->target : 0.02, per;
    long n = 1, want;
    for (;;) {
      dt = case_time(bc, opt, inplace, n, 3, NULL);
      if (dt >= until || n >= 1000000) break;
      n *= 4;
    }
    per = dt / (double)n;
    want = (long)ceil(opt->target / (per > 0 ? per : 1e-9));
    if (want < opt->iters) want = opt->iters;
    if (want > 1000000) want = 1000000;
    *iters = want;
  }
  dt = case_time(bc, opt, inplace, *iters, opt->average, &issued);
  col->done = 1;
  col->t_us = (opt->cputime ? issued : dt) / (double)*iters * 1e6;
  col->algbw = bc->k == K_BARRIER || dt <= 0 ? 0.0 : (double)bc->sizeb / 1e9 / (dt / (double)*iters);
  col->busbw = col->algbw * bus_factor(bc->k, inplace);
  col->wrong = opt->check ? 0 : -1;
  for (c = 0; c < opt->check && bc->k != K_BARRIER && col->wrong == 0; c++) {
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
  }
}

/* ------------------------------------------------------------------ output */

/* nccl-tests' columns: size count type redop root, then per column
   time algbw busbw #wrong, then (cc_bench only) iters. */
static void print_group(const column *c)
{
  char t[32], w[32];
  if (!c->done) {
    printf("  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  if (c->t_us >= 10000.0) snprintf(t, sizeof t, "%7.0f", c->t_us);
  else if (c->t_us >= 100.0) snprintf(t, sizeof t, "%7.1f", c->t_us);
  else snprintf(t, sizeof t, "%7.2f", c->t_us);
  if (c->wrong >= 0) snprintf(w, sizeof w, "%5ld", c->wrong);
  else snprintf(w, sizeof w, "%5s", "N/A");
  printf("  %7s  %6.2f  %6.2f  %5s", t, c->algbw, c->busbw, w);
}

static void print_row(const bench_case *bc, long iters, const column *oop, const column *ip)
{
  int k = bc->k;
  size_t count = colls[k].block ? bc->blk : bc->count;
  printf("%12zu  %12zu  %8s  %6s  %6d", bc->sizeb, k == K_BARRIER ? (size_t)0 : count,
         k == K_BARRIER ? "none" : bc->d->name, bc->o ? bc->o->name : "none",
         colls[k].rooted ? bc->root : -1);
  print_group(oop);
  print_group(ip);
  printf("  %9ld\n", iters);
  fflush(stdout);
}

static void print_header(int k, int cputime)
{
  static const char *notes[K_COUNT] = {
    "in place: sendbuf == recvbuf",
    "in place: sendbuf == recvbuf + rank*count",
    "in place: recvbuf == sendbuf + rank*count",
    "one buffer: both columns time the same call (on two buffers)",
    "in place: sendbuf == recvbuf",
    "in place: sendbuf == recvbuf + rank*count",
    "in place: recvbuf == sendbuf + rank*count",
    "in place: sendbuf == recvbuf",
    "send to rank+1, receive from rank-1, in one group; no in-place form",
    "size 0; both columns time the barrier",
    "a yardstick: left rank 0 alone, right every rank; busbw = bytes read + written per s, all ranks",
  };
  const char *p = g_be->prefix, *tm = cputime ? "cputime" : "time";
  if (k == K_COPY)
    printf("#\n# Collective test: copy (%s) - %s\n", g_be->copy_call, notes[k]);
  else if (k == K_SENDRECV)
    printf("#\n# Collective test: %s (%ssend + %srecv) - %s\n", colls[k].name, p, p, notes[k]);
  else
    printf("#\n# Collective test: %s (%s%s) - %s\n", colls[k].name, p, colls[k].name, notes[k]);
  printf("# %10s  %12s  %8s  %6s  %6s  %-32s  %-32s\n", "", "", "", "", "",
         k == K_COPY ? "        rank 0 alone" : "         out-of-place",
         k == K_COPY ? "         every rank" : "           in-place");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s  %9s\n", "size", "count", "type",
         "redop", "root", tm, "algbw", "busbw", "#wrong", tm, "algbw", "busbw", "#wrong", "iters");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
         "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  fflush(stdout);
}

/* ------------------------------------------------------------------ main */

/* Refuse bad flags on every rank alike: rank 0 says why, then every rank
   leaves (after a barrier, so that ccrun cannot cut the message short). */
static void leave_usage(int status)
{
  if (g_rank == 0) {
    if (g_bad[0]) fprintf(stderr, "%s: %s\n", g_prog, g_bad);
    else print_usage(stdout);
    fflush(stdout);
    fflush(stderr);
  }
  CHECK(cc_barrier(g_comm));
  cc_comm_destroy(g_comm);
  exit(status);
}

static int make_sizes(const options *o, size_t *sizes)
{
  size_t nominal, next;
  int n = 0, i, j;
  if (o->minb > o->maxb) {
    char a[32], b[32];
    snprintf(a, sizeof a, "%zu", o->minb);
    snprintf(b, sizeof b, "%zu", o->maxb);
    bad("-b %s is above -e %s", a, b);
    return 0;
  }
  for (nominal = o->minb; nominal <= o->maxb; nominal = next) {
    if (n >= MAX_SIZES - 1) { bad("-b, -e, -f/-i: more than 1023 sizes%s%s", "", ""); return 0; }
    sizes[n++] = nominal;
    next = o->incr ? nominal + o->incr : nominal * o->factor;
    if (next <= nominal) break;   /* overflow, or a minimum of 0 */
  }
  if (sizes[n - 1] != o->maxb) sizes[n++] = o->maxb;   /* the end is always measured */
  if (o->extra) {
    char buf[512], *tok, *p;
    snprintf(buf, sizeof buf, "%s", o->extra);
    for (tok = buf; tok; tok = p) {
      p = strchr(tok, ',');
      if (p) *p++ = '\0';
      if (parse_size(tok, &nominal)) continue;   /* refused while parsing */
      for (i = 0; i < n && sizes[i] != nominal; i++) {}
      if (i == n) {
        if (n >= MAX_SIZES) { bad("-s: more than 1024 sizes in all%s%s", "", ""); return 0; }
        sizes[n++] = nominal;
      }
    }
  }
  for (i = 1; i < n; i++)
    for (j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) { nominal = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = nominal; }
  return n;
}

/* What main and its helpers share: the options, the sizes of the sweep, the
   buffers, and the totals of the footer. */
typedef struct bench_state {
  options opt;
  size_t sizes[MAX_SIZES];
  int nsizes;
  unsigned char *bufs[5];   /* sbuf rbuf inp ref res */
  long total_wrong;
  double bw_sum;
  int bw_count;
} bench_state;

/* The host communicator, with -T's timeout. Returns 0, or main's exit status
   when cc_comm_init fails (2 when a flag was bad already, else 1). */
static int start_comm(const options *opt)
{
  cc_config cfg;
  cc_result r;
  g_be = &cpu_backend;
  cc_config_init(&cfg);
  if (opt->timeout_s > 0) cfg.timeout_ms = (int)(opt->timeout_s * 1000);
  r = cc_comm_init(&g_comm, &cfg);
  if (r != CC_OK) {
    if (g_bad[0]) fprintf(stderr, "%s: %s\n", g_prog, g_bad);
    fprintf(stderr, "%s: cc_comm_init returned %s\n  detail: %s\n", g_prog, cc_strerror(r), cc_comm_last_error(NULL));
    return g_bad[0] ? 2 : 1;
  }
  g_rank = cc_comm_rank(g_comm);
  g_n = cc_comm_size(g_comm);
  return 0;
}

/* What can only be checked once the job is up (the root, GPU mode, the
   dtype/op pairs), then the sizes; leaves (exit 2) on a bad flag, or (exit 0)
   after the usage for -h. */
static void check_job_flags(bench_state *st)
{
  const options *opt = &st->opt;
  int i, j, k;
  if (!g_bad[0] && opt->root >= g_n) {
    char a[32], b[64];
    snprintf(a, sizeof a, "%ld", opt->root);
    snprintf(b, sizeof b, "0 .. %d", g_n - 1);
    bad("-r: '%s' is not a rank of this job (%s)", a, b);
  }
#ifndef __CUDACC__
  if (!g_bad[0] && opt->ngpus)
    bad("-g: '1': this %s is built without CUDA (make cuda builds build/cuda/cc_bench_cuda)%s", g_prog, "");
#endif
  for (k = 0; k < K_COUNT && !g_bad[0]; k++) {   /* a named pair that cc refuses; with "all" it is skipped */
    if (!opt->sel_coll[k] || !colls[k].reduces || opt->dt_all || opt->op_all) continue;
    for (i = 0; i < N_DTYPES; i++)
      for (j = 0; j < N_OPS; j++)
        if (opt->sel_dt[i] && opt->sel_op[j] && !op_valid(&dtypes[i], ops[j].op))
          bad("-o, -d: op %s is not defined for %s", ops[j].name, dtypes[i].name);
  }
  st->nsizes = g_bad[0] ? 0 : make_sizes(opt, st->sizes);
  if (g_bad[0]) leave_usage(2);
  if (opt->help) leave_usage(0);
}

/* The buffers: the largest block rounded up to n elements, of the widest dtype;
   sbuf and rbuf from the backend, the others on the host (res for GPU mode
   only). Returns 1 when one cannot be had. */
static int alloc_buffers(bench_state *st)
{
  size_t biggest = st->sizes[st->nsizes - 1], bytes;
  int i;
  bytes = biggest + (size_t)g_n * 16 + 64;
  for (i = 0; i < (g_be->get ? 5 : 4); i++) {
    st->bufs[i] = (unsigned char *)(i < 2 ? g_be->alloc(bytes) : cpu_alloc(bytes));
    if (!st->bufs[i]) {
      fprintf(stderr, "%s: rank %d: cannot allocate %zu bytes\n", g_prog, g_rank, bytes);
      return 1;
    }
  }
  return 0;
}

/* Rank 0's part of the header: the job, the flags, and every rank's pid, host
   and device (devs NULL: "cpu"), as gathered by job_header. */
static void print_job_header(const options *opt, const char *host, const int64_t *pids, const char *hosts,
                             const char *devs)
{
  static const char *avg[4] = { "rank 0's", "the mean over the ranks", "the least over the ranks",
                                "the greatest over the ranks" };
  int ri;
  printf("# %s: cc %s (cc.h), %d ranks, host %s (%ld CPUs online), CC_TRANSPORT=%s, %d ranks on this host\n",
         g_prog, CC_VERSION_STRING, g_n, host, sysconf(_SC_NPROCESSORS_ONLN),
         getenv("CC_TRANSPORT") ? getenv("CC_TRANSPORT") : "(auto)", cc_comm_local_size(g_comm));
  if (g_be->header) g_be->header();
  printf("# nThread 1 nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %ld"
         " agg iters: 1 validation: %d graph: 0\n", opt->ngpus, opt->minb, opt->maxb,
         opt->incr ? opt->incr : opt->factor, opt->incr ? "bytes" : "factor", opt->warmup, opt->iters, opt->check);
  if (opt->extra) printf("# extra sizes (-s): %s\n", opt->extra);
  if (opt->target > 0)
    printf("# time per size (-l): %.3f s per column, iterations calibrated on the out-of-place column,"
           " at least -n %ld\n", opt->target, opt->iters);
  if (opt->blocking) printf("# Blocking Enabled: wait for completion and barrier after each collective\n");
  printf("# time: %s (-a %d)%s; GB = 1e9 bytes\n#\n# Using devices\n", avg[opt->average], opt->average,
         opt->cputime ? ", until the calls returned (-C 1)" : "");
  for (ri = 0; ri < g_n; ri++)
    printf("#  Rank %2d Group  0 Pid %6lld on %10s %s\n", ri, (long long)pids[ri], hosts + (size_t)ri * HOST_LEN,
           devs ? devs + (size_t)ri * DEV_DESC : "cpu");
  fflush(stdout);
}

/* The header, nccl-tests': every rank's pid, host name and device gathered
   (collective), rank 0 prints them. Returns 1 when out of memory. */
static int job_header(const options *opt)
{
  char host[HOST_LEN];
  int64_t pid = (int64_t)getpid(), *pids;
  char *hosts, *devs = NULL;
  memset(host, 0, sizeof host);
  gethostname(host, sizeof host - 1);
  pids = (int64_t *)calloc((size_t)g_n, sizeof *pids);
  hosts = (char *)calloc((size_t)g_n, sizeof host);
  if (!pids || !hosts) { fprintf(stderr, "%s: out of memory\n", g_prog); return 1; }
  snprintf(g_ctx, sizeof g_ctx, "%s startup: all_gather of pids and host names", g_prog);
  CHECK(cc_all_gather(g_comm, &pid, pids, 1, CC_INT64));
  CHECK(cc_all_gather(g_comm, host, hosts, sizeof host, CC_UINT8));
  if (g_be->describe) {   /* each rank's device, for "Using devices" */
    char dev[DEV_DESC];
    memset(dev, 0, sizeof dev);
    g_be->describe(dev, sizeof dev);
    devs = (char *)calloc((size_t)g_n, sizeof dev);
    if (!devs) { fprintf(stderr, "%s: out of memory\n", g_prog); return 1; }
    snprintf(g_ctx, sizeof g_ctx, "%s startup: all_gather of device names", g_prog);
    CHECK(cc_all_gather(g_comm, dev, devs, sizeof dev, CC_UINT8));
  }
  if (g_rank == 0) print_job_header(opt, host, pids, hosts, devs);
  free(pids);
  free(hosts);
  free(devs);
  return 0;
}

/* One row: collective k of dtype d and op o (NULL: none) at the nominal size,
   both columns measured and checked, added to the totals, and printed by rank
   0. Returns 1 when cc has no size for the dtype. */
static int measure_row(bench_state *st, int k, const dtype_info *d, const op_info *o, const gen *g, size_t nominal)
{
  const options *opt = &st->opt;
  bench_case bc;
  column oop, ip;
  long iters = opt->target > 0 ? 0 : opt->iters;
  memset(&bc, 0, sizeof bc);
  memset(&oop, 0, sizeof oop);
  memset(&ip, 0, sizeof ip);
  bc.k = k;
  bc.d = d;
  bc.o = o;
  bc.root = (int)opt->root;
  bc.ts = k == K_BARRIER ? 0 : cc_dtype_size(d->t);
  bc.sbuf = st->bufs[0];
  bc.rbuf = st->bufs[1];
  bc.inp = st->bufs[2];
  bc.ref = st->bufs[3];
  bc.res = st->bufs[4];
  if (k != K_BARRIER) {
    if (bc.ts == 0) { fprintf(stderr, "%s: cc_dtype_size(%s) is 0\n", g_prog, d->name); return 1; }
    case_counts(&bc, nominal);
    case_fill(&bc, g, opt->check > 0);
  }
  case_column(&bc, opt, 0, &iters, &oop);
  if (k != K_SENDRECV) case_column(&bc, opt, 1, &iters, &ip);
  if (oop.wrong > 0) st->total_wrong += oop.wrong;
  if (ip.wrong > 0) st->total_wrong += ip.wrong;
  if (k != K_BARRIER && k != K_COPY) {
    st->bw_sum += oop.busbw;
    st->bw_count++;
    if (ip.done) { st->bw_sum += ip.busbw; st->bw_count++; }
  }
  if (g_rank == 0) print_row(&bc, iters, &oop, &ip);
  return 0;
}

/* One section: collective k over the dtypes and ops selected (those cc
   refuses skipped, with a line) and every size. Returns 1 as measure_row. */
static int run_collective(bench_state *st, int k)
{
  const options *opt = &st->opt;
  int i, j, si;
  for (i = 0; i < N_DTYPES; i++) {
    if (k == K_BARRIER ? dtypes[i].t != CC_FLOAT32 : !opt->sel_dt[i]) continue;
    for (j = 0; j < N_OPS; j++) {
      gen g;
      if (colls[k].reduces ? !opt->sel_op[j] : j != 0) continue;
      if (colls[k].reduces && !op_valid(&dtypes[i], ops[j].op)) {
        if (g_rank == 0)
          printf("# %s: op %s is not defined for %s (skipped)\n", colls[k].name, ops[j].name, dtypes[i].name);
        continue;
      }
      gen_init(&g, &dtypes[i], colls[k].reduces ? ops[j].op : -1);
      for (si = 0; si < (k == K_BARRIER ? 1 : st->nsizes); si++)
        if (measure_row(st, k, &dtypes[i], colls[k].reduces ? &ops[j] : NULL, &g, st->sizes[si])) return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv)
{
  static bench_state st;   /* zeroed: no buffers yet, no totals */
  options *opt = &st.opt;
  int i, k, cycle, status;

  if (argc > 0 && argv[0] && argv[0][0]) {
    const char *slash = strrchr(argv[0], '/');
    g_prog = slash ? slash + 1 : argv[0];
  }
  set_defaults(opt, perf_of(g_prog));
  parse_args(opt, argc, argv);
  status = start_comm(opt);
  if (status) return status;
  check_job_flags(&st);

  /* ---- GPU mode: exits 2 without a device */
  if (opt->ngpus) g_be = gpu_backend(opt);
  else if (opt->local_register == 1) g_be = &cpu_sym_backend;
  if (alloc_buffers(&st)) return 1;
  if (job_header(opt)) return 1;

  /* ---- every collective, dtype, op, size; -N times */
  for (cycle = 0; opt->cycles == 0 || cycle < opt->cycles; cycle++) {
    for (k = 0; k < K_COUNT; k++) {
      if (!opt->sel_coll[k]) continue;
      if (g_rank == 0) print_header(k, opt->cputime);
      if (run_collective(&st, k)) return 1;
    }
  }

  if (g_rank == 0) {
    printf("# Out of bounds values : %ld %s\n", st.total_wrong, st.total_wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n#\n", st.bw_count ? st.bw_sum / st.bw_count : 0.0);
    fflush(stdout);
  }
  snprintf(g_ctx, sizeof g_ctx, "%s: cc_comm_destroy at the end", g_prog);
  g_be->release(st.bufs[0]);
  g_be->release(st.bufs[1]);
  for (i = 2; i < 5; i++) free(st.bufs[i]);
  if (g_be->finish) g_be->finish();   /* GPU: cc_cuda_comm_destroy, before the host comm's */
  CHECK(cc_comm_destroy(g_comm));
  g_comm = NULL;
  return st.total_wrong ? 1 : 0;
}
