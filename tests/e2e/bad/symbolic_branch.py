import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # a branch on a value: one answer per input, not a proof
            return x
        return -x


def entry():
    return Gate(), (torch.randn(2),)
