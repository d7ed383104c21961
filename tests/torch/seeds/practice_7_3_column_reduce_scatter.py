# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 7.3 "Column reduce scatter": every rank's [5, 4] tensor (column j
# holds rank*10 + j) split into [5, 1] columns (views, not contiguous); rank r
# receives the sum of everyone's column r. CPU tensors and backend "cc"
# instead of NCCL on GPUs (SEED_BACKEND=gloo for gloo, which has no
# reduce_scatter); nothing else differs.
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

    data = torch.zeros(5, world_size, device=DEVICE, dtype=torch.float)
    for j in range(world_size):
        data[:, j] = rank * 10 + j
    print(f"Rank {rank} original data (shape {data.shape}):\n{data.cpu().numpy()}")

    # world_size blocks of [5, 1], cut along dim 1
    input_list = list(torch.split(data, 1, dim=1))

    output = torch.empty(5, 1, device=DEVICE, dtype=torch.float)

    dist.reduce_scatter(output, input_list, op=dist.ReduceOp.SUM)

    print(f"Rank {rank} after reduce_scatter (sum), output shape {output.shape}:\n{output.cpu().numpy()}")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
