/* tests/fuzz/fuzz_file.c - libFuzzer target: cc__file_parse, the line of a
   file:// rendezvous file ("cc-rendezvous 2 IP PORT NONCE"), which any process
   that can write the file controls. The first input byte picks the size of the
   address buffer (1..64), the rest is the line (NUL-terminated here).
   Checks: an accepted line gives an address NUL-terminated within the buffer
   that inet_pton reads, a port in 1..65535 and a nonce of 16..32 lowercase hex
   digits; a rejected one leaves the outputs alone. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t iplen, i, n;
  char *s, *ip, *nonce;
  unsigned char a[16];
  int port = -7, r;
  if (size < 1) return 0;
  iplen = (size_t)data[0] % 64 + 1;
  s = (char *)malloc(size);
  ip = (char *)malloc(iplen);
  nonce = (char *)malloc(40);
  FZ_CHECK(s && ip && nonce);
  memcpy(s, data + 1, size - 1);
  s[size - 1] = 0;
  memset(ip, 'x', iplen);
  memset(nonce, 'x', 40);
  r = cc__file_parse(s, ip, iplen, &port, nonce);
  FZ_CHECK(r == 0 || r == -1);
  if (r == 0) {
    FZ_CHECK(strncmp(s, "cc-rendezvous", 13) == 0);
    FZ_CHECK(port >= 1 && port <= 65535);
    FZ_CHECK(fz_terminated(ip, iplen));
    FZ_CHECK(inet_pton(AF_INET, ip, a) == 1 || inet_pton(AF_INET6, ip, a) == 1);
    FZ_CHECK(strstr(s, ip) != NULL);
    FZ_CHECK(fz_terminated(nonce, 40));
    n = strlen(nonce);
    FZ_CHECK(n >= 16 && n <= 32);
    for (i = 0; i < n; i++) FZ_CHECK((nonce[i] >= '0' && nonce[i] <= '9') || (nonce[i] >= 'a' && nonce[i] <= 'f'));
    FZ_CHECK(strstr(s, nonce) != NULL);
  } else {
    FZ_CHECK(port == -7);
    for (i = 0; i < iplen; i++) FZ_CHECK(ip[i] == 'x');
    for (i = 0; i < 40; i++) FZ_CHECK(nonce[i] == 'x');
  }
  free(s);
  free(ip);
  free(nonce);
  return 0;
}
