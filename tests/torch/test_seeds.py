"""The tutorials' examples (tests/torch/seeds/*.py, one program per example,
unchanged but for the backend name and CPU tensors) run on "cc" and on
"gloo"; each rank's output must be what gloo printed, or, where gloo cannot
run the example (no reduce_scatter, no all_to_all of lists), what the
tutorial printed, kept in seeds/expected.txt (which also holds what gloo
prints, so that gloo's runs check the file as well). Then:

  * one program started as a user would, by its own mp.spawn main;
  * the zhihu all_reduce example under torchrun as the tutorial ran it, 2
    "nodes" (two torchrun agents on this host) x 3 processes: every rank
    prints tensor([42, 48]); its all_gather example under torchrun
    --standalone (3 processes), the seeded weights computed here;
  * init_method tcp:// and file:// (the "distributed package" page): two
    processes started one by one.

    PYTHONPATH=build/python python3 tests/torch/test_seeds.py [--record]

--record rewrites seeds/expected.txt from gloo's runs (and cc's where gloo
cannot run an example: check those against the tutorial by hand).
"""
import importlib
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import torch

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "seeds")
EXPECTED = os.path.join(SEEDS, "expected.txt")
LAUNCHED = ("zhihu_all_gather", "zhihu_all_reduce", "init_methods")  # started by torchrun / by hand
PY = sys.executable
# Examples where gloo prints something else than the tutorial: torch leaves a
# reduce's non-root tensors undefined; gloo (1.13) overwrites them with partial
# sums, the tutorials show them unchanged (as NCCL and cc leave them). There,
# expected.txt holds the tutorial's output and gloo is held to it on the root.
GLOO_ROOT_ONLY = {("practice_4_reduce", "example"): 0, ("learning_1_3_reduce", "example"): 0}


def load_expected():
    exp, key, buf = {}, None, []
    if not os.path.exists(EXPECTED):
        return exp
    with open(EXPECTED) as f:
        for line in f:
            if line.startswith("=== "):
                if key:
                    exp[key] = "".join(buf)
                key, buf = tuple(line[4:].split()), []
            else:
                buf.append(line)
    if key:
        exp[key] = "".join(buf)
    return exp


def examples():
    sys.path.insert(0, SEEDS)
    for fn in sorted(os.listdir(SEEDS)):
        if not fn.endswith(".py") or fn[:-3] in LAUNCHED:
            continue
        mod = importlib.import_module(fn[:-3])
        exs = getattr(mod, "EXAMPLES", None) or {"example": mod.example}
        sizes = getattr(mod, "WORLD_SIZES", {})
        for name, f in exs.items():
            yield mod, name, f, sizes.get(name, 4)


def run_seed(mod, fn, ws, backend):
    mod.BACKEND = backend

    def rank_main(rank, ws_):
        # torch 2 deprecates some of the tutorials' calls (reduce_scatter_tensor:
        # "use reduce_scatter_single"): the warning would land among what the
        # rank prints, which is compared line by line
        warnings.simplefilter("ignore", FutureWarning)
        fn(rank, ws_)
    return harness.run_job(rank_main, ws, timeout=60)


def first_error(res):
    for out in res.outputs:
        for line in out.splitlines():
            if "Error" in line:
                return line.strip()[:160]
    return res.why()[:160]


def sorted_lines(text):
    return sorted(line.rstrip() for line in text.splitlines() if line.strip())


