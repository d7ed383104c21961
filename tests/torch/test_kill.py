"""Backend "cc" when things go wrong: a rank killed (SIGKILL) in the middle of
a stream of all_reduces, blocking and asynchronous: every survivor must raise
RuntimeError naming the killed rank within a few seconds, never hang, and can
still destroy its process group; ranks that call collectives of different
sizes both raise RuntimeError saying so, and the group then refuses every
later call at once (cc's communicator failed) instead of hanging.

    PYTHONPATH=build/python python3 tests/torch/test_kill.py
"""
import os
import sys
import time

import torch
import torch.distributed as dist

import harness

LIMIT_S = 5.0  # a survivor must raise within this long of the kill


def victim_job(rank, ws, victim, async_op):
    dist.init_process_group("cc", rank=rank, world_size=ws)
    t = torch.ones(64 * 1024)
    n = 0
    try:
        while True:  # until the victim is killed: the harness kills it 1.5 s in
            if async_op:
                w1 = dist.all_reduce(t, async_op=True)
                w2 = dist.broadcast(t, 0, async_op=True)
                w1.wait()
                w2.wait()
            else:
                dist.all_reduce(t)
            t.fill_(1.0)
            n += 1
    except RuntimeError as e:
        msg = str(e).splitlines()[0]
        print(f"RAISED at={time.time():.3f} after={n} msg={msg}", flush=True)
    try:
        dist.destroy_process_group()
        print("DESTROYED", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"DESTROY-FAILED {e}", flush=True)


def mismatch_job(rank, ws):
    dist.init_process_group("cc", rank=rank, world_size=ws)
    t = torch.ones(4 + (rank == 1))
    try:
        dist.all_reduce(t)
        print("FIRST ok", flush=True)
    except RuntimeError as e:
        print(f"FIRST raised {str(e).splitlines()[0]}", flush=True)
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(4))
        print("SECOND ok", flush=True)
    except RuntimeError as e:
        print(f"SECOND raised in={time.monotonic() - t0:.3f} {str(e).splitlines()[0]}", flush=True)
    dist.destroy_process_group()


def main():
    for ws, victim, async_op in ((2, 1, False), (3, 1, True), (4, 2, False)):
        what = f"torch kill world {ws}: rank {victim} killed in {'async' if async_op else 'blocking'} all_reduces"
        res = harness.run_job(victim_job, ws, args=(victim, async_op), timeout=60, kill=(victim, 1.5),
                              env={"CC_TIMEOUT": "60"})
        bad = []
        for r in range(ws):
            if r == victim:
                if res.codes[r] != -9:
                    bad.append(f"rank {r} (the victim) exited {res.codes[r]}, not by SIGKILL")
                continue
            out = res.outputs[r]
            raised = [line for line in out.splitlines() if line.startswith("RAISED ")]
            if res.codes[r] is None:
                bad.append(f"rank {r} still ran after 60 s (hung)")
            elif not raised:
                bad.append(f"rank {r} did not raise: {out[-300:]}")
            else:
                at = float(raised[0].split()[1].split("=")[1])
                msg = raised[0].split("msg=", 1)[1]
                late = at - res.killed_at
                if late > LIMIT_S:
                    bad.append(f"rank {r} raised {late:.1f} s after the kill")
                if f"rank {victim}" not in msg:
                    bad.append(f"rank {r}'s message does not name rank {victim}: {msg}")
                if "DESTROYED" not in out:
                    bad.append(f"rank {r} could not destroy its group: {out[-200:]}")
        late = [float(line.split()[1].split("=")[1]) - res.killed_at for out in res.outputs
                for line in out.splitlines() if line.startswith("RAISED ")]
        sample = next((line.split("msg=", 1)[1] for out in res.outputs for line in out.splitlines()
                       if line.startswith("RAISED ")), "")
        harness.report(not bad and res.killed_at is not None,
                       f"{what}: every survivor raised RuntimeError naming it, at most "
                       f"{max(late) if late else float('nan'):.2f} s after the kill (\"{sample[:160]}\")"
                       + ("" if not bad else f": {bad}"))

    for ws in (2, 3):
        res = harness.run_job(mismatch_job, ws, timeout=60, env={"CC_TIMEOUT": "60"})
        firsts = [line for out in res.outputs for line in out.splitlines() if line.startswith("FIRST ")]
        seconds = [line for out in res.outputs for line in out.splitlines() if line.startswith("SECOND ")]
        ok = (res.ok and len(firsts) == ws and all("raised" in f for f in firsts)
              and any("mismatch" in f.lower() or "called" in f for f in firsts)
              and len(seconds) == ws and all(s.startswith("SECOND raised") for s in seconds)
              and all(float(s.split()[2].split("=")[1]) < 1.0 for s in seconds))
        harness.report(ok, f"torch mismatch world {ws}: rank 1 all_reduces 5 elements, the others 4: every rank "
                           f"raises RuntimeError, and the next call raises at once"
                           + (f" (\"{firsts[0][13:170]}\")" if firsts else "")
                           + ("" if ok else f": {firsts} {seconds} {res.why()}"))
    return 1 if harness.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
