"""torch.autograd.graph: `_get_grad_fn_or_grad_acc` and `Node` are modelled;
the other public names of PyTorch's module exist (imports, annotations and
subclasses work) but stop tracing with "not modelled" where code calls or
enters them."""
import abc

from .. import _autograd, _tracing

_get_grad_fn_or_grad_acc = _autograd.grad_fn_or_grad_accumulator



class Node(abc.ABC):  # noqa: B024 (PyTorch's: every grad_fn is one)
    pass


Node.register(_autograd.GradNode)
Node.register(_autograd.AccumulateGrad)


class saved_tensors_hooks:  # noqa: N801 (PyTorch's name)
    """Pack/unpack hooks on the tensors autograd saves: a class frameworks
    subclass (activation offloading); what the hooks do to saved values is
    not modelled, so entering one stops the trace."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        _tracing.unmodelled(f"torch.autograd.graph.{type(self).__name__}")

    __exit__ = __enter__  # never reached: entering stopped the trace


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(None, None)
        self.pin_memory, self.device_type = pin_memory, device_type


class disable_saved_tensors_hooks(saved_tensors_hooks):  # noqa: N801
    def __init__(self, error_message):
        super().__init__(None, None)
        self.error_message = error_message


# PyTorch 2.x's other public names here (dir(torch.autograd.graph), torch 2.10).
_REAL_NAMES = frozenset([
    "GradientEdge", "allow_mutation_on_saved_tensors", "get_gradient_edge",
    "increment_version", "node_creation_hook", "queue_callback",
    "region_activation_memory_budget", "register_multi_grad_hook",
    "set_override_stale_capture_stream", "set_warn_on_accumulate_grad_stream_mismatch"])


class _NotModelled:
    """A name PyTorch has and the stand-in does not model: harmless to import
    or to name in an annotation; calling or entering it stops the trace."""

    def __init__(self, name):
        self._name = f"torch.autograd.graph.{name}"

    def _stop(self, *args, **kwargs):
        _tracing.unmodelled(self._name)

    __call__ = __enter__ = _stop

    def __or__(self, other):  # `Node | None` in an evaluated annotation
        return self

    __ror__ = __or__

    def __repr__(self):
        return f"<{self._name}: not modelled>"


def __getattr__(name):
    if name in _REAL_NAMES:
        return _NotModelled(name)
    raise AttributeError(f"module 'torch.autograd.graph' has no attribute '{name}'")
