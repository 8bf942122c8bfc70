import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if x.sum():  # the truth of a number (not a comparison): not followed
            return x
        return -x


def entry():
    return Gate(), (torch.randn(2),)
