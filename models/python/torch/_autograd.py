"""Reverse-mode autograd of the stand-in: every differentiable op records a
GradNode with its vector-Jacobian product; backward() walks them in reverse
topological order, running the real Python backward of custom Functions, so
the collectives a framework hides in its backward are recorded like any
other. Gradients are tensors of terms, recorded in the IR at the line of the
forward op they belong to."""
import contextlib
import weakref

import numpy as np

import _shardproof as _sp

from . import _tracing


class GradMode:
    enabled = True


class GradNode:
    """One recorded op. `vjp(grads)` takes the gradients of the outputs (a
    list of arrays or None, one per output) and returns one gradient (array,
    Tensor or None) per entry of `inputs`."""

    __slots__ = ("name", "vjp", "inputs", "loc", "num_outputs", "takes_tensors",
                 "_next", "_edges", "_keep", "module_outputs", "saved", "tensor_hooks", "freed",
                 "__weakref__")

    def __init__(self, name, vjp, inputs, loc, num_outputs=1, takes_tensors=False):
        # Built-in VJPs work on arrays; a custom Function's backward is user
        # code and gets Tensors.
        self.takes_tensors = takes_tensors
        # (module call, output k, output nr): outputs of this node a module
        # returned, whose whole gradient the trace records (modular proofs).
        self.module_outputs = ()
        # (tensor, its version counter, the version when saved): PyTorch's
        # saved variables, checked when the backward runs.
        self.saved = ()
        # output nr -> hooks registered on the tensor that is that output:
        # they run once, on its whole gradient, before this node's backward.
        self.tensor_hooks = {}
        self.freed = False  # a backward without retain_graph ran through it
        self.name = name
        self.vjp = vjp
        self.inputs = inputs
        self.loc = loc
        self.num_outputs = num_outputs
        self._next = None
        # Where each input's gradient goes, fixed now as in PyTorch: a later
        # in-place write to an input gives it a new grad_fn, which must not
        # reroute the gradient of this earlier use.
        Tensor = _tensor_type()
        self._edges = tuple(
            (i.grad_fn, getattr(i, "_output_nr", 0), i.requires_grad)
            if isinstance(i, Tensor) else (None, 0, False) for i in inputs)
        # As in PyTorch, a graph holds the AccumulateGrad nodes of the leaves
        # it reaches: hooks registered on them fire even if the caller let
        # go of the node after building the graph.
        self._keep = tuple(a for a in (
            _live_accumulator(i) for i, (fn, _, needs) in zip(inputs, self._edges)
            if fn is None and needs) if a is not None)

    @property
    def next_functions(self):
        """(node, output_nr) per input, as in PyTorch: the input's grad_fn,
        the AccumulateGrad node of a leaf that requires grad, or None. The
        node holds them, so a leaf's accumulator lives as long as a graph
        that reaches it (the grad-accumulator trick of Megatron's DDP)."""
        if self._next is None:
            edges = []
            for inp, (grad_fn, nr, needs) in zip(self.inputs, self._edges):
                if grad_fn is not None:
                    edges.append((grad_fn, nr))
                elif needs:
                    edges.append((grad_accumulator(inp), 0))
                else:
                    edges.append((None, 0))
            self._next = tuple(edges)
        return self._next

    def save(self, tensors):
        self.saved = tuple((t, t._version_counter(), t._version_counter().value)
                           for t in tensors)

    def check_saved(self):
        if self.freed and self.saved:
            raise RuntimeError(SECOND_BACKWARD)
        for t, counter, version in self.saved:
            if counter.value != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been "
                    f"modified by an inplace operation: [{t.dtype} {list(t.shape)}], "
                    f"which {self.name} saved for its backward, is at version "
                    f"{counter.value}; expected version {version} instead")

    def register_hook(self, hook):
        _tracing.unmodelled("a hook on an autograd node other than a leaf's "
                            f"AccumulateGrad ({hook!r})")

    register_prehook = register_hook


SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the "
    "graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward.")


