/* memcpy_bw.c - what one and two threads copy per second on this machine: the
   ceiling for collectives over shared memory, which move data by copies.

       cc -O2 -pthread -o build/peers/memcpy_bw bench/peers/memcpy_bw.c
       build/peers/memcpy_bw                  # 30 rounds of 1M, 16M, 64M
       build/peers/memcpy_bw 10 4K,256K       # rounds, sizes (K, M, G suffixes)

   For each size and for 1 and 2 threads: each thread owns a source and a
   destination of that size (written once before, so that no page fault is
   timed); in each round the threads start together, each copies its buffer
   once with memcpy, and the round lasts until the slowest is done. Printed:
   the best and the median round, as time and as GB/s (GB = 1e9 bytes; the
   bytes copied by all threads, counted once: a copy reads and writes each).
*/
#define _GNU_SOURCE 1   /* pthread_barrier_t */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 2
#define MAX_ROUNDS 10000

typedef struct job {
  unsigned char *src, *dst;
  size_t bytes;
  int rounds;
  pthread_barrier_t *start;
  double *t;   /* seconds per round, this thread */
} job;

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *copier(void *arg)
{
  job *j = (job *)arg;
  int r;
  for (r = 0; r < j->rounds; r++) {
    double t0;
    pthread_barrier_wait(j->start);
    t0 = now_s();
    memcpy(j->dst, j->src, j->bytes);
    j->t[r] = now_s() - t0;
    __asm__ __volatile__("" : : "r"(j->dst) : "memory");   /* the copy is not optimized away */
  }
  return NULL;
}

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int parse_size(const char *s, size_t *out)
{
  char *end;
  unsigned long long v = strtoull(s, &end, 10), mul = 1;
  if (end == s) return -1;
  if (*end == 'K' || *end == 'k') { mul = 1ull << 10; end++; }
  else if (*end == 'M' || *end == 'm') { mul = 1ull << 20; end++; }
  else if (*end == 'G' || *end == 'g') { mul = 1ull << 30; end++; }
  if (*end != '\0' || v == 0) return -1;
  *out = (size_t)(v * mul);
  return 0;
}

/* One size, nt threads: the round times (the slowest thread of each) in rt. */
static int measure(size_t bytes, int nt, int rounds, double *rt)
{
  pthread_t th[MAX_THREADS];
  job jobs[MAX_THREADS];
  pthread_barrier_t start;
  int i, r, err = 0;
  memset(jobs, 0, sizeof jobs);
  pthread_barrier_init(&start, NULL, (unsigned)nt);
  for (i = 0; i < nt; i++) {
    jobs[i].src = (unsigned char *)malloc(bytes);
    jobs[i].dst = (unsigned char *)malloc(bytes);
    jobs[i].t = (double *)calloc((size_t)rounds, sizeof(double));
    if (!jobs[i].src || !jobs[i].dst || !jobs[i].t) { err = ENOMEM; break; }
    memset(jobs[i].src, 1 + i, bytes);
    memset(jobs[i].dst, 0, bytes);
    jobs[i].bytes = bytes;
    jobs[i].rounds = rounds;
    jobs[i].start = &start;
  }
  for (i = 0; i < nt && !err; i++) {
    if ((err = pthread_create(&th[i], NULL, copier, &jobs[i])) != 0) {
      fprintf(stderr, "memcpy_bw: pthread_create: %s\n", strerror(err));
      exit(1);   /* the threads started wait on the barrier for ever: leave */
    }
  }
  if (!err) {
    for (i = 0; i < nt; i++) pthread_join(th[i], NULL);
    for (r = 0; r < rounds; r++) {
      rt[r] = 0.0;
      for (i = 0; i < nt; i++) if (jobs[i].t[r] > rt[r]) rt[r] = jobs[i].t[r];
    }
  }
  for (i = 0; i < nt; i++) {
    free(jobs[i].src);
    free(jobs[i].dst);
    free(jobs[i].t);
  }
  pthread_barrier_destroy(&start);
  return err;
}

int main(int argc, char **argv)
{
  int rounds = argc > 1 ? atoi(argv[1]) : 30, nt;
  char list[256], *tok, *p;
  static double rt[MAX_ROUNDS];
  snprintf(list, sizeof list, "%s", argc > 2 ? argv[2] : "1M,16M,64M");
  if (argc > 3 || rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "usage: memcpy_bw [ROUNDS (1..%d)] [SIZE,SIZE,...]\n", MAX_ROUNDS);
    return 2;
  }
  printf("# memcpy_bw: %d rounds; each thread copies its own buffer once per round; GB = 1e9 bytes copied\n", rounds);
  printf("# %7s  %12s  %12s  %10s  %12s  %10s\n", "threads", "bytes/thread", "best_us", "best_GBps",
         "median_us", "median_GBps");
  for (tok = list; tok; tok = p) {
    size_t bytes;
    p = strchr(tok, ',');
    if (p) *p++ = '\0';
    if (parse_size(tok, &bytes)) {
      fprintf(stderr, "memcpy_bw: '%s' is not a size (bytes > 0, with K, M or G)\n", tok);
      return 2;
    }
    for (nt = 1; nt <= MAX_THREADS; nt++) {
      double best, med, total = (double)bytes * nt;
      if (measure(bytes, nt, rounds, rt)) {
        fprintf(stderr, "memcpy_bw: cannot allocate 2 x %zu bytes per thread\n", bytes);
        return 1;
      }
      qsort(rt, (size_t)rounds, sizeof rt[0], by_value);
      best = rt[0];
      med = rt[rounds / 2];
      printf("  %7d  %12zu  %12.1f  %10.2f  %12.1f  %10.2f\n", nt, bytes, best * 1e6, total / best / 1e9,
             med * 1e6, total / med / 1e9);
      fflush(stdout);
    }
  }
  return 0;
}
