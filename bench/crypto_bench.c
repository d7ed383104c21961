/* bench/crypto_bench.c - throughput of cc.h's @crypto on one core: integrity
   only (the whole message as AAD: GMAC / Poly1305, what a TCP frame costs with
   a token) and encryption (16-byte header as AAD, payload encrypted; seal and
   open measured separately: CC_NET_ENCRYPT=1), for 1 MiB and 64 KiB messages,
   each suite and each code path this CPU has, and the cost of one small
   message. Times are this thread's CPU time, so other load on the machine
   hardly moves them (docs/performance.md quotes them).

   Build: make build/crypto_bench      Run: build/crypto_bench [seconds per figure, default 0.4] */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "tests/unit/crypto_extra.h"   /* xt_aead_seal */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time of this thread: on a shared machine, time slices lost to other
   processes do not count (cache and SMT contention still do). */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile unsigned char g_sink;

/* what: 0 integrity tag, 1 integrity verify, 2 seal, 3 open. GB/s of payload. */
static double bench(const cc__aead_key *k, int what, unsigned char *buf, unsigned char *out, size_t len, double secs) {
  unsigned char nonce[12], hdr[16], tag[16];
  uint64_t seq = 0;
  size_t iters = 0;
  double t0, t;
  memset(hdr, 0x5a, sizeof hdr);
  memset(nonce, 0, sizeof nonce);
  xt_aead_seal(k, nonce, buf, len, NULL, NULL, 0, tag);    /* warm up, and a tag for the verify case */
  t0 = now_s();
  do {
    int r;
    size_t i;
    for (i = 0; i < 8; i++, iters++) {
      cc__aead s;
      if (what == 1 || what == 3) memset(nonce + 4, 0, 8);  /* verify/open the message sealed above */
      else cc__st64be(nonce + 4, ++seq);
      switch (what) {
      case 0: r = xt_aead_seal(k, nonce, buf, len, NULL, NULL, 0, tag); break;
      case 1: r = cc__aead_begin(&s, k, nonce) | cc__aead_aad(&s, buf, len) | (cc__aead_verify(&s, tag) != 0); break;
      case 2: r = xt_aead_seal(k, nonce, hdr, 16, buf, out, len, tag); break;
      default:
        r = cc__aead_begin(&s, k, nonce) | cc__aead_aad(&s, hdr, 16) | cc__aead_decrypt(&s, out, buf, len);
        (void)cc__aead_final(&s, tag);
        break;
      }
      if (r != 0 && what != 3) { printf("FAIL: bench call failed (what %d)\n", what); exit(1); }
      g_sink = (unsigned char)(g_sink ^ tag[0]);
    }
    t = now_s() - t0;
  } while (t < secs);
  return (double)iters * (double)len / t / 1e9;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 0.4;
  size_t sizes[2] = { (size_t)1 << 20, (size_t)64 << 10 };
  unsigned char key[32];
  unsigned char *buf = (unsigned char *)malloc((size_t)1 << 20), *out = (unsigned char *)malloc((size_t)1 << 20);
  int detected = cc__crypto_cpu(), modes[3], nmodes = 0, m, si;
  if (!buf || !out) return 1;
  memset(buf, 0x11, (size_t)1 << 20);
  memset(key, 0x42, sizeof key);
  modes[nmodes++] = detected;
  if (detected & CC__CPU_AVX2) modes[nmodes++] = detected & ~CC__CPU_AVX2;
  if (detected & CC__CPU_SSE2) modes[nmodes++] = detected & ~(CC__CPU_AVX2 | CC__CPU_SSE2);
  printf("GB/s of payload per core (thread CPU time, %.1f s per figure); integrity = whole message as AAD\n", secs);
  printf("%-34s %8s %10s %10s %10s %10s\n", "suite", "message", "mac", "verify", "seal", "open");
  if (detected & CC__CPU_GCM) {
    int gmodes[3], ng = 0, g;
    gmodes[ng++] = detected;
    if (detected & CC__CPU_VAES) gmodes[ng++] = detected & ~CC__CPU_VAES;
    if (detected & CC__CPU_VCLMUL) gmodes[ng++] = detected & ~(CC__CPU_VAES | CC__CPU_VCLMUL);
    for (g = 0; g < ng; g++) {
      cc__aead_key k;
      int f = gmodes[g];
      __atomic_store_n(&cc__crypto_cpu_flags, f, __ATOMIC_RELAXED);
      cc__aead_setkey(&k, CC__AEAD_AES256_GCM, key);
      for (si = 0; si < 2; si++)
        printf("%-34s %7zuK %10.2f %10.2f %10.2f %10.2f\n",
               (f & CC__CPU_VAES) ? "AES-256-GCM (VAES, VPCLMULQDQ)" : (f & CC__CPU_VCLMUL) ? "AES-256-GCM (AES-NI, VPCLMULQDQ)"
                                                                             : "AES-256-GCM (AES-NI, PCLMULQDQ)",
               sizes[si] >> 10, bench(&k, 0, buf, out, sizes[si], secs), bench(&k, 1, buf, out, sizes[si], secs),
               bench(&k, 2, buf, out, sizes[si], secs), bench(&k, 3, buf, out, sizes[si], secs));
    }
    __atomic_store_n(&cc__crypto_cpu_flags, detected, __ATOMIC_RELAXED);
  }
  for (m = 0; m < nmodes; m++) {
    cc__aead_key k;
    char name[64];
    __atomic_store_n(&cc__crypto_cpu_flags, modes[m], __ATOMIC_RELAXED);
    snprintf(name, sizeof name, "ChaCha20-Poly1305 (%s)", modes[m] & CC__CPU_AVX2 ? "AVX2" : modes[m] & CC__CPU_SSE2 ? "SSE2" : "portable C");
    cc__aead_setkey(&k, CC__AEAD_CHACHA20_POLY1305, key);
    for (si = 0; si < 2; si++)
      printf("%-34s %7zuK %10.2f %10.2f %10.2f %10.2f\n", name, sizes[si] >> 10,
             bench(&k, 0, buf, out, sizes[si], secs), bench(&k, 1, buf, out, sizes[si], secs),
             bench(&k, 2, buf, out, sizes[si], secs), bench(&k, 3, buf, out, sizes[si], secs));
  }
  /* Per-message cost: begin + 16-byte header as AAD + final (what every
     small frame pays on top of its bytes), and a 1 KiB integrity message. */
  __atomic_store_n(&cc__crypto_cpu_flags, detected, __ATOMIC_RELAXED);
  printf("\nper message (integrity tag over the whole message), ns:\n");
  for (m = 0; m < 2; m++) {
    cc__aead_key k;
    size_t lens[3] = { 16, 1024, 16384 };
    int suite = m == 0 ? CC__AEAD_AES256_GCM : CC__AEAD_CHACHA20_POLY1305;
    if (cc__aead_setkey(&k, suite, key) != 0) continue;
    printf("%-34s", suite == CC__AEAD_AES256_GCM ? "AES-256-GCM" : "ChaCha20-Poly1305");
    for (si = 0; si < 3; si++)
      printf("  %5zu B: %7.1f", lens[si], (double)lens[si] / bench(&k, 0, buf, out, lens[si], secs));
    printf("\n");
  }
  free(buf);
  free(out);
  return 0;
}
