/* tests/fuzz/fuzz_frame.c - libFuzzer target: cc__frame_decode, the 16-byte
   header {magic, tag, bytes | sig << 48} of every frame on a TCP connection.
   Checks, besides ASan/UBSan: the verdict agrees with the format (magic, tag
   -2, -3 or >= 0, bytes <= 2^44, a sig only on tag -2, an abort frame
   8..CC__ABORT_MAX bytes); a
   rejected header leaves the outputs alone; an accepted one encodes back to the
   same 16 bytes. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *p, again[CC__FRAME];
  int tag = 12345, r, want, i;
  uint64_t bytes = 777, b;
  unsigned sig = 4242, sg;
  int32_t t;
  if (size < CC__FRAME) return 0;
  p = (unsigned char *)malloc(CC__FRAME);  /* exactly 16 bytes: ASan sees any read past them */
  FZ_CHECK(p != NULL);
  memcpy(p, data, CC__FRAME);
  r = cc__frame_decode(p, &tag, &bytes, &sig);
  t = (int32_t)((uint32_t)data[4] | (uint32_t)data[5] << 8 | (uint32_t)data[6] << 16 | (uint32_t)data[7] << 24);
  b = 0;
  for (i = 0; i < 8; i++) b |= (uint64_t)data[8 + i] << (8 * i);
  sg = (unsigned)(b >> 48);
  b &= ((uint64_t)1 << 48) - 1;
  want = data[0] == 'c' && data[1] == 'c' && data[2] == 'D' && data[3] == '1' && b <= ((uint64_t)1 << 44) &&
         (sg == 0 || t == -2) && (t >= 0 || t == -2 || (t == -3 && b >= 8 && b <= CC__ABORT_MAX));
  FZ_CHECK(r == 0 || r == -1);
  FZ_CHECK((r == 0) == want);
  if (r == 0) {
    FZ_CHECK(tag >= -3 && tag != -1);
    FZ_CHECK(tag == t && bytes == b && sig == sg);
    FZ_CHECK(bytes <= CC__MAX_FRAME);
    FZ_CHECK(tag != CC__TAG_ABORT || (bytes >= 8 && bytes <= CC__ABORT_MAX));
    cc__frame_encode(again, tag, bytes, sig);
    FZ_CHECK(memcmp(again, p, CC__FRAME) == 0);
  } else {
    FZ_CHECK(tag == 12345 && bytes == 777 && sig == 4242);
  }
  free(p);
  return 0;
}
