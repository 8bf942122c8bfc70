"""torch.library and torch.ops: code may define custom operators at import
time. Their registrations are accepted, and a defined operator is found under
torch.ops.NAMESPACE.NAME (with its `.default` overload); calling one stops
tracing (its kernel and its registered autograd formula are not modelled), so
what is registered for it changes nothing traced. A registration that
overrides one of PyTorch's own (aten) operators would change ops the
stand-in models, and is rejected."""
import functools

from . import _tracing

_defined = {}  # "namespace::name" -> the operator
_CALL_REJECTED = "calling a custom operator is rejected, so this changes nothing traced"

# torch.ops.aten operators whose schemas (argument order and meaning, every
# overload) are those of the torch function or Tensor method of that name.
_ATEN_AS_TORCH = frozenset((
    "mm", "bmm", "matmul", "addmm", "baddbmm", "add", "sub", "mul", "div", "neg",
    "exp", "log", "tanh", "sigmoid", "sqrt", "rsqrt", "abs", "pow", "sin", "cos",
    "sum", "mean", "cat", "stack", "clone", "view", "reshape",
    "permute", "transpose", "t", "unsqueeze", "where", "maximum", "minimum",
    "softmax", "log_softmax", "gather", "index_select", "narrow", "select",
    "split", "chunk", "triu", "tril", "zeros_like", "ones_like", "empty_like"))


def _is_aten(op):
    """An operator of PyTorch's own: "aten::name", "aten::name.overload",
    or torch.ops.aten.NAME."""
    if isinstance(op, _AtenOp):
        return True
    return isinstance(op, str) and op.split("::")[0] in ("aten", "prims")


def _no_aten_override(op, what):
    if _is_aten(op):
        _tracing.unmodelled(f"{what} for PyTorch's own operator {op!r} (it would change "
                            "an op the stand-in models)")


class _OpNamespace:
    def __init__(self, ns):
        self._ns = ns

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        op = _defined.get(f"{self._ns}::{name}")
        if op is None and self._ns == "aten":
            op = _defined[f"aten::{name}"] = _AtenOp(name)
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self._ns}' object has no attribute '{name}'")
        return op


class _AtenOp:
    """torch.ops.aten.NAME (any overload: `.default`, `.Tensor`, ...): the
    stand-in's torch.NAME or Tensor.NAME."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return self

    def __call__(self, *args, **kwargs):
        import torch
        fn = getattr(torch, self._name, None) or getattr(torch.Tensor, self._name, None)
        if fn is None or self._name not in _ATEN_AS_TORCH:
            raise _tracing.Unsupported(f"torch.ops.aten.{self._name} is not modelled")
        return fn(*args, **kwargs)

    def __repr__(self):
        return f"aten.{self._name}"


class _Ops:
    """torch.ops: every namespace exists; an operator only once defined."""

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _OpNamespace(ns)


ops = _Ops()


class CustomOpDef:
    def __init__(self, name, fn=None):
        self._name, self._fn = name, fn
        if fn is not None:
            functools.update_wrapper(self, fn)
        _defined[name] = self

    @property
    @_tracing.no_effect(function="an operator's .default overload is the operator")
    def default(self):
        return self

    def register_fake(self, fn):
        return fn

    @_tracing.no_effect(device_types=_CALL_REJECTED)
    def register_kernel(self, device_types, fn=None):
        return fn if fn is not None else (lambda f: f)

    @_tracing.no_effect(backward=_CALL_REJECTED, setup_context=_CALL_REJECTED,
                        function=_CALL_REJECTED)
    def register_autograd(self, backward, setup_context=None):
        return None

    @_tracing.no_effect(args="every call is rejected", kwargs="every call is rejected")
    def __call__(self, *args, **kwargs):
        raise _tracing.Unsupported(f"the torch.library custom operator {self._name} "
                                   "is not modelled")


@_tracing.no_effect(mutates_args=_CALL_REJECTED, device_types=_CALL_REJECTED,
                    schema=_CALL_REJECTED)
def custom_op(name, fn=None, *, mutates_args=(), device_types=None, schema=None):
    if fn is None:
        return lambda f: CustomOpDef(name, f)
    return CustomOpDef(name, fn)


@_tracing.no_effect(op="a fake (meta) kernel computes shapes only, never a value",
                    lib="a fake (meta) kernel computes shapes only, never a value",
                    _stacklevel="where a warning would point")
def register_fake(op, fn=None, *, lib=None, _stacklevel=1):
    return fn if fn is not None else (lambda f: f)


impl_abstract = register_fake


@_tracing.no_effect(backward=_CALL_REJECTED, setup_context=_CALL_REJECTED,
                    lib=_CALL_REJECTED, function=_CALL_REJECTED)
def register_autograd(op, backward, *, setup_context=None, lib=None):
    _no_aten_override(op, "torch.library.register_autograd")
    return None


@_tracing.no_effect(device_types=_CALL_REJECTED, lib=_CALL_REJECTED)
def register_kernel(op, device_types, fn=None, *, lib=None):
    _no_aten_override(op, "torch.library.register_kernel")
    return fn if fn is not None else (lambda f: f)


class Library:
    @_tracing.no_effect(dispatch_key=_CALL_REJECTED)
    def __init__(self, ns, kind, dispatch_key=""):
        self.ns, self.kind = ns, kind

    @_tracing.no_effect(alias_analysis=_CALL_REJECTED, tags=_CALL_REJECTED)
    def define(self, schema, alias_analysis="", *, tags=()):
        name = schema.split("(")[0].split(".")[0]
        CustomOpDef(f"{self.ns}::{name}")
        return name

    @_tracing.no_effect(fn=_CALL_REJECTED, dispatch_key=_CALL_REJECTED,
                        with_keyset=_CALL_REJECTED, function=_CALL_REJECTED)
    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        qualified = op_name if not isinstance(op_name, str) or "::" in op_name \
            else f"{self.ns}::{op_name}"
        _no_aten_override(qualified, "torch.library.Library.impl")
        return None


def __getattr__(name):
    """A name real PyTorch's torch.library has and the stand-in does not model is
    "not modelled" (could not prove where used); any other does not exist."""
    from ._real_surface import NAMES
    return _tracing.unknown_attribute("torch.library", name, NAMES["torch.library"])
