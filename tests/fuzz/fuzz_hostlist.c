/* tests/fuzz/fuzz_hostlist.c - libFuzzer target: cc__hostlist_first, the first
   host of a Slurm node list (SLURM_JOB_NODELIST, "node[01-04,7],gpu[2-3]").
   The first input byte is the size of the output buffer (0..255), the rest is
   the list (NUL-terminated here). Each list is parsed twice: into that buffer
   and into one that always fits.
   Checks: on success the name is NUL-terminated and shorter than outlen, not
   empty, of printable characters other than "[]," and the same with the big
   buffer; on failure the output is "" and a list refused with the big buffer
   is refused with the small one too; a list without brackets gives its first
   comma-separated entry. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t outlen, biglen, i, n;
  char *list, *out, *big;
  int r, rbig;
  if (size < 1) return 0;
  outlen = data[0];
  biglen = size + 1;                   /* the first host is never longer than the list */
  list = (char *)malloc(size);
  out = (char *)malloc(outlen ? outlen : 1);
  big = (char *)malloc(biglen);
  FZ_CHECK(list && out && big);
  memcpy(list, data + 1, size - 1);
  list[size - 1] = 0;
  memset(out, 'x', outlen ? outlen : 1);
  memset(big, 'x', biglen);
  r = cc__hostlist_first(list, out, outlen);
  rbig = cc__hostlist_first(list, big, biglen);
  FZ_CHECK(r == 0 || r == -1);
  FZ_CHECK(rbig == 0 || rbig == -1);
  if (rbig == 0) {
    FZ_CHECK(fz_terminated(big, biglen));
    n = strlen(big);
    FZ_CHECK(n > 0 && n < biglen);
    for (i = 0; i < n; i++) FZ_CHECK(big[i] > ' ' && big[i] < 0x7f && big[i] != '[' && big[i] != ']' && big[i] != ',');
    if (!strchr(list, '[') && !strchr(list, ']')) {
      FZ_CHECK(strncmp(big, list, n) == 0 && (list[n] == 0 || list[n] == ','));
    }
  } else {
    FZ_CHECK(big[0] == 0);
  }
  if (r == 0) {
    FZ_CHECK(outlen > 0 && fz_terminated(out, outlen));
    FZ_CHECK(strlen(out) < outlen);
    FZ_CHECK(rbig == 0 && strcmp(out, big) == 0);
  } else {
    if (outlen > 0) FZ_CHECK(out[0] == 0);
    /* refused: the list is malformed, or its first host does not fit */
    FZ_CHECK(rbig != 0 || outlen == 0 || strlen(big) >= outlen);
  }
  free(list);
  free(out);
  free(big);
  return 0;
}
