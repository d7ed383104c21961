/* test_determinism - reductions of inexact floating-point data give the same
 * bits on every rank and in every run.
 *
 * all_reduce, reduce (roots 0 and size-1) and reduce_scatter of random
 * float32, float16, bfloat16 and float64 data (mixed magnitudes, so the
 * order of the additions shows in the last bits), sum, avg and prod, counts
 * 1, 4099 and more than 1 MiB (several pipeline chunks). Each rank compares
 * its result bitwise with the left fold in rank order; the ranks all-gather
 * a hash of their results and all_reduce results must hash the same on
 * every rank; an all_reduce repeated at once must give the same bits; and
 * the whole sequence runs twice (two cc_spawn calls, the second with random
 * delays before each call and CC_SPIN_US=0, so the timing differs), and the
 * hashes of the two runs must agree.
 *
 * World sizes 2, 3, 5, 8 (large counts at 3 and 8). */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"
#include "test_ref.h"

enum { D_ALL_REDUCE, D_REDUCE, D_REDUCE_SCATTER, D_COUNT };
static const char *const d_names[D_COUNT] = {"all_reduce", "reduce", "reduce_scatter"};

#define MAX_CASES 1000 /* entries of tr_table.scratch used for hashes */

typedef struct world_arg {
  tr_table *tab;
  int quick;
  int perturb; /* second run: random delays before each call */
  char (*labels)[112]; /* shared: the label of each call, for messages */
} world_arg;

typedef struct ctx {
  tr_ctx t;
  world_arg *arg;
  int ncase;
} ctx;

static const cc_dtype d_types[] = {CC_FLOAT32, CC_FLOAT16, CC_BFLOAT16, CC_FLOAT64};
static const cc_op d_ops[] = {CC_SUM, CC_AVG, CC_PROD};

static size_t large_count(cc_dtype t) { return tr_size(t) == 2 ? 600011 : tr_size(t) == 4 ? 300007 : 150011; }

/* one call; returns a hash of this rank's result (0 where it has none) */
static uint64_t run_one(ctx *x, int coll, cc_dtype t, cc_op op, size_t count, int root,
                        uint64_t seed, int *ok) {
  int n = x->t.n, me = x->t.rank, has = coll != D_REDUCE || me == root;
  int kind = op == CC_PROD ? TR_GEN_NEAR_ONE : TR_GEN_ANY;
  size_t es = tr_size(t), in_n = coll == D_REDUCE_SCATTER ? count * (size_t)n : count;
  size_t first = coll == D_REDUCE_SCATTER ? count * (size_t)me : 0;
  unsigned char *send = (unsigned char *)malloc(in_n * es), *recv = (unsigned char *)malloc(count * es);
  unsigned char *want = (unsigned char *)malloc(count * es), *again = NULL;
  uint64_t h = 0;
  char m[300];
  cc_result rc;
  *ok = 0;
  if (!send || !recv || !want) {
    tr_fail(&x->t, "out of memory");
    goto out;
  }
  tr_fill(send, t, kind, seed, me, 0, in_n);
  if (has) tr_reference(want, t, op, kind, seed, n, first, count);
  if (x->arg->perturb) tu_sleep_us((long)(tu_hash3(seed, (uint64_t)me, 7) % 400));
  switch (coll) {
  case D_ALL_REDUCE: rc = cc_all_reduce(x->t.c, send, recv, count, t, op); break;
  case D_REDUCE: rc = cc_reduce(x->t.c, send, recv, count, t, op, root); break;
  default: rc = cc_reduce_scatter(x->t.c, send, recv, count, t, op); break;
  }
  if (!tr_ok(&x->t, rc, d_names[coll])) goto out;
  if (has) {
    if (tr_compare(recv, want, count, t, m, sizeof m))
      tr_fail(&x->t, "differs from the left fold in rank order: %s", m);
    h = tu_hash_bytes(recv, count * es) | 1;
  }
  *ok = 1;
  /* the same all_reduce again, at once: the same bits */
  if (coll == D_ALL_REDUCE) {
    again = (unsigned char *)malloc(count * es);
    if (!again) goto out;
    if (x->arg->perturb) tu_sleep_us((long)(tu_hash3(seed, (uint64_t)me, 8) % 300));
    if (tr_ok(&x->t, cc_all_reduce(x->t.c, send, again, count, t, op), "all_reduce (repeated)") &&
        memcmp(again, recv, count * es) != 0)
      tr_fail(&x->t, "the same all_reduce repeated gave other bits: %s",
              (tr_compare(again, recv, count, t, m, sizeof m), m));
  }
out:
  free(send);
  free(recv);
  free(want);
  free(again);
  return h;
}

