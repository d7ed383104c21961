/* bench_mpi.c - cc_bench's twin for MPI (Open MPI, MPICH): float32, op sum,
   the same flags, sizes, timing rule, checks and columns, so that compare.sh
   reads every library's output the same way.

       mpicc.openmpi -O2 -o build/peers/bench_mpi.openmpi bench/peers/bench_mpi.c
       mpirun.openmpi -np 2 build/peers/bench_mpi.openmpi -b 8 -e 64M -f 4 -l 0.2

   Collectives (-k, a comma list or all): all_reduce (MPI_Allreduce),
   all_gather (MPI_Allgather), reduce_scatter (MPI_Reduce_scatter_block),
   broadcast (MPI_Bcast), all_to_all (MPI_Alltoall), gather (MPI_Gather),
   scatter (MPI_Scatter), barrier (MPI_Barrier). Out of place only: the
   in-place columns read N/A.

   Flags, as cc_bench's (bench/README.md): -b -e -f -i -s sizes (K, M, G
   suffixes; -e is always measured), -n iterations (the least, with -l), -w
   warmup, -c checked iterations, -l seconds per size (calibrated: batches
   growing 4x up to 20 ms, then the rest), -a 0|1|2|3 whose time (rank 0, mean,
   min, max; default 3), -r root, -o sum and -d float (the only ones), -h.
   Anything else is refused, naming the flag; exit status 2. The defaults are
   compare.sh's: -b 8 -e 64M -f 4 -s 1M,16M -l 0.2 -n 3 -w 5 -c 1 -a 3 -r 0 (8 B
   to 64 MiB by 4, and 1 MiB and 16 MiB, about 0.2 s per size).

   Rows: size count type redop root | time algbw busbw #wrong | (in place) | iters,
   as nccl-tests prints them; size is the largest buffer in bytes, count the
   call's count (one rank's block for all_gather, reduce_scatter, all_to_all,
   gather, scatter: size/n elements, at least 1). busbw = algbw times nccl-tests'
   factor: 2(n-1)/n all_reduce, 1 broadcast, (n-1)/n the others.

   Inputs are whole numbers below 1024, so every sum is exact in float32; each
   result is compared with a reference computed here from the same formula
   (#wrong: differing elements over all ranks). Exit status 1 when any was wrong.
*/
#define _POSIX_C_SOURCE 200809L   /* gethostname, sysconf */
#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { K_ALL_REDUCE, K_ALL_GATHER, K_REDUCE_SCATTER, K_BROADCAST, K_ALL_TO_ALL, K_GATHER, K_SCATTER,
       K_BARRIER, K_COUNT };

static const struct {
  const char *name, *alias, *call;
  int block, rooted;
  int bus;   /* 0: 2(n-1)/n, 1: (n-1)/n, 2: 1 */
} colls[K_COUNT] = {
  { "all_reduce", "allreduce", "MPI_Allreduce", 0, 0, 0 },
  { "all_gather", "allgather", "MPI_Allgather", 1, 0, 1 },
  { "reduce_scatter", "reducescatter", "MPI_Reduce_scatter_block", 1, 0, 1 },
  { "broadcast", "bcast", "MPI_Bcast", 0, 1, 2 },
  { "all_to_all", "alltoall", "MPI_Alltoall", 1, 0, 1 },
  { "gather", "gather", "MPI_Gather", 1, 1, 1 },
  { "scatter", "scatter", "MPI_Scatter", 1, 1, 1 },
  { "barrier", "barrier", "MPI_Barrier", 0, 0, 2 },
};

#define MAX_SIZES 1024

static int rank, nranks;
static float *sbuf, *rbuf;
static char bad_msg[512];

typedef struct {
  size_t minb, maxb, factor, incr;
  const char *extra;
  long iters, root;
  int warmup, check, average;
  double target;
  int sel[K_COUNT];
  int help;
} options;

static void bad(const char *fmt, const char *a)
{
  if (!bad_msg[0] && snprintf(bad_msg, sizeof bad_msg, fmt, a) >= (int)sizeof bad_msg)
    strcpy(bad_msg + sizeof bad_msg - 5, "...");
}

