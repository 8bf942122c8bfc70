# Random integers drawn in the computation choose which elements are used: a
# proof for one draw is not one for all of them.
import torch


class ShuffleTokens(torch.nn.Module):
    def forward(self, x):
        order = torch.randperm(x.shape[0])  # gap: torch.randperm .*is not modelled
        return x[order] * 2


def entry():
    return ShuffleTokens(), (torch.randn(4, 3),)