static void run_coll(ctx *x, int coll) {
  int n = x->t.n, me = x->t.rank, large = (n == 3 || n == 8) && !(x->arg->quick && n == 8);
  size_t ti, oi, ci, counts[3];
  int ri, r;
  for (ti = 0; ti < sizeof d_types / sizeof d_types[0]; ti++) {
    cc_dtype t = d_types[ti];
    for (oi = 0; oi < sizeof d_ops / sizeof d_ops[0]; oi++) {
      cc_op op = d_ops[oi];
      counts[0] = 1;
      counts[1] = 4099;
      counts[2] = large_count(t);
      if (coll == D_REDUCE_SCATTER) counts[2] = (counts[2] / (size_t)n) | 1;
      for (ci = 0; ci < 3; ci++) {
        /* the large count: sums and bfloat16 averages, not for reduce */
        if (ci == 2 && (!large || coll == D_REDUCE || (op != CC_SUM && !(op == CC_AVG && t == CC_BFLOAT16))))
          continue;
        for (ri = 0; ri < (coll == D_REDUCE && n > 1 ? 2 : 1); ri++) {
          int root = ri ? n - 1 : 0, ok;
          uint64_t seed = tu_hash4(4242, (uint64_t)coll * 16 + (uint64_t)t,
                                   (uint64_t)op * 8 + (uint64_t)ri, counts[ci] * 16 + (uint64_t)n);
          uint64_t h, all[TR_MAXR];
          tr_label(&x->t, "%s %s/%s count=%zu root=%d n=%d%s", d_names[coll], tr_dtype_name(t),
                   tr_op_name(op), counts[ci], root, n, x->arg->perturb ? " (second run)" : "");
          h = run_one(x, coll, t, op, counts[ci], root, seed, &ok);
          /* every rank's hash, everywhere */
          memset(all, 0, sizeof all);
          if (!tr_ok(&x->t, cc_all_gather(x->t.c, &h, all, 1, CC_UINT64), "all_gather of hashes"))
            return;
          if (all[me] != h) tr_fail(&x->t, "all_gather of hashes: my own entry is wrong");
          if (coll == D_ALL_REDUCE)
            for (r = 0; r < n; r++)
              if (all[r] != all[0]) {
                tr_fail(&x->t, "rank %d's result differs from rank 0's (hash %016llx vs %016llx)", r,
                        (unsigned long long)all[r], (unsigned long long)all[0]);
                break;
              }
          if (me == 0 && x->ncase < MAX_CASES) {
            x->arg->tab->scratch[x->ncase] = (int64_t)tu_hash_bytes(all, sizeof(uint64_t) * (size_t)n);
            snprintf(x->arg->labels[x->ncase], sizeof x->arg->labels[0], "%.100s", x->t.label);
          }
          x->ncase++;
        }
      }
    }
  }
}

static int rank_main(cc_comm *c, void *argp) {
  ctx x;
  int g;
  memset(&x, 0, sizeof x);
  x.arg = (world_arg *)argp;
  tr_ctx_init(&x.t, c, x.arg->tab);
  for (g = 0; g < D_COUNT; g++) {
    if (!tr_group_begin(&x.t, g)) return 99;
    run_coll(&x, g);
    tr_group_end(&x.t);
  }
  if (x.t.rank == 0) x.arg->tab->scratch[MAX_CASES] = x.ncase;
  return tr_failed_any(&x.t, D_COUNT);
}

