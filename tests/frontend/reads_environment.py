# A harness whose model depends on an environment variable, as a framework
# recipe's does on MEGATRON_ROOT: the frontend hands the target's environment
# to every run and takes it away after.
import os

import torch


class Scale(torch.nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(4))
        self.factor = factor

    def forward(self, x):
        return x * self.weight * self.factor


def entry():
    factor = float(os.environ["SHARDPROOF_TEST_FACTOR"])
    return Scale(factor), (torch.randn(4),)
