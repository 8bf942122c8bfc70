"""torch._C: only the names frameworks use in annotations and context
managers; the stand-in has no C extension behind it."""
import contextlib
import types

from . import Generator  # noqa: F401
from .distributed import ProcessGroup, ReduceOp


# Annotations such as Optional[torch._C._distributed_c10d.ProcessGroup].
_distributed_c10d = types.SimpleNamespace(ProcessGroup=ProcessGroup, ReduceOp=ReduceOp)


def DisableTorchFunctionSubclass():  # noqa: N802 (torch's name)
    return contextlib.nullcontext()


DisableTorchFunction = DisableTorchFunctionSubclass
