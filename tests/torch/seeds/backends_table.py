# Reproduces the page "torch.distributed supports three built-in backends"
# (the table of backends x functions with one test snippet per function:
# send, recv, broadcast, all_reduce, reduce, all_gather, gather, scatter,
# reduce_scatter, all_to_all, barrier), one example per snippet, each in its
# own job of 4 processes (send/recv: 2, as on the page). The backend is "cc"
# (SEED_BACKEND=gloo runs them on gloo: it has no reduce_scatter and no
# all_to_all, as the page's table says).
#
# Where a snippet cannot run on any backend it is changed as little as makes
# it run, and says so: the page receives and scatters int64 data into
# float32 buffers (torch.empty(1)), and passes all_to_all two tensors (one
# int64, one int32) where torch takes lists of one dtype.
#
# `python3 backends_table.py [NAME...]` runs those snippets (default all).
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torch_cc  # noqa: F401  (registers the backend "cc")

BACKEND = os.environ.get("SEED_BACKEND", "cc")
os.environ.setdefault('MASTER_ADDR', 'localhost')
os.environ.setdefault('MASTER_PORT', os.environ.get('SEED_PORT', '62116'))


def send_recv(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    tensor = torch.tensor([1, 2, 3])
    if dist.get_rank() == 0:
        dist.send(tensor=tensor, dst=1)
    elif dist.get_rank() == 1:
        recv_tensor = torch.empty(3, dtype=torch.int64)  # page: torch.empty(3), float32
        dist.recv(tensor=recv_tensor, src=0)
        print(recv_tensor)
    dist.destroy_process_group()


def broadcast(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    tensor = torch.tensor([0])
    if dist.get_rank() == 0:
        tensor += 1  # only rank 0 changes it
    dist.broadcast(tensor, src=0)
    print(f"Rank {dist.get_rank()}: {tensor}")
    dist.destroy_process_group()


def all_reduce(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    tensor = torch.tensor([dist.get_rank() + 1])
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    print(f"Rank {dist.get_rank()}: {tensor}")
    dist.destroy_process_group()


def reduce(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    tensor = torch.tensor([dist.get_rank() + 1])
    dist.reduce(tensor, dst=0, op=dist.ReduceOp.SUM)
    if dist.get_rank() == 0:
        print(f"Reduced result: {tensor}")
    dist.destroy_process_group()


def all_gather(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    tensor = torch.tensor([dist.get_rank()])
    gather_list = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(gather_list, tensor)
    print(f"Rank {dist.get_rank()}: {gather_list}")
    dist.destroy_process_group()


def gather(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    tensor = torch.tensor([dist.get_rank()])
    if dist.get_rank() == 0:
        gather_list = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    else:
        gather_list = None
    dist.gather(tensor, gather_list, dst=0)
    if dist.get_rank() == 0:
        print(f"Gathered result: {gather_list}")
    dist.destroy_process_group()


def scatter(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    if dist.get_rank() == 0:
        scatter_list = [torch.tensor([i]) for i in range(dist.get_world_size())]
    else:
        scatter_list = None
    tensor = torch.empty(1, dtype=torch.int64)  # page: torch.empty(1), float32
    dist.scatter(tensor, scatter_list, src=0)
    print(f"Rank {dist.get_rank()}: {tensor}")
    dist.destroy_process_group()


def reduce_scatter(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    input = [torch.tensor([dist.get_rank() + 1]) for _ in range(dist.get_world_size())]
    output = torch.empty(1, dtype=torch.int64)  # page: torch.empty(1), float32
    dist.reduce_scatter(output, input, op=dist.ReduceOp.SUM)
    print(f"Rank {dist.get_rank()}: {output}")
    dist.destroy_process_group()


def all_to_all(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    input = torch.tensor([dist.get_rank()] * dist.get_world_size())
    output = torch.empty(dist.get_world_size(), dtype=torch.int64)  # page: dtype=torch.int
    # page: dist.all_to_all(output, input); torch takes lists: one element each
    dist.all_to_all(list(output.split(1)), list(input.split(1)))
    print(f"Rank {dist.get_rank()}: {output}")
    dist.destroy_process_group()


def barrier(rank, world_size):
    dist.init_process_group(BACKEND, rank=rank, world_size=world_size)
    print(f"Rank {dist.get_rank()} reached barrier.")
    dist.barrier()
    print(f"Rank {dist.get_rank()} passed barrier.")
    dist.destroy_process_group()


EXAMPLES = {"send_recv": send_recv, "broadcast": broadcast, "all_reduce": all_reduce, "reduce": reduce,
            "all_gather": all_gather, "gather": gather, "scatter": scatter, "reduce_scatter": reduce_scatter,
            "all_to_all": all_to_all, "barrier": barrier}
WORLD_SIZES = {"send_recv": 2}


def main():
    for name in sys.argv[1:] or list(EXAMPLES):
        ws = WORLD_SIZES.get(name, 4)
        mp.spawn(EXAMPLES[name], args=(ws,), nprocs=ws, join=True)


if __name__ == "__main__":
    main()
