/* tests/cuda/test_cuda_hb_unit.cpp - the happens-before checker's logic
 * (tests/cuda/cuda_emu_hb.h) against cases computed by hand: vector clocks, races
 * of reads and writes by byte range, the reads it keeps and forgets, the
 * segments it splits and merges, a full shadow, the check before a close,
 * remote writes that only a flush orders.
 * Needs no CUDA: g++ or clang++ alone (tests/cuda/test_cuda_hb.sh builds it with
 * both, -Wall -Wextra -Wpedantic -Werror). */
#include "cuda_emu_hb.h"

#include <stdio.h>
#include <stdlib.h>

static int fails, checks;
static const char *who = "";           /* the compiler, for the test's name */
#define CHECK(cond, ...)                                                                             \
  do {                                                                                               \
    checks++;                                                                                        \
    if (!(cond) && !fails++) {                                                                       \
      printf("FAIL: cuda hb unit%s: line %d: ", who, __LINE__);                                      \
      printf(__VA_ARGS__);                                                                           \
      printf("\n");                                                                                  \
    }                                                                                                \
  } while (0)

enum { A = 0, B = 1, C = 2 };

static hb_shadow *fresh(uint64_t size) {
  hb_shadow *s = (hb_shadow *)calloc(1, sizeof *s);
  if (!s) {
    printf("FAIL: cuda hb unit: out of memory\n");
    exit(1);
  }
  hb_shadow_init(s, size);
  return s;
}

static int is_b(uint16_t agent, uint32_t clk, void *u) {
  (void)clk, (void)u;
  return agent == B;
}

/* Vector clocks: join is the entrywise max, leq the entrywise order. */
static void unit_vector_clocks(void) {
  uint32_t va[HB_MAXA], vb[HB_MAXA], t[HB_MAXA];
  memset(va, 0, sizeof va);
  memset(vb, 0, sizeof vb);
  va[A] = 3, va[B] = 1;
  vb[A] = 2, vb[B] = 5, vb[C] = 7;
  memcpy(t, va, sizeof t);
  hb_vc_join(t, vb);
  CHECK(t[A] == 3 && t[B] == 5 && t[C] == 7 && t[3] == 0, "join: %u %u %u %u", t[A], t[B], t[C], t[3]);
  CHECK(hb_vc_leq(va, t) && hb_vc_leq(vb, t) && !hb_vc_leq(va, vb) && !hb_vc_leq(vb, va), "leq");
  {
    hb_acc x = {4, A, 0}, none = {0, B, 0};
    CHECK(!hb_before(x, va) && hb_before(x, t) == 0 && hb_before(none, va), "before: 4 > 3");
    va[A] = 4;
    CHECK(hb_before(x, va), "before: 4 <= 4");
  }
}

/* A writes [0, 100) at clock 1; B reads [50, 60) knowing nothing of A: a race
   (read after write) on exactly those bytes; once B has A's clock 1, none. */
