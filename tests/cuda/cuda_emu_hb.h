/* tests/cuda/cuda_emu_hb.h - the logic of the happens-before checker of the CUDA
 * emulation (tests/cuda/cuda_emu.cpp, CC_EMU_HB=1): vector clocks and the shadow of
 * an allocation. No I/O and no locks: the caller holds whatever lock guards
 * the state it passes (the emulator keeps it in shared memory, so that every
 * rank's process sees it). tests/cuda/test_cuda_hb_unit.cpp checks it against
 * hand-computed cases.
 *
 * Agents. An agent is one of the emulator's stream threads (a stream of one
 * rank); at most HB_MAXA are alive at once in the processes that share one
 * checker. Agent a counts its own steps in entry a of its vector clock (the
 * first step of a slot's first owner is 1; a slot that is used again starts
 * above its previous owner's last step, so that old clocks never order the new
 * owner's accesses). A host thread has a vector clock but no entry of its
 * own: it touches no device memory, it only passes order on (what it waited
 * for, to the work it queues).
 *
 * The shadow of an allocation is a partition of its bytes into segments, each
 * with the last write (agent, the agent's clock then, which operation) and the
 * reads since then that are not ordered one after another (at most HB_NR: a
 * read ordered after an earlier one stands for it, since whatever is ordered
 * after the later read is ordered after the earlier one too). An access of
 * bytes [lo, hi) by agent a with vector clock V:
 *   - a read races with the segment's last write w unless w.clk <= V[w.agent];
 *   - a write races with the last write and with every read kept, likewise;
 *   - then the segment records it (a write forgets the reads).
 * Segments are split at the access's ends and equal neighbours merged again,
 * so the partition stays as coarse as the accesses allow: bytes, never a
 * fixed granule (two ranks may write neighbouring bytes of one buffer at
 * once, as two-shot all_reduce does at 16-byte boundaries).
 *
 * Remote writes. A write into a device's memory by an agent of another device
 * (through a peer mapping: NVLink, PCIe) is marked remote (HB_REMOTE in its
 * op). The device may still reorder such writes after they arrived, so an
 * access of those bytes by an agent of that very device must be ordered
 * after the write by a path that flushes them: the caller passes, besides the
 * agent's vector clock V, its flushed clock F (what it knows through waits
 * with CU_STREAM_WAIT_VALUE_FLUSH, a kernel's acquire of a flag, or the
 * writing work's completion), and the access is checked against F instead of
 * V (HB_UNFLUSHED when only V orders it). */
#ifndef CC_CUDA_EMU_HB_H
#define CC_CUDA_EMU_HB_H

#include <stdint.h>
#include <string.h>

#define HB_MAXA 64                     /* agents alive at once */
#define HB_NR 6                        /* unordered reads kept per segment */
#define HB_NSEG 1024                   /* segments per allocation */

typedef struct hb_acc {                /* one access: clk 0 means none */
  uint32_t clk;
  uint16_t agent, op;
} hb_acc;

typedef struct hb_seg {                /* bytes [lo, the next segment's lo) */
  uint64_t lo;
  hb_acc w;
  hb_acc r[HB_NR];                     /* sorted by agent, the empty ones last */
} hb_seg;

typedef struct hb_shadow {
  uint64_t size;
  uint32_t nseg;
  uint32_t dropped;                    /* reads forgotten: more than HB_NR unordered ones on a segment */
  hb_seg seg[HB_NSEG];
} hb_shadow;

enum { HB_NONE, HB_WW, HB_RW, HB_WR, HB_UNFLUSHED }; /* write after write, write after read, read after write,
                                                         an access after a remote write not flushed */
#define HB_REMOTE 0x8000u              /* in hb_acc.op: a write from another device (see above) */

typedef struct hb_conflict {
  int kind;
  hb_acc prev;                         /* the earlier access it races with */
  uint64_t lo, hi;                     /* the bytes where it was found first */
} hb_conflict;

static inline void hb_vc_join(uint32_t *a, const uint32_t *b) {
  int i;
  for (i = 0; i < HB_MAXA; i++)
    if (b[i] > a[i]) a[i] = b[i];
}

/* Is every entry of a at most b's (a happened before b, or is b)? */
static inline int hb_vc_leq(const uint32_t *a, const uint32_t *b) {
  int i;
  for (i = 0; i < HB_MAXA; i++)
    if (a[i] > b[i]) return 0;
  return 1;
}

/* Is access x ordered before an agent whose vector clock is vc? */
static inline int hb_before(hb_acc x, const uint32_t *vc) { return !x.clk || x.clk <= vc[x.agent]; }

static inline void hb_shadow_init(hb_shadow *s, uint64_t size) {
  s->size = size;
  s->nseg = 1;
  s->dropped = 0;
  memset(&s->seg[0], 0, sizeof s->seg[0]);
}

static inline uint64_t hb_seg_hi(const hb_shadow *s, uint32_t i) {
  return i + 1 < s->nseg ? s->seg[i + 1].lo : s->size;
}

/* The segment that holds byte off. */
static inline uint32_t hb_find(const hb_shadow *s, uint64_t off) {
  uint32_t a = 0, b = s->nseg;         /* seg[a].lo <= off < seg[b].lo */
  while (b - a > 1) {
    uint32_t m = a + (b - a) / 2;
    if (s->seg[m].lo <= off) a = m;
    else b = m;
  }
  return a;
}

