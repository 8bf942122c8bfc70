"""What `import` does with modules shardproof does not model.

- Optional accelerators (transformer_engine, apex, flash_attn, fused CUDA
  extensions, triton, ...) raise ImportError, so the framework takes the
  pure-PyTorch path it has for machines without them.
- Any other module that cannot be found becomes an opaque module: whatever is
  taken from it is an OpaqueValue that remembers where it came from. An
  opaque value that reaches a tensor becomes an opaque term, so every proof
  that depends on it is "could not prove", naming that origin; one that
  decides control flow stops tracing there. Nothing opaque is ever trusted.
"""
import importlib.abc
import importlib.machinery
import re
import sys
import types

import _shardproof as _sp
from torch import _tracing

ACCELERATORS = re.compile(
    r"^(transformer_engine|apex|flash_attn|flash_attn_\w+|xformers|triton|amp_C"
    r"|fused_\w+|\w+_cuda|\w+_cuda_\w*|scaled_\w+_softmax\w*|grouped_gemm"
    r"|mamba_ssm|causal_conv1d|nvidia|cupy|deep_ep|torch_npu|habana_frameworks"
    r"|intel_extension_for_pytorch|megatron_fused_kernels|te_\w+|nvtx|pynvml)$")


class OpaqueValue:
    """A value from code shardproof does not model."""

    def __init__(self, name, origin):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_origin", origin)
        object.__setattr__(self, "_term", None)

    @property
    def _shardproof_term(self):
        """As a tensor element: an opaque variable that blocks every proof
        depending on it."""
        if self._term is None:
            object.__setattr__(self, "_term", _sp.opaque(self._name, self._origin))
        return self._term

    def _derived(self, what):
        return OpaqueValue(f"{self._name}{what}", _tracing.origin())

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return self._derived(f".{attr}")

    def __setattr__(self, attr, value):
        pass  # writes to unmodelled objects are dropped

    def __call__(self, *args, **kwargs):
        # An unknown decorator keeps the function it decorates: the user's own
        # code is still what runs (recorded as a modelling choice).
        if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, type)):
            return args[0]
        return self._derived("(...)")

    def __mro_entries__(self, bases):
        return (OpaqueBase,)

    def __repr__(self):
        return f"<unmodelled {self._name} from {self._origin}>"

    def _stop(self, what):
        raise _tracing.Unsupported(
            f"{what} depends on the unmodelled value {self._name} from {self._origin}")

    def __bool__(self):
        self._stop("a Python truth value")

    def __index__(self):
        self._stop("a Python integer")

    __int__ = __index__

    def __float__(self):
        self._stop("a Python float")

    def __iter__(self):
        self._stop("iteration")

    def __len__(self):
        self._stop("a length")

    def __getitem__(self, key):
        return self._derived("[...]")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def _arith(self, other):
        return self._derived("(arithmetic)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arith
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = _arith
    __neg__ = __pos__ = lambda self: self._derived("(arithmetic)")  # noqa: E731

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__


class OpaqueBase:
    """The base of a class that derives from something unmodelled: its
    unknown inherited attributes are opaque too."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return OpaqueValue(f"{type(self).__name__}.{attr}", _tracing.origin())


class _OpaqueModule(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []  # a package: its submodules are opaque as well

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return OpaqueValue(f"{self.__name__}.{attr}", _tracing.origin())


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return _OpaqueModule(spec.name)

    def exec_module(self, module):
        pass


class OpaqueFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: sees only what no real finder found."""

    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if ACCELERATORS.match(top) or ACCELERATORS.match(name.split(".")[-1]):
            raise ModuleNotFoundError(
                f"No module named '{name}' (optional accelerator: shardproof "
                "takes the pure-PyTorch path)", name=name)
        return importlib.machinery.ModuleSpec(name, _Loader())


def install():
    if not any(isinstance(f, OpaqueFinder) for f in sys.meta_path):
        sys.meta_path.append(OpaqueFinder())
