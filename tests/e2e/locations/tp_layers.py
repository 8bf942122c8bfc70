# Shared by the location corpus: a Megatron-style tensor-parallel MLP whose
# column-parallel layer takes its copy-to-region Function as an argument, so
# each module below changes only the Function it is about.
import torch
import torch.distributed as dist
import torch.nn.functional as F


def groups(tp_size=2):
    """The tensor- and data-parallel groups of this rank: tp_size
    consecutive ranks, and the ranks at the same place in every TP group."""
    world, rank = dist.get_world_size(), dist.get_rank()
    tp_size = min(tp_size, world)
    tp = dp = None
    for start in range(0, world, tp_size):
        g = dist.new_group(list(range(start, start + tp_size)))
        tp = g if start <= rank < start + tp_size else tp
    for first in range(tp_size):
        g = dist.new_group(list(range(first, world, tp_size)))
        dp = g if rank % tp_size == first else dp
    return tp, dp


class CopyToRegion(torch.autograd.Function):
    """Identity in forward; all-reduce of the gradient over the group."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class ReduceFromRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class ColumnParallelLinear(torch.nn.Module):
    def __init__(self, in_features, out_features, region, group=None):
        super().__init__()
        size = dist.get_world_size(group)
        self.copy, self.group = region.apply, group
        self.weight = torch.nn.Parameter(torch.empty(out_features // size, in_features))
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 0

    def forward(self, x):
        return F.linear(self.copy(x, self.group), self.weight)


class RowParallelLinear(torch.nn.Module):
    def __init__(self, in_features, out_features, group=None):
        super().__init__()
        size = dist.get_world_size(group)
        self.group = group
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features // size))
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 1

    def forward(self, x):
        partial = F.linear(x, self.weight)
        if self.group is None:
            return ReduceFromRegion.apply(partial)
        partial = partial.clone()
        dist.all_reduce(partial, group=self.group)
        return partial


class Block(torch.nn.Module):
    """A replicated input projection, then the parallel MLP: the projection's
    gradient is the one the copy Function's backward hands on."""

    def __init__(self, region=CopyToRegion, group=None):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4, bias=False)
        self.fc1 = ColumnParallelLinear(4, 8, region, group)
        self.fc2 = RowParallelLinear(8, 4, group)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(self.proj(x))))
