# Imports a package from the user's environment (tests/frontend/user_packages),
# which the frontend finds only through TraceOptions::python_path.
import torch

from scaling import FACTOR


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * FACTOR if FACTOR > 0 else x  # decides control flow


def entry():
    return Scale(), (torch.randn(2),)
