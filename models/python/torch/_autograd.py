"""Reverse-mode autograd of the stand-in: every differentiable op records a
GradNode with its vector-Jacobian product; backward() runs them in the order
of PyTorch's engine, running the real Python backward of custom Functions, so
the collectives a framework hides in its backward are recorded like any
other. Gradients are tensors of terms, recorded in the IR at the line of the
forward op they belong to."""
import contextlib
import itertools
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
                 "sequence_nr", "_hooks", "_prehooks", "__weakref__")

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
        # PyTorch numbers nodes as they are made; among ready nodes its engine
        # runs the latest-made first (the order hooks observe).
        self.sequence_nr = next(_SEQUENCE)
        self._hooks = self._prehooks = ()  # register_hook / register_prehook
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
        # go of the node after building the graph (or made it only later).
        self._keep = tuple(grad_accumulator(i) for i, (fn, _, needs)
                           in zip(inputs, self._edges) if fn is None and needs)

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

    def _sequence_nr(self):
        return self.sequence_nr

    def register_hook(self, hook):
        """hook(grad_inputs, grad_outputs) -> None or new grad_inputs, after
        the node's backward (one gradient per tensor input)."""
        from ._tensor import _RemovableHook
        if not self._hooks:
            self._hooks = []
        self._hooks.append(hook)
        return _RemovableHook(self._hooks, hook)

    def register_prehook(self, hook):
        """hook(grad_outputs) -> None or new grad_outputs, before the node's
        backward and after the hooks of the tensors it made."""
        from ._tensor import _RemovableHook
        if not self._prehooks:
            self._prehooks = []
        self._prehooks.append(hook)
        return _RemovableHook(self._prehooks, hook)


_SEQUENCE = itertools.count()
# AccumulateGrad's sequence number in PyTorch: it runs as soon as it is ready.
_ACCUMULATE_SEQUENCE_NR = 2**64 - 1


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
    sequence_nr = _ACCUMULATE_SEQUENCE_NR

    def __init__(self, variable):
        self.variable = variable
        self._hooks = []
        self._prehooks = []

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def _sequence_nr(self):
        return self.sequence_nr

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


def one_node(name, fn, inputs):
    """fn(*inputs), differentiated as one node with an edge per input, for
    an op PyTorch's autograd records as one node (layer_norm's
    NativeLayerNormBackward): the engine then reaches its inputs' nodes at
    once, in input order, as PyTorch's does, whatever nodes the stand-in
    builds it from (those run inside the node's backward, without hooks)."""
    if not requires_grad(inputs):
        return fn(*inputs)
    Tensor = _tensor_type()
    loc = _tracing.location()
    first = next(_SEQUENCE) + 1  # nodes made from here on are fn's own
    inner = []
    for i in inputs:
        if isinstance(i, Tensor) and i.requires_grad:
            i = i.detach()
            i.requires_grad = True
        inner.append(i)
    out = fn(*inner)
    root, inner_nodes = out.grad_fn, []
    stack, seen = [root], set()
    while stack:  # fn's nodes: a node made before it reads a tensor not given
        node = stack.pop()
        if node is None or isinstance(node, AccumulateGrad) or id(node) in seen:
            continue
        if node.sequence_nr < first:
            _tracing.unmodelled(f"{name} on a tensor it was not given")
        seen.add(id(node))
        inner_nodes.append(node)
        stack.extend(fn_ for fn_, _ in node.next_functions)

    def vjp(grads):
        return _inner_backward(root, out._output_nr, grads[0], inner, inner_nodes)

    node = GradNode(name, vjp, tuple(inputs), loc, takes_tensors=True)
    # Its check of saved tensors is its parts' (an in-place write, a freed graph).
    node.saved = tuple(entry for n in inner_nodes for entry in n.saved)
    out.grad_fn, out._output_nr = node, 0
    return out


def _inner_backward(root, nr, grad, leaves, nodes):
    """The gradients of `leaves` from `grad` at the output of `root`, over
    the private nodes of one_node (no hooks, no graph task)."""
    pending = {}
    for node in nodes:
        for fn, _ in node.next_functions:
            if fn is not None and not isinstance(fn, AccumulateGrad):
                pending[id(fn)] = pending.get(id(fn), 0) + 1
    buffers = {id(root): [None] * root.num_outputs}
    buffers[id(root)][nr] = grad
    ready, found = [root], {}
    while ready:
        node = ready.pop()
        grads = buffers.pop(id(node))
        results = _run_node(node, grads, hooks=False)
        for (fn, k), g in zip(node.next_functions, results):
            if fn is None:
                continue
            if isinstance(fn, AccumulateGrad):
                if g is not None:
                    old = found.get(id(fn.variable))
                    found[id(fn.variable)] = g if old is None else old + g
                continue
            buffer = buffers.setdefault(id(fn), [None] * fn.num_outputs)
            if g is not None:
                buffer[k] = g if buffer[k] is None else buffer[k] + g
            pending[id(fn)] -= 1
            if pending[id(fn)] == 0:
                ready.append(fn)
    return [found.get(id(leaf)) for leaf in leaves]


