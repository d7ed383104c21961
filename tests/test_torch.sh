#!/usr/bin/env bash
# tests/test_torch.sh BUILD_DIR - torch_cc, cc as a torch.distributed backend
# (docs/torch.md): runs tests/torch/test_*.py against BUILD_DIR/python, which
# `make torch` builds (`make test` builds it first where torch imports; this
# script builds nothing). SKIP where torch or its headers are absent, and in the
# sanitizer builds (the extension is not built with sanitizers).
#
# TORCH_PYTHON picks the interpreter (default /usr/bin/python3, Debian's, with
# python3-torch); TORCH_TESTS="ops seeds" runs only those tests/torch/test_*.py.
set -u

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
py=${TORCH_PYTHON:-/usr/bin/python3}

case "$(basename "$build")" in
  build-asan | build-tsan)
    echo "SKIP: torch: not run in the sanitizer build $build (torch_cc is built only in the plain build)"
    exit 0
    ;;
esac
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "SKIP: torch: $py cannot import torch (Debian 12: apt-get install python3-torch libtorch-dev pybind11-dev)"
  exit 0
fi
if ! "$py" -c 'import torch.distributed as d, sys; sys.exit(0 if d.is_available() else 1)' 2>/dev/null; then
  echo "SKIP: torch: this torch was built without torch.distributed"
  exit 0
fi
# Headers: torch's c10d ones (libtorch-dev) and pybind11's (pybind11-dev).
missing=$("$py" - <<'EOF' 2>/dev/null
import os
from torch.utils.cpp_extension import include_paths
want = ["torch/csrc/distributed/c10d/ProcessGroup.hpp", "pybind11/pybind11.h"]
dirs = include_paths() + ["/usr/include", "/usr/local/include"]
print(" ".join(w for w in want if not any(os.path.exists(os.path.join(d, w)) for d in dirs)))
EOF
)
if [ -n "$missing" ]; then
  echo "SKIP: torch: torch imports but these headers are missing: $missing (Debian 12: apt-get install libtorch-dev pybind11-dev)"
  exit 0
fi
if [ ! -f "$build/python/torch_cc/.built" ]; then
  echo "FAIL: torch: torch and its headers are here but $build/python/torch_cc is not built (run make torch, or make test: see its output)"
  exit 1
fi

export PYTHONPATH
PYTHONPATH=$(cd "$build/python" && pwd)${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
# A dead rank is noticed by cc within about a second; this bounds anything else.
export CC_TIMEOUT=${CC_TIMEOUT:-60}
cd "$here/torch" || exit 1

status=0
for t in test_*.py; do
  name=${t#test_}
  name=${name%.py}
  if [ -n "${TORCH_TESTS:-}" ] && [[ " $TORCH_TESTS " != *" $name "* ]]; then continue; fi
  t0=$(date +%s)
  echo "--- torch: $t"
  "$py" "$t"
  st=$?
  if [ "$st" -ne 0 ]; then
    status=1
  fi
  echo "--- torch: $t: status $st, $(($(date +%s) - t0)) s"
done
exit "$status"
