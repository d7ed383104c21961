/* tour.c - a short tour of cc: the job that `make run` starts.
 *
 * Four ranks (any number works) do one of each kind of collective and rank 0
 * prints what every rank ended up with, gathered to it, so the output reads
 * top to bottom whatever order the ranks ran in:
 *
 *     build/ccrun -n 4 build/examples/tour
 *
 * It shows cc_comm_init from the environment that ccrun sets, all_reduce,
 * broadcast, all_gather, reduce_scatter, all_to_all, a ring of send/recv in
 * one group, an asynchronous all_reduce with cc_wait, and a split.
 */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "example_util.h" /* ex_start, ex_check, ex_finish: exit when a cc call fails */

/* Gather `n` ints from every rank to rank 0 and print one line per rank. */
static void show(cc_comm *c, const char *title, const int *v, int n) {
  int size = cc_comm_size(c), r, i;
  int *all = (int *)ex_alloc((size_t)n * (size_t)size, sizeof *all);
  ex_check(c, cc_gather(c, v, all, (size_t)n, CC_INT32, 0), "cc_gather");
  if (cc_comm_rank(c) == 0) {
    printf("%s\n", title);
    for (r = 0; r < size; r++) {
      printf("  rank %d:", r);
      for (i = 0; i < n; i++) printf(" %3d", all[r * n + i]);
      printf("\n");
    }
  }
  free(all);
}

int main(void) {
  cc_comm *c = ex_start(), *half;
  const int rank = cc_comm_rank(c), size = cc_comm_size(c);
  cc_request *req;
  int i, x, v[16], w[16];

  ex_need_ranks(c, 1, 16, "tour");
  if (rank == 0) printf("cc %s: %d ranks\n\n", CC_VERSION_STRING, size);

  x = rank + 1;
  ex_check(c, cc_all_reduce(c, &x, &x, 1, CC_INT32, CC_SUM), "cc_all_reduce");
  show(c, "all_reduce(rank + 1, sum): everyone has 1 + 2 + ... + size", &x, 1);

  x = rank == 0 ? 42 : 0;
  ex_check(c, cc_broadcast(c, &x, 1, CC_INT32, 0), "cc_broadcast");
  show(c, "broadcast(42 from rank 0)", &x, 1);

  x = rank * rank;
  ex_check(c, cc_all_gather(c, &x, v, 1, CC_INT32), "cc_all_gather");
  show(c, "all_gather(rank * rank): everyone has every rank's value", v, size);

  for (i = 0; i < size; i++) v[i] = rank * 10 + i;
  ex_check(c, cc_reduce_scatter(c, v, &x, 1, CC_INT32, CC_SUM), "cc_reduce_scatter");
  show(c, "reduce_scatter(rank*10 + i, sum): rank i gets the sum of column i", &x, 1);

  for (i = 0; i < size; i++) v[i] = rank * 10 + i;
  ex_check(c, cc_all_to_all(c, v, w, 1, CC_INT32), "cc_all_to_all");
  show(c, "all_to_all(rank*10 + i): rank i gets element i of every rank", w, size);

  x = rank;                                    /* a ring: send right, receive from the left */
  ex_check(c, cc_group_begin(c), "cc_group_begin");
  ex_check(c, cc_send(c, &x, 1, CC_INT32, (rank + 1) % size, 0), "cc_send");
  ex_check(c, cc_recv(c, &v[0], 1, CC_INT32, (rank + size - 1) % size, 0), "cc_recv");
  ex_check(c, cc_group_end(c, NULL), "cc_group_end");
  show(c, "ring of send/recv in one group: each rank got its left neighbour's rank", v, 1);

  x = 1;                                       /* asynchronous: compute while it runs */
  ex_check(c, cc_group_begin(c), "cc_group_begin");
  ex_check(c, cc_all_reduce(c, &x, &x, 1, CC_INT32, CC_SUM), "cc_all_reduce");
  ex_check(c, cc_group_end(c, &req), "cc_group_end");
  for (i = 0, w[0] = 0; i < 1000; i++) w[0] += i;   /* work meanwhile */
  ex_check(c, cc_wait(req), "cc_wait");
  show(c, "asynchronous all_reduce(1) finished by cc_wait: the number of ranks", &x, 1);

  ex_check(c, cc_comm_split(c, rank % 2, rank, &half), "cc_comm_split");
  x = rank;
  ex_check(half, cc_all_reduce(half, &x, &x, 1, CC_INT32, CC_MAX), "cc_all_reduce");
  v[0] = cc_comm_rank(half);
  v[1] = x;
  ex_check(NULL, cc_comm_destroy(half), "cc_comm_destroy");
  show(c, "split by rank % 2, then max of the world ranks in each half: (rank in half, max)", v, 2);

  ex_check(c, cc_barrier(c), "cc_barrier");
  if (rank == 0) printf("\nbarrier passed; done.\n");
  return ex_finish(c);
}
