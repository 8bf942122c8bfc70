"""torch.cuda.nvtx: profiler annotations, which change no value."""
import contextlib

from .. import _tracing

_ANNOTATION = "a profiler annotation changes no value"
_depth = [0]  # open ranges: range_push/range_pop return the nesting level


@_tracing.no_effect(msg=_ANNOTATION)
def range_push(msg):
    _depth[0] += 1
    return _depth[0] - 1


def range_pop():
    if _depth[0] == 0:
        return -1
    _depth[0] -= 1
    return _depth[0]


@_tracing.no_effect(msg=_ANNOTATION, function=_ANNOTATION)
def mark(msg):
    return None


@contextlib.contextmanager
def range(msg, *args, **kwargs):  # noqa: A001 (torch's name)
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
