"""torch.cuda: the simulated device always exists. Device selection, memory
queries and streams cannot change a value here: the stand-in runs every op at
once, in program order, on one simulated device (so a missing synchronisation
between streams, a race on real hardware, is not found). CUDA graph capture
and autocasting change what runs, and are not modelled."""
import contextlib

from .. import _tracing
from .. import amp as _amp

_DEVICE = "one simulated device: which one is asked for changes no value"
_NO_HARDWARE = "no hardware behind it: the simulated device reports fixed numbers"
_IN_ORDER = "every op runs at once, in program order: nothing is ever pending"
_REJECTED = "every call is rejected: CUDA graph capture is not modelled"


def is_available():
    return True


def _index(device):
    """The index of a device given as an int, "cuda:i" or torch.device."""
    if device is None:
        return None
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        return int(device.split(":")[1]) if ":" in device else None
    return getattr(device, "index", None)


def _selected():
    """The selected device index of this run (values never depend on it;
    code may read it back)."""
    return _tracing.state.per_run.setdefault("cuda.device", [0])


def current_device():
    return _selected()[-1]


def device_count():
    return 1


def set_device(device):
    index = _index(device)
    if index is not None:
        _selected()[-1] = index


@_tracing.no_effect(device=_DEVICE, function=_IN_ORDER)
def synchronize(device=None):
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


@_tracing.no_effect(device=_NO_HARDWARE)
def memory_stats(device=None):
    return {}


@_tracing.no_effect(mempool=_NO_HARDWARE)
def memory_snapshot(mempool=None):
    return []


@_tracing.no_effect(device=_NO_HARDWARE)
def utilization(device=None):
    return 0


temperature = power_draw = clock_rate = device_memory_used = utilization


@_tracing.no_effect(device=_NO_HARDWARE)
def get_device_capability(device=None):
    return (9, 0)


@_tracing.no_effect(device=_NO_HARDWARE)
def get_device_name(device=None):
    return "NVIDIA H100 (shardproof simulated)"


class _DeviceProperties:
    name = "NVIDIA H100 (shardproof simulated)"
    major, minor = 9, 0
    multi_processor_count = 132
    total_memory = 80 * 2 ** 30


@_tracing.no_effect(device=_NO_HARDWARE)
def get_device_properties(device=None):
    return _DeviceProperties()


@_tracing.no_effect(including_emulation=_NO_HARDWARE)
def is_bf16_supported(including_emulation=True):
    return True


def is_initialized():
    return True


def _lazy_init():
    return None


def _lazy_call(callable, **kwargs):  # noqa: A002 (torch's name)
    # PyTorch runs it at once when CUDA is initialised, which it always is here.
    callable()


class device:
    """The `with torch.cuda.device(i)` context: device i is selected inside."""

    def __init__(self, device):
        self.idx = _index(device)

    def __enter__(self):
        selected = _selected()
        selected.append(selected[-1] if self.idx is None or self.idx < 0 else self.idx)
        return self

    @_tracing.no_effect(exc="any exit restores the previous device")
    def __exit__(self, *exc):
        _selected().pop()
        return False


@_tracing.no_effect(device=_NO_HARDWARE)
def memory_allocated(device=None):
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated


@_tracing.no_effect(device=_NO_HARDWARE, function=_NO_HARDWARE)
def reset_peak_memory_stats(device=None):
    return None


reset_max_memory_allocated = reset_peak_memory_stats


@_tracing.no_effect(device=_NO_HARDWARE)
def mem_get_info(device=None):
    return (_DeviceProperties.total_memory, _DeviceProperties.total_memory)


@_tracing.no_effect(function="frees cached memory only")
def empty_cache():
    return None


class Stream:
    """A stream: ordering between streams is the program's order here."""

    @_tracing.no_effect(device=_DEVICE, priority=_IN_ORDER, kwargs=_IN_ORDER)
    def __init__(self, device=None, priority=0, **kwargs):
        self.device = device

    @_tracing.no_effect(stream=_IN_ORDER, function=_IN_ORDER)
    def wait_stream(self, stream):
        return None

    @_tracing.no_effect(function=_IN_ORDER)
    def synchronize(self):
        return None

    @_tracing.no_effect(event=_IN_ORDER, function=_IN_ORDER)
    def wait_event(self, event):
        return None

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self):
        return True


ExternalStream = Stream
def _streams():
    """The default stream first, the current one last (state of one run)."""
    return _tracing.state.per_run.setdefault("cuda.streams", [Stream()])


@_tracing.no_effect(device=_DEVICE)
def current_stream(device=None):
    return _streams()[-1]


