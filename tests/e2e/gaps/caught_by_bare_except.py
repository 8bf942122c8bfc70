# A gap of ours that the analysed code catches with a bare `except:` and
# works around: the run still ends "could not prove", at the gap.
import torch


class Router(torch.nn.Module):
    def forward(self, logits):
        try:
            picked = 2.0 ** logits  # gap: a number raised to a symbolic tensor
        except:  # noqa: E722
            picked = None
        return logits * 2 if picked is None else logits


def entry():
    return Router(), (torch.randn(2, 4).requires_grad_(),)
