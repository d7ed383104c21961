# Reproduces the tutorial "集合通信操作学习" (learning collective operations),
# section 1.4 "reducescatter": every process holds ones(2 * 4) * (rank + 1)
# and passes it as a one-element list; each receives 2 elements of the sum.
# The tutorial names gloo, which has no reduce_scatter (it raises); backend
# "cc" takes a one-tensor list holding every rank's block, as
# reduce_scatter_tensor does, and prints what the tutorial shows. The only
# change is the backend name (SEED_BACKEND=gloo runs it on gloo).
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torch_cc  # noqa: F401  (registers the backend "cc")

BACKEND = os.environ.get("SEED_BACKEND", "cc")


def run_reduce_scatter(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)

    tensor_size = 2  # elements each process receives
    input_tensor = torch.ones(tensor_size * world_size) * (rank + 1)
    print(f"Rank {rank} before reduce_scatter: {input_tensor}")

    output_tensor = torch.empty(tensor_size)

    dist.reduce_scatter(output_tensor, [input_tensor], op=dist.ReduceOp.SUM)

    print(f"Rank {rank} after reduce_scatter: {output_tensor}")

    dist.destroy_process_group()


example = run_reduce_scatter  # what the test harness runs


def main():
    world_size = 4  # four processes
    mp.spawn(run_reduce_scatter,
             args=(world_size,),
             nprocs=world_size,
             join=True)


if __name__ == "__main__":
    main()

