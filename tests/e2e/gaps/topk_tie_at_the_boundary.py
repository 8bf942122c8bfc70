# topk over concrete keys whose k-th and next-largest are equal: PyTorch may
# pick either element, so which one is not modelled.
import torch


class PickFirst(torch.nn.Module):
    def forward(self, x):
        scores = torch.tensor([[3.0, 3.0, 1.0, 0.0]])
        picked = scores.topk(1, dim=-1).indices  # gap: topk where equal keys straddle
        return x.gather(1, picked)


def entry():
    return PickFirst(), (torch.randn(1, 4).requires_grad_(),)
