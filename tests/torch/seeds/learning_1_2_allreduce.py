# Reproduces the tutorial "集合通信操作学习" (learning collective operations),
# section 1.2 "allreduce": four processes sum tensor([rank + 1.]). The
# tutorial ran gloo; the only change is the backend name, "cc"
# (SEED_BACKEND=gloo runs it on gloo).
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torch_cc  # noqa: F401  (registers the backend "cc")

BACKEND = os.environ.get("SEED_BACKEND", "cc")


def run_all_reduce(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)

    tensor = torch.tensor([rank + 1.0], device=torch.device('cpu'))
    print(f"Rank {rank} before all_reduce: {tensor}")

    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)

    print(f"Rank {rank} after all_reduce: {tensor}")

    dist.destroy_process_group()


example = run_all_reduce  # what the test harness runs


def main():
    world_size = 4  # four processes
    mp.spawn(run_all_reduce,
             args=(world_size,),
             nprocs=world_size,
             join=True)


if __name__ == "__main__":
    main()

