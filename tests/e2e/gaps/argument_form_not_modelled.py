# A call of a stand-in function in an argument form PyTorch takes and the
# stand-in does not (Tensor.view's `size=` keyword): Python's TypeError at
# the call is a gap of the stand-in, not the analysed code's error.
import torch


class Flat(torch.nn.Module):
    def forward(self, x):
        return x.view(size=(6,)) * 2  # gap: Tensor\.view\(\) got an unexpected keyword argument 'size'


def entry():
    return Flat(), (torch.randn(2, 3).requires_grad_(),)
