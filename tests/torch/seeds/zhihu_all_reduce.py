# Reproduces the tutorial "彻底搞清楚torch.distributed分布式数据通信all_gather、all_reduce"
# (all_gather and all_reduce of torch.distributed, explained), section
# all_reduce, "示例" (example): a test.py started by torchrun on every rank
# (the tutorial: 2 nodes x 3 processes) that sums tensor([2, 3]) + 2 * rank;
# with 6 ranks every rank prints tensor([42, 48]). Changes: CPU instead of
# Ascend NPUs, backend "cc" instead of hccl (SEED_BACKEND=gloo for gloo).
import os

import torch
import torch.distributed as dist

import torch_cc  # noqa: F401  (registers the backend "cc")

BACKEND = os.environ.get("SEED_BACKEND", "cc")


def all_reduce_func():
    dist.init_process_group(backend=BACKEND, init_method='env://')
    rank = dist.get_rank()

    tensor = torch.tensor([2, 3]) + rank * 2
    print("initial tensor={}, rank={}".format(tensor, rank))
    torch.distributed.all_reduce(tensor)
    print("after all_reduce tensor={}, rank={}".format(tensor, rank))


if __name__ == '__main__':
    all_reduce_func()
