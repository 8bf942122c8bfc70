# A Tensor subclass that intercepts every torch function changes what each
# op computes: the stand-in does not model it, whatever the subclass does.
import torch


class Scaled(torch.Tensor):  # gap: a Tensor subclass with __torch_function__
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


class Identity(torch.nn.Module):
    def forward(self, x):
        return x * 2


def entry():
    return Identity(), (torch.randn(2).requires_grad_(),)
