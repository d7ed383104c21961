/* same_pair.c - several builds of cc.h timed in the same processes, call for
   call: dev/same_pair.sh builds each cc.h into a shared library, and every
   rank of one job loads them all (dlopen, RTLD_LOCAL: each keeps its own
   statics), makes one communicator with each, then times rounds of small
   calls on each in turn, the order reversed every round. The ranks stay on
   the same vCPUs for all of them, so the placement that moves separate runs
   2-4x on a small VM (dev/before_after.sh) is common to every build.

     same_pair [-k KINDS] [-b BYTES] [-r ROUNDS] [-n CALLS] LIB.so...

   -k  collectives, a comma list (default all eight: all_reduce, all_gather,
       reduce_scatter, broadcast, all_to_all, gather, scatter, barrier)
   -b  bytes per rank's block, float32 (default 8: all_gather sends 8 B and
       receives 8 B from each rank, all_to_all 8 B to each rank, ...)
   -r  rounds (default 15), -n calls per round (default 2000, after 200
       untimed)

   Every rank is started by the caller with RANK, WORLD_SIZE and MASTER_ADDR;
   SAME_PAIR_PORT is the first of the ports the libraries meet on (one each).
   Rank 0 prints per collective the median over the rounds of each library's
   time per call (ns; each round's the greatest over the ranks, as cc_bench's
   default), with the quartiles. Each call's result is checked once
   per round: a build that computes wrong values is no faster. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../cc.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef cc_result (*sp_init)(cc_comm **, const cc_config *);
typedef cc_result (*sp_red)(cc_comm *, const void *, void *, size_t, cc_dtype, cc_op);
typedef cc_result (*sp_move)(cc_comm *, const void *, void *, size_t, cc_dtype);
typedef cc_result (*sp_root)(cc_comm *, const void *, void *, size_t, cc_dtype, int);
typedef cc_result (*sp_bcast)(cc_comm *, void *, size_t, cc_dtype, int);
typedef cc_result (*sp_bar)(cc_comm *);
typedef cc_result (*sp_destroy)(cc_comm *);
typedef const char *(*sp_error)(const cc_comm *);

typedef struct sp_lib {
  const char *path;
  void *h;
  cc_comm *c;
  sp_init init;
  sp_red all_reduce, reduce_scatter;
  sp_move all_gather, all_to_all;
  sp_root gather, scatter;
  sp_bcast broadcast;
  sp_bar barrier;
  sp_destroy destroy;
  sp_error last_error;
} sp_lib;

static int sp_sym(sp_lib *l, const char *name, void *fp, size_t size) {
  void *s = dlsym(l->h, name);
  if (!s) {
    fprintf(stderr, "same_pair: %s has no %s\n", l->path, name);
    return -1;
  }
  memcpy(fp, &s, size);   /* POSIX: a function's address, as dlsym gives it */
  return 0;
}

static int sp_load(sp_lib *l) {
  if (!(l->h = dlopen(l->path, RTLD_NOW | RTLD_LOCAL))) {
    fprintf(stderr, "same_pair: %s\n", dlerror());
    return -1;
  }
  return sp_sym(l, "cc_comm_init", &l->init, sizeof l->init) | sp_sym(l, "cc_all_reduce", &l->all_reduce, sizeof l->all_reduce) |
         sp_sym(l, "cc_reduce_scatter", &l->reduce_scatter, sizeof l->reduce_scatter) |
         sp_sym(l, "cc_all_gather", &l->all_gather, sizeof l->all_gather) |
         sp_sym(l, "cc_all_to_all", &l->all_to_all, sizeof l->all_to_all) | sp_sym(l, "cc_gather", &l->gather, sizeof l->gather) |
         sp_sym(l, "cc_scatter", &l->scatter, sizeof l->scatter) | sp_sym(l, "cc_broadcast", &l->broadcast, sizeof l->broadcast) |
         sp_sym(l, "cc_barrier", &l->barrier, sizeof l->barrier) | sp_sym(l, "cc_comm_destroy", &l->destroy, sizeof l->destroy) |
         sp_sym(l, "cc_comm_last_error", &l->last_error, sizeof l->last_error);
}

