"""Shared by the torch tests (tests/torch/test_torch.sh runs them): start a job of N
ranks as forked processes of this one (torch is imported once, so a job starts
in milliseconds instead of a second per rank), each with its own output file,
a free port on 127.0.0.1, RANK/WORLD_SIZE/MASTER_* set as torchrun sets them,
and a time limit after which every rank left is killed.

Results are PASS:/FAIL:/SKIP: lines, as tests/run.sh counts them.
"""
import multiprocessing
import os
import signal
import socket
import sys
import tempfile
import time
import traceback

import torch  # noqa: F401  (imported before forking, once)
import torch.distributed as dist  # noqa: F401

import torch_cc  # noqa: F401  (registers "cc")

_failures = 0


def report(ok, what):
    global _failures
    print(("PASS: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        _failures += 1
    return ok


def skip(what):
    print("SKIP: " + what, flush=True)


def failures():
    return _failures


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _child(fn, rank, ws, port, path, args, env, done=None):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = sys.stdout
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "WORLD_SIZE": str(ws), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(ws)})
    os.environ.update(env or {})
    code = 0
    try:
        fn(rank, ws, *args)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    # Every rank leaves together (at most 10 s apart): with env:// torch 1.13's
    # store lives in rank 0, and its _store_based_barrier polls it every 10 ms,
    # so a rank 0 that is done first (a send, or a broadcast's root, returns
    # once its data is written) would take the store away from a rank still
    # polling there ("Connection reset by peer" in init_process_group).
    if done is not None:
        try:
            done.wait(10)
        except Exception:
            pass
    os._exit(code)


class Result:
    def __init__(self, codes, outputs, seconds, killed_at=None):
        self.codes = codes        # exit status per rank (-N: killed by signal N; None: still ran at the limit)
        self.outputs = outputs    # what each rank printed
        self.seconds = seconds
        self.killed_at = killed_at  # time.time() of the SIGKILL (kill=...)

    @property
    def ok(self):
        return all(c == 0 for c in self.codes)

    def why(self):
        lines = []
        for r, (c, o) in enumerate(zip(self.codes, self.outputs)):
            if c != 0:
                tail = "\n".join(o.strip().splitlines()[-6:])
                lines.append(f"rank {r} exited {c}: {tail}")
        return "; ".join(lines) or "ok"


def run_job(fn, ws, args=(), timeout=60.0, env=None, kill=None):
    """Runs fn(rank, ws, *args) in ws forked ranks; returns a Result.
    kill=(rank, seconds): SIGKILL that rank after that many seconds."""
    ctx = multiprocessing.get_context("fork")
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="cc-torch-test-")
    paths = [os.path.join(tmp, f"rank{r}.out") for r in range(ws)]
    done = ctx.Barrier(ws) if kill is None else None
    procs = [ctx.Process(target=_child, args=(fn, r, ws, port, paths[r], args, env, done)) for r in range(ws)]
    t0 = time.monotonic()
    for p in procs:
        p.start()
    deadline = t0 + timeout
    killed = None
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        if kill and killed is None and time.monotonic() - t0 >= kill[1]:
            os.kill(procs[kill[0]].pid, signal.SIGKILL)
            killed = time.time()
        time.sleep(0.005)
    codes = []
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
            codes.append(None)
        else:
            p.join()
            codes.append(p.exitcode)
    secs = time.monotonic() - t0
    outs = []
    for path in paths:
        with open(path, errors="replace") as f:
            outs.append(f.read())
        os.unlink(path)
    os.rmdir(tmp)
    return Result(codes, outs, secs, killed)
