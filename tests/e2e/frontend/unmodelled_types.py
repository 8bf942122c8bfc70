# Classes of a module that is not installed, as annotations and in isinstance:
# the union is harmless, the isinstance stops tracing (never a TypeError that
# would blame this file).
import unmodelled_tokenizers as tk
import torch

Either = tk.Slow | tk.Fast  # an annotation of unmodelled classes


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(2, 2))

    def forward(self, x):
        if isinstance(x, tk.Slow):
            return x
        return x @ self.w


def entry():
    return Model(), (torch.randn(2, 2),)
