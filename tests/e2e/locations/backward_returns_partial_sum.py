# Bug: the copy-to-region Function's backward returns its gradient as it
# came: the all-reduce over the tensor-parallel ranks is gone.
import torch

from tp_layers import Block


class CopyToRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # expect: SP002 SP007


def entry():
    x = torch.randn(2, 4).requires_grad_()
    return Block(CopyToRegion), (x,)
