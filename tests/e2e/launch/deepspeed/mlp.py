"""A two-layer MLP regression model, as a DeepSpeed user writes one: the
builder gives the model, a batch of random samples (inputs and targets) and
the loss. shardproof's launch check runs it under each config of this
folder."""
import torch
import torch.nn.functional as F

HIDDEN = 4


class MLP(torch.nn.Module):
    def __init__(self, width=HIDDEN):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, 2 * width)
        self.fc2 = torch.nn.Linear(2 * width, width)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def batch(samples):
    return torch.randn(samples, HIDDEN), torch.randn(samples, HIDDEN)


def loss(output, targets):
    return F.mse_loss(output, targets)


def build():
    return {"model": MLP(), "batch": batch, "loss": loss}
