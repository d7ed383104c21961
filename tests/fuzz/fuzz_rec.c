/* tests/fuzz/fuzz_rec.c - libFuzzer target: cc__rec_decode, the 256-byte record
   {host, ip, port, extra} that every rank sends at the rendezvous (and at a
   split). Checks: an accepted record has its strings NUL-terminated within
   their arrays, a host, a port in 1..65535 and an address inet_pton reads;
   it encodes back to the same 256 bytes. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *p, again[CC__REC], a[16];
  cc__rec rec;
  int r;
  if (size < CC__REC) return 0;
  p = (unsigned char *)malloc(CC__REC);
  FZ_CHECK(p != NULL);
  memcpy(p, data, CC__REC);
  memset(&rec, 0x5a, sizeof rec);
  r = cc__rec_decode(p, &rec);
  FZ_CHECK(r == 0 || r == -1);
  if (r == 0) {
    FZ_CHECK(fz_terminated(rec.host, sizeof rec.host) && rec.host[0] != 0);
    FZ_CHECK(fz_terminated(rec.ip, sizeof rec.ip));
    FZ_CHECK(fz_terminated(rec.extra, sizeof rec.extra));
    FZ_CHECK(rec.port >= 1 && rec.port <= 65535);
    FZ_CHECK(inet_pton(AF_INET, rec.ip, a) == 1 || inet_pton(AF_INET6, rec.ip, a) == 1);
    cc__rec_encode(again, &rec);
    FZ_CHECK(memcmp(again, p, CC__REC) == 0);
  } else {
    uint32_t port = cc__get32(p + 240);
    char ip[64];
    int ok = memchr(p, 0, 176) && p[0] != 0 && memchr(p + 176, 0, 64) && memchr(p + 244, 0, 12) && port >= 1 &&
             port <= 65535;
    if (ok) {
      memcpy(ip, p + 176, 64);
      ok = inet_pton(AF_INET, ip, a) == 1 || inet_pton(AF_INET6, ip, a) == 1;
    }
    FZ_CHECK(!ok);
  }
  free(p);
  return 0;
}
