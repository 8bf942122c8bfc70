"""torch._C: only the names frameworks use in annotations and context
managers; the stand-in has no C extension behind it."""
import contextlib
import types

from . import Generator, _autograd, _tracing  # noqa: F401
from .distributed import ProcessGroup, ReduceOp
from .nn import functional as _functional


# Annotations such as Optional[torch._C._distributed_c10d.ProcessGroup].
_distributed_c10d = types.SimpleNamespace(ProcessGroup=ProcessGroup, ReduceOp=ReduceOp)

# torch._C._nn.linear is what torch.nn.functional.linear is bound to.
_nn = types.SimpleNamespace(linear=_functional.linear)


# The autograd engine's view of the running backward (DeepSpeed's ZeRO).
_current_graph_task_id = _autograd.current_graph_task_id
_will_engine_execute_node = _autograd.will_engine_execute_node


def is_grad_enabled():  # torch.is_grad_enabled is this function in PyTorch
    from . import is_grad_enabled as enabled
    return enabled()


def DisableTorchFunctionSubclass():  # noqa: N802 (torch's name)
    return contextlib.nullcontext()


DisableTorchFunction = DisableTorchFunctionSubclass


def __getattr__(name):
    """Real torch._C (PyTorch's C extension) holds almost every name code
    asks it for: one the stand-in lacks is "not modelled" (could not prove
    where used, an AttributeError to a probe), never the user's error."""
    if name.startswith("__"):
        raise AttributeError(name)
    taken = _tracing._import_time_use()  # a type annotation, a decorator, ...
    if taken is not None:
        return _tracing.ImportTimeName(f"torch._C.{name}",
                                       f"{_tracing.display(taken[0])}:{taken[1]}")
    raise _tracing.NotModelledAttribute(f"torch._C.{name} is not modelled")
