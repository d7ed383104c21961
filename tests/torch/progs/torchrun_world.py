# Started by torchrun (tests/torch/test_torchrun.py): env:// from torchrun's
# variables, backend "cc"; an all_reduce, an all_gather, and rank 0 receiving
# from every other rank from any source.
import os

import torch
import torch.distributed as dist

import torch_cc  # noqa: F401

dist.init_process_group("cc")
r, w = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(r + 1)])
dist.all_reduce(t)
lst = [torch.zeros(1) for _ in range(w)]
dist.all_gather(lst, torch.tensor([float(r)]))
srcs = []
if r == 0:
    srcs = sorted(dist.recv(torch.zeros(1)) for _ in range(w - 1))
else:
    dist.send(torch.tensor([float(r)]), 0)
print(f"rank {r} of {w} (local {os.environ['LOCAL_RANK']}): sum {t.item():g}, gathered "
      f"{[int(x.item()) for x in lst]}, from any source {srcs}", flush=True)
dist.destroy_process_group()