static void unit_read_after_write(void) {
  uint32_t va[HB_MAXA], vb[HB_MAXA], vc[HB_MAXA];
  hb_conflict c;
  hb_shadow *s;
  int r;
  s = fresh(1000);
  memset(va, 0, sizeof va), memset(vb, 0, sizeof vb), memset(vc, 0, sizeof vc);
  va[A] = 1, vb[B] = 1, vc[C] = 1;
  r = hb_access(s, 0, 100, 1, A, 7, va, NULL, &c);
  CHECK(r == 0 && s->nseg == 2 && s->seg[1].lo == 100, "first write: r %d nseg %u", r, s->nseg);
  r = hb_access(s, 50, 60, 0, B, 8, vb, NULL, &c);
  CHECK(r == 1 && c.kind == HB_WR && c.prev.agent == A && c.prev.clk == 1 && c.prev.op == 7 && c.lo == 50 &&
            c.hi == 60, "unordered read: r %d kind %d prev %u/%u [%llu, %llu)", r, c.kind, c.prev.agent,
        c.prev.clk, (unsigned long long)c.lo, (unsigned long long)c.hi);
  CHECK(s->nseg == 4, "segments after the read: %u (want [0,50) [50,60) [60,100) [100,1000))", s->nseg);
  vb[A] = 1;                           /* B acquires A's clock 1 (a flag) */
  r = hb_access(s, 0, 100, 0, B, 8, vb, NULL, &c);
  CHECK(r == 0, "ordered read: r %d", r);
  /* same agent: A writes again over what it wrote: never a race with itself,
     but B's reads are not ordered before A: a race (write after read) */
  va[A] = 2;
  r = hb_access(s, 10, 20, 1, A, 7, va, NULL, &c);
  CHECK(r == 1 && c.kind == HB_RW && c.prev.agent == B, "write after unordered read: r %d kind %d", r, c.kind);
  va[B] = 1;                           /* A learns B's clock 1 (its reads happened first) */
  va[A] = 3;
  r = hb_access(s, 0, 100, 1, A, 7, va, NULL, &c);
  CHECK(r == 0, "write after ordered reads: r %d kind %d", r, c.kind);
  CHECK(s->nseg == 2 && s->seg[0].w.clk == 3 && s->seg[0].r[0].clk == 0, "one write forgets the reads, merges: nseg %u",
        s->nseg);
  free(s);
}

/* Bytes, not granules: A and B write neighbouring bytes at once (as two-shot
   all_reduce's ranks do); then B writes across the boundary: one race, on
   the one byte A wrote. */
static void unit_bytes(void) {
  uint32_t va[HB_MAXA], vb[HB_MAXA];
  hb_conflict c;
  hb_shadow *s;
  int r;
  s = fresh(256);
  memset(va, 0, sizeof va), memset(vb, 0, sizeof vb);
  va[A] = 1, vb[B] = 1;
  CHECK(hb_access(s, 0, 100, 1, A, 1, va, NULL, &c) == 0 && hb_access(s, 100, 200, 1, B, 1, vb, NULL, &c) == 0, "disjoint writes");
  CHECK(s->nseg == 3, "three segments: %u", s->nseg);
  vb[B] = 2;
  r = hb_access(s, 99, 101, 1, B, 1, vb, NULL, &c);
  CHECK(r == 1 && c.kind == HB_WW && c.prev.agent == A && c.lo == 99 && c.hi == 100, "overlap: r %d [%llu, %llu)", r,
        (unsigned long long)c.lo, (unsigned long long)c.hi);
  /* an access past the end is cut at the end; an empty one does nothing */
  CHECK(hb_access(s, 250, 900, 0, A, 1, va, NULL, &c) == 0 && s->seg[s->nseg - 1].lo == 250, "past the end");
  CHECK(hb_access(s, 10, 10, 1, B, 1, vb, NULL, &c) == 0, "empty access");
  free(s);
}

/* Reads kept: B reads twice (the later stands for the earlier); C reads
   knowing B's read: C's stands for B's; A then writes knowing C only: no
   race (B's read is ordered before C's, C's before A's write). */
static void unit_reads_kept(void) {
  uint32_t va[HB_MAXA], vb[HB_MAXA], vc[HB_MAXA];
  hb_conflict c;
  hb_shadow *s;
  s = fresh(64);
  memset(va, 0, sizeof va), memset(vb, 0, sizeof vb), memset(vc, 0, sizeof vc);
  vb[B] = 1;
  hb_access(s, 0, 64, 0, B, 1, vb, NULL, &c);
  vb[B] = 2;
  hb_access(s, 0, 64, 0, B, 1, vb, NULL, &c);
  CHECK(s->seg[0].r[0].agent == B && s->seg[0].r[0].clk == 2 && s->seg[0].r[1].clk == 0, "B's later read replaces its earlier");
  vc[C] = 1, vc[B] = 2;
  hb_access(s, 0, 64, 0, C, 1, vc, NULL, &c);
  CHECK(s->seg[0].r[0].agent == C && s->seg[0].r[1].clk == 0, "C's ordered read replaces B's");
  va[A] = 1, va[C] = 1;
  CHECK(hb_access(s, 0, 64, 1, A, 1, va, NULL, &c) == 0, "write ordered after the last read: no race");
  free(s);
}

