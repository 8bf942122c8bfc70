"""Autograd hook cases checked against real PyTorch: each case builds a small
graph from fixed values, registers hooks that append (kind, name, gradient
values) to a log, and runs a backward. The log's order is the order in which
PyTorch's engine runs nodes (dependency counts, a ready queue by sequence
number, AccumulateGrad first), which a gradient bucket reduced from the hook
of "the last parameter" depends on. hook_reference.py runs the cases under
real PyTorch; hook_check.py under the stand-in, comparing logs entry by entry.

A case is `fn(torch, watch)`; `watch` (class Watch) registers the hooks and
holds the log. Cases whose meaning differs between PyTorch 1.13 and 2.x
(hooks called with None, retain_grad's place) say so in MIN_VERSION."""


class Watch:
    """Registers logging hooks. `post_accumulate`: the torch running the case
    has Tensor.register_post_accumulate_grad_hook (2.1+). `prehooks`: node
    pre-hooks are registered too; PyTorch 1.13 runs them interleaved with
    the tensor hooks in registration order, 2.x after them (as modelled)."""

    def __init__(self, torch, fingerprint, post_accumulate, prehooks, bind=None):
        self.torch, self.fingerprint, self.bind = torch, fingerprint, bind
        self.post_accumulate, self.prehooks = post_accumulate, prehooks
        self.log = []
        self.keep = []  # AccumulateGrad nodes, held as Megatron's grad_accs

    def add(self, kind, name, *tensors):
        self.log.append([kind, name] + [self.fingerprint(t) for t in tensors])

    def leaf(self, name, data):
        """A leaf that requires grad, with every hook a leaf can carry."""
        t = self.torch.tensor(data, dtype=self.torch.float64, requires_grad=True)
        self.hooks_on_leaf(name, t)
        return t

    def hooks_on_leaf(self, name, t):
        t.register_hook(lambda g: self.add("leaf", name, g))
        acc = t.expand_as(t).grad_fn.next_functions[0][0]
        self.keep.append(acc)
        if self.prehooks:
            acc.register_prehook(lambda go: self.add("acc_pre", name, go[0]))
        acc.register_hook(lambda gi, go: self.add("acc", name, go[0]))
        if self.post_accumulate:
            t.register_post_accumulate_grad_hook(lambda p: self.add("post_acc", name, p.grad))

    def set_parameter(self, p, values):
        """Gives a module's parameter fixed values. The stand-in's parameters
        are symbolic whatever their data: `bind` tells its check which
        values they stand for."""
        if self.bind is not None:
            self.bind(p, values)
        with self.torch.no_grad():
            p.copy_(self.torch.tensor(values, dtype=p.dtype))

    def tensor(self, name, t):
        if t.requires_grad:  # not in a checkpoint's first, graphless forward
            t.register_hook(lambda g: self.add("tensor", name, g))
        return t

    def node(self, name, t):
        """Hooks on the node that made t (a single-node op in both torches)."""
        if self.prehooks:
            t.grad_fn.register_prehook(lambda go: self.add("node_pre", name, *go))
        t.grad_fn.register_hook(lambda gi, go: self.add("node", name, *(gi + go)))
        return t


def data(n, scale=1.0, shift=0.0):
    """n fixed values in [-1, 1] (no RNG: both torches see the same)."""
    return [round(scale * ((k * 0.618 + shift) % 2.0 - 1.0), 6) for k in range(1, n + 1)]


def matrix(rows, cols, shift=0.0):
    flat = data(rows * cols, 1.0, shift)
    return [flat[r * cols:(r + 1) * cols] for r in range(rows)]


def mlp_two_layers(torch, w):
    F = torch.nn.functional
    x = torch.tensor(matrix(4, 2, 0.3), dtype=torch.float64)
    w1, b1 = w.leaf("w1", matrix(3, 2, 0.1)), w.leaf("b1", data(3, 0.5, 0.2))
    w2, b2 = w.leaf("w2", matrix(2, 3, 0.7)), w.leaf("b2", data(2, 0.5, 0.9))
    h = w.tensor("h", torch.tanh(F.linear(x, w1, b1)))
    y = w.tensor("y", F.linear(h, w2, b2))
    w.node("square", y * y).sum().backward()


