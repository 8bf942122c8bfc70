# Framework code that prefers a fused kernel and falls back to PyTorch when the
# accelerator is missing: shardproof makes the import fail, so the fallback is
# what gets proved.
import torch
import torch.nn.functional as F

try:
    from apex.normalization import FusedLayerNorm as LayerNorm
except ImportError:
    LayerNorm = torch.nn.LayerNorm


class Block(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = LayerNorm(hidden)
        self.proj = torch.nn.Linear(hidden, hidden)

    def forward(self, x):
        return F.gelu(self.proj(self.norm(x)))


def entry():
    return Block(3), (torch.randn(2, 3),)
