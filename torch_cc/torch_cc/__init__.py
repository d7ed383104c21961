"""torch_cc - cc as a torch.distributed backend.

    import torch_cc                                  # registers the backend "cc"
    torch.distributed.init_process_group("cc", ...)  # the one-word change

Every collective, send/recv and barrier of torch.distributed on CPU tensors;
see docs/torch.md in the cc repository.
"""
import inspect

import torch
import torch.distributed as dist

from torch_cc import _C

__all__ = ["monitored_barrier", "cc_version", "torch_version_built"]

cc_version = _C.cc_version
torch_version_built = _C.torch_version_built


def _create_process_group(store, rank, world_size, timeout):
    """The plain creator (a torch without the extended API)."""
    return _C.create(store, rank, world_size, timeout)


def _create_process_group_extended(dist_opts, pg_options):
    """The extended creator: torch's DistributedBackendOptions (the group's
    name and its ranks in the world too)."""
    return _C.create(dist_opts.store, dist_opts.group_rank, dist_opts.group_size, dist_opts.timeout,
                     str(dist_opts.group_id), [int(r) for r in dist_opts.global_ranks_in_group])


def _register():
    backend = dist.Backend
    if "CC" in getattr(backend, "_plugins", {}):
        return
    params = inspect.signature(backend.register_backend).parameters
    if "devices" in params:  # torch >= 2.1: the devices the backend serves
        backend.register_backend("cc", _create_process_group_extended, extended_api=True, devices=["cpu"])
    elif "extended_api" in params:
        backend.register_backend("cc", _create_process_group_extended, extended_api=True)
    else:
        backend.register_backend("cc", _create_process_group)


def _check_built_for_this_torch():
    built = torch_version_built.split(".")[:2]
    running = torch.__version__.split("+")[0].split(".")[:2]
    if built != running:
        raise ImportError(f"torch_cc was built against torch {torch_version_built} but torch "
                          f"{torch.__version__} is imported: rebuild it (make torch, or pip install "
                          f"--no-build-isolation ./torch_cc)")


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """torch.distributed.monitored_barrier for cc groups (torch 1.13's own one
    refuses every backend but gloo). Rank 0 names the ranks that did not
    arrive within `timeout` (a datetime.timedelta; default: the group's)."""
    from torch.distributed.distributed_c10d import _get_default_group, default_pg_timeout
    pg = _get_default_group() if group is None else group
    return pg.monitored_barrier(default_pg_timeout if timeout is None else timeout, wait_all_ranks=wait_all_ranks)


_check_built_for_this_torch()
_register()
