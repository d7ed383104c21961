# Started by torchrun --max-restarts 1 (tests/torch/test_torchrun.py). Round 0
# (TORCHELASTIC_RESTART_COUNT=0): after an all_reduce, rank 2 kills itself
# with SIGKILL while the others all_reduce in a loop; they raise (cc names
# the lost rank) and exit 3, and the agent starts the round again. Round 1:
# a new cc communicator, an all_reduce; exit 0.
import os
import signal
import time

import torch
import torch.distributed as dist

import torch_cc  # noqa: F401

rnd = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
dist.init_process_group("cc")
r, w = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(r + 1)])
dist.all_reduce(t)
if rnd == 0:
    if r == 2:
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 30:
            dist.all_reduce(torch.ones(1))
        print(f"round 0 rank {r}: no error in 30 s", flush=True)
    except RuntimeError as e:
        print(f"round 0 rank {r}: {str(e).splitlines()[0][:160]}", flush=True)
    os._exit(3)
print(f"round {rnd} rank {r} of {w}: sum {t.item():g}", flush=True)
dist.destroy_process_group()