def main():
    record = "--record" in sys.argv
    exp = load_expected()
    recorded = []
    for mod, name, fn, ws in examples():
        what = f"seed {mod.__name__}{'' if name == 'example' else ' ' + name} ({ws} ranks)"
        cc = run_seed(mod, fn, ws, "cc")
        # TORCH_TEST_QUICK (make torch-test on a second torch): cc against
        # seeds/expected.txt alone, which holds what gloo printed
        gl = None if os.environ.get("TORCH_TEST_QUICK") and not record else run_seed(mod, fn, ws, "gloo")
        if not cc.ok:
            harness.report(False, f"{what}: cc failed: {cc.why()}")
            continue
        keys = [(mod.__name__, name, str(r)) for r in range(ws)]
        root_only = GLOO_ROOT_ONLY.get((mod.__name__, name))
        if record:
            src = gl if gl.ok and root_only is None else cc
            for k, out in zip(keys, src.outputs):
                recorded.append((k, out))
            print(f"recorded {what} from {'gloo' if gl.ok else 'cc (gloo cannot: ' + first_error(gl) + ')'}")
            continue
        missing = [k for k in keys if k not in exp]
        if missing:
            harness.report(False, f"{what}: no expected output in seeds/expected.txt (run with --record)")
            continue
        bad = [r for r, k in enumerate(keys) if cc.outputs[r] != exp[k]]
        if gl is None:
            harness.report(not bad, f"{what}: cc prints what seeds/expected.txt holds (gloo's output, or the "
                                    f"tutorial's where gloo cannot run it)"
                           + ("" if not bad else f"; ranks {bad} differ: {[cc.outputs[r] for r in bad]}"))
        elif gl.ok and root_only is not None:
            gbad = [] if gl.outputs[root_only] == exp[keys[root_only]] else [root_only]
            harness.report(not bad and not gbad,
                           f"{what}: cc prints the tutorial's output; gloo the same on the root (rank {root_only}) "
                           f"and, on the others, what it left in their tensors (torch: undefined)"
                           + ("" if not bad else f"; cc's ranks {bad} differ: {[cc.outputs[r] for r in bad]}")
                           + ("" if not gbad else f"; gloo's root differs: {gl.outputs[root_only]}"))
        elif gl.ok:
            gbad = [r for r, k in enumerate(keys) if gl.outputs[r] != exp[k]]
            same = cc.outputs == gl.outputs
            harness.report(same and not bad and not gbad,
                           f"{what}: cc prints what gloo prints, rank by rank"
                           + ("" if same else f" (ranks {[r for r in range(ws) if cc.outputs[r] != gl.outputs[r]]} "
                                              f"differ: cc {cc.outputs} gloo {gl.outputs})")
                           + ("" if not gbad else f" (gloo differs from expected.txt at ranks {gbad})"))
        else:
            harness.report(not bad, f"{what}: cc prints the tutorial's output (gloo cannot run it: "
                                    f"{first_error(gl)})"
                           + ("" if not bad else f"; ranks {bad} differ: {[cc.outputs[r] for r in bad]}"))
    if record:
        with open(EXPECTED, "w") as f:
            for k, out in recorded:
                f.write("=== " + " ".join(k) + "\n" + out)
        print(f"wrote {EXPECTED}")
        return 0

    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    quick = bool(os.environ.get("TORCH_TEST_QUICK"))

    # one program as a user starts it: its own main(), mp.spawn and all
    t0 = time.monotonic()
    if quick:   # make torch-test on a second torch: the launchers but torchrun's two nodes are left out
        harness.skip("seed learning_1_2_allreduce.py by its own mp.spawn main, and zhihu_all_gather.py under "
                     "torchrun --standalone: TORCH_TEST_QUICK")
    prog = os.path.join(SEEDS, "learning_1_2_allreduce.py")
    if not quick:
        p = subprocess.run([PY, prog], capture_output=True, text=True, timeout=120,
                           env=dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(harness.free_port())))
        want = sorted_lines("".join(exp.get(("learning_1_2_allreduce", "example", str(r)), "") for r in range(4)))
        # the ranks share one pipe and print() writes the text and its newline
        # apart: one rank's line can land in the middle of another's
        got = sorted_lines(re.sub(r"(?=Rank \d)", "\n", p.stdout))
        harness.report(p.returncode == 0 and got == want,
                       f"seed learning_1_2_allreduce.py run by its own mp.spawn main on cc: the tutorial's output "
                       f"({time.monotonic() - t0:.1f} s)" + ("" if p.returncode == 0 else f": {p.stderr[-300:]}"))

    # torchrun, as the zhihu tutorial: 2 nodes x 3 processes (two agents here).
    # torch 1.13's torchrun under Python 3.11 (Debian 12) fails at start with
    # "'NoneType' object has no attribute 'get'" when --redirects/--tee are 0
    # (the default): Python 3.11 no longer lists Std.NONE when iterating the
    # IntFlag. Nonzero values work; their lines come prefixed "[defaultN]:".
    logs = tempfile.mkdtemp(prefix="cc-torch-torchrun-")
    run = [PY, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--log_dir", logs]

    def unprefixed(text):
        return sorted_lines("\n".join(line.split("]:", 1)[-1] for line in text.splitlines()))

    t0 = time.monotonic()
    port = harness.free_port()
    agents = [subprocess.Popen(run + ["--nnodes=2", f"--node_rank={n}", "--nproc_per_node=3",
                                      "--master_addr=127.0.0.1", f"--master_port={port}",
                                      os.path.join(SEEDS, "zhihu_all_reduce.py")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
              for n in range(2)]
    outs = [a.communicate(timeout=120) for a in agents]
    got = unprefixed("".join(o for o, _ in outs))
    want = sorted([f"initial tensor=tensor([{2 + 2 * r}, {3 + 2 * r}]), rank={r}" for r in range(6)]
                  + [f"after all_reduce tensor=tensor([42, 48]), rank={r}" for r in range(6)])
    ok = all(a.returncode == 0 for a in agents) and got == want
    harness.report(ok, "seed zhihu_all_reduce.py under torchrun, 2 nodes x 3 processes on cc: every rank prints "
                       f"tensor([42, 48]) as in the tutorial ({time.monotonic() - t0:.1f} s)"
                   + ("" if ok else f": got {got}, stderr {[e[-400:] for _, e in outs]}"))

    # torchrun --standalone, 3 processes: all_gather of each rank's seeded
    # torch.randn(4), printed as the program prints it, computed here
    t0 = time.monotonic()
    if not quick:
        p = subprocess.run(run + ["--standalone", "--nproc_per_node=3", os.path.join(SEEDS, "zhihu_all_gather.py")],
                           capture_output=True, text=True, timeout=120, env=env)
        weights = []
        for r in range(3):
            torch.manual_seed(r)
            weights.append(torch.randn((4)))
        want = sorted([f"weight={weights[r]}, rank={r},world_size=3" for r in range(3)]
                      + [f"after gather={weights}"] * 3)
        got = unprefixed(p.stdout)
        ok = p.returncode == 0 and got == want
        harness.report(ok, f"seed zhihu_all_gather.py under torchrun --standalone, 3 processes on cc: every rank "
                           f"gathers the 3 seeded weights ({time.monotonic() - t0:.1f} s)"
                       + ("" if ok else f": got {got} want {want}; {p.stderr[-400:]}"))

    subprocess.run(["rm", "-rf", logs])

    # init methods: tcp:// and file:// (env:// is what every other test uses),
    # two processes started one by one
    for method in ("tcp", "file"):
        t0 = time.monotonic()
        tmp = tempfile.mkdtemp(prefix="cc-torch-init-")
        port = harness.free_port()
        url = {"tcp": f"tcp://127.0.0.1:{port}", "file": f"file://{tmp}/rendezvous", "env": "env://"}[method]
        procs = []
        for r in range(2):
            e = dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r), WORLD_SIZE="2")
            procs.append(subprocess.Popen([PY, os.path.join(SEEDS, "init_methods.py"), url, str(r), "2"],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e))
        outs = [q.communicate(timeout=120) for q in procs]
        got = sorted_lines("".join(o for o, _ in outs))
        want = sorted(f"rank {r} of 2: mean loss 1.5" for r in range(2))
        ok = all(q.returncode == 0 for q in procs) and got == want
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
        harness.report(ok, f"init_method {url.split('127.0.0.1')[0] if method != 'file' else 'file://'}... "
                           f"(2 processes, backend cc): all_reduce, mean loss 1.5 on every rank "
                           f"({time.monotonic() - t0:.1f} s)" + ("" if ok else f": {got} {[e[-300:] for _, e in outs]}"))
    return 1 if harness.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
