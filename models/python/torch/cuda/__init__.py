"""torch.cuda: harmless no-ops; the simulated device always exists."""
import contextlib


def is_available():
    return True


def current_device():
    return 0


def device_count():
    return 1


def set_device(d):
    return None


def synchronize(*a):
    return None


from . import memory, nvtx, profiler, random  # noqa: E402
from .memory import MemPool, CUDAPluggableAllocator, use_mem_pool  # noqa: E402,F401
from .random import (  # noqa: E402,F401
    default_generators, get_rng_state, set_rng_state, get_rng_state_all,
    set_rng_state_all, manual_seed, manual_seed_all, initial_seed, seed, seed_all,
)


class OutOfMemoryError(RuntimeError):
    pass


def is_current_stream_capturing():
    return False


def memory_stats(*a, **k):
    return {}


def memory_snapshot(*a, **k):
    return []


# Monitoring queries: no hardware behind them.
def utilization(*a, **k):
    return 0


temperature = power_draw = clock_rate = device_memory_used = utilization


def get_device_capability(*a):
    return (9, 0)


def get_device_name(*a):
    return "NVIDIA H100 (shardproof simulated)"


class _DeviceProperties:
    name = "NVIDIA H100 (shardproof simulated)"
    major, minor = 9, 0
    multi_processor_count = 132
    total_memory = 80 * 2 ** 30


def get_device_properties(*a):
    return _DeviceProperties()


def is_bf16_supported(*a, **k):
    return True


def is_initialized():
    return True


def _lazy_init():
    return None


def _lazy_call(callable, **kwargs):  # noqa: A002 (torch's name)
    # PyTorch runs it at once when CUDA is initialised, which it always is here.
    callable()


class device:
    """The `with torch.cuda.device(i)` context: one simulated device."""

    def __init__(self, device):
        self.idx = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def memory_allocated(*a, **k):
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated


def reset_peak_memory_stats(*a, **k):
    return None


reset_max_memory_allocated = reset_peak_memory_stats


def mem_get_info(*a):
    return (_DeviceProperties.total_memory, _DeviceProperties.total_memory)


def empty_cache():
    return None


class Stream:
    def __init__(self, *a, **k):
        pass

    def wait_stream(self, *a):
        pass

    def synchronize(self):
        pass

    def wait_event(self, *a):
        pass

    def record_event(self, event=None):
        return event if event is not None else Event()


ExternalStream = Stream


def current_stream(*a):
    return Stream()


default_stream = current_stream


def set_stream(s):
    return None


@contextlib.contextmanager
def stream(s):
    yield


class Event:
    def __init__(self, *a, **k):
        pass

    def record(self, *a):
        pass

    def wait(self, *a):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True


class CUDAGraph:
    """Capturing a graph replays the same ops; the stand-in runs them eagerly."""

    def __init__(self, *a, **k):
        pass

    def capture_begin(self, *a, **k):
        pass

    def capture_end(self):
        pass

    def replay(self):
        raise NotImplementedError("replaying a captured CUDA graph")

    def register_generator_state(self, *a):
        pass


def graph_pool_handle():
    return (0, 0)


class amp:
    @staticmethod
    def autocast(*a, **k):
        return contextlib.nullcontext()

    @staticmethod
    def custom_fwd(fn=None, **k):
        return fn if fn is not None else (lambda f: f)

    custom_bwd = custom_fwd


def _tensor_types():
    # torch.cuda.FloatTensor and friends: every stand-in tensor is on the
    # simulated device, so they are the one Tensor class.
    from .._tensor import Tensor
    return Tensor


FloatTensor = HalfTensor = BFloat16Tensor = LongTensor = IntTensor = \
    ByteTensor = BoolTensor = DoubleTensor = _tensor_types()
