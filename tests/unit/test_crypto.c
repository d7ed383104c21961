/* tests/unit/test_crypto.c - @crypto of cc.h: HKDF-SHA256, ChaCha20, Poly1305,
   AEAD_CHACHA20_POLY1305 and AES-256-GCM, against published test vectors and
   independent references, plus streaming, tampering, misuse and the
   portable fallback paths. Every code path this CPU has is run (the CPU
   feature flags are masked: AVX2, SSE2 and portable ChaCha20; VAES+VPCLMULQDQ,
   AES-NI+VPCLMULQDQ and AES-NI+PCLMULQDQ GCM). Prints PASS:/FAIL: lines;
   exits 1 on any failure. Builds with -DCC_CRYPTO_PORTABLE (no intrinsics)
   and -DCC_CRYPTO_NO_INT128 too.

   Sources of the vectors (transcribed; facts, not code):
   - RFC 8439 (ChaCha20 and Poly1305 for IETF Protocols): sections 2.1.1,
     2.2.1, 2.3.2, 2.4.2, 2.5.2, 2.6.2, 2.8.2 and Appendix A.1-A.5.
   - RFC 5869 (HKDF) Appendix A.1-A.3 (SHA-256 test cases 1-3).
   - FIPS 197 Appendix C.3 (AES-256 single block).
   - McGrew and Viega, "The Galois/Counter Mode of Operation (GCM)"
     (revised 2005), Appendix B, test cases 13-18 (AES-256); the same values
     are in GNU Nettle's testsuite/gcm-test.c.
   - Long messages (which reach the 8-block AES-GCM and 8-block AVX2 ChaCha20
     paths): computed with OpenSSL through Python's cryptography package, an
     implementation independent of cc:
       key = bytes((7*i + 1) & 255 for i in range(32))
       nonce = bytes((5*i + 3) & 255 for i in range(12))
       msg(n, seed) = bytes((i*31 + seed + (i >> 8)) & 255 for i in range(n))
       out = AESGCM(key) or ChaCha20Poly1305(key) .encrypt(nonce, msg(plen, 1), msg(alen, 2))
     and LONGV holds SHA-256(ciphertext) and the tag. */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "crypto_extra.h"   /* the one-shot forms the vectors use */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ harness */
static int g_fails, g_group_fails, g_checks;
static char g_mode[64] = "";

static void expect(int ok, const char *fmt, ...) {
  g_checks++;
  if (!ok) {
    va_list ap;
    g_fails++;
    g_group_fails++;
    printf("FAIL: crypto: %s%s", g_mode, g_mode[0] ? ": " : "");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
  }
}

static void group_begin(void) { g_group_fails = 0; g_checks = 0; }
static void group_end(const char *name) {
  if (!g_group_fails) printf("PASS: crypto: %s%s%s (%d checks)\n", g_mode, g_mode[0] ? ": " : "", name, g_checks);
}

/* Hex (whitespace and ':' ignored) into out; returns the byte count. */
static size_t unhex(const char *s, unsigned char *out, size_t cap) {
  size_t n = 0;
  int hi = -1;
  for (; *s; s++) {
    int v;
    char c = *s;
    if (c == ' ' || c == '\n' || c == ':') continue;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else { printf("FAIL: bad hex digit in a test vector\n"); exit(1); }
    if (hi < 0) hi = v;
    else {
      if (n >= cap) { printf("FAIL: test vector too long\n"); exit(1); }
      out[n++] = (unsigned char)(hi << 4 | v);
      hi = -1;
    }
  }
  if (hi >= 0) { printf("FAIL: odd hex length in a test vector\n"); exit(1); }
  return n;
}

static int eq_hex(const unsigned char *got, size_t n, const char *want_hex) {
  unsigned char w[1024];
  size_t wn = unhex(want_hex, w, sizeof w);
  return wn == n && memcmp(got, w, n) == 0;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {                 /* xorshift64*: deterministic */
  g_rng ^= g_rng >> 12; g_rng ^= g_rng << 25; g_rng ^= g_rng >> 27;
  return g_rng * 2685821657736338717ull;
}
static size_t rndn(size_t n) { return n ? (size_t)(rnd() % n) : 0; }
static void rndfill(unsigned char *p, size_t n) { size_t i; for (i = 0; i < n; i++) p[i] = (unsigned char)rnd(); }

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) { printf("FAIL: out of memory\n"); exit(1); }
  return p;
}

/* ------------------------------------------------------- RFC 8439 data */
#define KEY_00_1F "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY_80_9F "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
#define KEY_1C92 "1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0 47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0"
static const char *SUNSCREEN =
    "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
static const char *IETF =
    "Any submission to the IETF intended by the Contributor for publication as all or part of an IETF "
    "Internet-Draft or RFC and any statement made within the context of an IETF activity is considered an "
    "\"IETF Contribution\". Such statements include oral statements in IETF sessions, as well as written and "
    "electronic communications made at any time or place, which are addressed to";
static const char *JABBER =
    "'Twas brillig, and the slithy toves\nDid gyre and gimble in the wabe:\nAll mimsy were the borogoves,\n"
    "And the mome raths outgrabe.";

static void test_quarter_round(void) {
  uint32_t a = 0x11111111u, b = 0x01020304u, c = 0x9b8d6f43u, d = 0x01234567u;
  uint32_t s[16] = { 0x879531e0u, 0xc5ecf37du, 0x516461b1u, 0xc9a62f8au, 0x44c20ef3u, 0x3390af7fu,
                     0xd9fc690bu, 0x2a5f714cu, 0x53372767u, 0xb00a5631u, 0x974c541au, 0x359e9963u,
                     0x5c971061u, 0x3d631689u, 0x2098d9d6u, 0x91dbd320u };
  group_begin();
  CC__CHACHA_QR(a, b, c, d);                                  /* RFC 8439 2.1.1 */
  expect(a == 0xea2a92f4u && b == 0xcb1cf8ceu && c == 0x4581472eu && d == 0x5881c4bbu, "RFC 8439 2.1.1");
  CC__CHACHA_QR(s[2], s[7], s[8], s[13]);                     /* RFC 8439 2.2.1 */
  expect(s[2] == 0xbdb886dcu && s[7] == 0xcfacafd2u && s[8] == 0xe46bea80u && s[13] == 0xccc07c79u &&
         s[0] == 0x879531e0u && s[15] == 0x91dbd320u, "RFC 8439 2.2.1");
  group_end("ChaCha20 quarter round (RFC 8439 2.1.1, 2.2.1)");
}

typedef struct { const char *name, *key; uint32_t ctr; const char *nonce, *out; } block_vec;
static const block_vec BLOCKS[] = {
  { "2.3.2", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", 1, "000000090000004a00000000",
    "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
    "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e" },
  { "A.1 #1", "0000000000000000000000000000000000000000000000000000000000000000", 0, "000000000000000000000000",
    "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
    "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586" },
  { "A.1 #2", "0000000000000000000000000000000000000000000000000000000000000000", 1, "000000000000000000000000",
    "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
    "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f" },
  { "A.1 #3", "0000000000000000000000000000000000000000000000000000000000000001", 1, "000000000000000000000000",
    "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
    "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0" },
  { "A.1 #4", "00ff000000000000000000000000000000000000000000000000000000000000", 2, "000000000000000000000000",
    "72d54dfbf12ec44b362692df94137f328fea8da73990265ec1bbbea1ae9af0ca"
    "13b25aa26cb4a648cb9b9d1be65b2c0924a66c54d545ec1b7374f4872e99f096" },
  { "A.1 #5", "0000000000000000000000000000000000000000000000000000000000000000", 0, "000000000000000000000002",
    "c2c64d378cd536374ae204b9ef933fcd1a8b2288b3dfa49672ab765b54ee27c7"
    "8a970e0e955c14f3a88e741b97c286f75f8fc299e8148362fa198a39531bed6d" },
};

static void test_chacha_block(void) {
  size_t i;
  group_begin();
  for (i = 0; i < sizeof BLOCKS / sizeof BLOCKS[0]; i++) {
    unsigned char key[32], nonce[12], out[64], zero[64];
    uint32_t st[16];
    unhex(BLOCKS[i].key, key, 32);
    unhex(BLOCKS[i].nonce, nonce, 12);
    cc__chacha20_init(st, key, BLOCKS[i].ctr, nonce);
    cc__chacha20_block(st, out);
    expect(eq_hex(out, 64, BLOCKS[i].out), "block function RFC 8439 %s", BLOCKS[i].name);
    memset(zero, 0, sizeof zero);
    xt_chacha20_xor(key, BLOCKS[i].ctr, nonce, zero, out, 64);
    expect(eq_hex(out, 64, BLOCKS[i].out), "keystream via cc__chacha20_xor, RFC 8439 %s", BLOCKS[i].name);
  }
  group_end("ChaCha20 block function (RFC 8439 2.3.2, A.1 #1-#5)");
}

