# Bug: the copy-to-region Function's backward clones the input gradient to
# reduce it and never does: each rank hands on its own partial sum.
import torch

from tp_layers import Block


class CopyToRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()  # expect: SP002 SP007
        return grad, None


def entry():
    x = torch.randn(2, 4).requires_grad_()
    return Block(CopyToRegion), (x,)
