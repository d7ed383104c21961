#!/usr/bin/env bash
# tests/torch/test_torch.sh BUILD_DIR - torch_cc, cc as a torch.distributed backend
# (docs/torch.md): runs tests/torch/test_*.py against TORCH_DIR (default
# BUILD_DIR/python), which `make torch` builds (`make test` builds it first where
# torch imports; this script builds nothing). SKIP where torch or its headers
# are absent, and in the sanitizer builds (the extension is not built with
# sanitizers).
#
# TORCH_PYTHON picks the interpreter (default: the first python3, or python, on
# PATH whose torch imports, as the Makefile's); TORCH_TESTS="ops seeds" runs
# only those tests/torch/test_*.py; TORCH_TEST_SUMMARY=1 ends with the line
# "N passed, N failed" (make torch-test); TORCH_TEST_QUICK=1 runs the lighter
# variants (fewer world sizes, the seeds against their recorded output alone),
# as CI does on its second torch.
set -u

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
py=${TORCH_PYTHON:-}
if [ -z "$py" ]; then
  for p in $(which -a python3 python 2>/dev/null); do
    if "$p" -c 'import torch' 2>/dev/null; then py=$p; break; fi
  done
  py=${py:-python3}
fi
dir=${TORCH_DIR:-$build/python}

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
if [ ! -f "$dir/torch_cc/.built" ]; then
  echo "FAIL: torch: torch and its headers are here but $dir/torch_cc is not built (run make torch, or make test: see its output)"
  exit 1
fi
echo "torch: $py, torch $("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null), torch_cc from $dir"

export PYTHONPATH
PYTHONPATH=$(cd "$dir" && pwd)${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
# A dead rank is noticed by cc within about a second; this bounds anything else.
export CC_TIMEOUT=${CC_TIMEOUT:-60}
# One OpenMP thread per rank, as torchrun sets for its workers: four ranks of
# torch 2 with a thread per core each on two cores spin against each other
# (DDP's steps 25 times slower)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
cd "$here" || exit 1

# the quick tier (make test): the collectives against gloo, at 1, 2 and 4 ranks
if [ "${CC_TEST_TIER:-}" = quick ] && [ -z "${TORCH_TESTS:-}" ]; then
  export TORCH_TESTS=ops TORCH_TEST_QUICK=1
  echo "SKIP: torch: the quick tier runs test_ops.py at 1, 2 and 4 ranks only; make check runs every tests/torch/test_*.py (async, DDP and FSDP, torchrun, a killed rank, the seeds, the API, DETAIL)"
fi

status=0
log=$(mktemp "${TMPDIR:-/tmp}/cc-test-torch.XXXXXX")
for t in test_*.py; do
  name=${t#test_}
  name=${name%.py}
  if [ -n "${TORCH_TESTS:-}" ] && [[ " $TORCH_TESTS " != *" $name "* ]]; then continue; fi
  t0=$(date +%s)
  echo "--- torch: $t"
  "$py" "$t" 2>&1 | tee -a "$log"
  st=${PIPESTATUS[0]}
  if [ "$st" -ne 0 ]; then
    status=1
  fi
  echo "--- torch: $t: status $st, $(($(date +%s) - t0)) s"
done
# The install docs/torch.md shows, `pip install --no-build-isolation ./torch_cc`
# (the full suite on the first torch only: it compiles the extension again),
# run in a scratch copy of the repository's cc.h and torch_cc/ (pip builds in
# the source tree) into a scratch folder (pip's --target), so that nothing
# outside the scratch changes; then two ranks import torch_cc from there and
# all_reduce.
if [ "${CC_TEST_TIER:-}" != quick ] && [ -z "${TORCH_TEST_QUICK:-}" ] && [ -z "${TORCH_TESTS:-}" ]; then
  t0=$(date +%s)
  echo "--- torch: pip install --no-build-isolation ./torch_cc"
  tgt=$(mktemp -d "${TMPDIR:-/tmp}/cc-torch-pip.XXXXXX")
  cat > "$tgt/prog.py" <<'EOF'
import os, tempfile
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch_cc

def run(rank, path):
    dist.init_process_group("cc", init_method="file://" + path, rank=rank, world_size=2)
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t)
    where = os.path.dirname(os.path.dirname(torch_cc.__file__))
    os.write(1, f"rank {rank}: {t.item()} from {where}\n".encode())   # one write: lines never interleave
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(run, args=(tempfile.mktemp(prefix="cc-torch-pip-init."),), nprocs=2)
EOF
  mkdir -p "$tgt/repo" && cp "$here/../../cc.h" "$tgt/repo/" && cp -R "$here/../../torch_cc" "$tgt/repo/"
  if ! (cd "$tgt/repo" && "$py" -m pip install -q --no-build-isolation --no-deps --no-cache-dir --target "$tgt/site" \
        ./torch_cc) > "$tgt/pip.log" 2>&1; then
    echo "FAIL: torch: pip install --no-build-isolation ./torch_cc failed:" | tee -a "$log"
    tail -20 "$tgt/pip.log"
    status=1
  else
    out=$(cd "$tgt" && PYTHONPATH="$tgt/site" timeout 120 "$py" prog.py 2>&1)
    if [ "$(printf '%s\n' "$out" | grep -c "^rank [01]: 3.0 from $tgt/site\$")" -eq 2 ]; then
      echo "PASS: torch: pip install --no-build-isolation ./torch_cc, as docs/torch.md shows: installed, imported from there by 2 ranks, whose all_reduce gives 3.0 ($(($(date +%s) - t0)) s)" | tee -a "$log"
    else
      echo "FAIL: torch: torch_cc installed by pip: 2 ranks should print 3.0 from $tgt/site; got:" | tee -a "$log"
      printf '%s\n' "$out" | tail -20
      status=1
    fi
  fi
  rm -rf "$tgt"
fi

if [ -n "${TORCH_TEST_SUMMARY:-}" ]; then
  p=$(grep -c '^PASS: ' "$log")
  f=$(grep -c '^FAIL: ' "$log")
  k=$(grep -c '^SKIP: ' "$log")
  [ "$status" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  if [ "$k" -gt 0 ]; then echo "$p passed, $f failed, $k skipped"; else echo "$p passed, $f failed"; fi
fi
rm -f "$log"
exit "$status"