def _unmodelled_gradient(name, loc):
    def vjp(grads):
        file, line, _, _ = loc
        raise _tracing.Unsupported(f"the gradient of {name} is not modelled",
                                   loc=(file, line))
    return vjp


def _as_tensor(g, like, node, parents):
    """A gradient array as a Tensor recorded at the forward op's line, with
    the output gradients it came from as its IR inputs."""
    Tensor = _tensor_type()
    if g is None or isinstance(g, Tensor):
        return g
    from ._tensor import record, _row_major
    out = record(np.asarray(g, dtype=object).reshape(like.shape), like.dtype,
                 "grad:" + node.name, "elementwise", parents, loc=node.loc)
    if node.name in _FRESH_GRADIENTS and _row_major(like):
        # PyTorch's matmul backward computes each input's gradient by a new
        # mm laid out as that input (FunctionsManual's mm_mat1_backward and
        # mm_mat2_backward): row-major for a row-major input.
        out._row_major_result = True
    return out


_FRESH_GRADIENTS = frozenset(("matmul", "linear", "mm", "bmm"))


def backward(root, gradient, retain_graph=False, inputs=None):
    """Runs the backward of `root`; with `inputs`, only those leaves
    accumulate a gradient (as PyTorch's backward(inputs=...)).

    The schedule is PyTorch's engine's (engine.cpp), which hooks observe: a
    node runs once every edge into it has delivered (its gradients summed),
    and among the ready nodes the one made last runs first, a leaf's
    AccumulateGrad before any other. A backward started inside another
    (a hook's, a checkpoint's) runs to its end before the outer one goes on."""
    backward_many([root], [gradient], retain_graph, inputs)


def backward_many(roots, gradients, retain_graph=False, inputs=None):
    """One backward pass from several roots (torch.autograd.backward of a
    list): as in PyTorch, a GraphRoot node made now hands each root its
    gradient, so each leaf's hooks run once, on its whole gradient."""
    Tensor = _tensor_type()
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        if not inputs or any(i.grad_fn is not None for i in inputs):
            _tracing.unmodelled("backward(inputs=...) naming a non-leaf tensor or "
                                "no tensor")
        only = {id(i) for i in inputs}
    else:
        only = None
    if len(roots) == 1:
        (start, nr), = _GraphRoot.edges(roots)
        buffer = [None] * _num_inputs(start)
        buffer[nr] = gradients[0]
    else:
        start, buffer = _GraphRoot(roots, gradients), [None]
    outer = _tracing.state.per_run.get("autograd.graph_task")
    task = _GraphTask(start, only, 0 if outer is None else outer.depth + 1)
    if task.needed is not None and id(start) not in task.needed:
        return  # nothing of `inputs` is reached
    queue = _ready_queue()
    with _no_grad(), _graph_task(task):
        try:
            task.push(queue, start, buffer)
            while task.outstanding:
                _, owner, node, buffer = _heap_pop(queue)
                owner.evaluate(queue, node, buffer, retain_graph)
                owner.outstanding -= 1
        except BaseException:
            # Its tasks are the queue's highest (deeper ones are done): an
            # outer backward's stay as they were.
            while queue and queue[0][1] is task:
                _heap_pop(queue)
            raise
        task.run_callbacks()
        _run_queued_callbacks()


def _num_inputs(node):
    return 1 if isinstance(node, AccumulateGrad) else node.num_outputs


class _GraphRoot:
    """PyTorch's GraphRoot: the node a backward of several roots starts
    from, made (and numbered) when the backward starts; it hands each root
    its gradient."""

    name, num_outputs = "GraphRoot", 1

    def __init__(self, roots, gradients):
        self.sequence_nr = next(_SEQUENCE)
        self.next_functions = tuple(self.edges(roots))
        self.gradients = list(gradients)

    @staticmethod
    def edges(roots):
        """Each root's gradient edge: its grad_fn, or a leaf's AccumulateGrad."""
        return [(r.grad_fn, r._output_nr) if r.grad_fn is not None else
                (grad_accumulator(r), 0) for r in roots]


