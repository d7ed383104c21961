"""torchrun with backend "cc":

  * torchrun --standalone --nproc_per_node 4 progs/torchrun_world.py: every
    rank's all_reduce, all_gather and rank 0's receives from any source
  * torchrun --standalone --nproc_per_node 4 --max_restarts 1 (torch 2 also
    spells it --max-restarts)
    progs/torchrun_restart.py: in round 0 rank 2 kills itself (SIGKILL) while
    the others all_reduce; they raise naming the lost rank, the elastic agent
    starts the workers again, and round 1 forms a new cc communicator: every
    rank's all_reduce, torchrun exits 0

(--redirects 1 --tee 1: Debian 12's torch 1.13 under Python 3.11 fails to
start without them, see test_seeds.py; their lines come prefixed "[defaultN]:".)

    PYTHONPATH=build/python python3 tests/torch/test_torchrun.py
"""
import os
import subprocess
import sys
import tempfile
import time

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable


def unprefixed(text):
    return sorted(line.split("]:", 1)[-1].rstrip() for line in text.splitlines() if line.strip())


def torchrun(args, prog, timeout=120):
    logs = tempfile.mkdtemp(prefix="cc-torch-torchrun-")
    cmd = [PY, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--log_dir", logs,
           "--standalone", "--nproc_per_node", "4"] + args + [os.path.join(HERE, "progs", prog)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or "", e.stderr or ""
        out = out.decode() if isinstance(out, bytes) else out
        err = err.decode() if isinstance(err, bytes) else err
    subprocess.run(["rm", "-rf", logs])
    return rc, unprefixed(out), err, time.monotonic() - t0


def main():
    if os.environ.get("TORCH_TEST_QUICK"):   # make torch-test on a second torch: test_seeds runs torchrun there
        harness.skip("torchrun: TORCH_TEST_QUICK (test_seeds.py's torchrun runs cover this torch)")
        return 0
    rc, lines, err, secs = torchrun([], "torchrun_world.py")
    want = sorted(f"rank {r} of 4 (local {r}): sum 10, gathered [0, 1, 2, 3], from any source "
                  f"{[1, 2, 3] if r == 0 else []}" for r in range(4))
    harness.report(rc == 0 and lines == want, f"torchrun --standalone --nproc_per_node 4, backend cc: all_reduce, "
                   f"all_gather, recv from any source on every rank ({secs:.1f} s)"
                   + ("" if rc == 0 and lines == want else f": status {rc}, {lines}, {err[-600:]}"))

    rc, lines, err, secs = torchrun(["--max_restarts", "1"], "torchrun_restart.py")
    round1 = sorted(line for line in lines if line.startswith("round 1 "))
    want = sorted(f"round 1 rank {r} of 4: sum 10" for r in range(4))
    round0 = [line for line in lines if line.startswith("round 0 ")]
    named = [line for line in round0 if "rank 2" in line]
    ok = rc == 0 and round1 == want and all("no error" not in line for line in round0)
    harness.report(ok, f"torchrun --max_restarts 1, rank 2 SIGKILLed in round 0: the agent restarts the workers, "
                       f"round 1 forms a new cc communicator and every rank's all_reduce is right; {len(named)} "
                       f"survivor(s) of round 0 reported rank 2 lost before the agent stopped them ({secs:.1f} s)"
                   + ("" if ok else f": status {rc}, {lines}, {err[-800:]}"))
    return 1 if harness.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