typedef struct { const char *name, *key; uint32_t ctr; const char *nonce, *pt_text, *pt_hex, *ct; } enc_vec;
static void enc_vectors(const enc_vec **v, size_t *n) {
  static enc_vec V[4];
  V[0].name = "2.4.2"; V[0].key = KEY_00_1F; V[0].ctr = 1; V[0].nonce = "000000000000004a00000000";
  V[0].pt_text = SUNSCREEN; V[0].pt_hex = NULL;
  V[0].ct = "6e 2e 35 9a 25 68 f9 80 41 ba 07 28 dd 0d 69 81 e9 7e 7a ec 1d 43 60 c2 0a 27 af cc fd 9f ae 0b"
            "f9 1b 65 c5 52 47 33 ab 8f 59 3d ab cd 62 b3 57 16 39 d6 24 e6 51 52 ab 8f 53 0c 35 9f 08 61 d8"
            "07 ca 0d bf 50 0d 6a 61 56 a3 8e 08 8a 22 b6 5e 52 bc 51 4d 16 cc f8 06 81 8c e9 1a b7 79 37 36"
            "5a f9 0b bf 74 a3 5b e6 b4 0b 8e ed f2 78 5e 42 87 4d";
  V[1].name = "A.2 #1"; V[1].key = "00000000000000000000000000000000 00000000000000000000000000000000"; V[1].ctr = 0;
  V[1].nonce = "000000000000000000000000"; V[1].pt_text = NULL;
  V[1].pt_hex = "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000";
  V[1].ct = "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
            "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586";
  V[2].name = "A.2 #2"; V[2].key = "00000000000000000000000000000000 00000000000000000000000000000001"; V[2].ctr = 1;
  V[2].nonce = "000000000000000000000002"; V[2].pt_text = IETF; V[2].pt_hex = NULL;
  V[2].ct = "a3 fb f0 7d f3 fa 2f de 4f 37 6c a2 3e 82 73 70 41 60 5d 9f 4f 4f 57 bd 8c ff 2c 1d 4b 79 55 ec"
            "2a 97 94 8b d3 72 29 15 c8 f3 d3 37 f7 d3 70 05 0e 9e 96 d6 47 b7 c3 9f 56 e0 31 ca 5e b6 25 0d"
            "40 42 e0 27 85 ec ec fa 4b 4b b5 e8 ea d0 44 0e 20 b6 e8 db 09 d8 81 a7 c6 13 2f 42 0e 52 79 50"
            "42 bd fa 77 73 d8 a9 05 14 47 b3 29 1c e1 41 1c 68 04 65 55 2a a6 c4 05 b7 76 4d 5e 87 be a8 5a"
            "d0 0f 84 49 ed 8f 72 d0 d6 62 ab 05 26 91 ca 66 42 4b c8 6d 2d f8 0e a4 1f 43 ab f9 37 d3 25 9d"
            "c4 b2 d0 df b4 8a 6c 91 39 dd d7 f7 69 66 e9 28 e6 35 55 3b a7 6c 5c 87 9d 7b 35 d4 9e b2 e6 2b"
            "08 71 cd ac 63 89 39 e2 5e 8a 1e 0e f9 d5 28 0f a8 ca 32 8b 35 1c 3c 76 59 89 cb cf 3d aa 8b 6c"
            "cc 3a af 9f 39 79 c9 2b 37 20 fc 88 dc 95 ed 84 a1 be 05 9c 64 99 b9 fd a2 36 e7 e8 18 b0 4b 0b"
            "c3 9c 1e 87 6b 19 3b fe 55 69 75 3f 88 12 8c c0 8a aa 9b 63 d1 a1 6f 80 ef 25 54 d7 18 9c 41 1f"
            "58 69 ca 52 c5 b8 3f a3 6f f2 16 b9 c1 d3 00 62 be bc fd 2d c5 bc e0 91 19 34 fd a7 9a 86 f6 e6"
            "98 ce d7 59 c3 ff 9b 64 77 33 8f 3d a4 f9 cd 85 14 ea 99 82 cc af b3 41 b2 38 4d d9 02 f3 d1 ab"
            "7a c6 1d d2 9c 6f 21 ba 5b 86 2f 37 30 e3 7c fd c4 fd 80 6c 22 f2 21";
  V[3].name = "A.2 #3"; V[3].key = KEY_1C92; V[3].ctr = 42; V[3].nonce = "000000000000000000000002";
  V[3].pt_text = JABBER; V[3].pt_hex = NULL;
  V[3].ct = "62 e6 34 7f 95 ed 87 a4 5f fa e7 42 6f 27 a1 df 5f b6 91 10 04 4c 0d 73 11 8e ff a9 5b 01 e5 cf"
            "16 6d 3d f2 d7 21 ca f9 b2 1e 5f b1 4c 61 68 71 fd 84 c5 4f 9d 65 b2 83 19 6c 7f e4 f6 05 53 eb"
            "f3 9c 64 02 c4 22 34 e3 2a 35 6b 3e 76 43 12 a6 1a 55 32 05 57 16 ea d6 96 25 68 f8 7d 3f 3f 77"
            "04 c6 a8 d1 bc d1 bf 4d 50 d6 15 4b 6d a7 31 b1 87 b5 8d fd 72 8a fa 36 75 7a 79 7a c1 88 d1";
  *v = V;
  *n = 4;
}

static void test_chacha_encrypt(void) {
  const enc_vec *V;
  size_t n, i;
  enc_vectors(&V, &n);
  group_begin();
  for (i = 0; i < n; i++) {
    unsigned char key[32], nonce[12], pt[512], out[512];
    size_t len;
    unhex(V[i].key, key, 32);
    unhex(V[i].nonce, nonce, 12);
    if (V[i].pt_text) { len = strlen(V[i].pt_text); memcpy(pt, V[i].pt_text, len); }
    else len = unhex(V[i].pt_hex, pt, sizeof pt);
    xt_chacha20_xor(key, V[i].ctr, nonce, pt, out, len);
    expect(eq_hex(out, len, V[i].ct), "encryption RFC 8439 %s (%zu bytes)", V[i].name, len);
    xt_chacha20_xor(key, V[i].ctr, nonce, out, out, len);   /* in place, back to the plaintext */
    expect(memcmp(out, pt, len) == 0, "in-place decryption RFC 8439 %s", V[i].name);
  }
  group_end("ChaCha20 encryption (RFC 8439 2.4.2, A.2 #1-#3)");
}

/* The SIMD block paths against the portable block function (itself checked
   by the RFC vectors above), for 0..40 blocks. */
static void test_chacha_simd_vs_portable(void) {
  unsigned char key[32], nonce[12], *zero = (unsigned char *)xmalloc(64 * 40), *out = (unsigned char *)xmalloc(64 * 40);
  size_t nb, j;
  group_begin();
  rndfill(key, 32);
  rndfill(nonce, 12);
  memset(zero, 0, 64 * 40);
  for (nb = 0; nb <= 40; nb++) {
    uint32_t st[16], ref[16];
    uint32_t ctr = (uint32_t)rnd();
    int ok = 1;
    cc__chacha20_init(st, key, ctr, nonce);
    memcpy(ref, st, sizeof st);
    cc__chacha20_xor_blocks(st, zero, out, nb);
    for (j = 0; j < nb; j++) {
      unsigned char blk[64];
      ref[12] = ctr + (uint32_t)j;
      cc__chacha20_block(ref, blk);
      if (memcmp(blk, out + 64 * j, 64) != 0) ok = 0;
    }
    expect(ok && st[12] == ctr + (uint32_t)nb, "%zu blocks against the portable block function", nb);
  }
  free(zero);
  free(out);
  group_end("ChaCha20 multi-block paths = portable block function (0..40 blocks)");
}

