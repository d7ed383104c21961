/* tests/unit/crypto_extra.h - what the tests and benches of @crypto call beside
   the transport's interface: one-shot forms and the pieces the published
   test vectors are written against (HKDF in one call, ChaCha20 and Poly1305
   on their own, AES-256 on one block, GCM with an IV of any length, one-shot
   seal and open). Include it after cc.h's implementation (the same file
   defines CC_IMPLEMENTATION): it uses @crypto's internals. */
#ifndef CC_TESTS_CRYPTO_EXTRA_H
#define CC_TESTS_CRYPTO_EXTRA_H

/* RFC 5869: extract then expand. */
static __attribute__((unused)) int xt_hkdf_sha256(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                                                  const void *info, size_t infolen, unsigned char *out, size_t outlen) {
  unsigned char prk[32];
  int rc;
  cc__hkdf_sha256_extract(salt, saltlen, ikm, ikmlen, prk);
  rc = cc__hkdf_sha256_expand(prk, 32, info, infolen, out, outlen);
  cc__crypto_wipe(prk, sizeof prk);
  return rc;
}

/* RFC 8439 section 2.4: ChaCha20 encryption (= decryption) of len bytes. */
static __attribute__((unused)) void xt_chacha20_xor(const unsigned char key[32], uint32_t counter,
                                                    const unsigned char nonce[12], const void *inv, void *outv,
                                                    size_t len) {
  const unsigned char *in = (const unsigned char *)inv;
  unsigned char *out = (unsigned char *)outv, ks[64];
  uint32_t st[16];
  cc__chacha20_init(st, key, counter, nonce);
  cc__chacha20_xor_blocks(st, in, out, len / 64);
  if (len % 64) {
    cc__chacha20_block(st, ks);
    cc__xor_bytes(out + (len & ~(size_t)63), in + (len & ~(size_t)63), ks, len % 64);
  }
  cc__crypto_wipe(ks, sizeof ks);
  cc__crypto_wipe(st, sizeof st);
}

/* RFC 8439 section 2.5.1: the one-shot MAC of any message (a short last
   block gets a 0x01 byte after it). */
static __attribute__((unused)) void xt_poly1305_mac(const unsigned char key[32], const void *msg, size_t len,
                                                    unsigned char tag[16]) {
  const unsigned char *m = (const unsigned char *)msg;
  cc__poly1305 p;
  cc__poly1305_init(&p, key);
  cc__poly1305_blocks(&p, m, len / 16, (uint64_t)1 << 40);
  if (len % 16) {
    unsigned char b[16];
    memset(b, 0, sizeof b);
    memcpy(b, m + (len & ~(size_t)15), len % 16);
    b[len % 16] = 1;
    cc__poly1305_blocks(&p, b, 1, 0);
  }
  cc__poly1305_finish(&p, tag);
  cc__crypto_wipe(&p, sizeof p);
}

/* The suite the transport picks on this CPU: AES-256-GCM where it runs,
   else ChaCha20-Poly1305. */
static __attribute__((unused)) int xt_aead_best_suite(void) {
  return cc__aead_have_gcm() ? CC__AEAD_AES256_GCM : CC__AEAD_CHACHA20_POLY1305;
}

#if CC__CRYPTO_X86
/* FIPS 197 single-block encryption. */
static __attribute__((unused)) CC__TARGET_GCM void xt_aes256_encrypt_block(const unsigned char rk[240],
                                                                           const unsigned char in[16],
                                                                           unsigned char out[16]) {
  CC__CRY_ST(out, cc__aes256_block(rk, CC__CRY_LD(in)));
}

/* SP 800-38D section 7.1 step 2: J0 for an IV of any length. For a 12-byte
   IV it is IV || 0^31 || 1; otherwise GHASH(IV || 0-pad || 0^64 || [len(IV) in bits]64). */
static CC__TARGET_GCM void xt_gcm_j0(const unsigned char *hp, const unsigned char *hk, const unsigned char *iv,
                                     size_t ivlen, unsigned char j0[16]) {
  if (ivlen == 12) {
    memcpy(j0, iv, 12);
    j0[12] = j0[13] = j0[14] = 0;
    j0[15] = 1;
  } else {
    unsigned char b[16];
    __m128i x = _mm_setzero_si128();
    x = cc__ghash_blocks(hp, hk, x, iv, ivlen / 16);
    if (ivlen % 16) {
      memset(b, 0, sizeof b);
      memcpy(b, iv + (ivlen & ~(size_t)15), ivlen % 16);
      x = cc__ghash_blocks(hp, hk, x, b, 1);
    }
    memset(b, 0, 8);
    cc__st64be(b + 8, (uint64_t)ivlen * 8);
    x = cc__ghash_blocks(hp, hk, x, b, 1);
    CC__CRY_ST(j0, cc__bswap128(x));
  }
}
#endif

/* AES-256-GCM with an IV of any length (SP 800-38D section 7.1), for the
   specification's test vectors (the transport uses 12-byte nonces only): a
   message begun so continues through cc__aead_aad ... cc__aead_verify. */
static __attribute__((unused)) int xt_aead_begin_gcm_iv(cc__aead *s, const cc__aead_key *k, const unsigned char *iv,
                                                        size_t ivlen) {
#if CC__CRYPTO_X86
  unsigned char j0[16];
  if (k->suite == CC__AEAD_AES256_GCM && ivlen > 0) {
    memset(s, 0, sizeof *s);
    s->key = k;
    xt_gcm_j0(k->hp, k->hk, iv, ivlen, j0);
    memcpy(s->nonce, j0, 12);
    s->ctr = (uint32_t)j0[12] << 24 | (uint32_t)j0[13] << 16 | (uint32_t)j0[14] << 8 | (uint32_t)j0[15];
    cc__gcm_keystream(k->rk, s->nonce, s->ctr, s->ekj0);
    s->ctr++;
    return 0;
  }
#else
  (void)iv; (void)ivlen;
#endif
  memset(s, 0, sizeof *s);
  s->key = k;
  s->phase = 3;
  return -1;
}

/* One-shot seal: ciphertext into out (in == out allowed), tag into tag. */
static __attribute__((unused)) int xt_aead_seal(const cc__aead_key *k, const unsigned char nonce[12], const void *aad,
                                                size_t aadlen, const void *in, void *out, size_t len,
                                                unsigned char tag[16]) {
  cc__aead s;
  if (cc__aead_begin(&s, k, nonce) != 0 || cc__aead_aad(&s, aad, aadlen) != 0 ||
      cc__aead_encrypt(&s, in, out, len) != 0 || cc__aead_final(&s, tag) != 0)
    return -1;
  return 0;
}

/* One-shot open: plaintext into out, 0; or -1 with out zeroed when the tag
   (or anything else) is wrong. */
static __attribute__((unused)) int xt_aead_open(const cc__aead_key *k, const unsigned char nonce[12], const void *aad,
                                                size_t aadlen, const void *in, void *out, size_t len,
                                                const unsigned char tag[16]) {
  cc__aead s;
  if (cc__aead_begin(&s, k, nonce) != 0 || cc__aead_aad(&s, aad, aadlen) != 0 ||
      cc__aead_decrypt(&s, in, out, len) != 0 || cc__aead_verify(&s, tag) != 0) {
    if (len) cc__crypto_wipe(out, len);
    return -1;
  }
  return 0;
}

#endif
