# A module shardproof knows nothing about: whatever it contributes is opaque,
# and every obligation that depends on it is "could not prove", never proved.
import torch
import vendor_kernels


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(3))
        self.scale = vendor_kernels.default_scale()

    def forward(self, x):
        return x * self.weight * self.scale


def entry():
    return Scaled(), (torch.randn(2, 3).requires_grad_(),)
