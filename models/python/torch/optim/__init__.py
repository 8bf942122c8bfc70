"""torch.optim: the Optimizer base class that frameworks subclass, with
PyTorch's parameter-group bookkeeping. shardproof proves gradients, not
updates: an optimizer step is not modelled (the built-in optimizers stop
tracing when they step)."""
from collections import defaultdict

from .. import _tracing
from . import lr_scheduler  # noqa: F401


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        for group in params:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        params = param_group["params"]
        group = dict(param_group)
        group["params"] = [params] if hasattr(params, "shape") else list(params)
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def step(self, closure=None):
        raise _tracing.Unsupported(
            f"{type(self).__name__}.step: an optimizer update is not modelled")

    def state_dict(self):
        return {"state": dict(self.state), "param_groups": [
            {k: v for k, v in g.items() if k != "params"} for g in self.param_groups]}

    def load_state_dict(self, state_dict):
        return None

    def __repr__(self):
        return f"{type(self).__name__}()"


def _builtin(name, **defaults):
    class Builtin(Optimizer):
        def __init__(self, params, **kwargs):
            super().__init__(params, {**defaults, **kwargs})
    Builtin.__name__ = Builtin.__qualname__ = name
    return Builtin


SGD = _builtin("SGD", lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False)
Adam = _builtin("Adam", lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False)
AdamW = _builtin("AdamW", lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False)
Adagrad = _builtin("Adagrad", lr=1e-2, lr_decay=0, weight_decay=0, eps=1e-10)
