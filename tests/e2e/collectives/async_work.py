# async_op=True: the output is the result only once the Work is waited on;
# a read before wait() races with the collective in PyTorch.
import torch
import torch.distributed as dist
from torch.distributed import _coalescing_manager


def _share(x):
    rank, world = dist.get_rank(), dist.get_world_size()
    return x * (rank + 1) * 2 / (world * (world + 1))


class AsyncSum(torch.nn.Module):
    def __init__(self, read_early):
        super().__init__()
        self.read_early = read_early

    def forward(self, x):
        total = x.clone()
        work = dist.all_reduce(total, async_op=True)
        early = total * 1.0  # before wait(): whatever the buffer holds
        work.wait()
        return early if self.read_early else total


class CoalescedSums(torch.nn.Module):
    """Two all-reduces in one coalescing block: they run when it ends (or at
    cm.wait() with async_ops=True)."""

    def __init__(self, async_ops, read_inside):
        super().__init__()
        self.async_ops, self.read_inside = async_ops, read_inside

    def forward(self, x):
        a, b = x.clone(), (2 * x).clone()
        with _coalescing_manager(async_ops=self.async_ops) as cm:
            dist.all_reduce(a)
            dist.all_reduce(b)
            inside = a + b
        if self.async_ops:
            cm.wait()
        return inside if self.read_inside else a + b


def wait_then_read():
    return AsyncSum(read_early=False), (_share(torch.randn(3)),)


def read_before_wait():
    return AsyncSum(read_early=True), (_share(torch.randn(3)),)


def coalesced():
    return CoalescedSums(async_ops=False, read_inside=False), (_share(torch.randn(3)),)


def coalesced_async():
    return CoalescedSums(async_ops=True, read_inside=False), (_share(torch.randn(3)),)


def coalesced_read_inside():
    return CoalescedSums(async_ops=False, read_inside=True), (_share(torch.randn(3)),)