/* ---------------------------------------------------------- Poly1305 */
static void ref_poly1305(const unsigned char key[32], const unsigned char *m, size_t len, unsigned char tag[16]);
typedef struct { const char *name, *key, *msg_hex, *msg_text, *tag; } poly_vec;
static void test_poly1305(void) {
  static const poly_vec V[] = {
    { "2.5.2", "85:d6:be:78:57:55:6d:33:7f:44:52:fe:42:d5:06:a8:01:03:80:8a:fb:0d:b2:fd:4a:bf:f6:af:41:49:f5:1b",
      NULL, "Cryptographic Forum Research Group", "a8:06:1d:c1:30:51:36:c6:c2:2b:8b:af:0c:01:27:a9" },
    { "A.3 #1", "00000000000000000000000000000000 00000000000000000000000000000000",
      "0000000000000000000000000000000000000000000000000000000000000000"
      "0000000000000000000000000000000000000000000000000000000000000000", NULL,
      "00000000000000000000000000000000" },
    { "A.3 #2", "00000000000000000000000000000000 36e5f6b5c5e06070f0efca96227a863e", NULL, "IETF",
      "36e5f6b5c5e06070f0efca96227a863e" },
    { "A.3 #3", "36e5f6b5c5e06070f0efca96227a863e 00000000000000000000000000000000", NULL, "IETF",
      "f3477e7cd95417af89a6b8794c310cf0" },
    { "A.3 #4", "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0", NULL, "JABBER",
      "4541669a7eaaee61e708dc7cbcc5eb62" },
    { "A.3 #5", "02000000000000000000000000000000 00000000000000000000000000000000",
      "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", NULL, "03000000000000000000000000000000" },
    { "A.3 #6", "02000000000000000000000000000000 FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
      "02000000000000000000000000000000", NULL, "03000000000000000000000000000000" },
    { "A.3 #7", "01000000000000000000000000000000 00000000000000000000000000000000",
      "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF F0FFFFFFFFFFFFFFFFFFFFFFFFFFFFFF 11000000000000000000000000000000", NULL,
      "05000000000000000000000000000000" },
    { "A.3 #8", "01000000000000000000000000000000 00000000000000000000000000000000",
      "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF FBFEFEFEFEFEFEFEFEFEFEFEFEFEFEFE 01010101010101010101010101010101", NULL,
      "00000000000000000000000000000000" },
    { "A.3 #9", "02000000000000000000000000000000 00000000000000000000000000000000",
      "FDFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", NULL, "FAFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF" },
    { "A.3 #10", "01000000000000000400000000000000 00000000000000000000000000000000",
      "E33594D7505E43B90000000000000000 3394D7505E4379CD0100000000000000 00000000000000000000000000000000"
      "01000000000000000000000000000000", NULL, "14000000000000005500000000000000" },
    { "A.3 #11", "01000000000000000400000000000000 00000000000000000000000000000000",
      "E33594D7505E43B90000000000000000 3394D7505E4379CD0100000000000000 00000000000000000000000000000000",
      NULL, "13000000000000000000000000000000" },
  };
  size_t i;
  group_begin();
  for (i = 0; i < sizeof V / sizeof V[0]; i++) {
    unsigned char key[32], msg[512], tag[16];
    size_t len;
    unhex(V[i].key, key, 32);
    if (V[i].msg_text) {
      const char *t = strcmp(V[i].msg_text, "IETF") == 0 ? IETF : strcmp(V[i].msg_text, "JABBER") == 0 ? JABBER
                                                                                                      : V[i].msg_text;
      len = strlen(t);
      memcpy(msg, t, len);
    } else {
      len = unhex(V[i].msg_hex, msg, sizeof msg);
    }
    xt_poly1305_mac(key, msg, len, tag);
    expect(eq_hex(tag, 16, V[i].tag), "Poly1305 RFC 8439 %s", V[i].name);
    ref_poly1305(key, msg, len, tag);
    expect(eq_hex(tag, 16, V[i].tag), "the test's reference Poly1305 on RFC 8439 %s", V[i].name);
  }
  group_end("Poly1305 (RFC 8439 2.5.2, A.3 #1-#11)");
}

/* Reference Poly1305 (RFC 8439 section 2.5.1) in plain multi-word
   arithmetic: numbers are 9 little-endian 32-bit words, products schoolbook,
   reduction mod 2^130-5 by folding the part above 2^130 back in times 5.
   Nothing is shared with the radix-2^44 code under test. */
typedef struct { uint32_t w[9]; } big;
static void big_add(big *a, const big *b) {
  uint64_t c = 0;
  int i;
  for (i = 0; i < 9; i++) { c += (uint64_t)a->w[i] + b->w[i]; a->w[i] = (uint32_t)c; c >>= 32; }
}
static void big_mulmod(big *a, const big *b) {          /* a = a*b mod 2^130-5; a, b < 2^131 */
  uint32_t t[18];
  int i, j;
  memset(t, 0, sizeof t);
  for (i = 0; i < 9; i++) {
    uint64_t c = 0;
    for (j = 0; j < 9; j++) {
      c += (uint64_t)a->w[i] * b->w[j] + t[i + j];
      t[i + j] = (uint32_t)c;
      c >>= 32;
    }
    t[i + 9] = (uint32_t)c;
  }
  for (;;) {                                             /* t = lo + 5*hi while t >= 2^130 */
    big lo, hi5;
    uint64_t c = 0;
    int nz = 0;
    memset(&lo, 0, sizeof lo);
    memset(&hi5, 0, sizeof hi5);
    for (i = 0; i < 4; i++) lo.w[i] = t[i];
    lo.w[4] = t[4] & 3;
    for (i = 0; i < 9; i++) {
      uint32_t h = (t[i + 4] >> 2) | (i + 5 < 18 ? t[i + 5] << 30 : 0);
      nz |= h != 0;
      c += (uint64_t)h * 5;
      hi5.w[i] = (uint32_t)c;
      c >>= 32;
    }
    if (!nz) break;
    big_add(&lo, &hi5);
    memset(t, 0, sizeof t);
    for (i = 0; i < 9; i++) t[i] = lo.w[i];
  }
  for (i = 0; i < 9; i++) a->w[i] = t[i];
  /* a < 2^130 now; a >= p = 2^130-5 exactly when a + 5 >= 2^130 */
  {
    big a5 = *a, five;
    memset(&five, 0, sizeof five);
    five.w[0] = 5;
    big_add(&a5, &five);
    if (a5.w[4] >> 2) { a5.w[4] &= 3; *a = a5; }
  }
}
static void ref_poly1305(const unsigned char key[32], const unsigned char *m, size_t len, unsigned char tag[16]) {
  unsigned char rb[16];
  big r, acc, sb;
  size_t i, j;
  memcpy(rb, key, 16);
  rb[3] &= 15; rb[7] &= 15; rb[11] &= 15; rb[15] &= 15; rb[4] &= 252; rb[8] &= 252; rb[12] &= 252;
  memset(&r, 0, sizeof r); memset(&acc, 0, sizeof acc); memset(&sb, 0, sizeof sb);
  for (i = 0; i < 16; i++) r.w[i / 4] |= (uint32_t)rb[i] << (8 * (i % 4));
  for (i = 0; i < 16; i++) sb.w[i / 4] |= (uint32_t)key[16 + i] << (8 * (i % 4));
  for (i = 0; i < len; i += 16) {
    big n;
    size_t k = len - i < 16 ? len - i : 16;
    memset(&n, 0, sizeof n);
    for (j = 0; j < k; j++) n.w[j / 4] |= (uint32_t)m[i + j] << (8 * (j % 4));
    n.w[k / 4] |= (uint32_t)1 << (8 * (k % 4));           /* the 0x01 byte after the block */
    big_add(&acc, &n);
    big_mulmod(&acc, &r);
  }
  big_add(&acc, &sb);
  for (i = 0; i < 16; i++) tag[i] = (unsigned char)(acc.w[i / 4] >> (8 * (i % 4)));
}

static void test_poly1305_reference(void) {
  unsigned char key[32], *m = (unsigned char *)xmalloc(2048), t1[16], t2[16];
  int t;
  group_begin();
  for (t = 0; t < 3000; t++) {
    size_t len = t < 200 ? (size_t)t : rndn(2048);
    int kind = t % 5;
    if (kind == 0) memset(key, 0xff, 32);               /* largest clamped r, largest s */
    else rndfill(key, 32);
    if (kind == 1 || kind == 0) memset(m, 0xff, len);   /* largest blocks */
    else if (kind == 2) memset(m, 0, len);
    else rndfill(m, len);
    xt_poly1305_mac(key, m, len, t1);
    ref_poly1305(key, m, len, t2);
    expect(memcmp(t1, t2, 16) == 0, "Poly1305 differs from the bignum reference: length %zu, kind %d", len, kind);
  }
  free(m);
  group_end("Poly1305 = multi-word reference (3000 messages incl. max r, all-ones data)");
}

