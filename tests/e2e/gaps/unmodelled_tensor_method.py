# A Tensor method real PyTorch has and the stand-in lacks is "not
# modelled" (exit 3), not an AttributeError of the user's; attributes that
# exist nowhere (Megatron's main_grad) still read as missing.
import torch


class Gamma(torch.nn.Module):
    def forward(self, x):
        assert getattr(x, "main_grad", None) is None
        return x.lgamma()  # gap: Tensor.lgamma is not modelled


def entry():
    return Gamma(), (torch.randn(3).requires_grad_(),)
