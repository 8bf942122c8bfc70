# Branching on the truth of a symbolic number (not a comparison, which is a
# decision the path explores) raises; code that catches RuntimeError (as
# framework code around optional kernels does) must not swallow it.
import torch


class Clip(torch.nn.Module):
    def forward(self, x):
        try:
            if x.sum():  # gap: depends on a symbolic tensor value
                return x * 2
        except RuntimeError:
            pass
        return x


def entry():
    return Clip(), (torch.randn(3).requires_grad_(),)