static void test_poly_keygen(void) {
  static const char *V[][4] = {
    { "2.6.2", KEY_80_9F, "000000000001020304050607",
      "8ad5a08b905f81cc815040274ab29471a833b637e3fd0da508dbb8e2fdd1a646" },
    { "A.4 #1", "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
      "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7" },
    { "A.4 #2", "0000000000000000000000000000000000000000000000000000000000000001", "000000000000000000000002",
      "ecfa254f845f647473d3cb140da9e87606cb33066c447b87bc2666dde3fbb739" },
    { "A.4 #3", "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0", "000000000000000000000002",
      "965e3bc6f9ec7ed9560808f4d229f94b137ff275ca9b3fcbdd59deaad23310ae" },
  };
  size_t i;
  group_begin();
  for (i = 0; i < sizeof V / sizeof V[0]; i++) {
    unsigned char key[32], nonce[12], blk[64];
    uint32_t st[16];
    unhex(V[i][1], key, 32);
    unhex(V[i][2], nonce, 12);
    cc__chacha20_init(st, key, 0, nonce);
    cc__chacha20_block(st, blk);
    expect(eq_hex(blk, 32, V[i][3]), "Poly1305 key generation RFC 8439 %s", V[i][0]);
  }
  group_end("Poly1305 key generation (RFC 8439 2.6.2, A.4 #1-#3)");
}

/* ------------------------------------------- AEAD_CHACHA20_POLY1305 */
static const char *AEAD282_CT =
    "d3 1a 8d 34 64 8e 60 db 7b 86 af bc 53 ef 7e c2 a4 ad ed 51 29 6e 08 fe a9 e2 b5 a7 36 ee 62 d6"
    "3d be a4 5e 8c a9 67 12 82 fa fb 69 da 92 72 8b 1a 71 de 0a 9e 06 0b 29 05 d6 a5 b6 7e cd 3b 36"
    "92 dd bd 7f 2d 77 8b 8c 98 03 ae e3 28 09 1b 58 fa b3 24 e4 fa d6 75 94 55 85 80 8b 48 31 d7 bc"
    "3f f4 de f0 8e 4b 7a 9d e5 76 d2 65 86 ce c6 4b 61 16";
static const char *A5_CT =
    "64 a0 86 15 75 86 1a f4 60 f0 62 c7 9b e6 43 bd 5e 80 5c fd 34 5c f3 89 f1 08 67 0a c7 6c 8c b2"
    "4c 6c fc 18 75 5d 43 ee a0 9e e9 4e 38 2d 26 b0 bd b7 b7 3c 32 1b 01 00 d4 f0 3b 7f 35 58 94 cf"
    "33 2f 83 0e 71 0b 97 ce 98 c8 a8 4a bd 0b 94 81 14 ad 17 6e 00 8d 33 bd 60 f9 82 b1 ff 37 c8 55"
    "97 97 a0 6e f4 f0 ef 61 c1 86 32 4e 2b 35 06 38 36 06 90 7b 6a 7c 02 b0 f9 f6 15 7b 53 c8 67 e4"
    "b9 16 6c 76 7b 80 4d 46 a5 9b 52 16 cd e7 a4 e9 90 40 c5 a4 04 33 22 5e e2 82 a1 b0 a0 6c 52 3e"
    "af 45 34 d7 f8 3f a1 15 5b 00 47 71 8c bc 54 6a 0d 07 2b 04 b3 56 4e ea 1b 42 22 73 f5 48 27 1a"
    "0b b2 31 60 53 fa 76 99 19 55 eb d6 31 59 43 4e ce bb 4e 46 6d ae 5a 10 73 a6 72 76 27 09 7a 10"
    "49 e6 17 d9 1d 36 10 94 fa 68 f0 ff 77 98 71 30 30 5b ea ba 2e da 04 df 99 7b 71 4d 6c 6f 2c 29"
    "a6 ad 5c b4 02 2b 02 70 9b";
static const char *A5_PT =
    "49 6e 74 65 72 6e 65 74 2d 44 72 61 66 74 73 20 61 72 65 20 64 72 61 66 74 20 64 6f 63 75 6d 65"
    "6e 74 73 20 76 61 6c 69 64 20 66 6f 72 20 61 20 6d 61 78 69 6d 75 6d 20 6f 66 20 73 69 78 20 6d"
    "6f 6e 74 68 73 20 61 6e 64 20 6d 61 79 20 62 65 20 75 70 64 61 74 65 64 2c 20 72 65 70 6c 61 63"
    "65 64 2c 20 6f 72 20 6f 62 73 6f 6c 65 74 65 64 20 62 79 20 6f 74 68 65 72 20 64 6f 63 75 6d 65"
    "6e 74 73 20 61 74 20 61 6e 79 20 74 69 6d 65 2e 20 49 74 20 69 73 20 69 6e 61 70 70 72 6f 70 72"
    "69 61 74 65 20 74 6f 20 75 73 65 20 49 6e 74 65 72 6e 65 74 2d 44 72 61 66 74 73 20 61 73 20 72"
    "65 66 65 72 65 6e 63 65 20 6d 61 74 65 72 69 61 6c 20 6f 72 20 74 6f 20 63 69 74 65 20 74 68 65"
    "6d 20 6f 74 68 65 72 20 74 68 61 6e 20 61 73 20 2f e2 80 9c 77 6f 72 6b 20 69 6e 20 70 72 6f 67"
    "72 65 73 73 2e 2f e2 80 9d";

static void test_chacha_aead(void) {
  unsigned char key[32], nonce[12], aad[16], pt[512], ct[512], out[512], tag[16];
  size_t len, alen;
  cc__aead_key k;
  group_begin();
  /* 2.8.2: seal */
  unhex(KEY_80_9F, key, 32);
  unhex("07000000 4041424344454647", nonce, 12);               /* constant 07000000 || IV */
  alen = unhex("50515253c0c1c2c3c4c5c6c7", aad, sizeof aad);
  len = strlen(SUNSCREEN);
  memcpy(pt, SUNSCREEN, len);
  expect(cc__aead_setkey(&k, CC__AEAD_CHACHA20_POLY1305, key) == 0, "setkey ChaCha20-Poly1305");
  expect(xt_aead_seal(&k, nonce, aad, alen, pt, ct, len, tag) == 0, "seal 2.8.2");
  expect(eq_hex(ct, len, AEAD282_CT), "RFC 8439 2.8.2 ciphertext");
  expect(eq_hex(tag, 16, "1a:e1:0b:59:4f:09:e2:6a:7e:90:2e:cb:d0:60:06:91"), "RFC 8439 2.8.2 tag");
  expect(xt_aead_open(&k, nonce, aad, alen, ct, out, len, tag) == 0 && memcmp(out, pt, len) == 0,
         "RFC 8439 2.8.2 opens");
  /* A.5: open */
  unhex(KEY_1C92, key, 32);
  unhex("000000000102030405060708", nonce, 12);
  alen = unhex("f33388860000000000004e91", aad, sizeof aad);
  len = unhex(A5_CT, ct, sizeof ct);
  unhex("eead9d67890cbb22392336fea1851f38", tag, 16);
  cc__aead_setkey(&k, CC__AEAD_CHACHA20_POLY1305, key);
  expect(len == 265 && xt_aead_open(&k, nonce, aad, alen, ct, out, len, tag) == 0, "RFC 8439 A.5 tag verifies");
  expect(eq_hex(out, len, A5_PT), "RFC 8439 A.5 plaintext");
  {
    unsigned char t2[16];
    expect(xt_aead_seal(&k, nonce, aad, alen, out, pt, len, t2) == 0 && memcmp(pt, ct, len) == 0 &&
           memcmp(t2, tag, 16) == 0, "RFC 8439 A.5 re-sealed gives the ciphertext and tag");
  }
  group_end("AEAD_CHACHA20_POLY1305 (RFC 8439 2.8.2, A.5)");
}