class AccumulateGrad:
    """The node that adds a gradient into a leaf's .grad. PyTorch keeps one
    per leaf while something holds it (a graph, or the user: Megatron's DDP
    keeps them in grad_accs); its hooks run after the accumulation, its
    pre-hooks before, and it is found again through the leaf while alive."""

    next_functions = ()

    def __init__(self, variable):
        self.variable = variable
        self._hooks = []
        self._prehooks = []

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def register_hook(self, hook):
        """hook(grad_inputs, grad_outputs), after .grad is updated."""
        from ._tensor import _RemovableHook
        self._hooks.append(hook)
        return _RemovableHook(self._hooks, hook)

    def register_prehook(self, hook):
        """hook(grad_outputs) -> None or replaced grad_outputs, before."""
        from ._tensor import _RemovableHook
        self._prehooks.append(hook)
        return _RemovableHook(self._prehooks, hook)


def grad_accumulator(leaf):
    """The leaf's live AccumulateGrad node, made if none is alive."""
    ref = leaf.__dict__.get("_grad_accumulator")
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._grad_accumulator = weakref.ref(node)
    return node


def _live_accumulator(leaf):
    ref = leaf.__dict__.get("_grad_accumulator")
    return ref() if ref is not None else None


def _tensor_type():
    from ._tensor import Tensor
    return Tensor


def requires_grad(inputs):
    Tensor = _tensor_type()
    return GradMode.enabled and any(
        isinstance(i, Tensor) and i.requires_grad for i in inputs)


def attach(out, name, vjp, inputs, loc=None):
    """Makes `out` the result of a differentiable op, if any input needs it.
    A float result of an op whose gradient is not modelled still requires
    grad, as in PyTorch: a backward that reaches it stops "could not prove"
    there, instead of silently cutting the graph."""
    if not requires_grad(inputs):
        return out
    loc = loc or _tracing.location()
    if vjp is None:
        if not out.dtype.is_floating_point:
            return out  # integer and bool results never require grad
        vjp = _unmodelled_gradient(name, loc)
    out.requires_grad = True
    out.grad_fn = GradNode(name, vjp, tuple(inputs), loc)
    out._output_nr = 0
    return out


def _unmodelled_gradient(name, loc):
    def vjp(grads):
        file, line, _, _ = loc
        raise _tracing.Unsupported(f"the gradient of {name} is not modelled",
                                   loc=(file, line))
    return vjp


def _topological(root):
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for grad_fn, _, _ in node._edges:
            if grad_fn is not None:
                stack.append((grad_fn, False))
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


