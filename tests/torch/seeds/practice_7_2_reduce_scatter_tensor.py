# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 7.2 "Row reduce scatter (reduce_scatter_tensor)": the same as 7.1
# with the [4, 5] tensor passed whole to reduce_scatter_tensor. CPU tensors
# and backend "cc" instead of NCCL on GPUs (SEED_BACKEND=gloo for gloo, which
# has no reduce_scatter_tensor); nothing else differs.
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

    # the whole input: what 7.1's list holds, as one [world_size, 5] tensor
    input_tensor = torch.zeros(world_size, 5, device=DEVICE, dtype=torch.float)
    for i in range(world_size):
        input_tensor[i] = rank * 10 + i
    print(f"Rank {rank} input_tensor (shape {input_tensor.shape}):\n{input_tensor.cpu().numpy()}")

    output = torch.empty(1, 5, device=DEVICE, dtype=torch.float)

    # split along dim 0 into world_size blocks; block `rank`, summed, lands here
    dist.reduce_scatter_tensor(output, input_tensor, op=dist.ReduceOp.SUM)

    print(f"Rank {rank} after reduce_scatter_tensor (sum), output shape {output.shape}:\n"
          f"{output.cpu().numpy()}")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
