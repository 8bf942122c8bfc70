# The rows of a batch split over the ranks (sequence parallel), each rank
# running the fused bias+relu extension on its own rows, forward and
# backward, in an autograd.Function as Megatron wraps its fused kernels.
# `correct`: the extension as written; `partial_block_dropped`: its launcher
# rounds the grid down, so at 3 rows per rank (a partial block of 4) the
# last rows are never written, while on one device (6 rows) they all are.
import os

import torch
import torch.distributed as dist
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))


def build(launchers):
    return cpp_extension.load(
        name="fused_bias_relu",
        sources=[os.path.join(HERE, "fused_bias_relu.cpp"), os.path.join(HERE, launchers)])


class _FusedBiasRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias, fused):
        out = fused.forward(x, bias)
        ctx.save_for_backward(out)
        ctx.fused = fused
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (out,) = ctx.saved_tensors
        grad_x = ctx.fused.backward(grad_out.contiguous(), out)
        grad_bias = grad_x.sum(dim=0)
        if dist.get_world_size() > 1:  # the bias is replicated: its rows are split
            dist.all_reduce(grad_bias)
        return grad_x, grad_bias, None


class _GatherRows(torch.autograd.Function):
    """All-gather along the rows; the backward keeps this rank's rows."""

    @staticmethod
    def forward(ctx, local):
        world = dist.get_world_size()
        parts = [torch.empty_like(local) for _ in range(world)]
        dist.all_gather(parts, local.contiguous())
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        world, rank = dist.get_world_size(), dist.get_rank()
        return grad.chunk(world)[rank].contiguous()


class SequenceParallelBiasRelu(torch.nn.Module):
    def __init__(self, features, fused):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.empty(features))
        self.fused = fused

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        rows = x.shape[0] // world
        local = x[rank * rows:(rank + 1) * rows].contiguous()
        out = _FusedBiasRelu.apply(local, self.bias, self.fused)
        return out if world == 1 else _GatherRows.apply(out)


def correct():
    return {"model": SequenceParallelBiasRelu(3, build("fused_bias_relu_kernel.cu")),
            "inputs": (torch.randn(6, 3),)}


def partial_block_dropped():
    return {"model": SequenceParallelBiasRelu(3, build("fused_bias_relu_kernel_floor.cu")),
            "inputs": (torch.randn(6, 3),)}
