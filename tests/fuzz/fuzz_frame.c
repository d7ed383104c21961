/* tests/fuzz/fuzz_frame.c - libFuzzer target: cc__frame_decode, the 48-byte
   header {magic, tag, bytes, seq, the call's identity, zeros} of every frame on
   every link (shared-memory rings and TCP connections). Input: the header (the
   first 48 bytes; shorter inputs are skipped).
   Checks, besides ASan/UBSan (the header is read from a buffer of exactly 48
   bytes, decoded into a frame of exactly its size):
   - the verdict agrees with fz_frame_parse (fuzz_util.h), the format stated
     independently: magic "ccF2", bytes 42..47 zero, tag >= 0, -2, -3 or -4,
     at most 2^44 bytes; a collective's frame (-2) with seq > 0, coll
     1..CC__COLL_COUNT-1 and dtype < CC_DTYPE_COUNT; a farewell (-4) with no
     payload, and seq 0 with a zero identity or seq > 0 with a valid one; any
     other frame with seq and identity all zero; an abort frame (-3) with
     8..CC__ABORT_MAX bytes;
   - an accepted header's fields are the header's, and cc__frame_encode writes
     the same 48 bytes back (so does the independent fz_frame_make);
   - a rejected header leaves nothing stale: every field of the frame is zero
     or what the header holds, none of what the frame held before the call
     (the caller, cc__rx_begin, then fails the communicator; fuzz_stream
     checks that). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *p, *again, mine[FZ_FRAME];
  cc__frame *f;
  fz_frame g;
  int r, want;
  if (size < CC__FRAME) return 0;
  FZ_CHECK(CC__FRAME == FZ_FRAME);
  p = (unsigned char *)malloc(CC__FRAME);   /* exactly 48 bytes: ASan sees any access past them */
  again = (unsigned char *)malloc(CC__FRAME);
  f = (cc__frame *)malloc(sizeof *f);
  FZ_CHECK(p && again && f);
  memcpy(p, data, CC__FRAME);
  memset(f, 0x5a, sizeof *f);
  r = cc__frame_decode(p, f);
  want = fz_frame_parse(p, &g);
  FZ_CHECK(r == 0 || r == -1);
  if ((r == 0) != want) {
    fprintf(stderr, "fuzz: cc__frame_decode says %d, the format %s (tag %d, bytes %llu, seq %llu, coll %u, dtype %u)\n",
            r, want ? "accepts" : "rejects", (int)g.tag, (unsigned long long)g.bytes, (unsigned long long)g.seq,
            g.coll, g.dtype);
    FZ_CHECK((r == 0) == want);
  }
  if (r == 0) {
    FZ_CHECK(f->tag == g.tag && f->bytes == g.bytes && f->seq == g.seq);
    FZ_CHECK(f->id.count == g.count && f->id.op == g.op && f->id.root == g.root);
    FZ_CHECK(f->id.coll == g.coll && f->id.dtype == g.dtype);
    FZ_CHECK(f->tag >= 0 || f->tag == CC__TAG_COLL || f->tag == CC__TAG_ABORT || f->tag == CC__TAG_BYE);
    FZ_CHECK(f->bytes <= CC__MAX_FRAME);
    FZ_CHECK(f->tag == CC__TAG_BYE || (f->tag == CC__TAG_COLL) == (f->seq != 0));
    FZ_CHECK(f->tag != CC__TAG_BYE || f->bytes == 0);
    FZ_CHECK(f->tag != CC__TAG_ABORT || (f->bytes >= 8 && f->bytes <= CC__ABORT_MAX));
    memset(again, 0xa5, CC__FRAME);
    cc__frame_encode(again, f);
    FZ_CHECK(memcmp(again, p, CC__FRAME) == 0);
    fz_frame_make(mine, &g);
    FZ_CHECK(memcmp(mine, p, CC__FRAME) == 0);
  } else {
    FZ_CHECK(f->tag == 0 || f->tag == g.tag);
    FZ_CHECK(f->bytes == 0 || f->bytes == g.bytes);
    FZ_CHECK(f->seq == 0 || f->seq == g.seq);
    FZ_CHECK(f->id.count == 0 || f->id.count == g.count);
    FZ_CHECK(f->id.op == 0 || f->id.op == g.op);
    FZ_CHECK(f->id.root == 0 || f->id.root == g.root);
    FZ_CHECK(f->id.coll == 0 || f->id.coll == g.coll);
    FZ_CHECK(f->id.dtype == 0 || f->id.dtype == g.dtype);
  }
  free(p);
  free(again);
  free(f);
  return 0;
}
