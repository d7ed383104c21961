/* tests/fuzz/fuzz_abort.c - libFuzzer target: cc__abort_decode, the payload of
   an abort frame {code u32, rank i32, message} (the failure report a rank
   sends every TCP peer). The first input byte picks the size of the message
   buffer (1..255; 0 tries msglen 0), the rest is the payload, in a buffer of
   exactly its length.
   Checks: accepted only with 8..CC__ABORT_MAX bytes and a code that is a
   failure (not CC_OK, not CC_ERR_INVALID_ARG, a cc_result); the message is
   NUL-terminated inside msglen, printable, no longer than the payload's text;
   what cc__abort_encode makes of the decoded report decodes to the same; a
   rejected payload leaves the outputs alone. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t msglen, len, i, n;
  unsigned char *p;
  char *msg;
  cc_result code = (cc_result)99;
  int who = -12345, r, want;
  uint32_t cd;
  if (size < 1) return 0;
  msglen = data[0];
  len = size - 1;
  p = (unsigned char *)malloc(len ? len : 1);
  msg = (char *)malloc(msglen ? msglen : 1);
  FZ_CHECK(p && msg);
  if (len) memcpy(p, data + 1, len);
  memset(msg, 'x', msglen ? msglen : 1);
  r = cc__abort_decode(p, len, &code, &who, msg, msglen);
  cd = len >= 4 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24 : 0;
  want = len >= 8 && len <= CC__ABORT_MAX && msglen > 0 && cd > 0 && cd != (uint32_t)CC_ERR_INVALID_ARG &&
         cd < (uint32_t)CC_RESULT_COUNT;
  FZ_CHECK(r == 0 || r == -1);
  FZ_CHECK((r == 0) == want);
  if (r == 0) {
    FZ_CHECK((uint32_t)code == cd && code != CC_OK && (int)code < (int)CC_RESULT_COUNT);
    FZ_CHECK(who == (int32_t)((uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24));
    FZ_CHECK(fz_terminated(msg, msglen));
    n = strlen(msg);
    FZ_CHECK(n < msglen && n <= len - 8);
    for (i = 0; i < n; i++) {
      unsigned char b = p[8 + i];
      FZ_CHECK(b != 0 && msg[i] == (b >= 32 && b < 127 ? (char)b : '?'));
    }
    /* the text ends at the payload's NUL, at its end, or where msg is full */
    FZ_CHECK(n == len - 8 || n == msglen - 1 || p[8 + n] == 0);
    {                                  /* encoded again: the same report */
      unsigned char *again = (unsigned char *)malloc(CC__ABORT_MAX);
      char back[CC__ABORT_MAX];
      cc_result code2 = (cc_result)99;
      int who2 = -12345;
      size_t m;
      FZ_CHECK(again != NULL);
      m = cc__abort_encode(again, code, who, msg);
      FZ_CHECK(m == 9 + n && m <= CC__ABORT_MAX && again[m - 1] == 0);
      FZ_CHECK(cc__abort_decode(again, m, &code2, &who2, back, sizeof back) == 0);
      FZ_CHECK(code2 == code && who2 == who && strcmp(back, msg) == 0);
      free(again);
    }
  } else {
    FZ_CHECK((int)code == 99 && who == -12345);
  }
  free(p);
  free(msg);
  return 0;
}
