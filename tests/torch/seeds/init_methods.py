# Reproduces the page "分布式通信包 - torch.distributed" (the distributed
# communication package), sections 2.1 "TCP初始化" (tcp:// init with rank 0's
# address and every rank's rank given), 2.2 "共享文件系统初始化" (file:// init on
# a file every process sees) and 2.4 "环境变量初始化" (env://, from MASTER_ADDR,
# MASTER_PORT, RANK, WORLD_SIZE), followed by section 3's use of all_reduce:
# sum every process's loss, then divide by the world size.
#
#     init_methods.py INIT_METHOD RANK WORLD_SIZE     (one process per rank)
#
# The backend is "cc" (SEED_BACKEND=gloo for gloo); the page leaves it open.
import argparse
import os

import torch
import torch.distributed as dist

import torch_cc  # noqa: F401  (registers the backend "cc")

BACKEND = os.environ.get("SEED_BACKEND", "cc")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("init_method")
    p.add_argument("rank", type=int)
    p.add_argument("world_size", type=int)
    args = p.parse_args()
    if args.init_method == "env://":
        dist.init_process_group(BACKEND)  # everything from the environment
    else:
        dist.init_process_group(BACKEND, init_method=args.init_method, rank=args.rank,
                                world_size=args.world_size)
    loss = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(loss, op=dist.ReduceOp.SUM)
    loss /= dist.get_world_size()
    print(f"rank {dist.get_rank()} of {dist.get_world_size()}: mean loss {loss.item()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
