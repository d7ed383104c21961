#!/usr/bin/env bash
# tests/unit/test_header.sh [BUILD_DIR] - cc.h keeps the structure it says it has.
#
#   contents   the CONTENTS list at the top names exactly the section banners
#              (/* ====...==== @tag */), in the same order
#   settings   the environment is read in one place: every getenv() of the
#              implementation lies inside the settings reader (@base, from
#              cc__env_long to cc__settings_read); the variables it reads (the
#              quoted NAMES there) are exactly those of the top comment's
#              Environment table
#   platform   no section but @platform makes a system call: none of the
#              calls below appears, as a call, after the @platform section
#              (comments and strings aside)
#   ifs        above @platform only @base, @reduce and @crypto have an #if, and
#              those only on the compiler (CUDA, GCC attributes) or, in @crypto,
#              the CPU architecture (x86-64 intrinsics, __int128) and whether the
#              build has TCP (CC__HAVE_TCP: its ciphers serve TCP only), never on
#              the OS
# Plain bash, grep, sed and awk: nothing to install.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
h=$root/cc.h
fails=0
pass() { echo "PASS: header: $*"; }
fail() { echo "FAIL: header: $*"; fails=$((fails + 1)); }

# The implementation without comments and string literals, line numbers kept
# (a comment or string spanning lines leaves those lines empty).
stripped=$(awk '
  BEGIN { inc = 0 }
  {
    line = $0; out = ""; i = 1; n = length(line)
    while (i <= n) {
      c = substr(line, i, 1); d = substr(line, i, 2)
      if (inc) { if (d == "*/") { inc = 0; i += 2 } else i++; continue }
      if (d == "/*") { inc = 1; i += 2; continue }
      if (d == "//") break
      if (c == "\"" || c == "\047") {          # skip a literal
        q = c; i++
        while (i <= n && substr(line, i, 1) != q) { if (substr(line, i, 1) == "\\") i++; i++ }
        out = out q q; i++; continue
      }
      out = out c; i++
    }
    print out
  }' "$h")

# --- contents -------------------------------------------------------------------
listed=$(sed -n '/^   CONTENTS/,/^\*\//p' "$h" | grep -oE '^ +@[a-z-]+' | tr -d ' ')
banners=$(grep -oE '^/\* =+ @[a-z-]+' "$h" | grep -oE '@[a-z-]+$')
if [ -n "$listed" ] && [ "$listed" = "$banners" ]; then
  pass "CONTENTS names the $(echo "$banners" | wc -l) section banners, in order ($(echo $banners))"
else
  fail "CONTENTS ($(echo $listed)) differs from the banners ($(echo $banners))"
fi

# --- settings -------------------------------------------------------------------
first=$(grep -n '^static int cc__env_long(' "$h" | cut -d: -f1)
last=$(awk -v s="$(grep -n '^static cc_result cc__settings_read(' "$h" | cut -d: -f1)" 'NR > s && /^}/ { print NR; exit }' "$h")
if [ -z "$first" ] || [ -z "$last" ]; then
  fail "cannot find the settings reader (cc__env_long .. cc__settings_read)"
else
  outside=$(printf '%s\n' "$stripped" | grep -nE '\bgetenv[[:space:]]*\(' | cut -d: -f1 |
            awk -v a="$first" -v b="$last" '$1 < a || $1 > b')
  if [ -z "$outside" ]; then
    pass "every getenv() is in the settings reader (lines $first-$last)"
  else
    fail "getenv() outside the settings reader at line(s) $(echo $outside)"
  fi
  # words in capitals that are values, not variables (CC_DEBUG's levels, prose)
  stop='^(WARN|INFO|TRACE|TCP|CONTENTS)$'
  read_vars=$(sed -n "${first},${last}p" "$h" | grep -oE '"[A-Z][A-Z0-9_]{2,}"' | tr -d '"' | grep -vE "$stop" | sort -u)
  table=$(sed -n '/^   Environment/,/^   CONTENTS/p' "$h" | grep -v '^   CONTENTS' | grep -oE '\b[A-Z][A-Z0-9_]{2,}\b' |
          grep -vE "$stop" | sort -u)
  missing=$(comm -23 <(echo "$read_vars") <(echo "$table"))
  extra=$(comm -13 <(echo "$read_vars") <(echo "$table"))
  if [ -z "$missing" ] && [ -z "$extra" ]; then
    pass "the Environment table lists exactly the $(echo "$read_vars" | wc -l) variables the settings reader reads"
  else
    [ -n "$missing" ] && fail "read but not in the Environment table: $(echo $missing)"
    [ -n "$extra" ] && fail "in the Environment table but never read: $(echo $extra)"
  fi
fi

# --- platform -------------------------------------------------------------------
calls='socket|bind|listen|accept|accept4|connect|send|sendmsg|sendto|recv|recvmsg|recvfrom|poll|ppoll|select|setsockopt|getsockopt|getsockname|getaddrinfo|freeaddrinfo|getifaddrs|freeifaddrs|inet_pton|inet_ntop|shutdown|close|open|read|write|pread|pwrite|ftruncate|fcntl|fstat|unlink|mmap|munmap|shm_open|shm_unlink|fork|waitpid|kill|prctl|getpid|getppid|setenv|unsetenv|syscall|nanosleep|sched_yield|clock_gettime|opendir|readdir|closedir|gethostname|readlink|_exit|sysconf|sched_getaffinity|pipe|dup|dup2|ioctl|eventfd|epoll_wait|epoll_create1|usleep|sleep'
end_platform=$(grep -nE '^/\* =+ @' "$h" | awk -F: '/@platform/ { getline; print $1; exit }')
hits=$(printf '%s\n' "$stripped" | awk -v from="$end_platform" 'NR >= from' |
       grep -nE "(^|[^A-Za-z0-9_.>])($calls)[[:space:]]*\(" | grep -vE '^[0-9]+:[[:space:]]*#' |
       awk -F: -v off="$end_platform" '{ printf "%d:%s\n", $1 + off - 1, $2 }' | head -5)
if [ -n "$end_platform" ] && [ -z "$hits" ]; then
  pass "no system call after @platform (line $end_platform on)"
else
  fail "system calls outside @platform: $hits"
fi

# --- ifs ------------------------------------------------------------------------
bad_ifs=$(awk '/^\/\* =+ @/ { sec = $3 } /^#[[:space:]]*if/ { print NR ": [" sec "] " $0 }' "$h" |
          grep -vE '\[(@api|@platform)\]|^[0-9]+: \[\] ' |
          grep -vE '\[(@base|@reduce)\] #(if defined\(__GNUC__\) \|\| defined\(__clang__\)|ifdef __CUDACC__)$' |
          grep -vE '\[@crypto\] #(if CC__CRYPTO_X86|if CC__HAVE_TCP|if defined\(__SIZEOF_INT128__\) && !defined\(CC_CRYPTO_NO_INT128\))$' |
          grep -vE '\[@spawn\] #ifdef __cplusplus$')
if [ -z "$bad_ifs" ]; then
  pass "no #if on the platform above @platform (only @base's and @reduce's compiler checks, @crypto's CPU ones and CC__HAVE_TCP)"
else
  fail "#if outside @platform: $bad_ifs"
fi

echo "header: $fails failed"
[ "$fails" -eq 0 ]
