# Reproduces the tutorial "彻底搞清楚torch.distributed分布式数据通信all_gather、all_reduce"
# (all_gather and all_reduce of torch.distributed, explained), section
# all_gather, "示例" (example): a test.py started by torchrun on every rank
# (the tutorial: 2 nodes x 3 processes) that all_gathers a random 4-element
# tensor. Changes: CPU instead of Ascend NPUs, backend "cc" instead of hccl
# (SEED_BACKEND=gloo for gloo), and the random numbers seeded by the rank so
# that two runs print the same.
import os

import torch
import torch.distributed as dist

import torch_cc  # noqa: F401  (registers the backend "cc")

BACKEND = os.environ.get("SEED_BACKEND", "cc")


def all_gather_func():
    rank = int(os.getenv('LOCAL_RANK'))
    dist.init_process_group(backend=BACKEND, init_method='env://')

    word_size = dist.get_world_size()
    torch.manual_seed(dist.get_rank())  # added: the same numbers on every run

    weight = torch.randn((4))
    gather_list = [torch.empty_like(weight) for i in range(word_size)]

    print(f"weight={weight}, rank={rank},world_size={word_size}")

    dist.all_gather(gather_list, weight)
    print(f"after gather={gather_list}")


if __name__ == '__main__':
    all_gather_func()
