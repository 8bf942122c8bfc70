"""torch.cuda.memory: allocator pools change where memory lives, not values."""
import contextlib


class MemPool:
    def __init__(self, *a, **k):
        pass

    def id(self):
        return (0, 0)

    def snapshot(self):
        return []


class CUDAPluggableAllocator:
    def __init__(self, *a, **k):
        pass


@contextlib.contextmanager
def use_mem_pool(pool, device=None):
    yield