def backward(root, gradient, retain_graph=False, inputs=None):
    """Runs the backward of `root`; with `inputs`, only those leaves
    accumulate a gradient (as PyTorch's backward(inputs=...))."""
    Tensor = _tensor_type()
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        if not inputs or any(i.grad_fn is not None for i in inputs):
            _tracing.unmodelled("backward(inputs=...) naming a non-leaf tensor or "
                                "no tensor")
        only = {id(i) for i in inputs}
    else:
        only = None
    if root.grad_fn is None:
        if root.requires_grad:
            with _no_grad():
                _accumulate_leaf(root, gradient)
                _run_queued_callbacks()
        return
    slots = {id(root.grad_fn): [None] * root.grad_fn.num_outputs}
    slots[id(root.grad_fn)][root._output_nr] = gradient
    order = _topological(root.grad_fn)
    # As PyTorch's engine, a leaf's gradient is summed over every use before
    # its AccumulateGrad runs once (so its hooks see the whole gradient, once):
    # `pending` counts the uses not yet reached in the walk.
    pending, leaf_grads = {}, {}
    for node in order:
        for inp, (grad_fn, _, needs) in zip(node.inputs, node._edges):
            if grad_fn is None and needs and isinstance(inp, Tensor):
                pending[id(inp)] = pending.get(id(inp), 0) + 1
    accumulated = {leaf for leaf in pending if only is None or leaf in only}
    with _no_grad(), _graph_task(order, accumulated):
        for node in order:
            grads = slots.pop(id(node), None)
            if grads is not None:
                grads = _run_tensor_hooks(node, grads)
                _record_module_gradients(node, grads)
            if grads is None or all(g is None for g in grads):
                results = [None] * len(node.inputs)  # its leaf uses still settle
            else:
                node.check_saved()
                results = node.vjp(grads if node.takes_tensors else
                                   [None if g is None else g._a for g in grads])
            for inp, (grad_fn, nr, needs), g in zip(node.inputs, node._edges, results):
                if not isinstance(inp, Tensor) or not needs:
                    continue
                if g is not None:
                    # In the IR a gradient depends on the output gradients and
                    # on the forward values its VJP reads (the op's inputs).
                    parents = [x for x in grads if x is not None] + list(node.inputs)
                    g = _as_tensor(g, inp, node, parents)
                if grad_fn is None:
                    if g is not None:
                        old = leaf_grads.get(id(inp))
                        leaf_grads[id(inp)] = g if old is None else old + g
                    pending[id(inp)] -= 1
                    if pending[id(inp)] == 0 and id(inp) in leaf_grads:
                        g = leaf_grads.pop(id(inp))
                        if only is not None and id(inp) not in only:
                            continue
                        for hook in getattr(inp, "_grad_hooks", ()):
                            replaced = hook(g)
                            if replaced is not None:
                                g = replaced
                        _accumulate_leaf(inp, g)
                    continue
                if g is None:
                    continue
                slot = slots.setdefault(id(grad_fn), [None] * grad_fn.num_outputs)
                slot[nr] = g if slot[nr] is None else slot[nr] + g
        _run_queued_callbacks()
    if not retain_graph:
        for node in order:
            node.freed = True


class _GraphTask:
    """The running backward, as PyTorch's engine knows it: which nodes it
    executes (DeepSpeed's ZeRO counts the parameters a backward reaches with
    torch._C._will_engine_execute_node before it reduces)."""

    def __init__(self, order, accumulated):
        state = _tracing.state.per_run
        state["autograd.graph_tasks"] = state.get("autograd.graph_tasks", 0) + 1
        self.id = state["autograd.graph_tasks"]
        self.nodes = {id(node) for node in order}
        self.leaves = accumulated  # ids of the leaves whose AccumulateGrad runs

    def executes(self, node):
        if isinstance(node, AccumulateGrad):
            return id(node.variable) in self.leaves
        return id(node) in self.nodes


@contextlib.contextmanager
def _graph_task(order, accumulated):
    state = _tracing.state.per_run
    outer = state.get("autograd.graph_task")
    state["autograd.graph_task"] = _GraphTask(order, accumulated)
    try:
        yield
    finally:
        state["autograd.graph_task"] = outer


def current_graph_task_id():
    """torch._C._current_graph_task_id: -1 outside a backward."""
    task = _tracing.state.per_run.get("autograd.graph_task")
    return task.id if task is not None else -1


def will_engine_execute_node(node):
    """torch._C._will_engine_execute_node: whether the running backward
    executes `node` (a grad_fn, or a leaf's AccumulateGrad)."""
    task = _tracing.state.per_run.get("autograd.graph_task")
    if task is None:
        raise RuntimeError("_will_engine_execute_node should only be called during the "
                           "backward pass")
    return task.executes(node)


def grad_fn_or_grad_accumulator(tensor):
    """torch.autograd.graph._get_grad_fn_or_grad_acc: a leaf that requires
    grad has its AccumulateGrad node, any other tensor its grad_fn."""
    if tensor.requires_grad and tensor.grad_fn is None:
        return grad_accumulator(tensor)
    return tensor.grad_fn


def _queued_callbacks():
    """PyTorch's Variable._execution_engine.queue_callback queue, per run (a
    run that stopped mid-backward must not hand its callbacks to the next)."""
    return _tracing.state.per_run.setdefault("autograd.queued_callbacks", [])


