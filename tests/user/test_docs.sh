#!/usr/bin/env bash
# tests/user/test_docs.sh [BUILD_DIR] - the documentation stands alone and is complete.
#
#   1. No tracked text file names a relative path that leads out of the
#      repository (a "../" path that, from the file's folder, climbs above
#      the repository's root): a user's clone has nothing beside it.
#   2. Every link in a tracked Markdown or HTML file - [text](target),
#      [label]: target, <a href="target"> - outside fenced code blocks, that is
#      not a URL (scheme:) or an anchor (#...), points inside the repository at
#      a tracked file or a directory holding tracked files.
#   3. Every function that cc.h or cc_cuda.cuh declares with CC_API is named in
#      docs/api.md.
#   4. Every environment variable that cc.h, cc_cuda.cuh or tools/ccrun.c reads
#      - getenv("X"), cc__env_*("X"), and the name lists handed to cc__env_first
#      - is named in docs/api.md.
# One PASS line per check that holds, one FAIL line per problem found. The
# tracked files are git's (git ls-files); outside a git checkout, every file
# but build*/ and .git/.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
api=docs/api.md
fails=0

fail() {
  echo "FAIL: docs: $*"
  fails=$((fails + 1))
}

if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && [ -n "$(git ls-files cc.h)" ]; then
  tracked() { git ls-files; }
  is_tracked() { [ -n "$(git ls-files -- "$1" | head -n 1)" ]; }   # a file, or a directory holding one
else
  tracked() { find . -path ./.git -prune -o -path './build*' -prune -o -type f -print | sed 's|^\./||'; }
  is_tracked() { [ -e "$1" ]; }
fi

