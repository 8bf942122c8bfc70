# A branch on a comparison of symbolic values: each rank decides from the
# same replicated values as the single-device run, so on every path all of
# them take the same side. Both paths are checked, and shown to be all.
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return -x


def entry():
    return Gate(), (torch.randn(2).requires_grad_(),)