static double sp_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int sp_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One call of `kind` on l: count floats per block, root 0. */
static cc_result sp_call(const sp_lib *l, const char *kind, float *s, float *r, size_t count) {
  cc_comm *c = l->c;
  if (!strcmp(kind, "all_reduce")) return l->all_reduce(c, s, r, count, CC_FLOAT32, CC_SUM);
  if (!strcmp(kind, "reduce_scatter")) return l->reduce_scatter(c, s, r, count, CC_FLOAT32, CC_SUM);
  if (!strcmp(kind, "all_gather")) return l->all_gather(c, s, r, count, CC_FLOAT32);
  if (!strcmp(kind, "all_to_all")) return l->all_to_all(c, s, r, count, CC_FLOAT32);
  if (!strcmp(kind, "gather")) return l->gather(c, s, r, count, CC_FLOAT32, 0);
  if (!strcmp(kind, "scatter")) return l->scatter(c, s, r, count, CC_FLOAT32, 0);
  if (!strcmp(kind, "broadcast")) return l->broadcast(c, r, count, CC_FLOAT32, 0);
  if (!strcmp(kind, "barrier")) return l->barrier(c);
  return CC_ERR_INVALID_ARG;
}

/* Did the last call of `kind` leave what it must in r? s[i] = rank + 1 on
   every rank; rank 0's r starts as 1 for broadcast. */
static int sp_check(const char *kind, const float *r, size_t count, int me, int n) {
  size_t i, blocks = (!strcmp(kind, "all_gather") || !strcmp(kind, "all_to_all") || (!strcmp(kind, "gather") && me == 0))
                         ? (size_t)n : 1;
  float want = 0;
  int j;
  if (!strcmp(kind, "barrier") || (!strcmp(kind, "gather") && me != 0)) return 1;
  for (i = 0; i < count * blocks; i++) {
    size_t b = i / count;
    if (!strcmp(kind, "all_reduce") || !strcmp(kind, "reduce_scatter"))
      for (want = 0, j = 0; j < n; j++) want += (float)(j + 1);
    else if (!strcmp(kind, "all_gather") || !strcmp(kind, "gather") || !strcmp(kind, "all_to_all")) want = (float)(b + 1);
    else want = 1.0f;                  /* broadcast, scatter: rank 0's values */
    if (r[i] != want) return 0;
  }
  return 1;
}

/* What one run does: the libraries, the options, this rank and its buffers. */
typedef struct sp_run {
  sp_lib libs[8];
  int nl, rounds, calls, me, n;
  size_t bytes, count;
  const char *kinds;
  float *s, *r;
} sp_run;

/* Reads the options and the libraries' paths into run; 0, or 2 after the usage
   line. */
static int sp_args(sp_run *run, int argc, char **argv) {
  int a;
  run->kinds = "all_reduce,all_gather,reduce_scatter,broadcast,all_to_all,gather,scatter,barrier";
  run->bytes = 8;
  run->rounds = 15;
  run->calls = 2000;
  run->nl = 0;
  for (a = 1; a < argc; a++) {
    if (a + 1 < argc && !strcmp(argv[a], "-k")) run->kinds = argv[++a];
    else if (a + 1 < argc && !strcmp(argv[a], "-b")) run->bytes = (size_t)strtoul(argv[++a], NULL, 10);
    else if (a + 1 < argc && !strcmp(argv[a], "-r")) run->rounds = atoi(argv[++a]);
    else if (a + 1 < argc && !strcmp(argv[a], "-n")) run->calls = atoi(argv[++a]);
    else if (argv[a][0] != '-' && run->nl < 8) {
      memset(&run->libs[run->nl], 0, sizeof run->libs[run->nl]);
      run->libs[run->nl++].path = argv[a];
    } else {
      fprintf(stderr, "usage: same_pair [-k KINDS] [-b BYTES] [-r ROUNDS] [-n CALLS] LIB.so... "
                      "(at most 8)\n");
      return 2;
    }
  }
  return 0;
}

/* Loads every library and makes its communicator, library li's job meeting on
   port + li; 0, or 1 on failure. */
static int sp_open(sp_run *run, int port) {
  int li;
  for (li = 0; li < run->nl; li++) {
    char p[16];
    if (sp_load(&run->libs[li]) != 0) return 1;
    snprintf(p, sizeof p, "%d", port + li);
    setenv("MASTER_PORT", p, 1);       /* each library's job meets on its own port */
    if (run->libs[li].init(&run->libs[li].c, NULL) != CC_OK) {
      fprintf(stderr, "same_pair: rank %d: cc_comm_init of %s failed\n", run->me, run->libs[li].path);
      return 1;
    }
  }
  return 0;
}

/* Times `rounds` rounds of `kind` on every library into t (library li's round k
   at t[li * rounds + k]); 1 if a result was wrong, 0 if not, -1 if a call
   failed. */