static int parse_size(const char *s, size_t *out)
{
  char *end;
  unsigned long long v, mul = 1;
  if (*s < '0' || *s > '9') return -1;
  v = strtoull(s, &end, 10);
  if (*end == 'k' || *end == 'K') { mul = 1ull << 10; end++; }
  else if (*end == 'm' || *end == 'M') { mul = 1ull << 20; end++; }
  else if (*end == 'g' || *end == 'G') { mul = 1ull << 30; end++; }
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0' || v > (~0ull) / mul) return -1;
  *out = (size_t)(v * mul);
  return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
  char *end;
  long v;
  if (*s == '\0') return -1;
  v = strtol(s, &end, 10);
  if (*end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static void parse_colls(options *o, const char *val)
{
  char buf[256], *tok, *p;
  int k;
  for (k = 0; k < K_COUNT; k++) o->sel[k] = strcmp(val, "all") == 0;
  if (strcmp(val, "all") == 0) return;
  snprintf(buf, sizeof buf, "%s", val);
  for (tok = buf; tok; tok = p) {
    int found = 0;
    p = strchr(tok, ',');
    if (p) *p++ = '\0';
    for (k = 0; k < K_COUNT; k++)
      if (strcmp(tok, colls[k].name) == 0 || strcmp(tok, colls[k].alias) == 0) { o->sel[k] = 1; found = 1; }
    if (!found) {
      bad("-k: '%s' is not a collective of this bench (all_reduce all_gather reduce_scatter broadcast"
          " all_to_all gather scatter barrier, or all)", tok);
      return;
    }
  }
}

static void parse_args(options *o, int argc, char **argv)
{
  static const struct { char s; const char *l; } names[] = {
    { 'b', "minbytes" }, { 'e', "maxbytes" }, { 'f', "stepfactor" }, { 'i', "stepbytes" },
    { 's', "extra_sizes" }, { 'n', "iters" }, { 'w', "warmup_iters" }, { 'c', "check" },
    { 'l', "time_per_size" }, { 'a', "average" }, { 'r', "root" }, { 'o', "op" },
    { 'd', "datatype" }, { 'k', "coll" },
  };
  int ai, i;
  long v;
  for (ai = 1; ai < argc && !bad_msg[0]; ai++) {
    const char *a = argv[ai], *val = NULL;
    char f = 0, flag[80];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { o->help = 1; continue; }
    if (a[0] != '-' || a[1] == '\0') { bad("unexpected argument '%s'", a); break; }
    if (a[1] == '-') {
      const char *eq = strchr(a + 2, '=');
      size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
      for (i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strlen(names[i].l) == len && !strncmp(names[i].l, a + 2, len)) f = names[i].s;
      snprintf(flag, sizeof flag, "--%.*s", (int)(len < 60 ? len : 60), a + 2);
      if (eq) val = eq + 1;
    } else {
      for (i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (names[i].s == a[1]) f = a[1];
      snprintf(flag, sizeof flag, "-%c", a[1]);
      if (a[2]) val = a + 2;
    }
    if (!f) { bad("unknown flag %s (-h lists the flags)", flag); break; }
    if (!val) {
      if (ai + 1 >= argc) { bad("%s: needs a value", flag); break; }
      val = argv[++ai];
    }
    switch (f) {
    case 'b': if (parse_size(val, &o->minb)) bad("-b: '%s' is not a size", val); break;
    case 'e': if (parse_size(val, &o->maxb)) bad("-e: '%s' is not a size", val); break;
    case 'f':
      if (parse_long(val, 2, 1 << 20, &v)) bad("-f: '%s' is not a step factor (an integer >= 2)", val);
      o->factor = (size_t)v;
      o->incr = 0;
      break;
    case 'i': if (parse_size(val, &o->incr) || o->incr == 0) bad("-i: '%s' is not a step (bytes > 0)", val); break;
    case 's': {
      char buf[256], *tok, *p;
      size_t s;
      o->extra = val;
      snprintf(buf, sizeof buf, "%s", val);
      for (tok = buf; tok; tok = p) {
        p = strchr(tok, ',');
        if (p) *p++ = '\0';
        if (parse_size(tok, &s)) { bad("-s: '%s' is not a size", tok); break; }
      }
      break;
    }
    case 'n': if (parse_long(val, 1, 1000000000L, &o->iters)) bad("-n: '%s' is not a count >= 1", val); break;
    case 'w': if (parse_long(val, 0, 1000000, &v)) bad("-w: '%s' is not a count >= 0", val); o->warmup = (int)v; break;
    case 'c': if (parse_long(val, 0, 1000000, &v)) bad("-c: '%s' is not a count >= 0", val); o->check = (int)v; break;
    case 'a': if (parse_long(val, 0, 3, &v)) bad("-a: '%s' is not 0, 1, 2 or 3", val); o->average = (int)v; break;
    case 'r': if (parse_long(val, 0, 1 << 30, &o->root)) bad("-r: '%s' is not a rank", val); break;
    case 'l': {
      char *end;
      o->target = strtod(val, &end);
      if (end == val || *end || !(o->target >= 0) || o->target > 1e6) bad("-l: '%s' is not a time in seconds", val);
      break;
    }
    case 'o': if (strcmp(val, "sum")) bad("-o: '%s': this bench measures op sum only", val); break;
    case 'd': if (strcmp(val, "float") && strcmp(val, "float32")) bad("-d: '%s': this bench measures float only", val); break;
    case 'k': parse_colls(o, val); break;
    default: break;
    }
  }
}

/* Input element k of rank r: a whole number below 1024. */
static float input(int r, size_t k)
{
  uint32_t h = (uint32_t)k * 2654435761u ^ ((uint32_t)r + 1u) * 2246822519u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return (float)(h % 1024u);
}

static float sum_of(size_t k)
{
  float s = 0.0f;
  int r;
  for (r = 0; r < nranks; r++) s += input(r, k);
  return s;
}

typedef struct { int k; size_t count, blk, sizeb; int root; } bench_case;

static void setup(const bench_case *bc)
{
  size_t i, n = (size_t)nranks, j;
  switch (bc->k) {
  case K_ALL_REDUCE: for (i = 0; i < bc->count; i++) sbuf[i] = input(rank, i); break;
  case K_REDUCE_SCATTER: for (i = 0; i < bc->blk * n; i++) sbuf[i] = input(rank, i); break;
  case K_BROADCAST: for (i = 0; i < bc->count; i++) sbuf[i] = rank == bc->root ? input(rank, i) : -1.0f; break;
  case K_ALL_GATHER: case K_GATHER: for (i = 0; i < bc->blk; i++) sbuf[i] = input(rank, i); break;
  case K_SCATTER: for (i = 0; i < bc->blk * n; i++) sbuf[i] = input(rank, i); break;
  case K_ALL_TO_ALL:   /* block j goes to rank j: element i of it is input(rank, j*n*blk + i) */
    for (j = 0; j < n; j++)
      for (i = 0; i < bc->blk; i++) sbuf[j * bc->blk + i] = input(rank, (j * n + (size_t)rank) * bc->blk + i);
    break;
  default: break;
  }
  for (i = 0; i < bc->blk * n + bc->count; i++) rbuf[i] = -1.0f;
}

static void run(const bench_case *bc)
{
  int c = (int)bc->count, b = (int)bc->blk;
  switch (bc->k) {
  case K_ALL_REDUCE: MPI_Allreduce(sbuf, rbuf, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
  case K_ALL_GATHER: MPI_Allgather(sbuf, b, MPI_FLOAT, rbuf, b, MPI_FLOAT, MPI_COMM_WORLD); break;
  case K_REDUCE_SCATTER: MPI_Reduce_scatter_block(sbuf, rbuf, b, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
  case K_BROADCAST: MPI_Bcast(sbuf, c, MPI_FLOAT, bc->root, MPI_COMM_WORLD); break;
  case K_ALL_TO_ALL: MPI_Alltoall(sbuf, b, MPI_FLOAT, rbuf, b, MPI_FLOAT, MPI_COMM_WORLD); break;
  case K_GATHER: MPI_Gather(sbuf, b, MPI_FLOAT, rbuf, b, MPI_FLOAT, bc->root, MPI_COMM_WORLD); break;
  case K_SCATTER: MPI_Scatter(sbuf, b, MPI_FLOAT, rbuf, b, MPI_FLOAT, bc->root, MPI_COMM_WORLD); break;
  default: MPI_Barrier(MPI_COMM_WORLD); break;
  }
}

/* Elements of this rank's result that differ from the reference. */
static long wrong_here(const bench_case *bc)
{
  size_t i, j, n = (size_t)nranks, b = bc->blk;
  long w = 0;
  switch (bc->k) {
  case K_ALL_REDUCE: for (i = 0; i < bc->count; i++) w += rbuf[i] != sum_of(i); break;
  case K_REDUCE_SCATTER: for (i = 0; i < b; i++) w += rbuf[i] != sum_of((size_t)rank * b + i); break;
  case K_BROADCAST: for (i = 0; i < bc->count; i++) w += sbuf[i] != input(bc->root, i); break;
  case K_ALL_GATHER: case K_GATHER:
    if (bc->k == K_GATHER && rank != bc->root) break;
    for (j = 0; j < n; j++)
      for (i = 0; i < b; i++) w += rbuf[j * b + i] != input((int)j, i);
    break;
  case K_SCATTER: for (i = 0; i < b; i++) w += rbuf[i] != input(bc->root, (size_t)rank * b + i); break;
  case K_ALL_TO_ALL:
    for (j = 0; j < n; j++)
      for (i = 0; i < b; i++) w += rbuf[j * b + i] != input((int)j, ((size_t)rank * n + j) * b + i);
    break;
  default: break;
  }
  return w;
}

static double combine(double t, int average)
{
  double r = t;
  if (average == 0) MPI_Bcast(&r, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  else MPI_Allreduce(&t, &r, 1, MPI_DOUBLE, average == 1 ? MPI_SUM : average == 2 ? MPI_MIN : MPI_MAX,
                     MPI_COMM_WORLD);
  return average == 1 ? r / nranks : r;
}

static double timed(const bench_case *bc, long iters, int average)
{
  double t0;
  long it;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (it = 0; it < iters; it++) run(bc);
  return combine(MPI_Wtime() - t0, average);
}

static int make_sizes(const options *o, size_t *sizes)
{
  size_t s, next;
  int n = 0, i, j;
  if (o->minb > o->maxb) { bad("-b is above -e%s", ""); return 0; }
  for (s = o->minb; s <= o->maxb; s = next) {
    if (n >= MAX_SIZES - 1) { bad("more than 1023 sizes%s", ""); return 0; }
    sizes[n++] = s;
    next = o->incr ? s + o->incr : s * o->factor;
    if (next <= s) break;
  }
  if (sizes[n - 1] != o->maxb) sizes[n++] = o->maxb;
  if (o->extra) {
    char buf[256], *tok, *p;
    snprintf(buf, sizeof buf, "%s", o->extra);
    for (tok = buf; tok; tok = p) {
      p = strchr(tok, ',');
      if (p) *p++ = '\0';
      if (parse_size(tok, &s)) continue;
      for (i = 0; i < n && sizes[i] != s; i++) {}
      if (i == n && n < MAX_SIZES) sizes[n++] = s;
    }
  }
  for (i = 1; i < n; i++)
    for (j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) { s = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = s; }
  return n;
}

static void fmt_time(char *out, size_t size, double us)
{
  snprintf(out, size, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
}

/* The defaults are compare.sh's: -b 8 -e 64M -f 4 -s 1M,16M -l 0.2 -n 3 -w 5 -c 1 -a 3, every collective. */
static void set_defaults(options *o)
{
  int k;
  memset(o, 0, sizeof *o);
  o->minb = 8;
  o->maxb = (size_t)64 << 20;
  o->factor = 4;
  o->extra = "1M,16M";
  o->target = 0.2;
  o->iters = 3;
  o->warmup = 5;
  o->check = 1;
  o->average = 3;
  for (k = 0; k < K_COUNT; k++) o->sel[k] = 1;
}

/* After a bad flag (rank 0 says why) or -h (rank 0 prints the usage): every
   rank finalizes alike. Returns main's exit status: 2 or 0. */
static int leave_usage(void)
{
  if (rank == 0) {
    if (bad_msg[0]) fprintf(stderr, "bench_mpi: %s\n", bad_msg);
    else printf("usage: mpirun -np N bench_mpi [-k COLL,..|all] [-b N] [-e N] [-f F | -i N] [-s N,N]\n"
                "         [-n ITERS] [-w WARMUP] [-c CHECKS] [-l SECONDS] [-a 0|1|2|3] [-r ROOT]"
                " [-o sum] [-d float]\n");
    fflush(stdout);
    fflush(stderr);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return bad_msg[0] ? 2 : 0;
}

/* sbuf and rbuf, zeroed, for sizes up to `biggest` bytes; aborts the job when
   they cannot be had. */
static void alloc_buffers(size_t biggest)
{
  size_t maxelem = biggest / sizeof(float) + 2 * (size_t)nranks + 16;
  sbuf = (float *)malloc(maxelem * sizeof(float));
  rbuf = (float *)malloc(2 * maxelem * sizeof(float));
  if (!sbuf || !rbuf) {
    fprintf(stderr, "bench_mpi: rank %d: cannot allocate %zu bytes\n", rank, 3 * maxelem * sizeof(float));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(sbuf, 0, maxelem * sizeof(float));
  memset(rbuf, 0, 2 * maxelem * sizeof(float));
}

/* Rank 0's header: the MPI library, the job and the flags. */
static void print_job_header(const options *o)
{
  char ver[MPI_MAX_LIBRARY_VERSION_STRING], host[64] = "";
  int len = 0, i;
  static const char *avg[4] = { "rank 0's", "the mean over the ranks", "the least over the ranks",
                                "the greatest over the ranks" };
  MPI_Get_library_version(ver, &len);
  for (i = 0; i < len; i++) if (ver[i] == '\n') ver[i] = ' ';
  while (len > 0 && (ver[len - 1] == ' ' || ver[len - 1] == '\0')) len--;
  gethostname(host, sizeof host - 1);
  printf("# bench_mpi: %.*s, %d ranks, host %s (%ld CPUs online)\n", len > 160 ? 160 : len, ver, nranks, host,
         sysconf(_SC_NPROCESSORS_ONLN));
  printf("# nThread 1 nGpus 0 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %ld"
         " agg iters: 1 validation: %d graph: 0\n", o->minb, o->maxb, o->incr ? o->incr : o->factor,
         o->incr ? "bytes" : "factor", o->warmup, o->iters, o->check);
  if (o->extra) printf("# extra sizes (-s): %s\n", o->extra);
  if (o->target > 0)
    printf("# time per size (-l): %.3f s, iterations calibrated, at least -n %ld\n", o->target, o->iters);
  printf("# time: %s (-a %d); GB = 1e9 bytes; out of place only (the in-place columns read N/A)\n",
         avg[o->average], o->average);
  fflush(stdout);
}

/* Rank 0's lines before collective k's rows: its name and call, and the column headings. */
static void print_coll_header(int k)
{
  printf("#\n# Collective test: %s (%s)\n", colls[k].name, colls[k].call);
  printf("# %10s  %12s  %8s  %6s  %6s  %-32s  %-32s\n", "", "", "", "", "", "         out-of-place",
         "           in-place");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s  %9s\n", "size", "count", "type",
         "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "iters");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "",
         "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  fflush(stdout);
}

/* -l: batches growing 4x up to 20 ms (or the target), then the iterations
   that take about the target, at least -n and at most 1000000. */
static long calibrate_iters(const bench_case *bc, const options *o)
{
  double dt, until = o->target < 0.02 ? o->target : 0.02, per;
  long b = 1, iters;
  for (;;) {
    dt = timed(bc, b, 3);
    if (dt >= until || b >= 1000000) break;
    b *= 4;
  }
  per = dt / (double)b;
  iters = (long)ceil(o->target / (per > 0 ? per : 1e-9));
  if (iters < o->iters) iters = o->iters;
  if (iters > 1000000) iters = 1000000;
  return iters;
}

/* Up to `checks` checked runs, until one has a wrong element: #wrong over all
   ranks. Collective. */
static long check_case(const bench_case *bc, int checks)
{
  long wrong = 0;
  int c;
  for (c = 0; c < checks && bc->k != K_BARRIER && wrong == 0; c++) {
    long here;
    setup(bc);
    run(bc);
    here = wrong_here(bc);
    MPI_Allreduce(&here, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  return wrong;
}

/* One row: collective k at `size` bytes warmed up, timed, checked, and printed
   by rank 0. Returns #wrong over all ranks. */
static long measure_row(const options *o, int k, size_t size)
{
  bench_case bc;
  long iters = o->iters, wrong;
  double dt, t_us, algbw, busbw, n = (double)nranks;
  int w;
  char tbuf[32], wbuf[32];
  bc.k = k;
  bc.root = (int)o->root;
  bc.count = k == K_BARRIER ? 0 : size / sizeof(float);
  if (k != K_BARRIER && bc.count < 1) bc.count = 1;
  bc.blk = bc.count / (size_t)nranks;
  if (bc.blk < 1) bc.blk = 1;
  if (k == K_BARRIER) bc.blk = 0;
  bc.sizeb = (colls[k].block ? bc.blk * (size_t)nranks : bc.count) * sizeof(float);
  setup(&bc);
  for (w = 0; w < o->warmup; w++) run(&bc);
  if (o->target > 0) iters = calibrate_iters(&bc, o);
  dt = timed(&bc, iters, o->average);
  t_us = dt / (double)iters * 1e6;
  algbw = k == K_BARRIER ? 0.0 : (double)bc.sizeb / 1e9 / (dt / (double)iters);
  busbw = algbw * (colls[k].bus == 0 ? 2.0 * (n - 1) / n : colls[k].bus == 1 ? (n - 1) / n : 1.0);
  wrong = check_case(&bc, o->check);
  if (rank == 0) {
    fmt_time(tbuf, sizeof tbuf, t_us);
    if (o->check) snprintf(wbuf, sizeof wbuf, "%5ld", wrong);
    else snprintf(wbuf, sizeof wbuf, "%5s", "N/A");
    printf("%12zu  %12zu  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s  %7s  %6s  %6s  %5s  %9ld\n", bc.sizeb,
           colls[k].block ? bc.blk : bc.count, k == K_BARRIER ? "none" : "float",
           (k == K_ALL_REDUCE || k == K_REDUCE_SCATTER) ? "sum" : "none", colls[k].rooted ? bc.root : -1,
           tbuf, algbw, busbw, wbuf, "N/A", "N/A", "N/A", "N/A", iters);
    fflush(stdout);
  }
  return wrong;
}

int main(int argc, char **argv)
{
  static size_t sizes[MAX_SIZES];
  options o;
  int nsizes = 0, k, si;
  long total_wrong = 0;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  set_defaults(&o);
  parse_args(&o, argc, argv);
  if (!bad_msg[0] && o.root >= nranks) {
    char r[32];
    snprintf(r, sizeof r, "%ld", o.root);
    bad("-r: '%s' is not a rank of this job", r);
  }
  if (!bad_msg[0]) nsizes = make_sizes(&o, sizes);
  if (bad_msg[0] || o.help) return leave_usage();

  alloc_buffers(sizes[nsizes - 1]);
  if (rank == 0) print_job_header(&o);

  for (k = 0; k < K_COUNT; k++) {
    if (!o.sel[k]) continue;
    if (rank == 0) print_coll_header(k);
    for (si = 0; si < (k == K_BARRIER ? 1 : nsizes); si++) total_wrong += measure_row(&o, k, sizes[si]);
  }
  if (rank == 0) {
    printf("# Out of bounds values : %ld %s\n#\n", total_wrong, total_wrong ? "FAILED" : "OK");
    fflush(stdout);
  }
  free(sbuf);
  free(rbuf);
  MPI_Finalize();
  return total_wrong ? 1 : 0;
}
