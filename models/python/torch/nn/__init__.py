from .parameter import Parameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import functional, init, parallel, utils  # noqa: F401


def _module_package():
    """In PyTorch torch.nn.modules is a package, and code imports from its
    submodules (`from torch.nn.modules.module import Module`). Here it is one
    file: each submodule is registered as a view of the classes it defines."""
    import sys
    import types
    from . import modules
    layout = {"module": ("Module", "register_module_forward_pre_hook",
                         "register_module_forward_hook",
                         "register_module_full_backward_pre_hook",
                         "register_module_full_backward_hook", "register_module_backward_hook",
                         "register_module_buffer_registration_hook",
                         "register_module_module_registration_hook",
                         "register_module_parameter_registration_hook"),
              "loss": ("MSELoss", "L1Loss", "NLLLoss", "CrossEntropyLoss"),
              "linear": ("Linear", "Identity"),
              "sparse": ("Embedding",), "normalization": ("LayerNorm",),
              "dropout": ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                          "FeatureAlphaDropout"), "container": (
                  "Sequential", "ModuleList", "ModuleDict", "ParameterList",
                  "ParameterDict"),
              "activation": ("GELU", "ReLU", "SiLU", "Tanh", "Sigmoid", "LogSigmoid",
                             "Softmax", "LogSoftmax")}
    modules.__path__ = []
    for sub, names in layout.items():
        view = types.ModuleType(f"{modules.__name__}.{sub}")
        for name in names:
            setattr(view, name, getattr(modules, name))
        sys.modules[view.__name__] = view
        setattr(modules, sub, view)


_module_package()
