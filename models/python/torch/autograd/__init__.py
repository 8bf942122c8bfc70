"""torch.autograd: custom Functions run their real forward; their outputs are
recorded as Custom nodes so their backward can be replayed once gradients are
modelled."""
from .. import _autograd, _tracing
from .._tensor import Tensor, record


class FunctionCtx:
    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_dirty(self, *a):
        pass

    def mark_non_differentiable(self, *a):
        pass

    def set_materialize_grads(self, flag):
        self.materialize_grads = flag


class Function:
    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(
            isinstance(a, Tensor) and a.requires_grad for a in args)
        with _autograd._no_grad():  # forward's own ops are not differentiated
            out = cls.forward(ctx, *args, **kwargs)
        outputs = out if isinstance(out, tuple) else (out,)
        name = "custom:" + cls.__name__
        inputs = tuple(a for a in args if isinstance(a, Tensor))
        wrapped = [record(o._a, o.dtype, name, "custom", (o,) + inputs)
                   if isinstance(o, Tensor) else o for o in outputs]
        if _autograd.requires_grad(args):
            loc = _tracing.location()

            def vjp(grads):
                grads = [g if g is not None or not ctx.materialize_grads else
                         _zeros_like(o) for g, o in zip(grads, wrapped)]
                result = cls.backward(ctx, *grads)
                result = result if isinstance(result, tuple) else (result,)
                # backward returns one gradient per forward argument
                tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
                result = [_validate(cls, tensors.index(i) if i in tensors else i, a, g)
                          for i, (a, g) in enumerate(zip(args, result))] + \
                    list(result[len(args):])
                return list(result) + [None] * (len(args) - len(result))

            node = _autograd.GradNode(name, vjp, args, loc, len(wrapped),
                                      takes_tensors=True)
            for nr, o in enumerate(wrapped):
                if isinstance(o, Tensor) and o.dtype.is_floating_point:
                    o.requires_grad, o.grad_fn, o._output_nr = True, node, nr
        return tuple(wrapped) if isinstance(out, tuple) else wrapped[0]

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError


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
    raise RuntimeError(f"Function {cls.__name__}Backward returned an invalid gradient at "
                       f"index {index} - got {list(gshape)} but expected shape compatible "
                       f"with {list(shape)}")


def _zeros_like(t):
    from .. import zeros_like
    return zeros_like(t) if isinstance(t, Tensor) else None


def backward(tensors, grad_tensors=None, **kwargs):
    tensors = tensors if isinstance(tensors, (tuple, list)) else (tensors,)
    grads = grad_tensors if isinstance(grad_tensors, (tuple, list)) else \
        (grad_tensors,) * len(tensors)
    for t, g in zip(tensors, grads):
        t.backward(g)


def grad(*a, **k):
    from .._tracing import Unsupported
    raise Unsupported("torch.autograd.grad (gradient obligations are not modelled yet)")


class function:  # torch.autograd.function.FunctionCtx lives here upstream
    FunctionCtx = FunctionCtx
    Function = Function


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """The deprecated wrapper: as in PyTorch, Variable(t) is t itself."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if requires_grad:
            data.requires_grad = True
        return data
