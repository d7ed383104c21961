# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 5 "All reduce": its two examples, a [1, 5] tensor of value rank
# (printed as lists) and a [2, 5] one (printed as arrays), summed on every
# rank. CPU tensors and backend "cc" instead of NCCL on GPUs
# (SEED_BACKEND=gloo for gloo); nothing else differs.
# `python3 practice_5_all_reduce.py [row|matrix]` runs one (default both).
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torch_cc  # noqa: F401

BACKEND = os.environ.get("SEED_BACKEND", "cc")
DEVICE = "cpu"
os.environ['MASTER_ADDR'] = 'localhost'
os.environ['MASTER_PORT'] = os.environ.get('SEED_PORT', '62115')


def example_row(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)

    tensor = torch.ones(1, 5, device=DEVICE) * rank
    print(f"Rank {rank} before all_reduce: {tensor.cpu().tolist()}")

    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)

    print(f"Rank {rank} after all_reduce (sum): {tensor.cpu().tolist()}")


def example_matrix(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)

    tensor = torch.full((2, 5), rank, dtype=torch.float, device=DEVICE)
    print(f"Rank {rank} before all_reduce:\n{tensor.cpu().numpy()}")

    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)

    print(f"Rank {rank} after all_reduce (sum):\n{tensor.cpu().numpy()}")


EXAMPLES = {"row": example_row, "matrix": example_matrix}


def main():
    world_size = 4
    for name in sys.argv[1:] or list(EXAMPLES):
        mp.spawn(EXAMPLES[name], args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