/* Make off a boundary of segments; 0 when there is no room for one more. */
static inline int hb_split(hb_shadow *s, uint64_t off) {
  uint32_t i;
  if (off == 0 || off >= s->size) return 1;
  i = hb_find(s, off);
  if (s->seg[i].lo == off) return 1;
  if (s->nseg == HB_NSEG) return 0;
  memmove(&s->seg[i + 2], &s->seg[i + 1], (size_t)(s->nseg - i - 1) * sizeof s->seg[0]);
  s->seg[i + 1] = s->seg[i];
  s->seg[i + 1].lo = off;
  s->nseg++;
  return 1;
}

static inline int hb_same(const hb_seg *a, const hb_seg *b) {
  return !memcmp(&a->w, &b->w, sizeof a->w) && !memcmp(a->r, b->r, sizeof a->r);
}

/* Merge equal neighbours among segments a..b. */
static inline void hb_merge(hb_shadow *s, uint32_t a, uint32_t b) {
  uint32_t j;
  if (b >= s->nseg) b = s->nseg - 1;
  for (j = b; j > a; j--)
    if (hb_same(&s->seg[j - 1], &s->seg[j])) {
      memmove(&s->seg[j], &s->seg[j + 1], (size_t)(s->nseg - j - 1) * sizeof s->seg[0]);
      s->nseg--;
    }
}

/* Segment g is read by `me` (vector clock vc): drop the reads ordered before
   this one, keep the others, sorted by agent. */
static inline void hb_add_read(hb_shadow *s, hb_seg *g, hb_acc me, const uint32_t *vc) {
  hb_acc keep[HB_NR + 1];
  int n = 0, k, at;
  for (k = 0; k < HB_NR; k++)
    if (g->r[k].clk && !hb_before(g->r[k], vc)) keep[n++] = g->r[k];
  for (at = 0; at < n && keep[at].agent < me.agent; at++) {
  }
  memmove(&keep[at + 1], &keep[at], (size_t)(n - at) * sizeof keep[0]);
  keep[at] = me;
  n++;
  if (n > HB_NR) {                     /* forget one of the others (counted) */
    int drop = at == n - 1 ? n - 2 : n - 1;
    memmove(&keep[drop], &keep[drop + 1], (size_t)(n - drop - 1) * sizeof keep[0]);
    n--;
    s->dropped++;
  }
  memset(g->r, 0, sizeof g->r);
  memcpy(g->r, keep, (size_t)n * sizeof keep[0]);
}

/* Agent `agent`, whose vector clock is vc (vc[agent]: its clock now), reads
   (write 0) or writes bytes [lo, hi) in operation `op` (HB_REMOTE set: a
   write from another device than the memory's). fvc: the agent's flushed
   clock when it is of the memory's own device (remote writes are checked
   against it), NULL otherwise. Returns in how many segments it races (0:
   none; *c says the first), or -1 when the shadow has no room for the
   access's ends (then nothing is recorded). */
static inline int hb_access(hb_shadow *s, uint64_t lo, uint64_t hi, int write, uint16_t agent, uint16_t op,
                            const uint32_t *vc, const uint32_t *fvc, hb_conflict *c) {
  uint32_t i, first;
  int races = 0, k;
  hb_acc me;
  c->kind = HB_NONE;
  if (hi > s->size) hi = s->size;
  if (lo >= hi) return 0;
  {                                    /* room for both ends first: a half-made split would be left */
    uint32_t need = (lo > 0 && s->seg[hb_find(s, lo)].lo != lo) + (hi < s->size && s->seg[hb_find(s, hi)].lo != hi);
    if (s->nseg + need > HB_NSEG) return -1;
  }
  hb_split(s, lo);
  hb_split(s, hi);
  me.clk = vc[agent];
  me.agent = agent;
  me.op = op;
  first = hb_find(s, lo);
  for (i = first; i < s->nseg && s->seg[i].lo < hi; i++) {
    hb_seg *g = &s->seg[i];
    int found = HB_NONE;
    hb_acc prev = g->w;
    if (!hb_before(g->w, vc)) found = write ? HB_WW : HB_WR;
    else if (fvc && (g->w.op & HB_REMOTE) && g->w.agent != agent && !hb_before(g->w, fvc)) found = HB_UNFLUSHED;
    for (k = 0; write && !found && k < HB_NR; k++)
      if (g->r[k].clk && !hb_before(g->r[k], vc)) {
        found = HB_RW;
        prev = g->r[k];
      }
    if (found && !races++) {
      c->kind = found;
      c->prev = prev;
      c->lo = g->lo;
      c->hi = hb_seg_hi(s, i);
    }
    if (write) {
      g->w = me;
      memset(g->r, 0, sizeof g->r);
    } else {
      hb_add_read(s, g, me, vc);
    }
  }
  hb_merge(s, first ? first - 1 : 0, i);
  return races;
}

/* The first access kept in s that `mine` selects (mine(agent, clk, u) != 0)
   and that is not ordered before vector clock vc: 1 and *c filled, else 0.
   (What a process must have waited for before it closes its mapping.) */
static inline int hb_unordered(const hb_shadow *s, const uint32_t *vc, int (*mine)(uint16_t, uint32_t, void *),
                               void *u, hb_conflict *c) {
  uint32_t i;
  int k;
  for (i = 0; i < s->nseg; i++) {
    const hb_seg *g = &s->seg[i];
    for (k = -1; k < HB_NR; k++) {
      hb_acc x = k < 0 ? g->w : g->r[k];
      if (!x.clk || hb_before(x, vc) || !mine(x.agent, x.clk, u)) continue;
      c->kind = k < 0 ? HB_WW : HB_RW;
      c->prev = x;
      c->lo = g->lo;
      c->hi = hb_seg_hi(s, i);
      return 1;
    }
  }
  return 0;
}

#endif