def linear_3d_input(torch, w):
    # A batch of sequences through linear layers (PyTorch folds a contiguous
    # 3-D input into one addmm; a transposed one goes through matmul).
    F = torch.nn.functional
    x = torch.tensor([matrix(3, 2, 0.1), matrix(3, 2, 0.4)], dtype=torch.float64)
    w1, b1 = w.leaf("w1", matrix(4, 2, 0.2)), w.leaf("b1", data(4, 1.0, 0.6))
    w2, b2 = w.leaf("w2", matrix(3, 4, 0.3)), w.leaf("b2", data(3, 1.0, 0.9))
    h = w.tensor("h", F.linear(x, w1, b1).tanh())
    y = w.tensor("y", F.linear(h.transpose(0, 1), w2, b2))
    (y * y).sum().backward()


def shared_input_twice(torch, w):
    x = w.leaf("x", data(3, 1.0, 0.4))
    p = w.leaf("p", data(3, 1.0, 0.8))
    h = w.tensor("h", w.node("xp", x * p))
    z = w.tensor("z", w.node("xx", x * x))  # one node, both edges to x
    (h.sin() * h + h.exp() + z * p).sum().backward()


def tied_weights(torch, w):
    x = torch.tensor(matrix(2, 3, 0.2), dtype=torch.float64)
    emb = w.leaf("emb", matrix(4, 3, 0.5))
    mid = w.leaf("mid", matrix(4, 4, 0.9))
    h1 = w.tensor("h1", torch.tanh(x @ emb.t()))
    h2 = w.tensor("h2", torch.tanh(h1 @ mid))
    out = w.tensor("out", h2 @ emb)  # the first layer's weight again
    (out * out).sum().backward()


def branches_of_different_depth(torch, w):
    x = torch.tensor(data(4, 1.0, 0.1), dtype=torch.float64)
    a, b = w.leaf("a", data(4, 1.0, 0.3)), w.leaf("b", data(4, 1.0, 0.5))
    c, d = w.leaf("c", data(4, 1.0, 0.7)), w.leaf("d", data(4, 1.0, 0.9))
    e = w.leaf("e", data(4, 1.0, 1.1))
    short = w.tensor("short", (a * x).sum())
    deep = w.tensor("deep", ((((b * x).tanh() * c).sin() * d).exp() * e).sum())
    middle = w.tensor("middle", ((e * a).sin() * c).sum())
    (short + deep * middle).backward()


class Scale(object):
    """Built per torch: a custom Function with a non-tensor argument."""

    @staticmethod
    def make(torch):
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, factor, weight):
                ctx.save_for_backward(x, weight)
                ctx.factor = factor
                return x * weight * factor

            @staticmethod
            def backward(ctx, grad):
                x, weight = ctx.saved_tensors
                grad_weight = grad * x * ctx.factor
                if grad_weight.dim() > weight.dim():
                    grad_weight = grad_weight.sum(0)
                return grad * weight * ctx.factor, None, grad_weight
        return ScaleFn


def custom_function(torch, w):
    fn = Scale.make(torch)
    x = w.leaf("x", matrix(2, 3, 0.6))
    weight = w.leaf("weight", data(3, 1.0, 0.2))
    bias = w.leaf("bias", data(3, 1.0, 0.4))
    y = w.tensor("y", w.node("scale", fn.apply(x, 1.5, weight)))
    out = w.tensor("out", (y + bias).tanh())
    (out * fn.apply(out, 0.5, bias)).sum().backward()


def layer_norm_parameters(torch, w):
    # layer_norm is one node in PyTorch: its weight's and bias's
    # AccumulateGrads are ready together (a gradient bucket of the two
    # reduced from the weight's hook misses the bias's gradient).
    F = torch.nn.functional
    x = w.leaf("x", matrix(3, 4, 0.2))
    weight, bias = w.leaf("weight", data(4, 1.0, 0.5)), w.leaf("bias", data(4, 1.0, 0.8))
    gate = w.leaf("gate", data(4, 1.0, 0.1))
    h = w.tensor("h", F.layer_norm(x, (4,), weight, bias, 1e-5))
    (h * torch.sigmoid(h * gate)).sum().backward()


