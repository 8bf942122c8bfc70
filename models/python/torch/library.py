"""torch.library and torch.ops: code may define custom operators at import
time. Their registrations are accepted, and a defined operator is found under
torch.ops.NAMESPACE.NAME (with its `.default` overload); calling one stops
tracing (its kernel and its registered autograd formula are not modelled)."""
import functools

from . import _tracing

_defined = {}  # "namespace::name" -> the operator


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
        if fn is None:
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
    def default(self):
        return self

    def register_fake(self, fn):
        return fn

    def register_kernel(self, device_types, fn=None):
        return fn if fn is not None else (lambda f: f)

    def register_autograd(self, backward, setup_context=None):
        return None

    def __call__(self, *args, **kwargs):
        raise _tracing.Unsupported(f"the torch.library custom operator {self._name} "
                                   "is not modelled")


def custom_op(name, fn=None, *, mutates_args=(), device_types=None, schema=None):
    if fn is None:
        return lambda f: CustomOpDef(name, f)
    return CustomOpDef(name, fn)


def register_fake(op, fn=None, *, lib=None, _stacklevel=1):
    return fn if fn is not None else (lambda f: f)


impl_abstract = register_fake


def register_autograd(op, backward, *, setup_context=None, lib=None):
    return None


def register_kernel(op, device_types, fn=None, *, lib=None):
    return fn if fn is not None else (lambda f: f)


class Library:
    def __init__(self, ns, kind, dispatch_key=""):
        self.ns, self.kind = ns, kind

    def define(self, schema, alias_analysis="", *, tags=()):
        name = schema.split("(")[0].split(".")[0]
        CustomOpDef(f"{self.ns}::{name}")
        return name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        return None
