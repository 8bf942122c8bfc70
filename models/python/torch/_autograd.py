"""Reverse-mode autograd of the stand-in: every differentiable op records a
GradNode with its vector-Jacobian product; backward() walks them in reverse
topological order, running the real Python backward of custom Functions, so
the collectives a framework hides in its backward are recorded like any
other. Gradients are tensors of terms, recorded in the IR at the line of the
forward op they belong to."""
import numpy as np

from . import _tracing


class GradMode:
    enabled = True


class GradNode:
    """One recorded op. `vjp(grads)` takes the gradients of the outputs (a
    list of arrays or None, one per output) and returns one gradient (array,
    Tensor or None) per entry of `inputs`."""

    __slots__ = ("name", "vjp", "inputs", "loc", "num_outputs", "takes_tensors",
                 "__weakref__")

    def __init__(self, name, vjp, inputs, loc, num_outputs=1, takes_tensors=False):
        # Built-in VJPs work on arrays; a custom Function's backward is user
        # code and gets Tensors.
        self.takes_tensors = takes_tensors
        self.name = name
        self.vjp = vjp
        self.inputs = inputs
        self.loc = loc
        self.num_outputs = num_outputs


def _tensor_type():
    from ._tensor import Tensor
    return Tensor


def requires_grad(inputs):
    Tensor = _tensor_type()
    return GradMode.enabled and any(
        isinstance(i, Tensor) and i.requires_grad for i in inputs)


def attach(out, name, vjp, inputs, loc=None):
    """Makes `out` the result of a differentiable op, if any input needs it."""
    if vjp is None or not requires_grad(inputs):
        return out
    out.requires_grad = True
    out.grad_fn = GradNode(name, vjp, tuple(inputs), loc or _tracing.location())
    out._output_nr = 0
    return out


def _topological(root):
    order, seen = [], set()
    stack = [(root, False)]
    Tensor = _tensor_type()
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for inp in node.inputs:
            if isinstance(inp, Tensor) and inp.grad_fn is not None:
                stack.append((inp.grad_fn, False))
    order.reverse()  # consumers before producers
    return order


def _as_tensor(g, like, node, parents):
    """A gradient array as a Tensor recorded at the forward op's line, with
    the output gradients it came from as its IR inputs."""
    Tensor = _tensor_type()
    if g is None or isinstance(g, Tensor):
        return g
    from ._tensor import record
    return record(np.asarray(g, dtype=object).reshape(like.shape), like.dtype,
                  "grad:" + node.name, "elementwise", parents, loc=node.loc)


def backward(root, gradient):
    Tensor = _tensor_type()
    if root.grad_fn is None:
        if root.requires_grad:
            _accumulate_leaf(root, gradient)
        return
    slots = {id(root.grad_fn): [None] * root.grad_fn.num_outputs}
    slots[id(root.grad_fn)][root._output_nr] = gradient
    with _no_grad():
        for node in _topological(root.grad_fn):
            grads = slots.pop(id(node), None)
            if grads is None or all(g is None for g in grads):
                continue
            results = node.vjp(grads if node.takes_tensors else
                               [None if g is None else g._a for g in grads])
            for inp, g in zip(node.inputs, results):
                if g is None or not isinstance(inp, Tensor) or not inp.requires_grad:
                    continue
                # In the IR a gradient depends on the output gradients and on
                # the forward values its VJP reads (the op's inputs).
                parents = [x for x in grads if x is not None] + list(node.inputs)
                g = _as_tensor(g, inp, node, parents)
                for hook in getattr(inp, "_grad_hooks", ()):
                    replaced = hook(g)
                    if replaced is not None:
                        g = replaced
                if inp.grad_fn is None:
                    _accumulate_leaf(inp, g)
                else:
                    slot = slots.setdefault(id(inp.grad_fn),
                                            [None] * inp.grad_fn.num_outputs)
                    nr = inp._output_nr
                    slot[nr] = g if slot[nr] is None else slot[nr] + g


def _accumulate_leaf(leaf, g):
    leaf.grad = g if leaf.grad is None else leaf.grad + g
    for hook in getattr(leaf, "_post_accumulate_hooks", ()):
        hook(leaf)


class _no_grad:
    def __enter__(self):
        self.old = GradMode.enabled
        GradMode.enabled = False

    def __exit__(self, *exc):
        GradMode.enabled = self.old
