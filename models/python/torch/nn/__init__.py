from .parameter import Parameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import functional, init  # noqa: F401
from .. import _tracing


class _Parallel:
    """torch.nn.parallel.DistributedDataParallel: a pass-through wrapper; the
    gradient reduction it adds is modelled with gradients."""

    class DistributedDataParallel(Module):
        def __init__(self, module, *a, **k):
            super().__init__()
            self.module = module

        def forward(self, *a, **k):
            return self.module(*a, **k)


parallel = _Parallel
