# Bug: the copy-to-region Function's backward averages the input gradient
# over the tensor-parallel ranks where it must sum it.
import torch
import torch.distributed as dist

from tp_layers import Block


class CopyToRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        grad = grad / dist.get_world_size()  # expect: SP005
        return grad, None


def entry():
    x = torch.randn(2, 4).requires_grad_()
    return Block(CopyToRegion), (x,)
