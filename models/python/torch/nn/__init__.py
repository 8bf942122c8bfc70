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


def _module_package():
    """In PyTorch torch.nn.modules is a package, and code imports from its
    submodules (`from torch.nn.modules.module import Module`). Here it is one
    file: each submodule is registered as a view of the classes it defines."""
    import sys
    import types
    from . import modules
    layout = {"module": ("Module",), "linear": ("Linear", "Identity"),
              "sparse": ("Embedding",), "normalization": ("LayerNorm",),
              "dropout": ("Dropout",), "container": (
                  "Sequential", "ModuleList", "ModuleDict", "ParameterList"),
              "activation": ("GELU", "ReLU", "SiLU", "Tanh", "Sigmoid", "Softmax")}
    modules.__path__ = []
    for sub, names in layout.items():
        view = types.ModuleType(f"{modules.__name__}.{sub}")
        for name in names:
            setattr(view, name, getattr(modules, name))
        sys.modules[view.__name__] = view
        setattr(modules, sub, view)


_module_package()