def stack_many_leaves(torch, w):
    # One node delivers to six AccumulateGrads at once: they leave the ready
    # queue in the order of its heap.
    ps = [w.leaf(f"p{k}", data(2, 1.0, 0.1 * k)) for k in range(6)]
    q = w.leaf("q", data(2, 1.0, 0.05))
    coef = torch.tensor(matrix(6, 2, 0.3), dtype=torch.float64)
    s = w.tensor("stacked", torch.stack(ps))
    t = w.tensor("cat", torch.cat([ps[3] * q, ps[0], q]))
    ((s * coef).sum() + (t * t).sum()).backward()


def hook_replaces_gradient(torch, w):
    x = torch.tensor(data(3, 1.0, 0.2), dtype=torch.float64)
    p = w.leaf("p", data(3, 1.0, 0.6))
    r = w.leaf("r", data(3, 1.0, 0.9))
    h = p * x
    h.register_hook(lambda g: g * 2)
    w.tensor("h", h)  # sees the doubled gradient
    r.register_hook(lambda g: g + 1)  # the leaf's replacement is accumulated
    ((h * r).sin() + r).sum().backward()


def module_backward_hooks(torch, w):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 2)).double()
    w.set_parameter(model[0].weight, matrix(3, 2, 0.4))
    w.set_parameter(model[0].bias, data(3, 1.0, 0.1))
    w.set_parameter(model[2].weight, matrix(2, 3, 0.8))
    w.set_parameter(model[2].bias, data(2, 1.0, 0.3))
    for name, p in model.named_parameters():
        w.hooks_on_leaf(name, p)
    for name, m in model.named_children():
        m.register_full_backward_hook(
            lambda mod, gi, go, name=name: w.add("module", name, *(gi + go)))
    x = w.leaf("x", matrix(4, 2, 0.5))
    out = model(x)
    (out * out).sum().backward()


def reentrant_checkpoint(torch, w):
    from torch.utils.checkpoint import checkpoint
    x = torch.tensor(matrix(2, 3, 0.3), dtype=torch.float64)
    before, inner = w.leaf("before", data(3, 1.0, 0.2)), w.leaf("inner", data(3, 1.0, 0.5))
    inner2, after = w.leaf("inner2", data(3, 1.0, 0.7)), w.leaf("after", data(3, 1.0, 0.9))

    def block(h):
        return w.tensor("block_out", torch.tanh(w.tensor("block_mid", h * inner)) * inner2)

    h = w.tensor("h", x * before)
    y = checkpoint(block, h, use_reentrant=True)
    (y * after + h).sum().backward()


def several_roots(torch, w):
    # One pass from three roots: each leaf's hooks run once, on its gradient
    # summed over the roots, in the order a GraphRoot gives.
    a, b = w.leaf("a", data(3, 1.0, 0.2)), w.leaf("b", data(3, 1.0, 0.7))
    y1 = w.tensor("y1", (a * b).tanh())
    y2 = w.tensor("y2", a.sin() * 3)
    y3 = w.tensor("y3", (b * b).sum())
    torch.autograd.backward([y1, y2, y3], [torch.tensor(data(3, 1.0, 0.4), dtype=torch.float64),
                                           torch.tensor(data(3, 1.0, 0.9), dtype=torch.float64),
                                           None])


def checkpoint_two_outputs(torch, w):
    from torch.utils.checkpoint import checkpoint
    x = torch.tensor(matrix(2, 3, 0.1), dtype=torch.float64)
    u, v = w.leaf("u", data(3, 1.0, 0.3)), w.leaf("v", data(3, 1.0, 0.6))
    z = w.leaf("z", data(3, 1.0, 0.8))

    def block(h):
        mid = w.tensor("mid", (h * u).tanh())
        return w.tensor("first", mid * v), w.tensor("second", (mid + z).sin())

    first, second = checkpoint(block, x * z, use_reentrant=True)
    (first * second + first).sum().backward()