static int sp_rounds(sp_run *run, const char *kind, double *t) {
  sp_lib *libs = run->libs;
  int nl = run->nl, rounds = run->rounds, calls = run->calls, me = run->me, n = run->n;
  size_t count = run->count, i;
  float *s = run->s, *r = run->r;
  int k, bad = 0;
  for (k = 0; k < rounds; k++) {
    int o;
    for (o = 0; o < nl; o++) {
      sp_lib *l = &libs[(k & 1) ? nl - 1 - o : o];   /* the order turns every round */
      double t0 = 0;
      int it;
      for (i = 0; i < count * (size_t)n; i++) s[i] = (float)(me + 1);
      for (i = 0; i < count * (size_t)n; i++) r[i] = me == 0 ? 1.0f : -1.0f;
      for (it = 0; it < 200 + calls; it++) {
        if (it == 200) t0 = sp_now();
        if (sp_call(l, kind, s, r, count) != CC_OK) {
          fprintf(stderr, "same_pair: rank %d: %s failed in %s: %s\n", me, kind, l->path,
                  l->last_error(l->c));
          return -1;
        }
      }
      t[(l - libs) * rounds + k] = (sp_now() - t0) / calls;
      if (!sp_check(kind, r, count, me, n)) bad = 1;
    }
  }
  return bad;
}

/* Rank 0's line for `kind`: per library the median and quartiles of t (which
   it sorts). */
static void sp_print(const sp_run *run, const char *kind, double *t) {
  int li, rounds = run->rounds;
  printf("%-15s", kind);
  for (li = 0; li < run->nl; li++) {
    double *v = t + li * rounds;
    qsort(v, (size_t)rounds, sizeof(double), sp_cmp);
    printf("  %7.1f [%.0f-%.0f]", v[rounds / 2], v[rounds / 4], v[(3 * rounds) / 4]);
  }
  printf("\n");
  fflush(stdout);
}

/* Times, checks and reports one collective; 0, or 1 on any failure. */
static int sp_kind(sp_run *run, const char *kind) {
  int me = run->me, nl = run->nl, rounds = run->rounds;
  double *t = (double *)malloc(sizeof(double) * (size_t)(nl * rounds));
  int bad;
  if (!t) return 1;
  bad = sp_rounds(run, kind, t);
  if (bad < 0) return 1;
  if (bad) fprintf(stderr, "same_pair: rank %d: %s left wrong values\n", me, kind);
  /* The greatest time over the ranks, as cc_bench -a 3. */
  if (run->libs[0].all_reduce(run->libs[0].c, t, t, (size_t)(nl * rounds), CC_FLOAT64, CC_MAX) != CC_OK) {
    fprintf(stderr, "same_pair: rank %d: the times' all_reduce failed\n", me);
    return 1;
  }
  if (me == 0) sp_print(run, kind, t);
  free(t);
  if (bad) return 1;
  return 0;
}

int main(int argc, char **argv) {
  const char *e_rank = getenv("RANK"), *e_size = getenv("WORLD_SIZE");
  const char *e_port = getenv("SAME_PAIR_PORT");
  sp_run run;
  int li, port, rc;
  char list[512], *save = NULL, *kind;
  if ((rc = sp_args(&run, argc, argv)) != 0) return rc;
  if (!run.nl || !e_rank || !e_size || !e_port || run.rounds < 1 || run.calls < 1 || run.bytes < 4) {
    fprintf(stderr, "same_pair: libraries, RANK, WORLD_SIZE, SAME_PAIR_PORT, and sizes of at least 1 "
                    "are needed\n");
    return 2;
  }
  run.me = atoi(e_rank);
  run.n = atoi(e_size);
  port = atoi(e_port);
  run.count = run.bytes / 4;
  run.s = (float *)malloc(sizeof(float) * run.count * (size_t)run.n);
  run.r = (float *)malloc(sizeof(float) * run.count * (size_t)run.n);
  if (!run.s || !run.r || run.n < 1) return 1;
  if (sp_open(&run, port) != 0) return 1;
  snprintf(list, sizeof list, "%s", run.kinds);
  if (run.me == 0) printf("# %d ranks, %zu B blocks, float32; ns per call, the greatest over the ranks: "
                          "median over %d rounds of %d calls [quartiles]\n",
                          run.n, run.bytes, run.rounds, run.calls);
  for (kind = strtok_r(list, ",", &save); kind; kind = strtok_r(NULL, ",", &save))
    if (sp_kind(&run, kind) != 0) return 1;
  for (li = 0; li < run.nl; li++) run.libs[li].destroy(run.libs[li].c);
  free(run.s);
  free(run.r);
  return 0;
}
