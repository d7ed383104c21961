# Reproduces the tutorial "集合通信实践" (collective communication practice),
# section 2.1 "Row Gather": every rank's [1, 5] tensor of its rank, gathered
# on rank 0 and concatenated along dim 0. The tutorial ran NCCL on GPUs; here
# the tensors are on the CPU and the backend is "cc" (SEED_BACKEND=gloo runs
# the same program on gloo). Nothing else differs.
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torch_cc  # noqa: F401  (registers the backend "cc")

BACKEND = os.environ.get("SEED_BACKEND", "cc")
DEVICE = "cpu"
os.environ['MASTER_ADDR'] = 'localhost'
os.environ['MASTER_PORT'] = os.environ.get('SEED_PORT', '62115')


def example(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)

    # the local tensor: shape [1, 5], every value the rank
    tensor = torch.ones(1, 5, device=DEVICE) * rank

    # only the destination (rank 0) makes the list that receives
    if rank == 0:
        gather_list = [torch.empty_like(tensor) for _ in range(world_size)]
    else:
        gather_list = None

    dist.gather(tensor, gather_list=gather_list, dst=0)

    if rank == 0:
        gathered_tensor = torch.cat(gather_list, dim=0)
        print(f"Rank {rank} gathered tensor shape: {gathered_tensor.shape}")
        print("Gathered tensor:\n", gathered_tensor)
    else:
        print(f"Rank {rank} has sent its data, no local copy of gathered tensor.")


def main():
    world_size = 4
    mp.spawn(example, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