int main(int argc, char **argv) {
  static const int sizes[] = {2, 3, 5, 8};
  static world_arg arg;
  static int64_t first_run[MAX_CASES + 1];
  size_t si;
  int g, rc, run, want = argc > 1 ? atoi(argv[1]) : 0, i;
  char name[96], cov[300];
  double t0 = tu_now(), t1;
  const char *spin = getenv("CC_SPIN_US");
  char *spin_saved = spin ? strdup(spin) : NULL;
  tu_default_timeout("60");
  arg.quick = tu_quick();
  arg.labels = (char (*)[112])tu_shared_alloc(sizeof(arg.labels[0]) * MAX_CASES);
  if (!arg.labels) {
    tu_fail("determinism.setup", "cannot map shared memory");
    return tu_exit_code();
  }
  for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int n = sizes[si], ncase = 0, runs_ok = 1;
    if (want && n != want) continue;
    for (run = 0; run < 2; run++) {
      arg.tab = (tr_table *)tu_shared_alloc(sizeof(tr_table));
      if (!arg.tab) {
        tu_fail("determinism.setup", "cannot map shared memory");
        free(spin_saved);
        return tu_exit_code();
      }
      arg.perturb = run;
      if (run) setenv("CC_SPIN_US", "0", 1);
      t1 = tu_now();
      rc = tu_spawn(n, rank_main, &arg);
      if (run) {
        if (spin_saved)
          setenv("CC_SPIN_US", spin_saved, 1);
        else
          unsetenv("CC_SPIN_US");
      }
      for (g = 0; g < D_COUNT; g++) {
        snprintf(name, sizeof name, "determinism.%s.n%d%s", d_names[g], n, run ? ".run2" : "");
        snprintf(cov, sizeof cov,
                 "float32,float16,bfloat16,float64 x sum,avg,prod x counts 1,4099%s%s; bitwise vs "
                 "the rank-order fold, equal on every rank%s",
                 (n == 3 || n == 8) && !(arg.quick && n == 8) && g != D_REDUCE ? ",>1 MiB" : "",
                 g == D_REDUCE ? " x roots 0,size-1" : "",
                 run ? "; random delays, CC_SPIN_US=0" : "");
        tr_report_group(arg.tab, n, g, name, cov, rc);
      }
      if (rc != 0) {
        snprintf(name, sizeof name, "determinism.spawn.n%d%s", n, run ? ".run2" : "");
        tu_fail(name, "cc_spawn returned %d (%s)", rc, cc_comm_last_error(NULL));
        runs_ok = 0;
      }
      if (run == 0) {
        memcpy(first_run, arg.tab->scratch, sizeof first_run);
        ncase = (int)first_run[MAX_CASES];
      } else if (runs_ok) {
        snprintf(name, sizeof name, "determinism.two_runs.n%d", n);
        if (arg.tab->scratch[MAX_CASES] != ncase || ncase == 0) {
          tu_fail(name, "the runs made %d and %d calls", ncase, (int)arg.tab->scratch[MAX_CASES]);
        } else {
          for (i = 0; i < ncase && i < MAX_CASES; i++)
            if (arg.tab->scratch[i] != first_run[i]) break;
          if (i < ncase && i < MAX_CASES)
            tu_fail(name, "call %d of %d (%s) gave other bits in the second run", i, ncase,
                    arg.labels[i]);
          else
            tu_pass(name, "%d calls, the hashes of every rank's results agree bitwise", ncase);
        }
      }
      fprintf(stderr, "determinism: world size %d run %d took %.2f s\n", n, run + 1, tu_now() - t1);
      tu_shared_free(arg.tab, sizeof(tr_table));
    }
  }
  free(spin_saved);
  fprintf(stderr, "test_determinism: %.2f s\n", tu_now() - t0);
  return tu_exit_code();
}