# ---------------------------------------------------------------- 1. paths out of the repository
# A "../" path at the start of a word (not after "/" or "$": "$here/../x" is
# the script's own way about) is resolved from the file's folder.
n0=$fails
nup=0
while IFS= read -r f; do
  [ -f "$f" ] || continue
  grep -Iq . "$f" 2>/dev/null || continue   # binary (or empty)
  dir=$(dirname "$f")
  while IFS=: read -r line path; do
    case $path in ../*) ;; *) path=${path#?} ;; esac   # the character before the path
    case $path in ../*) ;; *) continue ;; esac
    nup=$((nup + 1))
    full=$(realpath -m -- "$root/$dir/$path")
    case $full in
      "$root"|"$root"/*) ;;
      *) fail "$f:$line names $path, a path outside the repository (users' clones have nothing beside them)" ;;
    esac
  done < <(grep -noE "(^|[[:space:]\"'(<=:\`[])(\.\./)+[^][[:space:]\"'()<>\`,;]*" "$f")
done < <(tracked)
[ "$fails" -eq "$n0" ] && echo "PASS: docs: no tracked file names a path outside the repository ($nup relative paths that climb checked)"

# ---------------------------------------------------------------- 2. links
# links FILE: "LINE TARGET" for every link outside fenced code blocks
links() {
  awk '
    /^[[:space:]]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
      s = $0
      while (match(s, /\]\([^)]*\)/)) {           # [text](target "title")
        t = substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH)
        sub(/^[[:space:]]*</, "", t); sub(/[[:space:]].*$/, "", t); sub(/>$/, "", t)
        print NR " " t
      }
      s = $0
      while (match(s, /<a[[:space:]][^>]*href="[^"]*"/)) {   # <a href="target">
        t = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
        sub(/.*href="/, "", t); sub(/"$/, "", t)
        print NR " " t
      }
      if (match($0, /^[[:space:]]*\[[^]]+\]:[[:space:]]+[^[:space:]]+/)) {   # [label]: target
        t = $0; sub(/^[[:space:]]*\[[^]]+\]:[[:space:]]+/, "", t); sub(/[[:space:]].*$/, "", t)
        sub(/^</, "", t); sub(/>$/, "", t)
        print NR " " t
      }
    }' "$1"
}

n0=$fails
nlinks=0
while IFS= read -r f; do
  case $f in *.md|*.markdown|*.html|*.htm) ;; *) continue ;; esac
  [ -f "$f" ] || continue
  dir=$(dirname "$f")
  while read -r line target; do
    [ -n "$target" ] || continue
    case $target in
      \#*) continue ;;                              # an anchor in this page
      [a-zA-Z]*:*) case ${target%%:*} in *[!a-zA-Z0-9+.-]*) ;; *) continue ;; esac ;;   # scheme: a URL
    esac
    nlinks=$((nlinks + 1))
    path=${target%%#*}
    path=${path%%\?*}
    [ -n "$path" ] || continue
    case $path in
      /*) fail "$f:$line links to $target, an absolute path (users' clones have it elsewhere or not at all)"; continue ;;
    esac
    full=$(realpath -m -- "$root/$dir/$path")
    case $full in
      "$root") rel=. ;;
      "$root"/*) rel=${full#"$root"/} ;;
      *) fail "$f:$line links to $target, outside the repository"; continue ;;
    esac
    if ! is_tracked "$rel"; then
      fail "$f:$line links to $target, but $rel is not a file of the repository"
    fi
  done < <(links "$f")
done < <(tracked)
[ "$fails" -eq "$n0" ] && echo "PASS: docs: $nlinks relative links in tracked Markdown/HTML files point at files of the repository"

# ---------------------------------------------------------------- 3. functions
if [ ! -f "$api" ]; then
  fail "$api is missing"
else
  n0=$fails
  nfun=0
  for h in cc.h cc_cuda.cuh; do
    [ -f "$h" ] || { fail "$h is missing"; continue; }
    for fn in $(grep -oE '^[[:space:]]*CC_API[^;{(=]*[^a-zA-Z0-9_]cc_[a-z0-9][a-z0-9_]*[[:space:]]*\(' "$h" |
                sed -E 's/.*[^a-zA-Z0-9_](cc_[a-z0-9][a-z0-9_]*)[[:space:]]*\($/\1/' | sort -u); do
      nfun=$((nfun + 1))
      grep -qw -- "$fn" "$api" || fail "$h declares $fn (CC_API) but $api does not name it"
    done
  done
  [ "$nfun" -gt 0 ] || fail "found no CC_API function in cc.h and cc_cuda.cuh (has the declaration style changed?)"
  [ "$fails" -eq "$n0" ] && echo "PASS: docs: $api names all $nfun CC_API functions of cc.h and cc_cuda.cuh"

# ---------------------------------------------------------------- 4. environment variables
  n0=$fails
  nenv=0
  for src in cc.h cc_cuda.cuh tools/ccrun.c; do
    [ -f "$src" ] || { fail "$src is missing"; continue; }
    {
      grep -oE '(getenv|cc__env_[a-z_]+)\("[A-Za-z_][A-Za-z0-9_]*"' "$src" | sed -E 's/.*\("//; s/"$//'
      for list in $(grep -oE 'cc__env_first\([a-z_][a-z0-9_]*' "$src" | sed 's/.*(//' | sort -u); do
        grep -E "[^a-z0-9_]$list\[[^]]*\][[:space:]]*=[[:space:]]*\{" "$src" | grep -oE '"[A-Za-z_][A-Za-z0-9_]*"' | tr -d '"'
      done
    } | sort -u > "${TMPDIR:-/tmp}/cc-docs-env.$$"
    while read -r var; do
      nenv=$((nenv + 1))
      grep -qw -- "$var" "$api" || fail "$src reads the environment variable $var but $api does not name it"
    done < "${TMPDIR:-/tmp}/cc-docs-env.$$"
    rm -f "${TMPDIR:-/tmp}/cc-docs-env.$$"
  done
  [ "$nenv" -gt 0 ] || fail "found no environment variable read in cc.h, cc_cuda.cuh, tools/ccrun.c (has the style changed?)"
  [ "$fails" -eq "$n0" ] && echo "PASS: docs: $api names all $nenv environment variables read by cc.h, cc_cuda.cuh and tools/ccrun.c"
fi

[ "$fails" -eq 0 ]
