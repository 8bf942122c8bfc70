# Re-drawing a layer's weights while the model runs: a random initialiser
# outside the entry is not modelled (nn.init), however it is reached.
import torch


class Redrawn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 2)

    def forward(self, x):
        self.proj.reset_parameters()  # gap: Linear\.reset_parameters\(\) outside the entry
        return self.proj(x)


def entry():
    return Redrawn(), (torch.randn(2, 3).requires_grad_(),)
