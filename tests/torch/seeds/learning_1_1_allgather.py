# Reproduces the tutorial "集合通信操作学习" (learning collective operations),
# section 1.1 "allgather": four processes gather tensor([rank + 1.]) into a
# list on every rank. The tutorial ran gloo; the only change is the backend
# name, "cc" (SEED_BACKEND=gloo runs it on gloo).
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torch_cc  # noqa: F401  (registers the backend "cc")

BACKEND = os.environ.get("SEED_BACKEND", "cc")


def run_all_gather(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)

    tensor = torch.tensor([rank + 1.0], device=torch.device('cpu'))
    print(f"Rank {rank} before all_gather: {tensor}")

    gather_list = [torch.zeros_like(tensor) for _ in range(world_size)]

    dist.all_gather(gather_list, tensor)

    print(f"Rank {rank} after all_gather: {gather_list}")

    dist.destroy_process_group()


example = run_all_gather  # what the test harness runs


def main():
    world_size = 4  # four processes
    mp.spawn(run_all_gather,
             args=(world_size,),
             nprocs=world_size,
             join=True)


if __name__ == "__main__":
    main()

