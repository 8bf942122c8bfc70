"""torch.cuda.memory: allocator pools change where memory lives, not values."""
import contextlib

from .. import _tracing

_PLACEMENT = "an allocator decides where memory lives, never a value"


class MemPool:
    def __init__(self, allocator=None):
        self.allocator = allocator

    def id(self):
        return (0, 0)

    def snapshot(self):
        return []


class CUDAPluggableAllocator:
    @_tracing.no_effect(path_to_so_file=_PLACEMENT, alloc_fn_name=_PLACEMENT,
                        free_fn_name=_PLACEMENT)
    def __init__(self, path_to_so_file, alloc_fn_name, free_fn_name):
        self.allocator = None


@contextlib.contextmanager
@_tracing.no_effect(pool=_PLACEMENT, device=_PLACEMENT)
def use_mem_pool(pool, device=None):
    yield
