# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 3.2 "Column allgather": all_gather of every rank's [5, 2] tensor
# (column j holds rank*10 + j), concatenated along dim 1 into [5, 8] on every
# rank. CPU tensors and backend "cc" instead of NCCL on GPUs
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

    cols_per_rank = 2
    tensor = torch.zeros(5, cols_per_rank, device=DEVICE, dtype=torch.float)
    for j in range(cols_per_rank):
        tensor[:, j] = rank * 10 + j
    print(f"Rank {rank} local tensor shape {tensor.shape}:\n{tensor.cpu().numpy()}")

    gather_list = [torch.empty_like(tensor) for _ in range(world_size)]
    dist.all_gather(gather_list, tensor)

    gathered_tensor = torch.cat(gather_list, dim=1)
    print(f"Rank {rank} after column-wise all_gather, shape {gathered_tensor.shape}:\n"
          f"{gathered_tensor.cpu().numpy()}")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
