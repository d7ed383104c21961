#!/usr/bin/env bash
# tests/user/test_examples.sh [BUILD_DIR] - run every example as a job and compare
# what it prints with examples/expected/NAME.txt (BUILD_DIR defaults to build;
# `make` builds the examples into BUILD_DIR/examples).
#
# Each examples/NAME.c that has an expected file runs as
#     timeout 60 BUILD_DIR/ccrun -n N BUILD_DIR/examples/NAME
# with N from a line `/* ranks: N */` in the source, else 4. The ranks' lines
# come out in any order, so stdout is sorted (LC_ALL=C sort) before the
# comparison; the expected files are sorted the same way. One line per
# example: `PASS: example NAME`, or `FAIL: example NAME: why` followed by the
# first lines of the difference or of stderr. An example without an expected
# file is a SKIP. Exits 1 if any example failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
limit=60
failed=0

if [ ! -d "$build" ]; then
  echo "FAIL: example: no build directory '$build' (run make first)"
  exit 1
fi
build=$(cd "$build" && pwd)
ccrun=$build/ccrun
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cc-examples.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# show FILE - the first 20 lines of FILE, indented, under a FAIL line
show() {
  sed -n '1,20s/^/    /p' "$1"
}

n_examples=0
for src in "$root"/examples/*.c; do
  [ -e "$src" ] || continue
  name=$(basename "$src" .c)
  expected=$root/examples/expected/$name.txt
  prog=$build/examples/$name
  n_examples=$((n_examples + 1))

  if [ ! -f "$expected" ]; then
    echo "SKIP: example $name: no examples/expected/$name.txt"
    continue
  fi
  if [ ! -x "$ccrun" ] || [ ! -x "$prog" ]; then
    echo "FAIL: example $name: $ccrun or $prog is not built (run make)"
    failed=$((failed + 1))
    continue
  fi

  ranks=$(sed -n 's|^/\* ranks: \([0-9][0-9]*\) \*/$|\1|p' "$src" | head -n 1)
  ranks=${ranks:-4}

  timeout -k 5 "$limit" "$ccrun" -n "$ranks" "$prog" </dev/null \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  st=$?
  LC_ALL=C sort "$tmp/$name.out" >"$tmp/$name.sorted"

  if [ "$st" -ne 0 ]; then
    case $st in
      124 | 137) why="timed out after $limit s" ;;
      *) why="ccrun -n $ranks exited with status $st" ;;
    esac
    echo "FAIL: example $name: $why; stderr:"
    show "$tmp/$name.err"
    failed=$((failed + 1))
  elif ! diff -u "$expected" "$tmp/$name.sorted" >"$tmp/$name.diff"; then
    # the changed lines only, without diff's headers: -expected +printed
    grep -E '^[-+]' "$tmp/$name.diff" | grep -vE '^(---|\+\+\+) ' >"$tmp/$name.lines"
    echo "FAIL: example $name: sorted output differs from examples/expected/$name.txt" \
      "(-expected +printed):"
    show "$tmp/$name.lines"
    if [ -s "$tmp/$name.err" ]; then
      echo "    stderr:"
      show "$tmp/$name.err"
    fi
    failed=$((failed + 1))
  else
    echo "PASS: example $name"
  fi
done

if [ "$n_examples" -eq 0 ]; then
  echo "FAIL: example: no examples/*.c found"
  exit 1
fi
[ "$failed" -eq 0 ]