def _ready_queue():
    """The engine's CPU ready queue, one per thread in PyTorch (a backward
    inside a backward shares it), here one per run."""
    return _tracing.state.per_run.setdefault("autograd.ready_queue", [])


# The ready queue is a std::priority_queue. Nodes of equal priority (two
# AccumulateGrads ready at once) leave it in the order its binary heap gives,
# so the heap is libstdc++'s own algorithm: the root is the largest, a hole
# left by a pop is moved down to a leaf along the larger children (the right
# one on a tie) and the moved value is sifted up from there. Items are
# [(reentrant depth, sequence_nr), task, node, input buffer].

def _heap_sift_up(heap, hole, top, item):
    parent = (hole - 1) // 2
    while hole > top and heap[parent][0] < item[0]:
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = item


def _heap_push(heap, item):
    heap.append(item)
    _heap_sift_up(heap, len(heap) - 1, 0, item)


def _heap_pop(heap):
    top, last = heap[0], heap.pop()
    n = len(heap)
    if n == 0:
        return top
    hole = child = 0
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if heap[child][0] < heap[child - 1][0]:
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    _heap_sift_up(heap, hole, 0, last)
    return top


def _edges_of(node):
    """(next node or None, its input nr) per input, as next_functions."""
    return () if isinstance(node, AccumulateGrad) else node.next_functions


class _GraphTask:
    """The running backward, as PyTorch's engine knows it: which nodes it
    executes (DeepSpeed's ZeRO counts the parameters a backward reaches with
    torch._C._will_engine_execute_node before it reduces), how many edges
    into each node have yet to deliver, and the gradients they delivered."""

    def __init__(self, root, only, depth):
        state = _tracing.state.per_run
        state["autograd.graph_tasks"] = state.get("autograd.graph_tasks", 0) + 1
        self.id = state["autograd.graph_tasks"]
        self.depth = depth
        self.outstanding = 0  # nodes queued and not yet run
        self.not_ready = {}  # id(node) -> its input buffer so far
        self.callbacks = []  # queue_callback's, run when this backward ends
        # Every edge counts, as in compute_dependencies: a node used twice
        # by one consumer waits for both.
        self.dependencies, nodes, stack = {}, {id(root): root}, [root]
        while stack:
            for fn, _ in _edges_of(stack.pop()):
                if fn is None:
                    continue
                self.dependencies[id(fn)] = self.dependencies.get(id(fn), 0) + 1
                if id(fn) not in nodes:
                    nodes[id(fn)] = fn
                    stack.append(fn)
        # With inputs=, only the nodes on a path to their AccumulateGrads
        # run (the engine's exec_info).
        self.needed = None if only is None else _needed(root, only)
        self.nodes = set(nodes) if self.needed is None else self.needed
        self.leaves = {id(fn.variable) for fn in nodes.values()
                       if isinstance(fn, AccumulateGrad) and id(fn) in self.nodes}

    def executes(self, node):
        if isinstance(node, AccumulateGrad):
            return id(node.variable) in self.leaves
        return id(node) in self.nodes

    def push(self, queue, node, buffer):
        _heap_push(queue, [(self.depth, node.sequence_nr), self, node, buffer])
        self.outstanding += 1

    def evaluate(self, queue, node, buffer, retain_graph):
        if isinstance(node, AccumulateGrad):
            _run_accumulate_grad(node, buffer[0])
            return
        if isinstance(node, _GraphRoot):
            results = node.gradients
        else:
            results = _run_node(node, buffer)
            if not retain_graph:
                node.freed = True
        for (fn, nr), g in zip(node.next_functions, results):
            if fn is None:
                continue
            left = self.dependencies[id(fn)] - 1
            self.dependencies[id(fn)] = left
            if self.needed is not None and id(fn) not in self.needed:
                continue
            buffer = self.not_ready.pop(id(fn), None) or [None] * _num_inputs(fn)
            if g is not None:
                if isinstance(fn, AccumulateGrad) and g.dtype != fn.variable.dtype:
                    g = g.to(fn.variable.dtype)  # validate_outputs casts to the input's
                buffer[nr] = g if buffer[nr] is None else buffer[nr] + g
            if left == 0:
                self.push(queue, fn, buffer)
            else:
                self.not_ready[id(fn)] = buffer

    def run_callbacks(self):
        while self.callbacks:
            self.callbacks.pop(0)()


