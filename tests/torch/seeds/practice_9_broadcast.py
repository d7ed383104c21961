# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 9 "Broadcast": rank 0's [5, 2] tensor of ones over the other ranks'
# zeros. CPU tensors and backend "cc" instead of NCCL on GPUs
# (SEED_BACKEND=gloo for gloo); nothing else differs.
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torch_cc  # noqa: F401

BACKEND = os.environ.get("SEED_BACKEND", "cc")
DEVICE = "cpu"
os.environ['MASTER_ADDR'] = 'localhost'
os.environ['MASTER_PORT'] = os.environ.get('SEED_PORT', '62115')


def example(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)

    shape = (5, 2)

    if rank == 0:
        tensor = torch.ones(shape, device=DEVICE, dtype=torch.float)
        print(f"Rank {rank} before broadcast:\n{tensor.cpu().numpy()}")
    else:
        tensor = torch.zeros(shape, device=DEVICE, dtype=torch.float)
        print(f"Rank {rank} before broadcast (initial zeros):\n{tensor.cpu().numpy()}")

    dist.broadcast(tensor, src=0)

    print(f"Rank {rank} after broadcast:\n{tensor.cpu().numpy()}")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