@_tracing.no_effect(device=_DEVICE)
def default_stream(device=None):
    return _streams()[0]


def set_stream(stream):
    if stream is None:
        return
    streams = _streams()
    if len(streams) == 1:  # the default stays the default
        streams.append(stream)
    else:
        streams[-1] = stream


@contextlib.contextmanager
def stream(stream):  # noqa: F811 (torch's names)
    """The given stream is current inside the block (None: no change)."""
    if stream is None:
        yield
        return
    streams = _streams()
    streams.append(stream)
    try:
        yield
    finally:
        streams.pop()


class Event:
    """An event: every op before it has run when it is recorded."""

    @_tracing.no_effect(enable_timing=_IN_ORDER, blocking=_IN_ORDER,
                        interprocess=_IN_ORDER)
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.recorded = False

    @_tracing.no_effect(stream=_IN_ORDER)
    def record(self, stream=None):
        self.recorded = True

    @_tracing.no_effect(stream=_IN_ORDER, function=_IN_ORDER)
    def wait(self, stream=None):
        return None

    @_tracing.no_effect(function=_IN_ORDER)
    def synchronize(self):
        return None

    def query(self):
        return True

    def elapsed_time(self, end_event):
        """Milliseconds between two recorded events: a measurement no trace
        can know, so it stops the proof (could not prove)."""
        if not (self.recorded and end_event.recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        _tracing.unmodelled("torch.cuda.Event.elapsed_time (a measured time)")


class CUDAGraph:
    """A CUDA graph: while one is captured its ops do not run (replay runs
    them), which the stand-in does not model; making one is harmless."""

    def __init__(self, keep_graph=False):
        self.keep_graph = keep_graph

    @_tracing.no_effect(pool=_REJECTED, capture_error_mode=_REJECTED)
    def capture_begin(self, pool=None, capture_error_mode="global"):
        _tracing.unmodelled("CUDA graph capture (CUDAGraph.capture_begin)")

    def capture_end(self):
        _tracing.unmodelled("CUDA graph capture (CUDAGraph.capture_end)")

    def replay(self):
        _tracing.unmodelled("replaying a captured CUDA graph")

    @_tracing.no_effect(generator=_REJECTED)
    def register_generator_state(self, generator):
        _tracing.unmodelled("CUDA graph capture (CUDAGraph.register_generator_state)")


@_tracing.no_effect(cuda_graph=_REJECTED, pool=_REJECTED, stream=_REJECTED,
                    capture_error_mode=_REJECTED)
def graph(cuda_graph, pool=None, stream=None, capture_error_mode="global"):
    _tracing.unmodelled("CUDA graph capture (torch.cuda.graph)")


@_tracing.no_effect(callables=_REJECTED, sample_args=_REJECTED, args=_REJECTED,
                    kwargs=_REJECTED)
def make_graphed_callables(callables, sample_args, *args, **kwargs):
    _tracing.unmodelled("CUDA graph capture (torch.cuda.make_graphed_callables)")


def graph_pool_handle():
    return (0, 0)


class amp:
    """torch.cuda.amp: autocasting is torch.autocast("cuda"); enabling it is
    not modelled, so custom_fwd's cast_inputs (which acts only inside an
    enabled autocast region) and custom_bwd change nothing."""

    @staticmethod
    def autocast(enabled=True, dtype=None, cache_enabled=True):
        from .. import autocast, float16
        return autocast("cuda", dtype=dtype or float16, enabled=enabled,
                        cache_enabled=cache_enabled)

    @staticmethod
    @_tracing.no_effect(cast_inputs="acts only inside an enabled autocast region, "
                        "and enabling autocast is rejected")
    def custom_fwd(fwd=None, *, cast_inputs=None):
        return fwd if fwd is not None else (lambda f: f)

    @staticmethod
    def custom_bwd(bwd):
        return bwd

    class GradScaler(_amp.GradScaler):
        """torch.cuda.amp.GradScaler: torch.amp.GradScaler("cuda", ...)."""

        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True):
            super().__init__("cuda", init_scale, growth_factor, backoff_factor,
                             growth_interval, enabled)


# torch.cuda.FloatTensor and friends: every stand-in tensor is on the one
# simulated device, so they are torch.FloatTensor and friends.
from .. import (  # noqa: E402,F401
    FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor,
    ShortTensor, CharTensor, ByteTensor, BoolTensor,
)


def __getattr__(name):
    """A name real PyTorch's torch.cuda has and the stand-in does not model is
    "not modelled" (could not prove where used); any other does not exist."""
    from .._real_surface import NAMES
    return _tracing.unknown_attribute("torch.cuda", name, NAMES["torch.cuda"])
