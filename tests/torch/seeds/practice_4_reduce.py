# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 4 "Reduce": the [1, 5] tensors of value rank summed on rank 0; every
# rank prints its tensor before and after. CPU tensors and backend "cc"
# instead of NCCL on GPUs (SEED_BACKEND=gloo for gloo); nothing else differs.
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

    tensor = torch.ones(1, 5, device=DEVICE) * rank
    print(f"Rank {rank} before reduce: {tensor.cpu().tolist()}")

    # the sum lands on rank 0; torch leaves the others' tensors undefined
    dist.reduce(tensor, dst=0, op=dist.ReduceOp.SUM)

    if rank == 0:
        print(f"Rank {rank} after reduce (sum): {tensor.cpu().tolist()}")
    else:
        print(f"Rank {rank} after reduce (tensor content undefined): {tensor.cpu().tolist()}")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
