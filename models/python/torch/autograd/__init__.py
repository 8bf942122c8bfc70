"""torch.autograd: custom Functions run their real forward; their outputs are
recorded as Custom nodes so their backward can be replayed once gradients are
modelled."""
import inspect
import sys

import numpy as np

from .. import _autograd, _tracing
from .._tensor import Tensor, record


class FunctionCtx:
    def __init__(self):
        self._saved = ()  # (tensor, its version counter, version when saved)
        self.needs_input_grad = ()
        self.materialize_grads = True
        self._dirty = ()
        self._non_differentiable = ()
        self._node = None  # its autograd node, once the outputs have one

    def save_for_backward(self, *tensors):
        for k, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but "
                                f"argument {k} is of type {type(t).__name__}")
        self._saved = tuple(
            (t, None, 0) if t is None else (t, t._version_counter(), t._version)
            for t in tensors)

    @property
    def saved_tensors(self):
        """As PyTorch unpacks them: an error once freed, or when one was
        written in place after it was saved."""
        if self._node is not None and self._node.freed and self._saved:
            raise RuntimeError(_autograd.SECOND_BACKWARD)
        for t, counter, version in self._saved:
            if counter is not None and counter.value != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been "
                    f"modified by an inplace operation: [{t.dtype} {list(t.shape)}] is "
                    f"at version {counter.value}; expected version {version} instead")
        return tuple(t for t, _, _ in self._saved)

    def mark_dirty(self, *tensors):
        """The forward wrote into these inputs and returns them: the caller's
        tensors themselves become the outputs, with this Function's history."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, flag):
        self.materialize_grads = flag


def _is_among(t, tensors):
    return any(t is x for x in tensors)


class Function:
    @classmethod
    def apply(cls, *args, **kwargs):
        if any(isinstance(v, Tensor) and v.requires_grad for v in kwargs.values()):
            _tracing.unmodelled(f"{cls.__name__}.apply with a tensor that requires grad "
                                "passed by keyword")
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(
            isinstance(a, Tensor) and a.requires_grad for a in args)
        with _autograd._no_grad():  # forward's own ops are not differentiated
            if cls.setup_context is not Function.setup_context:
                # PyTorch 2's form: forward without ctx, then setup_context
                # with the inputs and the output.
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        outputs = out if isinstance(out, tuple) else (out,)
        name = "custom:" + cls.__name__
        inputs = tuple(a for a in args if isinstance(a, Tensor))
        wrapped = [_wrap_output(o, ctx, name, inputs) if isinstance(o, Tensor) else o
                   for o in outputs]
        if _autograd.requires_grad(args):
            loc = _tracing.location()
            node = _autograd.GradNode(name, _backward_of(cls, ctx, args, wrapped), args,
                                      loc, len(wrapped), takes_tensors=True)
            for nr, o in enumerate(wrapped):
                if isinstance(o, Tensor) and o.dtype.is_floating_point and \
                        not _is_among(o, ctx._non_differentiable):
                    o.requires_grad, o.grad_fn, o._output_nr = True, node, nr
            ctx._node = node
        return tuple(wrapped) if isinstance(out, tuple) else wrapped[0]

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError


def _wrap_output(o, ctx, name, inputs):
    """The tensor the caller gets for a forward output: the input itself
    when the forward wrote into it and marked it dirty, else a new tensor on
    the same storage (sharing its version counter, as a view would)."""
    if _is_among(o, ctx._dirty):
        if o.grad_fn is None and o.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad has been used in an "
                               "in-place operation.")
        o._node = record(o._a, o.dtype, name, "custom", (o,) + inputs)._node
        return o
    wrapped = record(o._a, o.dtype, name, "custom", (o,) + inputs)
    wrapped._vc = o._version_counter()
    if _is_among(o, ctx._non_differentiable):
        wrapped.requires_grad, wrapped.grad_fn = False, None
    return wrapped


def _backward_of(cls, ctx, args, wrapped):
    """The node's VJP: the user's backward, with PyTorch's checks of what it
    returns (one gradient per forward argument; None for non-tensors)."""
    def vjp(grads):
        grads = [g if g is not None or not ctx.materialize_grads else
                 _zeros_like(o) for g, o in zip(grads, wrapped)]
        result, returned_at = _run_backward(cls, ctx, grads)
        result = result if isinstance(result, tuple) else (result,)
        result = tuple(_handed_on(cls, g, grads, returned_at) for g in result)
        extra = result[len(args):]
        if len(result) < len(args) or any(g is not None for g in extra):
            raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect "
                               f"number of gradients (expected {len(args)}, got "
                               f"{len(result)})")
        tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        out = []
        for i, (a, g) in enumerate(zip(args, result)):
            if g is not None and not isinstance(a, Tensor):
                raise RuntimeError(f"function {cls.__name__}Backward returned a gradient "
                                   f"different than None at position {i + 1}, but the "
                                   "corresponding forward input was not a Variable")
            out.append(_validate(cls, tensors.index(i) if i in tensors else i, a, g))
        return out
    return vjp


def _run_backward(cls, ctx, grads):
    """The user's backward and the place of the `return` that ended it
    (None when unknown)."""
    code = getattr(inspect.unwrap(cls.backward), "__code__", None)
    returns = []

    def profile(frame, event, arg):
        if event == "return" and frame.f_code is code:
            returns.append((code.co_filename, frame.f_lineno, code.co_name,
                            _tracing._column(frame)))

    outer = sys.getprofile()
    sys.setprofile(profile if code is not None else outer)
    try:
        result = cls.backward(ctx, *grads)
    finally:
        sys.setprofile(outer)
    return result, returns[-1] if returns else None


def _handed_on(cls, grad, grads, returned_at):
    """A gradient the backward returns as it was handed it, as a copy
    recorded at the backward's `return`: the IR then shows that the
    Function's backward decided this value (a wrong one is reported there,
    not at the op that made it)."""
    if returned_at is None or not isinstance(grad, Tensor) or \
            not any(grad is g for g in grads):
        return grad
    return record(np.array(grad._a, dtype=object), grad.dtype,
                  "grad:custom:" + cls.__name__, "view", (grad,), loc=returned_at)


def _validate(cls, index, arg, grad):
    """PyTorch's check of a custom backward's gradient against its input: a
    gradient of the input's shape passes, one the input broadcasts to is
    summed back to it, any other shape is an error."""
    if not (isinstance(arg, Tensor) and isinstance(grad, Tensor)) or \
            tuple(grad.shape) == tuple(arg.shape):
        return grad
    shape, gshape = tuple(arg.shape), tuple(grad.shape)
    lead = len(gshape) - len(shape)
    if lead >= 0 and all(s in (1, g) for s, g in zip(shape, gshape[lead:])):
        dims = tuple(range(lead)) + tuple(
            lead + i for i, (s, g) in enumerate(zip(shape, gshape[lead:])) if s == 1 and g != 1)
        return (grad.sum(dim=dims, keepdim=True) if dims else grad).reshape(shape)
    error = RuntimeError(f"Function {cls.__name__}Backward returned an invalid gradient "
                         f"at index {index} - got {list(gshape)} but expected shape "
                         f"compatible with {list(shape)}")
    code = getattr(cls.backward, "__code__", None)
    if code is not None:  # raised after it returned: the backward is where to look
        error.loc = (code.co_filename, code.co_firstlineno)
    raise error


def _zeros_like(t):
    from .. import zeros_like
    return zeros_like(t) if isinstance(t, Tensor) else None


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """One backward pass over the roots (each leaf's hooks run once, on its
    gradient summed over every root)."""
    tensors = list(tensors) if isinstance(tensors, (tuple, list)) else [tensors]
    grad_tensors = grad_variables if grad_tensors is None else grad_tensors
    grads = list(grad_tensors) if isinstance(grad_tensors, (tuple, list)) else \
        [grad_tensors] * len(tensors)
    if len(tensors) == 1:
        tensors[0].backward(grads[0], retain_graph=retain_graph, create_graph=create_graph,
                            inputs=inputs)
        return
    if isinstance(grad_tensors, Tensor):
        grads = [grad_tensors]
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grads)} gradients")
    if create_graph:
        _tracing.unmodelled("backward(create_graph=True) (higher-order gradients)")
    for k, (t, g) in enumerate(zip(tensors, grads)):
        if not t.requires_grad:
            raise RuntimeError(f"element {k} of tensors does not require grad and does "
                               "not have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            from .. import ones_like
            grads[k] = ones_like(t)
    _autograd.backward_many(tensors, grads, retain_graph=bool(retain_graph), inputs=inputs)


def grad(*a, **k):
    from .._tracing import Unsupported
    raise Unsupported("torch.autograd.grad (gradient obligations are not modelled yet)")


def once_differentiable(fn):
    """Marks a backward that is not itself differentiable: higher-order
    gradients are not modelled anyway, so it runs as it is."""
    return fn


class function:  # torch.autograd.function.FunctionCtx lives here upstream
    FunctionCtx = FunctionCtx
    Function = Function
    once_differentiable = staticmethod(once_differentiable)


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """The deprecated wrapper: as in PyTorch, Variable(t) is t itself."""

    @_tracing.no_effect(volatile="deprecated, and ignored by PyTorch itself")
    def __new__(cls, data, requires_grad=False, volatile=False):
        if requires_grad:
            data.requires_grad = True
        return data


class _ExecutionEngine:
    """Variable._execution_engine: queue_callback(fn) runs fn when the
    running backward ends (DeepSpeed's and DDP's gradient reductions)."""

    @staticmethod
    def queue_callback(callback):
        _autograd.queue_callback(callback)

    @staticmethod
    def run_backward(tensors, grad_tensors, keep_graph=False, create_graph=False,
                     inputs=(), allow_unreachable=True, accumulate_grad=True):
        """The engine's entry, as torch.autograd.backward calls it but
        without the check that each gradient has its tensor's shape: Megatron's
        custom_backward runs it on an output whose .data
        deallocate_output_tensor replaced by one element, with the gradient
        of the output's real shape, which its grad_fn takes."""
        if create_graph:
            _tracing.unmodelled("backward(create_graph=True) (higher-order gradients)")
        if not accumulate_grad:
            _tracing.unmodelled("Variable._execution_engine.run_backward("
                                "accumulate_grad=False) (autograd.grad)")
        tensors, grads = list(tensors), list(grad_tensors)
        if len(grads) != len(tensors):
            raise RuntimeError(f"got {len(tensors)} tensors and {len(grads)} gradients")
        for k, (t, g) in enumerate(zip(tensors, grads)):
            if not t.requires_grad:
                raise RuntimeError(f"element {k} of tensors does not require grad and "
                                   "does not have a grad_fn")
            if g is None:
                from .. import ones_like
                grads[k] = ones_like(t)
        _autograd.backward_many(tensors, grads, retain_graph=bool(keep_graph),
                                inputs=list(inputs) or None)


Variable._execution_engine = _ExecutionEngine()

from . import graph  # noqa: E402,F401 (torch.autograd.graph, as PyTorch imports it)
