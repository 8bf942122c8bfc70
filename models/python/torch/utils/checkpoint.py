"""torch.utils.checkpoint: activation checkpointing.

The reentrant form (PyTorch 2.4's default, use_reentrant=True or None) is
PyTorch's algorithm: the forward runs without a graph, the backward runs the
function again on detached inputs, with the RNG state the forward saw (when
preserve_rng_state), and differentiates that recomputation, so what the
recomputation does (its collectives, its draws) is recorded a second time as
on real hardware. The non-reentrant form (use_reentrant=False) records the
forward's graph and differentiates it directly: the values and gradients are
those of PyTorch's recomputation as long as the function is deterministic
given the RNG state (which preserve_rng_state ensures) and reads no state
that changes between its forward and its backward."""
import contextlib

from .. import _tracing
from ..autograd import Function

_ERROR_CHECK_ONLY = "it only decides which errors the recomputation raises"


def detach_variable(inputs):
    """Each tensor of the tuple detached, keeping its requires_grad."""
    from .. import Tensor
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input "
                           f"type: {type(inputs).__name__}")
    detached = []
    for x in inputs:
        if isinstance(x, Tensor):
            requires_grad = x.requires_grad
            x = x.detach()
            x.requires_grad = requires_grad
        detached.append(x)
    return tuple(detached)


def _rng_states():
    from .. import cuda, get_rng_state
    return get_rng_state(), cuda.get_rng_state()


def _set_rng_states(states):
    from .. import cuda, set_rng_state
    set_rng_state(states[0])
    cuda.set_rng_state(states[1])


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        from .. import Tensor, no_grad
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.forward_rng_states = _rng_states()
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        from .. import Tensor, autograd, enable_grad
        inputs = list(ctx.inputs)
        for k, saved in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[k] = saved
        if ctx.preserve_rng_state:  # torch.random.fork_rng around the recomputation
            states_now = _rng_states()
            _set_rng_states(ctx.forward_rng_states)
        try:
            detached = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached)
        finally:
            if ctx.preserve_rng_state:
                _set_rng_states(states_now)
        outputs = (outputs,) if isinstance(outputs, Tensor) else outputs
        with_grad = [(o, g) for o, g in zip(outputs, grads)
                     if isinstance(o, Tensor) and o.requires_grad]
        if not with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() "
                               "is not necessary")
        autograd.backward([o for o, _ in with_grad], [g for _, g in with_grad])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None
                                    for x in detached)


def noop_context_fn():
    """The default context_fn: no context around the forward nor around the
    recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


@_tracing.no_effect(determinism_check=_ERROR_CHECK_ONLY,
                    debug="it only adds operator traces to the errors raised")
def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, preserve_rng_state=True,
               **kwargs):
    if use_reentrant is None:  # PyTorch 2.4 warns, then takes the reentrant form
        use_reentrant = True
    if context_fn is not noop_context_fn:
        if use_reentrant:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        _tracing.unmodelled("torch.utils.checkpoint with a custom context_fn")
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """The functions in `segments` checkpointed runs, the last one plain."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


def __getattr__(name):
    """A name real PyTorch's torch.utils.checkpoint has and the stand-in does not model is
    "not modelled" (could not prove where used); any other does not exist."""
    from .._real_surface import NAMES
    return _tracing.unknown_attribute("torch.utils.checkpoint", name, NAMES["torch.utils.checkpoint"])