/* Concurrent reads are all kept (sorted by agent); a write that knows all
   but one races with that one; more than HB_NR concurrent readers: one
   read is forgotten, and counted. */
static void unit_concurrent_reads(void) {
  uint32_t va[HB_MAXA];
  hb_conflict c;
  hb_shadow *s;
  int i, r;
  s = fresh(64);
  for (i = HB_NR; i >= 1; i--) {       /* agents 1..HB_NR, in reverse order */
    uint32_t v[HB_MAXA];
    memset(v, 0, sizeof v);
    v[i] = 1;
    hb_access(s, 0, 64, 0, (uint16_t)i, 1, v, NULL, &c);
  }
  for (i = 0; i < HB_NR; i++)
    CHECK(s->seg[0].r[i].agent == i + 1 && s->seg[0].r[i].clk == 1, "read %d kept, sorted: agent %u", i,
          s->seg[0].r[i].agent);
  CHECK(s->dropped == 0, "nothing forgotten yet");
  memset(va, 0, sizeof va);
  va[A] = 1;
  for (i = 1; i <= HB_NR; i++) va[i] = i == 3 ? 0 : 1;
  r = hb_access(s, 0, 64, 1, A, 1, va, NULL, &c);
  CHECK(r == 1 && c.kind == HB_RW && c.prev.agent == 3, "write knowing all readers but 3: r %d agent %u", r, c.prev.agent);
  for (i = 1; i <= HB_NR + 1; i++) {
    uint32_t v[HB_MAXA];
    memset(v, 0, sizeof v);
    v[A] = 1;                          /* each knows A's write */
    v[i] = 2;
    hb_access(s, 0, 64, 0, (uint16_t)i, 1, v, NULL, &c);
  }
  CHECK(s->dropped == 1, "HB_NR + 1 concurrent readers: %u forgotten (want 1)", s->dropped);
  free(s);
}

/* A full shadow: every other byte written (by A and B in turn) makes two
   segments each: 511 writes, 1022 segments; a write at the end one more;
   then an access that needs two more boundaries is refused (-1, nothing
   recorded), one that needs one more fits. */
static void unit_full_shadow(void) {
  uint32_t va[HB_MAXA], vb[HB_MAXA];
  hb_conflict c;
  hb_shadow *s;
  int i, r;
  s = fresh(4 * HB_NSEG);
  memset(va, 0, sizeof va), memset(vb, 0, sizeof vb);
  va[A] = 1, vb[B] = 1;
  for (i = 0; i < HB_NSEG / 2 - 1; i++) hb_access(s, (uint64_t)2 * i, (uint64_t)2 * i + 1, 1, (uint16_t)(i & 1), 1, (i & 1) ? vb : va, NULL, &c);
  CHECK(s->nseg == HB_NSEG - 2, "segments: %u (want %d)", s->nseg, HB_NSEG - 2);
  CHECK(hb_access(s, 4000, 4 * HB_NSEG, 1, A, 2, va, NULL, &c) == 0 && s->nseg == HB_NSEG - 1, "segments: %u", s->nseg);
  r = hb_access(s, 3000, 3001, 1, A, 3, va, NULL, &c);
  CHECK(r == -1 && s->nseg == HB_NSEG - 1, "no room: r %d nseg %u", r, s->nseg);
  r = hb_access(s, 3000, 4000, 1, A, 3, va, NULL, &c);
  CHECK(r == 0 && s->nseg == HB_NSEG, "room for one boundary: r %d nseg %u", r, s->nseg);
  free(s);
}

