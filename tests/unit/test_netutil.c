/* test_netutil - SHA-256 (FIPS 180-2 examples), HMAC-SHA256 (RFC 4231 cases
   1-4, 6, 7), cc__ct_equal, and cc__hostlist_first on good, malformed and
   random input (canary after outlen, exactly sized strings for ASan).
   Prints "PASS: netutil <what>" / "FAIL: netutil <what>: <why>" per check. */
#define CC_IMPLEMENTATION
#include "cc.h"
#include "test_util.h"

static void to_hex(const unsigned char *d, size_t n, char *hex) {
  static const char digits[] = "0123456789abcdef";
  size_t i;
  for (i = 0; i < n; i++) {
    hex[2 * i] = digits[d[i] >> 4];
    hex[2 * i + 1] = digits[d[i] & 15];
  }
  hex[2 * n] = 0;
}

static void check_digest(const char *name, const unsigned char d[32], const char *want) {
  char hex[65];
  to_hex(d, 32, hex);
  TU_REPORT(strcmp(hex, want) == 0, name, "got %s want %s", hex, want);
}

static void check_sha(const char *name, const char *msg, const char *want) {
  cc__sha256 s;
  unsigned char d[32];
  cc__sha256_init(&s);
  cc__sha256_update(&s, msg, strlen(msg));
  cc__sha256_final(&s, d);
  check_digest(name, d, want);
}