/* -------------------------------------------------------------- HKDF */
static void test_hkdf(void) {
  unsigned char ikm[80], salt[80], info[80], prk[32], okm[82];
  size_t i;
  group_begin();
  /* RFC 5869 A.1 */
  memset(ikm, 0x0b, 22);
  unhex("000102030405060708090a0b0c", salt, sizeof salt);
  unhex("f0f1f2f3f4f5f6f7f8f9", info, sizeof info);
  cc__hkdf_sha256_extract(salt, 13, ikm, 22, prk);
  expect(eq_hex(prk, 32, "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"), "RFC 5869 A.1 PRK");
  expect(cc__hkdf_sha256_expand(prk, 32, info, 10, okm, 42) == 0 &&
         eq_hex(okm, 42, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
         "RFC 5869 A.1 OKM");
  /* RFC 5869 A.2 */
  for (i = 0; i < 80; i++) { ikm[i] = (unsigned char)i; salt[i] = (unsigned char)(0x60 + i); info[i] = (unsigned char)(0xb0 + i); }
  cc__hkdf_sha256_extract(salt, 80, ikm, 80, prk);
  expect(eq_hex(prk, 32, "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244"), "RFC 5869 A.2 PRK");
  expect(xt_hkdf_sha256(salt, 80, ikm, 80, info, 80, okm, 82) == 0 &&
         eq_hex(okm, 82, "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
                         "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
                         "cc30c58179ec3e87c14c01d5c1f3434f1d87"), "RFC 5869 A.2 OKM");
  /* RFC 5869 A.3: no salt, no info */
  memset(ikm, 0x0b, 22);
  cc__hkdf_sha256_extract(NULL, 0, ikm, 22, prk);
  expect(eq_hex(prk, 32, "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04"), "RFC 5869 A.3 PRK");
  expect(cc__hkdf_sha256_expand(prk, 32, NULL, 0, okm, 42) == 0 &&
         eq_hex(okm, 42, "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
         "RFC 5869 A.3 OKM");
  expect(cc__hkdf_sha256_expand(prk, 32, NULL, 0, okm, 255 * 32 + 1) == -1, "expand refuses more than 255*32 bytes");
  group_end("HKDF-SHA256 (RFC 5869 test cases 1-3)");
}

/* ------------------------------------------------------------ AES-GCM */
typedef struct { const char *name, *key, *iv, *aad, *pt, *ct, *tag; } gcm_vec;
#define GCM_K2 "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
#define GCM_P60 "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
static const gcm_vec GCMV[] = {
  { "13", "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "", "", "",
    "530f8afbc74536b9a963b4f1c4cb738b" },
  { "14", "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "",
    "00000000000000000000000000000000", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919" },
  { "15", GCM_K2, "cafebabefacedbaddecaf888", "", GCM_P60 "1aafd255",
    "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838"
    "c5f61e6393ba7a0abcc9f662898015ad", "b094dac5d93471bdec1a502270e3cc6c" },
  { "16", GCM_K2, "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2", GCM_P60,
    "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838"
    "c5f61e6393ba7a0abcc9f662", "76fc6ece0f4e1768cddf8853bb2d551b" },
  { "17", GCM_K2, "cafebabefacedbad", "feedfacedeadbeeffeedfacedeadbeefabaddad2", GCM_P60,
    "c3762df1ca787d32ae47c13bf19844cbaf1ae14d0b976afac52ff7d79bba9de0feb582d33934a4f0954cc2363bc73f78"
    "62ac430e64abe499f47c9b1f", "3a337dbf46a792c45e454913fe2ea8f2" },
  { "18", GCM_K2,
    "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b",
    "feedfacedeadbeeffeedfacedeadbeefabaddad2", GCM_P60,
    "5a8def2f0c9e53f1f75d7853659e2a20eeb2b22aafde6419a058ab4f6f746bf40fc0c3b780f244452da3ebf1c5d82cde"
    "a2418997200ef82e44ae7e3f", "a44a8266ee1c8eb0c8b5d4cf5ae9f19a" },
};

static void test_gcm_vectors(void) {
  size_t i;
  group_begin();
#if CC__CRYPTO_X86
  {
    unsigned char key[32], in[16], out[16];
    cc__aead_key k;
    unhex(KEY_00_1F, key, 32);
    unhex("00112233445566778899aabbccddeeff", in, 16);
    expect(cc__aead_setkey(&k, CC__AEAD_AES256_GCM, key) == 0, "setkey AES-256-GCM");
    xt_aes256_encrypt_block(k.rk, in, out);
    expect(eq_hex(out, 16, "8ea2b7ca516745bfeafc49904b496089"), "FIPS 197 C.3 AES-256 block");
  }
#endif
  for (i = 0; i < sizeof GCMV / sizeof GCMV[0]; i++) {
    unsigned char key[32], iv[64], aad[64], pt[64], ct[64], out[64], tag[16], wt[16];
    size_t ivlen, alen, len;
    cc__aead_key k;
    cc__aead s;
    unhex(GCMV[i].key, key, 32);
    ivlen = unhex(GCMV[i].iv, iv, sizeof iv);
    alen = unhex(GCMV[i].aad, aad, sizeof aad);
    len = unhex(GCMV[i].pt, pt, sizeof pt);
    unhex(GCMV[i].ct, ct, sizeof ct);
    unhex(GCMV[i].tag, wt, 16);
    expect(cc__aead_setkey(&k, CC__AEAD_AES256_GCM, key) == 0, "setkey, test case %s", GCMV[i].name);
    if (ivlen == 12) {
      expect(xt_aead_seal(&k, iv, aad, alen, pt, out, len, tag) == 0, "seal, test case %s", GCMV[i].name);
    } else {
      expect(xt_aead_begin_gcm_iv(&s, &k, iv, ivlen) == 0 && cc__aead_aad(&s, aad, alen) == 0 &&
             cc__aead_encrypt(&s, pt, out, len) == 0 && cc__aead_final(&s, tag) == 0,
             "seal with a %zu-byte IV, test case %s", ivlen, GCMV[i].name);
    }
    expect(memcmp(out, ct, len) == 0, "GCM test case %s ciphertext", GCMV[i].name);
    expect(memcmp(tag, wt, 16) == 0, "GCM test case %s tag", GCMV[i].name);
    if (ivlen == 12)
      expect(xt_aead_open(&k, iv, aad, alen, ct, out, len, wt) == 0 && memcmp(out, pt, len) == 0,
             "GCM test case %s opens", GCMV[i].name);
    else
      expect(xt_aead_begin_gcm_iv(&s, &k, iv, ivlen) == 0 && cc__aead_aad(&s, aad, alen) == 0 &&
             cc__aead_decrypt(&s, ct, out, len) == 0 && cc__aead_verify(&s, wt) == 0 && memcmp(out, pt, len) == 0,
             "GCM test case %s opens", GCMV[i].name);
  }
  group_end("AES-256-GCM (FIPS 197 C.3; GCM spec test cases 13-18)");
}

/* Reference GCM: the AES-NI block (checked by FIPS 197 above), CTR with
   inc32, and GHASH with SP 800-38D Algorithm 1 bit by bit, which shares
   nothing with the aggregated carry-less-multiply code. */
#if CC__CRYPTO_X86
static void ref_gf_mul(unsigned char x[16], const unsigned char y[16]) {
  unsigned char z[16], v[16];
  int i, j;
  memset(z, 0, 16);
  memcpy(v, y, 16);
  for (i = 0; i < 128; i++) {
    int lsb;
    if ((x[i / 8] >> (7 - i % 8)) & 1)
      for (j = 0; j < 16; j++) z[j] ^= v[j];
    lsb = v[15] & 1;
    for (j = 15; j > 0; j--) v[j] = (unsigned char)(v[j] >> 1 | v[j - 1] << 7);
    v[0] >>= 1;
    if (lsb) v[0] ^= 0xe1;
  }
  memcpy(x, z, 16);
}
static void ref_ghash(unsigned char x[16], const unsigned char h[16], const unsigned char *p, size_t n) {
  size_t i, j;
  for (i = 0; i < n; i += 16) {
    for (j = 0; j < 16 && i + j < n; j++) x[j] ^= p[i + j];
    ref_gf_mul(x, h);
  }
}
static void ref_gcm_seal(const unsigned char key[32], const unsigned char nonce[12], const unsigned char *aad,
                         size_t alen, const unsigned char *pt, unsigned char *ct, size_t len, unsigned char tag[16]) {
  cc__aead_key k;
  unsigned char h[16], zero[16], cb[16], ks[16], x[16], lb[16];
  uint32_t c = 2;
  size_t i, j;
  cc__aead_setkey(&k, CC__AEAD_AES256_GCM, key);
  memset(zero, 0, 16);
  xt_aes256_encrypt_block(k.rk, zero, h);
  memcpy(cb, nonce, 12);
  for (i = 0; i < len; i += 16, c++) {
    cb[12] = (unsigned char)(c >> 24); cb[13] = (unsigned char)(c >> 16); cb[14] = (unsigned char)(c >> 8); cb[15] = (unsigned char)c;
    xt_aes256_encrypt_block(k.rk, cb, ks);
    for (j = 0; j < 16 && i + j < len; j++) ct[i + j] = (unsigned char)(pt[i + j] ^ ks[j]);
  }
  memset(x, 0, 16);
  ref_ghash(x, h, aad, alen);
  ref_ghash(x, h, ct, len);
  cc__st64be(lb, (uint64_t)alen * 8);
  cc__st64be(lb + 8, (uint64_t)len * 8);
  ref_ghash(x, h, lb, 16);
  cb[12] = cb[13] = cb[14] = 0; cb[15] = 1;
  xt_aes256_encrypt_block(k.rk, cb, ks);
  for (j = 0; j < 16; j++) tag[j] = (unsigned char)(x[j] ^ ks[j]);
}
#endif

/* Reference ChaCha20-Poly1305: RFC 8439 section 2.8.1 literally: the
   portable block function (checked by the RFC vectors) for keystream and
   one-time key, and the multi-word reference Poly1305 over the constructed
   buffer. */
static void ref_chacha_seal(const unsigned char key[32], const unsigned char nonce[12], const unsigned char *aad,
                            size_t alen, const unsigned char *pt, unsigned char *ct, size_t len, unsigned char tag[16]) {
  uint32_t st[16];
  unsigned char otk[64], ks[64], *buf;
  size_t i, j, n = 0, pa = (alen + 15) & ~(size_t)15, pc = (len + 15) & ~(size_t)15;
  cc__chacha20_init(st, key, 0, nonce);
  cc__chacha20_block(st, otk);
  for (i = 0; i < len; i += 64) {
    st[12] = (uint32_t)(1 + i / 64);
    cc__chacha20_block(st, ks);
    for (j = 0; j < 64 && i + j < len; j++) ct[i + j] = (unsigned char)(pt[i + j] ^ ks[j]);
  }
  buf = (unsigned char *)xmalloc(pa + pc + 16);
  memset(buf, 0, pa + pc + 16);
  if (alen) memcpy(buf, aad, alen);
  n = pa;
  if (len) memcpy(buf + n, ct, len);
  n += pc;
  cc__put64(buf + n, alen);
  cc__put64(buf + n + 8, len);
  ref_poly1305(otk, buf, n + 16, tag);
  free(buf);
}

static void ref_seal(int suite, const unsigned char key[32], const unsigned char nonce[12], const unsigned char *aad,
                     size_t alen, const unsigned char *pt, unsigned char *ct, size_t len, unsigned char tag[16]) {
#if CC__CRYPTO_X86
  if (suite == CC__AEAD_AES256_GCM) { ref_gcm_seal(key, nonce, aad, alen, pt, ct, len, tag); return; }
#else
  (void)suite;
#endif
  ref_chacha_seal(key, nonce, aad, alen, pt, ct, len, tag);
}

static const char *suite_name(int suite) { return suite == CC__AEAD_AES256_GCM ? "AES-256-GCM" : "ChaCha20-Poly1305"; }

/* Random lengths (around the block sizes and up to a few KiB) against the reference. */
static void test_against_reference(int suite) {
  unsigned char key[32], nonce[12], *aad = (unsigned char *)xmalloc(600), *pt = (unsigned char *)xmalloc(5000);
  unsigned char *ct = (unsigned char *)xmalloc(5000), *rct = (unsigned char *)xmalloc(5000), tag[16], rtag[16];
  cc__aead_key k;
  int t;
  char name[96];
  group_begin();
  for (t = 0; t < 300; t++) {
    size_t alen = t < 40 ? (size_t)t : rndn(600), len = t < 40 ? (size_t)(t * 13) : rndn(5000);
    rndfill(key, 32); rndfill(nonce, 12); rndfill(aad, alen); rndfill(pt, len);
    cc__aead_setkey(&k, suite, key);
    ref_seal(suite, key, nonce, aad, alen, pt, rct, len, rtag);
    expect(xt_aead_seal(&k, nonce, aad, alen, pt, ct, len, tag) == 0 && memcmp(ct, rct, len) == 0 &&
           memcmp(tag, rtag, 16) == 0, "%s: aad %zu, payload %zu differs from the reference", suite_name(suite), alen, len);
  }
  free(aad); free(pt); free(ct); free(rct);
  snprintf(name, sizeof name, "%s = independent reference, 300 random messages", suite_name(suite));
  group_end(name);
}

/* Long messages against Python cryptography (OpenSSL). */
typedef struct { int suite; size_t alen, plen; const char *ct_sha256, *tag; } long_vec;
#define CHACHA CC__AEAD_CHACHA20_POLY1305
#define GCM CC__AEAD_AES256_GCM
static const long_vec LONGV[] = {
  {CHACHA, 37, 255, "a5324aa8bc6510fdf292f5163eccff06df7e43457bf20ed5142d5c21b574ec63", "938c5396a614f30972910664784303f9"},
  {CHACHA, 37, 1000, "77075bf93aad49ca0da527935a25921fd581e282c402eb4bffd3d3c877dae1c7", "6e22a718e4db812f5e0165b79ac17e62"},
  {CHACHA, 13, 4133, "840715951cd201e4d648dc559108e2641bf3b4c1bd161bb417868755677cd585", "5d848c96fb88ac9b24a1bc18102d2ab5"},
  {CHACHA, 5000, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "b3aa2072a04540a1cdcce91e3fd57fb5"},
  {CHACHA, 0, 70000, "a87d7a815b48b89bb2258640ce6c7e919cb0d9351b39f9c4a92204a731cf916d", "b82d4edd99acab3eccc935824560bb8a"},
  {GCM, 37, 255, "f677df2c804a6013bc4d4744dc0b35cdc8b05fd6662ea7eb64fb272eadcd862a", "0d723ea4e816d0dcbb3f9c4ef400e4e5"},
  {GCM, 37, 1000, "2c60adf806a5910f04bde424652a92a0c8769d6d2b94f5c6c5896b0e1f46ef83", "b689c9ce2dd96a0d2909be1ff42f98a8"},
  {GCM, 13, 4133, "b477afdd87b2e86a181510547b04639e2b2f803daf398603b4c294b9de8ad627", "13e13a32e0b22775928d23172b8a5172"},
  {GCM, 5000, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "3cc36dfb45bcf3f1a549c431a0b41a2a"},
  {GCM, 0, 70000, "cd9b1d754a2aa918dd757b4a9ee3beacdac914b7a29aca5c209c5404ebebb03a", "b38e55453221d75d6e3029584658bb0e"},
};
static void long_msg(unsigned char *p, size_t n, unsigned seed) {
  size_t i;
  for (i = 0; i < n; i++) p[i] = (unsigned char)((i * 31 + seed + (i >> 8)) & 255);
}
static void test_long_vectors(int suite) {
  unsigned char key[32], nonce[12], tag[16], h[32];
  size_t i;
  int j;
  char name[96];
  group_begin();
  for (j = 0; j < 32; j++) key[j] = (unsigned char)((7 * j + 1) & 255);
  for (j = 0; j < 12; j++) nonce[j] = (unsigned char)((5 * j + 3) & 255);
  for (i = 0; i < sizeof LONGV / sizeof LONGV[0]; i++) {
    const long_vec *v = &LONGV[i];
    unsigned char *aad, *pt, *ct;
    cc__aead_key k;
    cc__sha256 sh;
    if (v->suite != suite) continue;
    aad = (unsigned char *)xmalloc(v->alen); pt = (unsigned char *)xmalloc(v->plen); ct = (unsigned char *)xmalloc(v->plen);
    long_msg(aad, v->alen, 2);
    long_msg(pt, v->plen, 1);
    cc__aead_setkey(&k, suite, key);
    expect(xt_aead_seal(&k, nonce, aad, v->alen, pt, ct, v->plen, tag) == 0, "seal");
    cc__sha256_init(&sh);
    cc__sha256_update(&sh, ct, v->plen);
    cc__sha256_final(&sh, h);
    expect(eq_hex(h, 32, v->ct_sha256), "%s aad %zu payload %zu: ciphertext", suite_name(suite), v->alen, v->plen);
    expect(eq_hex(tag, 16, v->tag), "%s aad %zu payload %zu: tag", suite_name(suite), v->alen, v->plen);
    free(aad); free(pt); free(ct);
  }
  snprintf(name, sizeof name, "%s long messages = Python cryptography (OpenSSL)", suite_name(suite));
  group_end(name);
}

/* ----------------------------------------------------------- streaming */
/* Feeds [p, p+n) to f in random pieces (zero-length ones included). */
typedef int (*feed_fn)(cc__aead *s, const unsigned char *in, unsigned char *out, size_t n);
static int feed_aad(cc__aead *s, const unsigned char *in, unsigned char *out, size_t n) { (void)out; return cc__aead_aad(s, in, n); }
static int feed_enc(cc__aead *s, const unsigned char *in, unsigned char *out, size_t n) { return cc__aead_encrypt(s, in, out, n); }
static int feed_dec(cc__aead *s, const unsigned char *in, unsigned char *out, size_t n) { return cc__aead_decrypt(s, in, out, n); }
static int feed_split(cc__aead *s, feed_fn f, const unsigned char *in, unsigned char *out, size_t n) {
  size_t off = 0;
  while (off < n) {
    size_t r = rnd() % 8, piece;
    if (r == 0) piece = 0;
    else if (r < 4) piece = 1 + rndn(20);
    else if (r < 7) piece = 1 + rndn(300);
    else piece = 1 + rndn(3000);
    piece = CC__MIN(piece, n - off);
    if (f(s, in + off, out ? out + off : NULL, piece) != 0) return -1;
    off += piece;
  }
  return f(s, in + n, out ? out + n : NULL, 0);             /* an empty call at the end too */
}

static void test_streaming(int suite) {
  unsigned char key[32], nonce[12], tag1[16], tag2[16];
  unsigned char *hdr = (unsigned char *)xmalloc(64), *pl = (unsigned char *)xmalloc(9000);
  unsigned char *ct1 = (unsigned char *)xmalloc(9000), *ct2 = (unsigned char *)xmalloc(9000), *all = (unsigned char *)xmalloc(9100);
  cc__aead_key k;
  int t;
  char name[96];
  group_begin();
  for (t = 0; t < 400; t++) {
    size_t hl = 1 + rndn(40), n = t < 50 ? (size_t)t * 3 : rndn(9000);
    cc__aead s;
    int ok;
    rndfill(key, 32); rndfill(nonce, 12); rndfill(hdr, hl); rndfill(pl, n);
    cc__aead_setkey(&k, suite, key);
    /* integrity only: header + payload as AAD, streamed vs one call */
    memcpy(all, hdr, hl);
    memcpy(all + hl, pl, n);
    ok = xt_aead_seal(&k, nonce, all, hl + n, NULL, NULL, 0, tag1) == 0;
    ok = ok && cc__aead_begin(&s, &k, nonce) == 0 && feed_split(&s, feed_aad, hdr, NULL, hl) == 0 &&
         feed_split(&s, feed_aad, pl, NULL, n) == 0 && cc__aead_final(&s, tag2) == 0;
    expect(ok && memcmp(tag1, tag2, 16) == 0, "%s integrity: streamed tag differs (hdr %zu, payload %zu)",
           suite_name(suite), hl, n);
    ok = cc__aead_begin(&s, &k, nonce) == 0 && feed_split(&s, feed_aad, all, NULL, hl + n) == 0 &&
         cc__aead_verify(&s, tag1) == 0;
    expect(ok, "%s integrity: streamed verify", suite_name(suite));
    /* encryption: header as AAD, payload encrypted, streamed vs one call */
    ok = xt_aead_seal(&k, nonce, hdr, hl, pl, ct1, n, tag1) == 0;
    ok = ok && cc__aead_begin(&s, &k, nonce) == 0 && feed_split(&s, feed_aad, hdr, NULL, hl) == 0 &&
         feed_split(&s, feed_enc, pl, ct2, n) == 0 && cc__aead_final(&s, tag2) == 0;
    expect(ok && memcmp(ct1, ct2, n) == 0 && memcmp(tag1, tag2, 16) == 0,
           "%s encryption: streamed output differs (hdr %zu, payload %zu)", suite_name(suite), hl, n);
    /* streamed decryption in place, other splits */
    memcpy(ct2, ct1, n);
    ok = cc__aead_begin(&s, &k, nonce) == 0 && feed_split(&s, feed_aad, hdr, NULL, hl) == 0 &&
         feed_split(&s, feed_dec, ct2, ct2, n) == 0 && cc__aead_verify(&s, tag1) == 0;
    expect(ok && memcmp(ct2, pl, n) == 0, "%s encryption: streamed in-place decryption (payload %zu)",
           suite_name(suite), n);
    /* streamed encryption in place */
    memcpy(ct2, pl, n);
    ok = cc__aead_begin(&s, &k, nonce) == 0 && cc__aead_aad(&s, hdr, hl) == 0 &&
         feed_split(&s, feed_enc, ct2, ct2, n) == 0 && cc__aead_final(&s, tag2) == 0;
    expect(ok && memcmp(ct1, ct2, n) == 0 && memcmp(tag1, tag2, 16) == 0, "%s: streamed in-place encryption",
           suite_name(suite));
  }
  free(hdr); free(pl); free(ct1); free(ct2); free(all);
  snprintf(name, sizeof name, "%s streaming = one-shot under random splits (both modes, in place)", suite_name(suite));
  group_end(name);
}

/* --------------------------------------------------- tampering, misuse */
static void test_tamper(int suite) {
  unsigned char key[32], nonce[12], aad[40], pt[700], ct[700], out[700], tag[16], bad[16];
  cc__aead_key k;
  int t;
  char name[96];
  group_begin();
  for (t = 0; t < 60; t++) {
    size_t alen = 1 + rndn(40), len = 1 + rndn(700), pos;
    cc__aead s;
    rndfill(key, 32); rndfill(nonce, 12); rndfill(aad, alen); rndfill(pt, len);
    cc__aead_setkey(&k, suite, key);
    xt_aead_seal(&k, nonce, aad, alen, pt, ct, len, tag);
    expect(xt_aead_open(&k, nonce, aad, alen, ct, out, len, tag) == 0 && memcmp(out, pt, len) == 0, "untouched opens");
    pos = rndn(alen * 8);
    aad[pos / 8] ^= (unsigned char)(1u << (pos % 8));
    memset(out, 0x55, len);
    expect(xt_aead_open(&k, nonce, aad, alen, ct, out, len, tag) == -1, "%s: flipped AAD bit %zu accepted", suite_name(suite), pos);
    expect(out[0] == 0 && out[len - 1] == 0, "a refused open zeroes its output");
    aad[pos / 8] ^= (unsigned char)(1u << (pos % 8));
    pos = rndn(len * 8);
    ct[pos / 8] ^= (unsigned char)(1u << (pos % 8));
    expect(xt_aead_open(&k, nonce, aad, alen, ct, out, len, tag) == -1, "%s: flipped ciphertext bit %zu accepted", suite_name(suite), pos);
    ct[pos / 8] ^= (unsigned char)(1u << (pos % 8));
    pos = rndn(128);
    memcpy(bad, tag, 16);
    bad[pos / 8] ^= (unsigned char)(1u << (pos % 8));
    expect(xt_aead_open(&k, nonce, aad, alen, ct, out, len, bad) == -1, "%s: flipped tag bit %zu accepted", suite_name(suite), pos);
    nonce[rndn(12)] ^= 1;
    expect(xt_aead_open(&k, nonce, aad, alen, ct, out, len, tag) == -1, "%s: another nonce accepted", suite_name(suite));
    expect(xt_aead_open(&k, nonce, aad, alen, ct, out, len - 1, tag) == -1, "%s: a shorter message accepted", suite_name(suite));
    /* integrity mode: a flipped payload bit in the AAD-only form */
    xt_aead_seal(&k, nonce, pt, len, NULL, NULL, 0, tag);
    pos = rndn(len * 8);
    pt[pos / 8] ^= (unsigned char)(1u << (pos % 8));
    expect(cc__aead_begin(&s, &k, nonce) == 0 && cc__aead_aad(&s, pt, len) == 0 && cc__aead_verify(&s, tag) == -1,
           "%s integrity: flipped bit %zu accepted", suite_name(suite), pos);
    /* moving bytes between AAD and payload changes the tag */
    xt_aead_seal(&k, nonce, aad, alen, pt, ct, len, tag);
    expect(cc__aead_begin(&s, &k, nonce) == 0 && cc__aead_aad(&s, aad, alen - 1) == 0 &&
           cc__aead_decrypt(&s, aad + alen - 1, out, 1) == 0 && cc__aead_decrypt(&s, ct, out, len) == 0 &&
           cc__aead_verify(&s, tag) == -1, "%s: AAD/payload boundary moved, accepted", suite_name(suite));
  }
  snprintf(name, sizeof name, "%s refuses flipped AAD, ciphertext and tag bits, other nonces and lengths", suite_name(suite));
  group_end(name);
}

static void test_misuse(int suite) {
  unsigned char key[32], nonce[12], buf[64], tag[16];
  cc__aead_key k, unset;
  cc__aead s;
  char name[96];
  group_begin();
  rndfill(key, 32); rndfill(nonce, 12); rndfill(buf, 64);
  cc__aead_setkey(&k, suite, key);
  expect(cc__aead_begin(&s, &k, nonce) == 0 && cc__aead_encrypt(&s, buf, buf, 10) == 0 && cc__aead_aad(&s, buf, 1) == -1,
         "AAD after payload refused");
  expect(cc__aead_final(&s, tag) == -1 && cc__aead_encrypt(&s, buf, buf, 1) == -1, "a failed state stays failed");
  expect(cc__aead_begin(&s, &k, nonce) == 0 && cc__aead_final(&s, tag) == 0 && cc__aead_final(&s, tag) == -1 &&
         cc__aead_verify(&s, tag) == -1, "final twice refused");
  expect(cc__aead_begin(&s, &k, nonce) == 0 && cc__aead_encrypt(&s, buf, buf, 5) == 0 &&
         cc__aead_decrypt(&s, buf, buf, 5) == 0, "encrypt and decrypt may share a state (both MAC the ciphertext)");
  /* the length limits, by placing the state near them */
  cc__aead_begin(&s, &k, nonce);
  s.phase = 1;
  s.msglen = (suite == CC__AEAD_AES256_GCM ? CC__GCM_PMAX : CC__CHACHA_PMAX) - 10;
  expect(cc__aead_encrypt(&s, buf, buf, 11) == -1, "payload over P_MAX refused");
  cc__aead_begin(&s, &k, nonce);
  s.msglen = (suite == CC__AEAD_AES256_GCM ? CC__GCM_PMAX : CC__CHACHA_PMAX) - 10;
  s.phase = 1;
  expect(cc__aead_encrypt(&s, buf, buf, 10) == 0, "payload up to P_MAX accepted");
  cc__aead_begin(&s, &k, nonce);
  s.aadlen = CC__AEAD_AMAX - 3;
  expect(cc__aead_aad(&s, buf, 4) == -1, "AAD over A_MAX refused");
  memset(&unset, 0, sizeof unset);
  expect(cc__aead_begin(&s, &unset, nonce) == -1 && cc__aead_aad(&s, buf, 1) == -1 && cc__aead_final(&s, tag) == -1,
         "a key without setkey refused");
  expect(cc__aead_setkey(&unset, 99, key) == -1 && unset.suite == 0, "an unknown suite refused");
  snprintf(name, sizeof name, "%s misuse refused", suite_name(suite));
  group_end(name);
}

/* ---------------------------------------------------------------- main */
static void run_chacha_suite(void) {
  test_chacha_block();
  test_chacha_encrypt();
  test_chacha_simd_vs_portable();
  test_chacha_aead();
  test_against_reference(CC__AEAD_CHACHA20_POLY1305);
  test_long_vectors(CC__AEAD_CHACHA20_POLY1305);
  test_streaming(CC__AEAD_CHACHA20_POLY1305);
  test_tamper(CC__AEAD_CHACHA20_POLY1305);
  test_misuse(CC__AEAD_CHACHA20_POLY1305);
}

int main(void) {
  int detected = cc__crypto_cpu(), modes[3], nmodes = 0, i;
  printf("cpu: %s%s%s%s; 128-bit multiply: %s; best suite: %s\n", detected & CC__CPU_SSE2 ? "sse2 " : "",
         detected & CC__CPU_AVX2 ? "avx2 " : "", detected & CC__CPU_GCM ? "aes-ni+pclmul" : "no aes-ni",
         (detected & CC__CPU_VAES) ? " vaes vpclmulqdq" : (detected & CC__CPU_VCLMUL) ? " vpclmulqdq" : "",
#if defined(__SIZEOF_INT128__) && !defined(CC_CRYPTO_NO_INT128)
         "__int128",
#else
         "portable",
#endif
         suite_name(xt_aead_best_suite()));
  test_quarter_round();
  test_poly1305();
  test_poly1305_reference();
  test_poly_keygen();
  test_hkdf();

  /* ChaCha20-Poly1305 with every code path this CPU has: AVX2, SSE2 only,
     portable C. */
  modes[nmodes++] = detected;
  if (detected & CC__CPU_AVX2) modes[nmodes++] = detected & ~CC__CPU_AVX2;
  if (detected & CC__CPU_SSE2) modes[nmodes++] = detected & ~(CC__CPU_AVX2 | CC__CPU_SSE2);
  for (i = 0; i < nmodes; i++) {
    __atomic_store_n(&cc__crypto_cpu_flags, modes[i], __ATOMIC_RELAXED);
    snprintf(g_mode, sizeof g_mode, "chacha20 %s", modes[i] & CC__CPU_AVX2 ? "avx2" : modes[i] & CC__CPU_SSE2 ? "sse2" : "portable");
    run_chacha_suite();
  }
  g_mode[0] = 0;
  __atomic_store_n(&cc__crypto_cpu_flags, detected, __ATOMIC_RELAXED);

  /* AES-256-GCM with every path this CPU has: 256-bit VAES + VPCLMULQDQ,
     AES-NI with 256-bit VPCLMULQDQ GHASH, and 128-bit AES-NI + PCLMULQDQ. */
  if (detected & CC__CPU_GCM) {
    int gmodes[3], ng = 0;
    gmodes[ng++] = detected;
    if (detected & CC__CPU_VAES) gmodes[ng++] = detected & ~CC__CPU_VAES;
    if (detected & CC__CPU_VCLMUL) gmodes[ng++] = detected & ~(CC__CPU_VAES | CC__CPU_VCLMUL);
    for (i = 0; i < ng; i++) {
      __atomic_store_n(&cc__crypto_cpu_flags, gmodes[i], __ATOMIC_RELAXED);
      snprintf(g_mode, sizeof g_mode, "gcm %s", (gmodes[i] & CC__CPU_VAES) ? "vaes+vpclmulqdq" :
               (gmodes[i] & CC__CPU_VCLMUL) ? "aes-ni+vpclmulqdq" : "aes-ni+pclmulqdq");
      test_gcm_vectors();
      test_against_reference(CC__AEAD_AES256_GCM);
      test_long_vectors(CC__AEAD_AES256_GCM);
      test_streaming(CC__AEAD_AES256_GCM);
      test_tamper(CC__AEAD_AES256_GCM);
      test_misuse(CC__AEAD_AES256_GCM);
    }
    g_mode[0] = 0;
    __atomic_store_n(&cc__crypto_cpu_flags, detected, __ATOMIC_RELAXED);
  } else {
    printf("SKIP: crypto: AES-256-GCM (no AES-NI/PCLMULQDQ on this CPU or build)\n");
  }

  /* The fallback: a CPU without AES-NI (simulated by clearing the flag). */
  {
    cc__aead_key k;
    unsigned char key[32];
    memset(key, 7, sizeof key);
    group_begin();
    __atomic_store_n(&cc__crypto_cpu_flags, detected & ~CC__CPU_GCM, __ATOMIC_RELAXED);
    expect(xt_aead_best_suite() == CC__AEAD_CHACHA20_POLY1305, "best suite without AES-NI is ChaCha20-Poly1305");
    expect(cc__aead_setkey(&k, CC__AEAD_AES256_GCM, key) == -1 && k.suite == 0, "AES-256-GCM reported unavailable");
    expect(cc__aead_setkey(&k, CC__AEAD_CHACHA20_POLY1305, key) == 0, "ChaCha20-Poly1305 still available");
    __atomic_store_n(&cc__crypto_cpu_flags, detected, __ATOMIC_RELAXED);
    expect(xt_aead_best_suite() == ((detected & CC__CPU_GCM) ? CC__AEAD_AES256_GCM : CC__AEAD_CHACHA20_POLY1305),
           "best suite with the detected features");
    group_end("fallback: without AES-NI, GCM is unavailable and ChaCha20-Poly1305 is chosen");
  }
  printf("done: %d failure(s)\n", g_fails);
  return g_fails ? 1 : 0;
}