def queue_callback(callback):
    """Runs `callback` when the running backward ends, with grad mode off,
    as the engine's final callbacks (DDP's gradient reduction)."""
    _queued_callbacks().append(callback)


def _run_queued_callbacks():
    queue = _queued_callbacks()
    while queue:
        queue.pop(0)()


def _run_tensor_hooks(node, grads):
    """Hooks of the tensors this node produced, on each one's whole gradient
    (every use has contributed by now), as PyTorch's tensor pre-hooks: a
    hook may replace the gradient; retain_grad's runs last."""
    if not node.tensor_hooks:
        return grads
    grads = list(grads)
    for nr, hooks in node.tensor_hooks.items():
        if grads[nr] is None:
            continue
        for hook in sorted(hooks, key=lambda h: getattr(h, "_retains_grad", False)):
            replaced = hook(grads[nr])
            if replaced is not None:
                grads[nr] = replaced
    return grads


def _record_module_gradients(node, grads):
    """The whole gradient of a module's output, now that every use of it
    has contributed (the node's outputs are complete when it is reached)."""
    for call, k, nr in node.module_outputs:
        g = grads[nr]
        if g is not None and g._a.dtype == object:
            _sp.record_module_gradient(call, k, g._node or 0, g._a.ravel().tolist())


def _accumulate_leaf(leaf, g):
    node = _live_accumulator(leaf)
    if node is not None:
        for hook in list(node._prehooks):
            replaced = hook((g,))
            if replaced is not None:
                g = replaced[0]
    if g.dtype != leaf.dtype:  # the engine casts to the input's dtype (validate_outputs)
        g = g.to(leaf.dtype)
    if leaf.grad is None:
        # PyTorch steals the gradient when nothing else holds it and clones
        # it otherwise: either way, a storage of its own.
        leaf.grad = g if GradMode.enabled else \
            _tensor_type()(g._a.copy(), g.dtype, g._node)
    elif GradMode.enabled:  # create_graph: a new tensor
        leaf.grad = leaf.grad + g
    else:
        # AccumulateGrad adds in place: a .grad that is a view of a flat
        # buffer (DDP's buckets, Megatron's main_grad) fills the buffer.
        leaf.grad.add_(g)
    for hook in list(getattr(leaf, "_post_accumulate_hooks", ())):
        hook(leaf)
    if node is not None:
        for hook in list(node._hooks):
            result = hook((), (g,))
            if result is not None and not isinstance(result, tuple):
                raise TypeError("expected tuple, but hook returned "
                                f"'{type(result).__name__}'")


_DEFAULT = object()  # an argument the caller did not give


def zero_grads(params, set_to_none, owner):
    """Module.zero_grad and Optimizer.zero_grad. The default of set_to_none
    changed (False in PyTorch 1.x, True from 2.0): where the two differ, a
    .grad that shares storage with another tensor (a view of a flat buffer),
    the call must say which it means."""
    params = [p for p in params if p.grad is not None]
    if set_to_none is _DEFAULT:
        if any(_shares_storage(p.grad) for p in params):
            _tracing.unmodelled(f"{owner}.zero_grad() without set_to_none while a .grad "
                                "shares storage with another tensor (PyTorch 1.x zeroes "
                                "it in place, 2.x drops it): pass set_to_none")
        set_to_none = True
    for p in params:
        if set_to_none:
            p.grad = None
            continue
        # The gradient tensor is kept (its views, a flat buffer, see the
        # zeros), cut from autograd in place (detach_), and zeroed.
        p.grad.requires_grad, p.grad.grad_fn = False, None
        with _no_grad():
            p.grad.zero_()


def _shares_storage(t):
    views = t.__dict__.get("_views", {})
    return getattr(t, "_base", None) is not None or any(r() is not None
                                                      for r in views.values())


class _no_grad:
    def __enter__(self):
        self.old = GradMode.enabled
        GradMode.enabled = False

    def __exit__(self, *exc):
        GradMode.enabled = self.old
