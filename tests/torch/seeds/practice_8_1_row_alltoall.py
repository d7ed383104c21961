# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 8.1 "Row alltoall": all_to_all_single over a [4, 2] tensor whose
# row d is what this rank sends to rank d (rank*10 + d). CPU tensors and
# backend "cc" instead of NCCL on GPUs (SEED_BACKEND=gloo for gloo); nothing
# else differs.
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

    element_size = 2  # elements per block

    # row dst: the block for rank dst
    send_tensor = torch.zeros(world_size, element_size, device=DEVICE, dtype=torch.float)
    for dst in range(world_size):
        send_tensor[dst] = rank * 10 + dst
    print(f"Rank {rank} send_tensor (before alltoall):\n{send_tensor.cpu().numpy()}")

    recv_tensor = torch.empty(world_size, element_size, device=DEVICE, dtype=torch.float)

    # one tensor each way: split evenly along dim 0
    dist.all_to_all_single(recv_tensor, send_tensor)

    print(f"\nRank {rank} recv_tensor (after alltoall):\n{recv_tensor.cpu().numpy()}")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
