"""torch.storage: nothing is ever loaded from bytes in a trace."""


def _load_from_bytes(b):
    from ._tracing import Unsupported
    raise Unsupported("loading a tensor from serialized bytes")


class UntypedStorage:
    def __init__(self, *a, **k):
        from ._tracing import Unsupported
        raise Unsupported("raw tensor storage")


TypedStorage = UntypedStorage
