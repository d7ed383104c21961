# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 2.2 "Column Gather": every rank's [5, 2] tensor (column j holds
# rank*10 + j), gathered on rank 0 and concatenated along dim 1 into [5, 8].
# CPU tensors and backend "cc" instead of NCCL on GPUs (SEED_BACKEND=gloo for
# gloo); nothing else differs.
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
    local_tensor = torch.zeros(5, cols_per_rank, device=DEVICE, dtype=torch.float)
    for col in range(cols_per_rank):
        local_tensor[:, col] = rank * 10 + col

    print(f"Rank {rank} local tensor (shape {local_tensor.shape}):\n{local_tensor.cpu().numpy()}")

    if rank == 0:
        gather_list = [torch.empty_like(local_tensor, device=DEVICE) for _ in range(world_size)]
    else:
        gather_list = None

    dist.gather(local_tensor, gather_list=gather_list, dst=0)

    if rank == 0:
        gathered = torch.cat(gather_list, dim=1)
        print(f"\nRank {0} final gathered tensor (shape {gathered.shape}):\n{gathered.cpu().numpy()}")
    else:
        print(f"Rank {rank} has sent its data, no local copy of gathered tensor.\n")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