static void test_sha256(void) {
  static const char *piece = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  static const size_t steps[] = { 1, 3, 63, 64, 65, 7, 128, 129, 0, 55, 56, 57 };
  cc__sha256 s;
  unsigned char d[32];
  size_t done = 0, i = 0, plen = strlen(piece);
  check_sha("netutil sha256 empty", "",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  check_sha("netutil sha256 abc", "abc",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  check_sha("netutil sha256 448-bit", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  /* one million 'a', fed in odd-sized pieces */
  cc__sha256_init(&s);
  while (done < 1000000) {
    size_t k = steps[i++ % (sizeof steps / sizeof steps[0])];
    if (k > plen) k = plen;
    if (k > 1000000 - done) k = 1000000 - done;
    cc__sha256_update(&s, piece, k);
    done += k;
  }
  cc__sha256_final(&s, d);
  check_digest("netutil sha256 million-a", d,
               "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void check_hmac(const char *name, const unsigned char *key, size_t keylen,
                       const void *msg, size_t msglen, const char *want) {
  const void *parts[1];
  size_t lens[1];
  unsigned char d[32];
  parts[0] = msg; lens[0] = msglen;
  cc__hmac_sha256(key, keylen, parts, lens, 1, d);
  check_digest(name, d, want);
}

static void test_hmac(void) {
  unsigned char key[131], data[50], one[32], multi[32];
  const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
  const char *t7 = "This is a test using a larger than block-size key and a larger than "
                   "block-size data. The key needs to be hashed before being used by the "
                   "HMAC algorithm.";
  const void *parts[4];
  size_t lens[4], n7 = strlen(t7);
  int i;

  memset(key, 0x0b, 20);
  check_hmac("netutil hmac rfc4231-1", key, 20, "Hi There", 8,
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  check_hmac("netutil hmac rfc4231-2", (const unsigned char *)"Jefe", 4,
             "what do ya want for nothing?", 28,
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  memset(key, 0xaa, 20);
  memset(data, 0xdd, 50);
  check_hmac("netutil hmac rfc4231-3", key, 20, data, 50,
             "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  for (i = 0; i < 25; i++) key[i] = (unsigned char)(i + 1);
  memset(data, 0xcd, 50);
  check_hmac("netutil hmac rfc4231-4", key, 25, data, 50,
             "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  memset(key, 0xaa, 131);
  check_hmac("netutil hmac rfc4231-6", key, 131, t6, strlen(t6),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  check_hmac("netutil hmac rfc4231-7", key, 131, t7, n7,
             "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");

  /* the same message split in parts, one of them empty */
  parts[0] = t7; lens[0] = 10;
  parts[1] = t7 + 10; lens[1] = 0;
  parts[2] = t7 + 10; lens[2] = 70;
  parts[3] = t7 + 80; lens[3] = n7 - 80;
  cc__hmac_sha256(key, 131, parts, lens, 4, multi);
  parts[0] = t7; lens[0] = n7;
  cc__hmac_sha256(key, 131, parts, lens, 1, one);
  TU_REPORT(memcmp(one, multi, 32) == 0, "netutil hmac multi-part", "differs from one part");
  check_digest("netutil hmac multi-part vector", multi,
               "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  cc__hmac_sha256(key, 131, parts, lens, 0, multi);
  check_digest("netutil hmac zero parts", multi,
               "44b545def5b97eb719d856a15e327833e520e4770619c0e3eefbde24b71285a7");
  check_hmac("netutil hmac empty part", key, 131, "", 0,
             "44b545def5b97eb719d856a15e327833e520e4770619c0e3eefbde24b71285a7");
}

static void test_ct_equal(void) {
  unsigned char a[32], b[32];
  int ok;
  memset(a, 7, sizeof a);
  memcpy(b, a, sizeof a);
  ok = cc__ct_equal(a, b, 32) == 1 && cc__ct_equal(a, b, 0) == 1;
  b[31] ^= 1;
  ok = ok && cc__ct_equal(a, b, 32) == 0 && cc__ct_equal(a, b, 31) == 1;
  b[31] ^= 1; b[0] ^= 0x80;
  ok = ok && cc__ct_equal(a, b, 32) == 0;
  TU_REPORT(ok, "netutil ct_equal", "wrong result");
}

/* ------------------------------------------------------------ hostlist */

static void check_host(const char *list, size_t outlen, int want_rc, const char *want) {
  char buf[96], name[160];
  int rc, ok;
  size_t i;
  memset(buf, 0x5a, sizeof buf);
  rc = cc__hostlist_first(list, buf, outlen);
  ok = rc == want_rc;
  if (ok && rc == 0) ok = strcmp(buf, want) == 0;
  if (ok && rc != 0 && outlen > 0) ok = buf[0] == 0;
  for (i = outlen; i < sizeof buf; i++) if ((unsigned char)buf[i] != 0x5a) ok = 0;
  snprintf(name, sizeof name, "netutil hostlist \"%s\" outlen %u", list, (unsigned)outlen);
  if (ok)
    tu_pass(name, NULL);
  else
    tu_fail(name, "rc %d out \"%.*s\", want rc %d \"%s\"", rc, (int)(outlen ? outlen - 1 : 0),
            rc == 0 ? buf : "", want_rc, want ? want : "");
}

static void test_hostlist(void) {
  char buf[8];
  /* good lists */
  check_host("node[01-04,7]", 64, 0, "node01");
  check_host("rack[2-3]-n[5,9]", 64, 0, "rack2-n5");
  check_host("a,b", 64, 0, "a");
  check_host("host", 64, 0, "host");
  check_host("pre[007]suf", 64, 0, "pre007suf");
  check_host("node[7,01-04]", 64, 0, "node7");
  check_host("gpu-a100-[001-128]", 64, 0, "gpu-a100-001");
  check_host("n[1-10],m[001-003],x", 64, 0, "n1");
  check_host("n[09-10]", 64, 0, "n09");
  check_host("n[5-5]", 64, 0, "n5");
  check_host("n[0009-12]", 64, 0, "n0009");
  check_host("[1-2]", 64, 0, "1");
  check_host("[3]x", 64, 0, "3x");
  check_host("c1.cluster.example", 64, 0, "c1.cluster.example");
  check_host("a[1-2]b,c[3-4]d", 64, 0, "a1b");
  /* fitting: "node01" needs 7 bytes */
  check_host("node[01-04,7]", 7, 0, "node01");
  check_host("node[01-04,7]", 6, -1, NULL);
  check_host("node01", 7, 0, "node01");
  check_host("node01", 6, -1, NULL);
  check_host("a", 2, 0, "a");
  check_host("a", 1, -1, NULL);
  check_host("a", 0, -1, NULL);
  /* malformed */
  check_host("", 64, -1, NULL);
  check_host("node[", 64, -1, NULL);
  check_host("node[]", 64, -1, NULL);
  check_host("node[a-b]", 64, -1, NULL);
  check_host("node[3-1]", 64, -1, NULL);
  check_host("node[10-9]", 64, -1, NULL);
  check_host("[1-2", 64, -1, NULL);
  check_host(",x", 64, -1, NULL);
  check_host("x,", 64, -1, NULL);
  check_host("a,,b", 64, -1, NULL);
  check_host("a,b[", 64, -1, NULL);
  check_host("node]", 64, -1, NULL);
  check_host("node[1-]", 64, -1, NULL);
  check_host("node[-1]", 64, -1, NULL);
  check_host("node[1,]", 64, -1, NULL);
  check_host("node[1-2-3]", 64, -1, NULL);
  check_host("node[[1]]", 64, -1, NULL);
  check_host("node 1", 64, -1, NULL);
  check_host("node[1]x[", 64, -1, NULL);
  {
    int rc = cc__hostlist_first(NULL, buf, sizeof buf);
    TU_REPORT(rc == -1 && buf[0] == 0, "netutil hostlist NULL list", "rc %d", rc);
  }
}

/* Random strings over "ab01-,[]": 0 or -1, never a write past outlen, never a
   read past the string (each is malloc'ed to its exact size), a 0 result is a
   plain name. */
static void test_hostlist_random(void) {
  static const char alpha[] = "ab01-,[]";
  char out[48];
  int n, bad = 0, nok = 0;
  uint64_t seed = 12345;
  for (n = 0; n < 20000 && bad < 5; n++) {
    size_t len, outlen, i;
    char *s;
    int rc, ok = 1;
    seed = tu_mix64(seed);
    len = (size_t)(seed % 41);
    outlen = (size_t)((seed >> 8) % 17);
    s = (char *)malloc(len + 1);
    if (!s) { tu_fail("netutil hostlist random", "malloc"); return; }
    for (i = 0; i < len; i++) s[i] = alpha[tu_mix64(seed + i + 1) % 8];
    s[len] = 0;
    memset(out, 0x5a, sizeof out);
    rc = cc__hostlist_first(s, out, outlen);
    for (i = outlen; i < sizeof out; i++) if ((unsigned char)out[i] != 0x5a) ok = 0;
    if (rc != 0 && rc != -1) ok = 0;
    if (rc == 0) {
      size_t k = strlen(out);
      nok++;
      if (k == 0 || k >= outlen || strpbrk(out, "[],")) ok = 0;
    }
    if (!ok) {
      bad++;
      tu_fail("netutil hostlist random", "input \"%s\" outlen %u rc %d", s, (unsigned)outlen, rc);
    }
    free(s);
  }
  if (!bad) tu_pass("netutil hostlist random", "20000 strings, %d parsed", nok);
}

/* Long input: linear time, and the name limit holds. */
static void test_hostlist_long(void) {
  size_t n = 1u << 20, i;
  char *s = (char *)malloc(n + 1), out[64];
  int rc1, rc2;
  if (!s) { tu_fail("netutil hostlist long", "malloc"); return; }
  for (i = 0; i < n; i++) s[i] = 'x';
  s[n] = 0;
  rc1 = cc__hostlist_first(s, out, sizeof out);
  memcpy(s, "h[1-2],", 7);
  for (i = 7; i + 5 < n; i += 5) memcpy(s + i, "y[1],", 5);
  s[i] = 'q'; s[i + 1] = 0;
  rc2 = cc__hostlist_first(s, out, sizeof out);
  TU_REPORT(rc1 == -1 && rc2 == 0 && strcmp(out, "h1") == 0, "netutil hostlist long",
            "rc %d %d out \"%s\"", rc1, rc2, rc2 == 0 ? out : "");
  free(s);
}

int main(void) {
  test_sha256();
  test_hmac();
  test_ct_equal();
  test_hostlist();
  test_hostlist_random();
  test_hostlist_long();
  return tu_exit_code();
}
