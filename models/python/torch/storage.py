"""torch.storage: nothing is ever loaded from bytes in a trace."""
from . import _tracing


def _load_from_bytes(b):
    _tracing.unmodelled("loading a tensor from serialized bytes")


class UntypedStorage:
    @_tracing.no_effect(args="every call is rejected", kwargs="every call is rejected")
    def __init__(self, *args, **kwargs):
        _tracing.unmodelled("raw tensor storage (torch.UntypedStorage)")


TypedStorage = UntypedStorage
