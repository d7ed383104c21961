# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 3.1 "Row allgather": all_gather of every rank's [1, 5] tensor, then
# torch.cat along dim 0 into [4, 5] on every rank (and a one-second pause
# before printing, as the tutorial has). CPU tensors and backend "cc" instead
# of NCCL on GPUs (SEED_BACKEND=gloo for gloo); nothing else differs.
import os
import time

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

    tensor_shard = torch.ones(1, 5, device=DEVICE) * rank
    tensor_gather_list = [torch.empty_like(tensor_shard) for _ in range(world_size)]

    dist.all_gather(tensor_gather_list, tensor_shard)

    gathered_tensor = torch.cat(tensor_gather_list, dim=0)
    print(f"rank {rank} after cat: {gathered_tensor.shape}")

    time.sleep(1)
    print(f"Rank {rank} gathered tensor:\n", gathered_tensor)


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
