"""torch.jit: nothing is ever scripted, so the decorators are identities:
TorchScript keeps the semantics of the Python it compiles, and that Python is
what is traced."""
from . import _tracing

_SAME = "a scripted function computes what its Python does, and the Python is traced"


@_tracing.no_effect(optimize=_SAME, _frames_up=_SAME, _rcb=_SAME, example_inputs=_SAME)
def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    return obj


@_tracing.no_effect(kwargs=_SAME)
def ignore(drop=False, **kwargs):
    """`@torch.jit.ignore` or `@torch.jit.ignore(drop=...)`: whether the
    scripted module keeps the function only matters to TorchScript."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def is_scripting():
    return False


def is_tracing():
    return False


def __getattr__(name):
    """A name real PyTorch's torch.jit has and the stand-in does not model is
    "not modelled" (could not prove where used); any other does not exist."""
    from ._real_surface import NAMES
    return _tracing.unknown_attribute("torch.jit", name, NAMES["torch.jit"])
