/* tests/fuzz/fuzz_hello.c - libFuzzer target: cc__hello_decode, the 96-byte
   hello that opens every TCP handshake (rendezvous and data connections).
   Checks: accepted only when the format holds (magic, version 4, kind 1 or 2,
   world 1..2^24, from and to distinct ranks of it, a job id of lowercase hex
   digits NUL-terminated within its 40 bytes, flags of the three known bits,
   zeros after them); an accepted hello encodes back to the same 96 bytes. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *p, again[CC__HELLO];
  cc__hello_t h;
  int r, i, n;
  if (size < CC__HELLO) return 0;
  p = (unsigned char *)malloc(CC__HELLO);
  FZ_CHECK(p != NULL);
  memcpy(p, data, CC__HELLO);
  memset(&h, 0x5a, sizeof h);
  r = cc__hello_decode(p, &h);
  FZ_CHECK(r == 0 || r == -1);
  if (r == 0) {
    FZ_CHECK(h.kind == 1 || h.kind == 2);
    FZ_CHECK(h.world >= 1 && h.world <= (1u << 24));
    FZ_CHECK(h.from >= 0 && (uint32_t)h.from < h.world);
    FZ_CHECK(h.to >= 0 && (uint32_t)h.to < h.world && h.to != h.from);
    FZ_CHECK(fz_terminated(h.job, sizeof h.job));
    FZ_CHECK((h.flags & ~7u) == 0);
    n = (int)strlen(h.job);
    for (i = 0; i < n; i++) FZ_CHECK((h.job[i] >= '0' && h.job[i] <= '9') || (h.job[i] >= 'a' && h.job[i] <= 'f'));
    cc__hello_encode(again, &h);
    FZ_CHECK(memcmp(again, p, CC__HELLO) == 0);
  } else {
    /* rejected: something of the format does not hold */
    uint32_t kind = cc__get32(p + 8), world = cc__get32(p + 12);
    int32_t from = (int32_t)cc__get32(p + 16), to = (int32_t)cc__get32(p + 20);
    int ok = cc__get32(p) == CC__HS_MAGIC && cc__get32(p + 4) == CC__NET_VERSION && (kind == 1 || kind == 2) &&
             world >= 1 && world <= (1u << 24) && from >= 0 && (uint32_t)from < world && to >= 0 &&
             (uint32_t)to < world && from != to && memchr(p + 24, 0, 40) != NULL && (cc__get32(p + 80) & ~7u) == 0;
    for (i = 84; ok && i < CC__HELLO; i++) ok = p[i] == 0;
    for (i = 0; ok && i < 40 && p[24 + i]; i++)
      ok = (p[24 + i] >= '0' && p[24 + i] <= '9') || (p[24 + i] >= 'a' && p[24 + i] <= 'f');
    FZ_CHECK(!ok);
  }
  free(p);
  return 0;
}