def _needed(root, only):
    """Ids of the nodes from which an AccumulateGrad of a leaf in `only` is
    reached."""
    needed, done, stack = set(), set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            if (isinstance(node, AccumulateGrad) and id(node.variable) in only) or \
                    any(fn is not None and id(fn) in needed for fn, _ in _edges_of(node)):
                needed.add(id(node))
            continue
        if id(node) in done:
            continue
        done.add(id(node))
        stack.append((node, True))
        stack.extend((fn, False) for fn, _ in _edges_of(node) if fn is not None)
    return needed


def _run_node(node, grads, hooks=True):
    """One node's step, as the engine's call_function: the hooks of the
    tensors it made, its pre-hooks, its backward, its hooks. Returns one
    gradient (Tensor or None) per input."""
    Tensor = _tensor_type()
    if hooks:
        grads = _run_tensor_hooks(node, grads)
        for hook in list(node._prehooks):
            replaced = hook(tuple(grads))
            if replaced is not None:
                grads = list(replaced)
        _record_module_gradients(node, grads)
    if all(g is None for g in grads) and not node.name.startswith("custom:"):
        # A built-in backward gives no gradient for none; a custom Function's
        # runs anyway (on zeros, unless it set_materialize_grads(False)).
        results = [None] * len(node.inputs)
    else:
        node.check_saved()
        results = node.vjp(grads if node.takes_tensors else
                           [None if g is None else g._a for g in grads])
    # In the IR a gradient depends on the output gradients and on the
    # forward values its VJP reads (the op's inputs).
    parents = [x for x in grads if x is not None] + list(node.inputs)
    results = [_as_tensor(g, inp, node, parents)
               if g is not None and isinstance(inp, Tensor) and needs else None
               for inp, (_, _, needs), g in zip(node.inputs, node._edges, results)]
    if hooks and node._hooks:
        # One gradient per tensor input, as PyTorch's grad_inputs.
        where = [k for k, inp in enumerate(node.inputs) if isinstance(inp, Tensor)]
        for hook in list(node._hooks):
            replaced = hook(tuple(results[k] for k in where), tuple(grads))
            if replaced is not None:
                if len(replaced) != len(where):
                    raise RuntimeError(f"hook returned {len(replaced)} gradients; "
                                       f"expected {len(where)}")
                for k, g in zip(where, replaced):
                    results[k] = g
    return results


@contextlib.contextmanager
def _graph_task(task):
    state = _tracing.state.per_run
    outer = state.get("autograd.graph_task")
    state["autograd.graph_task"] = task
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
    """Callbacks queued outside any backward, per run (a run that stopped
    mid-backward must not hand its callbacks to the next): the next
    backward to end runs them."""
    return _tracing.state.per_run.setdefault("autograd.queued_callbacks", [])


def queue_callback(callback):
    """Runs `callback` when the running backward ends, with grad mode off,
    as the engine's final callbacks (DDP's gradient reduction): those queued
    inside a backward started by a hook run when that inner one ends."""
    task = _tracing.state.per_run.get("autograd.graph_task")
    (task.callbacks if task is not None else _queued_callbacks()).append(callback)


def _run_queued_callbacks():
    queue = _queued_callbacks()
    while queue:
        queue.pop(0)()


def _run_tensor_hooks(node, grads):
    """Hooks of the tensors this node produced, on each one's whole gradient
    (every use has contributed by now), as PyTorch's tensor pre-hooks: a
    hook may replace the gradient; retain_grad's runs last. As in PyTorch
    2.x, a tensor that got no gradient has its hooks called with None."""
    if not node.tensor_hooks:
        return grads
    grads = list(grads)
    for nr, hooks in node.tensor_hooks.items():
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


def _run_accumulate_grad(node, g):
    """A leaf's AccumulateGrad step, in PyTorch 2.x's order: the leaf's own
    hooks (register_hook), the node's pre-hooks, the accumulation, the
    post-accumulate-grad hooks, the node's hooks. A leaf that got no
    gradient (a custom backward returned None for it) still has its hooks
    called, with None, and its .grad is left as it is."""
    leaf = node.variable
    for hook in list(leaf.__dict__.get("_grad_hooks", ())):
        replaced = hook(g)
        if replaced is not None:
            g = replaced
    if g is not None:
        _accumulate_leaf(leaf, g, node)
        return
    for hook in list(node._prehooks):
        hook((None,))
    for hook in list(leaf.__dict__.get("_post_accumulate_hooks", ())):
        hook(leaf)
    for hook in list(node._hooks):
        hook((), (None,))


def _accumulate_leaf(leaf, g, node):
    # The driver asks whether a gradient the engine made was left anywhere
    # it checks (shardproof_driver._unchecked_gradients).
    leaf.__dict__["_shardproof_reached"] = True
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
