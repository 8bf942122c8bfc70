# A small Megatron-style framework written as picotron and nanotron write
# theirs (our code, not theirs): parameters carry no `partition_dim`; which
# shard of the whole a rank holds is said by the framework's own slice
# metadata, or by the part of a whole master weight a rank keeps.
import dataclasses

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


# Names this module only touches while it is imported: an annotation, a
# decorator on a helper the model never calls.
def storage_of(t: torch.Tensor) -> torch.UntypedStorage:
    return t.untyped_storage()


@torch.jit.script_if_tracing
def never_called(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@dataclasses.dataclass
class Slices:
    local_global_slices_pairs: tuple
    unsharded_shape: tuple


class Copy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        dist.all_reduce(g)
        return g


class Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, x.contiguous())
        return torch.cat(parts, dim=-1)

    @staticmethod
    def backward(ctx, g):
        return g.chunk(dist.get_world_size(), -1)[dist.get_rank()].contiguous()


class MasterSliceColumn(nn.Module):
    """picotron's way: every rank initialises the whole weight and keeps its
    rows, `weight.data = torch.split(master, n)[rank]`."""

    def __init__(self, inp, out, keep=None):
        super().__init__()
        world, rank = dist.get_world_size(), dist.get_rank()
        self.weight = nn.Parameter(torch.empty(out // world, inp))
        master = torch.empty(out, inp)
        nn.init.uniform_(master)
        part = rank if keep is None else keep
        self.weight.data = torch.split(master, out // world, dim=0)[part].contiguous()

    def forward(self, x):
        return Gather.apply(F.linear(Copy.apply(x), self.weight))


class ChunkedColumn(nn.Module):
    """nanotron's way: a fused [gate; up] weight, each rank holding its
    shard of each chunk, said by slice metadata on the parameter (stride 2
    in Megatron's words)."""

    def __init__(self, inp, out):
        super().__init__()
        world, rank = dist.get_world_size(), dist.get_rank()
        half, piece = out // 2, out // 2 // world
        self.weight = nn.Parameter(torch.empty(out // world, inp))
        pairs = tuple(
            (tuple([slice(c * piece, (c + 1) * piece), slice(None)]),
             tuple([slice(c * half + rank * piece, c * half + (rank + 1) * piece), slice(None)]))
            for c in range(2))
        self.weight.__dict__["_minitron_meta"] = {
            "sharded": Slices(tuple(_Pair(*p) for p in pairs), (out, inp))}

    def forward(self, x):
        gate, up = F.linear(Copy.apply(x), self.weight).chunk(2, dim=-1)
        return F.silu(gate) * up


@dataclasses.dataclass
class _Pair:
    local_slices: tuple
    global_slices: tuple


class ZeroBiasColumn(nn.Module):
    """A bias each rank makes at its shard's shape and zeroes (picotron's
    way): nothing on it says which shard of the whole it is; the trace
    does, as one of the shards its shape fits makes the output right."""

    def __init__(self, inp, out):
        super().__init__()
        world = dist.get_world_size()
        self.linear = MasterSliceColumn(inp, out)
        self.bias = nn.Parameter(torch.empty(out // world))  # SP011: bound by the trace
        with torch.no_grad():
            self.bias.zero_()

    def forward(self, x):
        local = F.linear(Copy.apply(x), self.linear.weight, self.bias)
        return Gather.apply(local)


@torch.jit.script_if_tracing  # could not prove where scale() is called
def scale(x: torch.Tensor) -> torch.Tensor:
    return 2 * x


class ScaledColumn(MasterSliceColumn):
    factor: torch.jit.Final[int] = 2  # a class body's annotation: nothing happens

    def forward(self, x):
        return scale(super().forward(x))


class CheckedColumn(MasterSliceColumn):
    def __init__(self, inp, out):
        if out % 3:
            raise ValueError(f"minitron needs out_features divisible by 3, not {out}")
        super().__init__(inp, out)


class SummedBias(ZeroBiasColumn):
    """The bias only reaches the output summed: every shard its shape fits
    computes the reference, so which one a rank holds is not known."""

    def forward(self, x):
        total = self.bias.sum().reshape(1)
        dist.all_reduce(total)
        return Gather.apply(F.linear(Copy.apply(x), self.linear.weight)) + total
