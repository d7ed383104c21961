# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 8.2 "Column alltoall": every rank's [5, 4] tensor (column j holds
# rank*10 + j) cut into contiguous [5, 1] columns, exchanged with all_to_all
# (the list form) and put back together along dim 1. CPU tensors and backend
# "cc" instead of NCCL on GPUs (SEED_BACKEND=gloo for gloo, which has no
# all_to_all of lists); nothing else differs.
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

    local_tensor = torch.zeros(5, world_size, device=DEVICE, dtype=torch.float)
    for col in range(world_size):
        local_tensor[:, col] = rank * 10 + col
    print(f"Rank {rank} local tensor (shape {local_tensor.shape}):\n{local_tensor.cpu().numpy()}")

    # column col goes to rank col, made contiguous
    input_list = [local_tensor[:, col:col + 1].contiguous() for col in range(world_size)]
    output_list = [torch.empty(5, 1, device=DEVICE, dtype=torch.float) for _ in range(world_size)]

    dist.all_to_all(output_list, input_list)

    result = torch.cat(output_list, dim=1)

    print(f"Rank {rank} after column-wise all_to_all (shape {result.shape}):\n{result.cpu().numpy()}")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
