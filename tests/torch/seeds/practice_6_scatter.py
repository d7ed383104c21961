# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 6 "Scatter": rank 0 splits a [4, 5] tensor of row numbers into rows
# and scatters one row to each rank. CPU tensors and backend "cc" instead of
# NCCL on GPUs (SEED_BACKEND=gloo for gloo); nothing else differs.
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

    recv_tensor = torch.empty(5, device=DEVICE, dtype=torch.float)

    if rank == 0:
        data_to_scatter = torch.arange(world_size, device=DEVICE).float().unsqueeze(1).repeat(1, 5)
        print(f"Rank {rank}: Original data to scatter:\n{data_to_scatter.cpu().numpy()}")
        scatter_list = [data_to_scatter[i] for i in range(world_size)]
        print(f"Rank {rank}: Scatter list shapes: {[t.shape for t in scatter_list]}")
    else:
        scatter_list = None

    dist.scatter(recv_tensor, scatter_list=scatter_list, src=0)

    print(f"Rank {rank} received tensor of shape {recv_tensor.shape}:\n{recv_tensor.cpu().numpy()}")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
