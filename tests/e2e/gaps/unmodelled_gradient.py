# An op whose gradient is not modelled keeps requires_grad, as in PyTorch:
# the backward stops there instead of silently cutting the graph.
import torch


class Wrap(torch.nn.Module):
    def forward(self, phase):
        return phase % 1.5  # gap: the gradient of remainder is not modelled


def entry():
    return Wrap(), (torch.tensor([0.5, 2.0, 3.25], requires_grad=True),)
