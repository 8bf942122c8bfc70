"""What `import` does with modules shardproof does not model.

- Optional accelerators (transformer_engine, apex, flash_attn, fused CUDA
  extensions, triton, ...) raise ImportError where the import is a probe (see
  below), so the framework takes the pure-PyTorch path it has for machines
  without them.
- A probe gets the ImportError it expects: an import issued by the standard
  library or an installed package (`try: import msvcrt`), or one the analysed
  code guards with `except ImportError` (it has a path for machines without
  the module, which is what this machine is).
- Any other import of a module that cannot be found (an accelerator's too,
  when nothing guards it) becomes an opaque module: whatever is
  taken from it is an OpaqueValue that remembers where it came from. An
  opaque value that reaches a tensor becomes an opaque term, so every proof
  that depends on it is "could not prove", naming that origin; one that
  decides control flow stops tracing there. Nothing opaque is ever trusted.
"""
import builtins
import functools
import importlib
import importlib.abc
import importlib.machinery
import os
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
    # `A | B` of unmodelled classes is a type union in an annotation
    # (pydantic fields of a tokenizer type), and unknown wherever it is used.
    __or__ = __ror__ = _arith

    # isinstance(x, Unmodelled) decides a branch on a class that is not here:
    # it stops tracing, never guesses (a TypeError would blame the tree).
    def __instancecheck__(self, instance):
        self._stop("isinstance()")

    def __subclasscheck__(self, subclass):
        self._stop("issubclass()")
    __neg__ = __pos__ = lambda self: self._derived("(arithmetic)")  # noqa: E731

    # An ordering of unknown values is unknown: it stops tracing only where it
    # decides control flow (version checks, size checks).
    __lt__ = __le__ = __gt__ = __ge__ = _arith

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


# The simulated machine is the CUDA build of torch 2.4 (torch.version), which
# ships Triton 3.0.0: code that imports Triton unguarded and parses its version
# at import time (Megatron's Mamba kernels) sees that. Its kernels stay opaque.
_DECLARED_VERSIONS = {"triton": "3.0.0"}


class _OpaqueModule(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []  # a package: its submodules are opaque as well
        if name in _DECLARED_VERSIONS:
            self.__version__ = _DECLARED_VERSIONS[name]

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return OpaqueValue(f"{self.__name__}.{attr}", _tracing.origin())


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return _OpaqueModule(spec.name)

    def exec_module(self, module):
        pass


_IMPORTLIB = os.path.dirname(importlib.__file__)
_LIBRARY_DIRS = (os.path.dirname(os.__file__),)  # the standard library


def _importer():
    """(file, line) of the code that issued the import, past importlib's frames."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(("<", _IMPORTLIB)) and filename != __file__:
            return filename, frame.f_lineno
        frame = frame.f_back
    return "", 0


_PROBE_HANDLERS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _is_probe(filename, line):
    return _tracing.handled_at(filename, line, _PROBE_HANDLERS)


def _is_library(filename):
    """Installed libraries and the standard library probe for optional modules
    (`try: import msvcrt except ImportError`); they are not the analysed code."""
    return filename.startswith(_LIBRARY_DIRS) or \
        f"{os.sep}site-packages{os.sep}" in filename or \
        f"{os.sep}dist-packages{os.sep}" in filename or \
        _tracing._is_runtime(filename)


class OpaqueFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: sees only what no real finder found."""

    def find_spec(self, name, path=None, target=None):
        filename, line = _importer()
        if _is_library(filename) or _is_probe(filename, line):
            top = name.split(".")[0]
            if ACCELERATORS.match(top) or ACCELERATORS.match(name.split(".")[-1]):
                raise ModuleNotFoundError(
                    f"No module named '{name}' (optional accelerator: shardproof "
                    "takes the pure-PyTorch path)", name=name)
            return None  # the ordinary ImportError the probe expects
        if filename in _tracing.state.harness:
            # A recipe asks the tree for a module the tree lacks (an older
            # or newer version): the component is absent, nothing is opaque.
            import shardproof_recipes
            raise shardproof_recipes.ComponentAbsent(f"this tree has no module {name}")
        # An unguarded import has no fallback: the module (an accelerator's
        # kernels included) is opaque, and only what uses it is blocked.
        return importlib.machinery.ModuleSpec(name, _Loader())


# Packages of the real PyTorch distribution besides `torch` itself: one
# installed on this machine would load against the real torch's C library,
# which the stand-in replaces. They are treated as modules not found here:
# a probe's ImportError, else opaque (nanotron's unguarded
# `from functorch.dim import tree_map`).
_REAL_TORCH_COMPANIONS = {"functorch", "torchgen"}


class CompanionFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: the real finders never see the companions."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in _REAL_TORCH_COMPANIONS:
            return None
        spec = OpaqueFinder().find_spec(name, path, target)
        if spec is None:
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return spec


_builtin_import = builtins.__import__


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    """A probe of a module that unguarded code already made opaque still gets
    its ImportError: sys.modules answers before any finder is asked."""
    if level == 0 and isinstance(sys.modules.get(name.partition(".")[0]), _OpaqueModule):
        frame = sys._getframe(1)
        filename = frame.f_code.co_filename
        if _is_library(filename) or _is_probe(filename, frame.f_lineno):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
    return _builtin_import(name, globals, locals, fromlist, level)


def install():
    if not any(isinstance(f, OpaqueFinder) for f in sys.meta_path):
        sys.meta_path.append(OpaqueFinder())
        sys.meta_path.insert(0, CompanionFinder())
        builtins.__import__ = _import