/* Before a close: B's read not known to the closing clock is found; once known, nothing. */
static void unit_before_close(void) {
  uint32_t va[HB_MAXA], vb[HB_MAXA], t[HB_MAXA];
  hb_conflict c;
  hb_shadow *s;
  s = fresh(100);
  memset(va, 0, sizeof va), memset(vb, 0, sizeof vb), memset(t, 0, sizeof t);
  va[A] = 5, vb[B] = 9, vb[A] = 5;
  hb_access(s, 0, 100, 1, A, 1, va, NULL, &c);
  hb_access(s, 20, 30, 0, B, 2, vb, NULL, &c);
  t[A] = 5;
  CHECK(hb_unordered(s, t, is_b, NULL, &c) == 1 && c.prev.agent == B && c.prev.clk == 9 && c.lo == 20 && c.hi == 30,
        "close before B's read is known");
  t[B] = 9;
  CHECK(hb_unordered(s, t, is_b, NULL, &c) == 0, "close after B's read is known");
  free(s);
}

/* B (device 1) writes [0, 64) of device 0's memory: remote. A (device 0)
   learns of it by a wait without flush (V has it, F not): reading it is an
   unflushed access, and so is writing over it; with F too, nothing. A read
   on another device than the memory's (no F) checks V only; B's own later
   access, and local writes, need no flush. */
static void unit_remote_writes(void) {
  hb_shadow *s = fresh(256);
  hb_conflict c;
  uint32_t va[HB_MAXA], fa[HB_MAXA], vb[HB_MAXA];
  int r;
  memset(va, 0, sizeof va);
  memset(fa, 0, sizeof fa);
  memset(vb, 0, sizeof vb);
  vb[B] = 3;
  CHECK(hb_access(s, 0, 64, 1, B, 1 | HB_REMOTE, vb, NULL, &c) == 0, "the remote write itself");
  va[A] = 1, va[B] = 3;                /* A waited for B's flag, without a flush */
  r = hb_access(s, 0, 16, 0, A, 2, va, fa, &c);
  CHECK(r == 1 && c.kind == HB_UNFLUSHED && c.prev.agent == B && (c.prev.op & HB_REMOTE) && c.hi == 16,
        "read of an unflushed remote write: r %d kind %d agent %u hi %llu", r, c.kind, c.prev.agent,
        (unsigned long long)c.hi);
  r = hb_access(s, 16, 32, 1, A, 2, va, fa, &c);
  CHECK(r == 1 && c.kind == HB_UNFLUSHED, "write over an unflushed remote write: r %d kind %d", r, c.kind);
  r = hb_access(s, 32, 48, 0, A, 2, va, NULL, &c);
  CHECK(r == 0, "a reader of another device checks its clock only: r %d", r);
  fa[B] = 3;                           /* a wait with the flush */
  r = hb_access(s, 48, 64, 0, A, 2, va, fa, &c);
  CHECK(r == 0, "flushed: r %d kind %d", r, c.kind);
  fa[B] = 0;
  vb[B] = 4;
  r = hb_access(s, 0, 8, 0, B, 1, vb, fa, &c);
  CHECK(r == 0, "the writer's own later read: r %d", r);
  r = hb_access(s, 100, 120, 1, B, 1, vb, NULL, &c);
  va[B] = 4;
  CHECK(r == 0 && hb_access(s, 100, 120, 0, A, 2, va, fa, &c) == 0, "a local write needs no flush");
  free(s);
}

int main(int argc, char **argv) {
  static char name[64];
  if (argc > 1) snprintf(name, sizeof name, " (%.50s)", argv[1]), who = name;
  unit_vector_clocks();
  unit_read_after_write();
  unit_bytes();
  unit_reads_kept();
  unit_concurrent_reads();
  unit_full_shadow();
  unit_before_close();
  unit_remote_writes();
  if (fails) return 1;
  printf("PASS: cuda hb unit%s: vector clocks and the shadow of an allocation against hand-computed cases (%d checks)\n",
         who, checks);
  return 0;
}