def backward_inside_a_hook(torch, w):
    # An AccumulateGrad hook runs a whole other backward (a reentrant one):
    # it ends, hooks and all, before the outer backward goes on.
    p, q = w.leaf("p", data(3, 1.0, 0.1)), w.leaf("q", data(3, 1.0, 0.4))
    side = w.leaf("side", data(3, 1.0, 0.8))
    loss_side = (side * side.sin()).sum()

    def run_side(grad_inputs, grad_outputs):
        w.add("side_backward", "start")
        loss_side.backward()
        w.add("side_backward", "end")
    w.keep[-2].register_hook(run_side)  # q's AccumulateGrad
    ((p * q).tanh() * p).sum().backward()


def custom_backward_without_gradient(torch, w):
    # Nothing flows into Twice's output, yet PyTorch runs its backward (on
    # zeros) and accumulates what it returns.
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            w.add("twice_backward", "grad", grad)
            return grad * 2

    class Drop(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return None
    p, q = w.leaf("p", data(3, 1.0, 0.3)), w.leaf("q", data(3, 1.0, 0.6))
    (Drop.apply(w.tensor("twice", Twice.apply(p))) * q).sum().backward()


def undefined_gradient_leaf(torch, w):
    fn = Scale.make(torch)

    class DropsWeight(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight):
            return x * weight

        @staticmethod
        def backward(ctx, grad):
            return grad, None  # weight requires grad but gets none
    x, weight = w.leaf("x", data(3, 1.0, 0.2)), w.leaf("weight", data(3, 1.0, 0.5))
    y = w.tensor("y", DropsWeight.apply(x, weight))
    (fn.apply(y, 2.0, x)).sum().backward()


def retain_grad_runs_last(torch, w):
    p = w.leaf("p", data(3, 1.0, 0.3))
    y = p * 2
    y.retain_grad()
    y.register_hook(lambda g: w.add("sees_retained", "y", y.grad))
    y.register_hook(lambda g: g * 3)
    (y * y).sum().backward()
    w.add("retained", "y", y.grad)


def full_backward_pre_hooks(torch, w):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1)).double()
    w.set_parameter(model[0].weight, matrix(2, 2, 0.4))
    w.set_parameter(model[0].bias, data(2, 1.0, 0.1))
    w.set_parameter(model[1].weight, matrix(1, 2, 0.8))
    w.set_parameter(model[1].bias, data(1, 1.0, 0.3))
    for name, p in model.named_parameters():
        w.hooks_on_leaf(name, p)
    for name, m in model.named_children():
        m.register_full_backward_pre_hook(lambda mod, go, name=name: w.add("module_pre", name, *go))
        m.register_full_backward_hook(
            lambda mod, gi, go, name=name: w.add("module", name, *(gi + go)))
    x = torch.tensor(matrix(3, 2, 0.5), dtype=torch.float64)
    model(x).sum().backward()


CASES = {f.__name__: f for f in (
    mlp_two_layers, linear_3d_input, shared_input_twice, tied_weights, branches_of_different_depth,
    custom_function, layer_norm_parameters, stack_many_leaves, hook_replaces_gradient, module_backward_hooks,
    reentrant_checkpoint, several_roots, checkpoint_two_outputs, backward_inside_a_hook,
    custom_backward_without_gradient,
    undefined_gradient_leaf,
    retain_grad_runs_last, full_backward_pre_hooks)}

# PyTorch 1.13 differs here from 2.x, whose behaviour the stand-in models
# (hook_expected_torch2.json covers them):
# hooks of a leaf that gets no gradient are not called (2.x calls them with
# None), retain_grad's hook runs in registration order (2.x: last), an
# AccumulateGrad hook sees the gradient before the leaf's hooks replaced it
# (2.x: after), and modules have no full backward pre-hooks (2.0+).
MIN_VERSION = {"undefined_gradient_leaf": 2, "retain_grad_runs_last": 2,
               "hook_replaces_gradient": 2, "full_backward_pre_hooks": 2}
