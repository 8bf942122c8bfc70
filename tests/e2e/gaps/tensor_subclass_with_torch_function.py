# A Tensor subclass that intercepts every torch function changes what each
# op computes: the stand-in does not model one once it is made (a framework
# may define such a class and never use it).
import torch


class Scaled(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


class Unused(torch.Tensor):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise AssertionError("never made")


class Wrap(torch.nn.Module):
    def forward(self, x):
        return x.as_subclass(Scaled) * 2  # gap: (Tensor.as_subclass is not modelled|a Tensor subclass with __torch_function__)


def entry():
    return Wrap(), (torch.randn(2).requires_grad_(),)
