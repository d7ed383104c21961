# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 7.1 "Row reduce scatter (dist.reduce_scatter)": every rank's [4, 5]
# tensor (row i holds rank*10 + i) as a list of [1, 5] rows; rank r receives
# the sum of everyone's row r. CPU tensors and backend "cc" instead of NCCL on
# GPUs (SEED_BACKEND=gloo for gloo, which has no reduce_scatter); nothing else
# differs.
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

    data = torch.zeros(world_size, 5, device=DEVICE, dtype=torch.float)
    for i in range(world_size):
        data[i] = rank * 10 + i

    print(f"Rank {rank} original data (shape {data.shape}):\n{data.cpu().numpy()}")

    # one [1, 5] row per rank
    input_list = [data[i].unsqueeze(0) for i in range(world_size)]
    output = torch.empty(1, 5, device=DEVICE, dtype=torch.float)

    dist.reduce_scatter(output, input_list, op=dist.ReduceOp.SUM)

    print(f"Rank {rank} after reduce_scatter (sum), output shape {output.shape}:\n{output.cpu().numpy()}")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
