"""torch._C: only the names frameworks use in annotations and context
managers; the stand-in has no C extension behind it."""
import contextlib
import types

from . import Generator  # noqa: F401
from .distributed import ProcessGroup, ReduceOp
from .nn import functional as _functional


# Annotations such as Optional[torch._C._distributed_c10d.ProcessGroup].
_distributed_c10d = types.SimpleNamespace(ProcessGroup=ProcessGroup, ReduceOp=ReduceOp)

# torch._C._nn.linear is what torch.nn.functional.linear is bound to.
_nn = types.SimpleNamespace(linear=_functional.linear)


def DisableTorchFunctionSubclass():  # noqa: N802 (torch's name)
    return contextlib.nullcontext()


DisableTorchFunction = DisableTorchFunctionSubclass
