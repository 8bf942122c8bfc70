"""Op cases checked against real PyTorch. Each case: input shapes and a
function of the inputs written against the torch API; it runs under Debian's
python3-torch (torch_reference.py) and under shardproof's stand-in
(standin_check.py), and the outputs and input gradients must agree."""
import torch
import torch.nn.functional as F

CASES = {
    "add_broadcast": ([(2, 3), (3,)], lambda x, y: x + y),
    "sub_scalar": ([(2, 3)], lambda x: 1.5 - x),
    "mul": ([(2, 3), (2, 3)], lambda x, y: x * y),
    "div": ([(2, 3), (2, 3)], lambda x, y: x / (y * y + 1)),
    "neg_pow": ([(3,)], lambda x: -(x ** 3)),
    "abs": ([(4,)], lambda x: x.abs()),
    "matmul_2d": ([(2, 3), (3, 4)], lambda x, y: x @ y),
    "matmul_batched": ([(2, 2, 3), (3, 2)], torch.matmul),
    "matmul_vector": ([(3,), (3, 2)], torch.matmul),
    "bmm": ([(2, 2, 3), (2, 3, 2)], torch.bmm),
    "outer": ([(3,), (2,)], lambda x, y: torch.outer(x, y) + x.outer(y * 2)),
    "linear_bias": ([(2, 3), (4, 3), (4,)], F.linear),
    "sum_dim": ([(2, 3, 2)], lambda x: x.sum(dim=1)),
    "sum_keepdim": ([(2, 3)], lambda x: x.sum(-1, keepdim=True) * x),
    "mean": ([(2, 4)], lambda x: x.mean(dim=0)),
    "var": ([(2, 4)], lambda x: x.var(dim=-1, unbiased=False)),
    "gelu": ([(5,)], F.gelu),
    "gelu_tanh": ([(5,)], lambda x: F.gelu(x, approximate="tanh")),
    "tanh": ([(5,)], torch.tanh),
    "exp_log": ([(5,)], lambda x: torch.log(torch.exp(x) + 1)),
    "sigmoid_silu": ([(5,)], lambda x: torch.sigmoid(x) + F.silu(x)),
    "relu": ([(6,)], F.relu),
    "sqrt_rsqrt": ([(4,)], lambda x: torch.sqrt(x * x + 1) + torch.rsqrt(x * x + 2)),
    "softmax": ([(2, 4)], lambda x: F.softmax(x, dim=-1)),
    "log_softmax": ([(2, 4)], lambda x: F.log_softmax(x, dim=1)),
    "layer_norm": ([(2, 4), (4,), (4,)],
                   lambda x, w, b: F.layer_norm(x, (4,), w, b, 1e-5)),
    "view_transpose": ([(2, 3, 4)], lambda x: x.view(6, 4).t().reshape(2, 12)),
    "permute": ([(2, 3, 4)], lambda x: x.permute(2, 0, 1) * 2),
    "unsqueeze_expand": ([(3,)], lambda x: x.unsqueeze(0).expand(2, 3) * torch.arange(2.0).unsqueeze(1)),
    "narrow_select": ([(4, 3)], lambda x: x.narrow(0, 1, 2) + x.select(1, 0).unsqueeze(0).t()[1:3]),
    "split_chunk_cat": ([(4, 6)], lambda x: torch.cat(x.chunk(3, dim=1)[::-1], dim=1) - torch.cat(x.split([1, 3], dim=0), dim=0)),
    "stack": ([(2, 3), (2, 3)], lambda x, y: torch.stack([x, y * 2], dim=1)),
    "getitem_advanced": ([(4, 3)], lambda x: x[torch.tensor([2, 0, 2])] * x[1:3, [0, 2]].sum()),
    "embedding": ([(5, 2)], lambda w: F.embedding(torch.tensor([[1, 4], [1, 0]]), w)),
    "setitem": ([(3, 4), (4,)], lambda x, v: _put(x, v)),
    "masked_fill": ([(2, 3)], lambda x: (x * 1.0).masked_fill(torch.tensor([[True, False, True], [False, False, True]]), 0.5)),
    "where": ([(2, 3), (2, 3)], lambda x, y: torch.where(torch.tensor([[True, False, True], [False, True, False]]), x, y)),
    "maximum_minimum": ([(4,), (4,)], lambda x, y: torch.maximum(x, y) - torch.minimum(x, 2 * y)),
    "clamp": ([(5,)], lambda x: x.clamp(min=-0.5, max=0.5)),
    "inplace_add_mul": ([(2, 3), (2, 3)], lambda x, y: _inplace(x, y)),
    "repeat": ([(2, 2)], lambda x: x.repeat(2, 3)),
    "flatten": ([(2, 2, 3)], lambda x: x.flatten(1) * 3),
    "pad": ([(2, 3)], lambda x: F.pad(x, (1, 2), value=0.25)),
    "einsum": ([(2, 3), (3, 4)], lambda x, y: torch.einsum("ij,jk->ik", x, y)),
    "baddbmm": ([(2, 2, 2), (2, 2, 3), (2, 3, 2)],
                lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=2.0)),
    "all_any": ([(2, 3)], lambda x: torch.where(
        torch.tensor([[1.0, 2.0, 0.0], [3.0, 1.0, 2.0]]).ne(0).all(dim=1, keepdim=True)
        | torch.any(torch.tensor([[False, False, False], [False, True, False]]), 1, True),
        x, -x)),
    "out_argument": ([(3,)], lambda x: _out_argument(x)),
    "triu_tril": ([(2, 3, 3)], lambda x: x.triu(1) + torch.tril(x, -1) * 2 + torch.triu(x)),
    "inplace_through_view": ([(2, 6)], lambda x: _inplace_through_view(x)),
    "use_before_inplace": ([(2, 3)], lambda x: _use_before_inplace(x)),
    "function_edits_input": ([(2, 3)], lambda x: _EditsInput.apply(x * 1.0) * x),
}


class _EditsInput(torch.autograd.Function):
    """A forward that writes into its input (as Megatron's vocab-parallel
    cross entropy does): the input keeps its autograd history."""

    @staticmethod
    def forward(ctx, x):
        x -= 1.0
        ctx.save_for_backward(x.clone())
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (shifted,) = ctx.saved_tensors
        return g * shifted


def _use_before_inplace(x):
    y = x * 1.0
    z = y + 2  # the gradient of this use must not pass through the mul_ below
    y.mul_(3.0)
    return z * y


def _inplace_through_view(x):
    y = x * 1.0
    w = y[:, 1:4]  # a view taken before the write: it sees the new values
    v = y.view(2, 2, 3)
    v.masked_fill_(torch.triu(torch.ones(2, 3), diagonal=1).bool(), -3.0)
    v.mul_(3.0)
    v.add_(1.0)
    return torch.cat([y.flatten(), w.flatten() * 3])


def _out_argument(x):
    y = x.detach() * 1.0
    torch.exp(y, out=y)  # in place through out=
    z = torch.zeros_like(x)
    torch.log(y + 1, out=z)
    return x * y + z


def _put(x, v):
    y = x * 1.0
    y[1] = v
    y[0, 2] = 7.0
    return y


def _inplace(x, y):
    z = x + 0.0
    z.add_(y)
    z.mul_(y)
    z.sub_(1.0)
    z.div_(2.0)
    return z


class _BroadcastGrad(torch.autograd.Function):
    """A custom backward that returns, for its (3,) input, a gradient of the
    (2, 3) shape that input broadcasts to: PyTorch sums it back."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return y * x

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x


CASES["function_broadcast_grad"] = ([(3,), (2, 3)], _BroadcastGrad.apply)


# Indexing by concrete indices (MoE routing, Megatron's DDP buffers).
_ROWS = [[0.5, 3.0, -1.0, 2.0], [1.0, 0.0, 4.0, 4.5]]


def _inplace_operators(x, y):
    z = x + 0.0
    z += y
    z *= y
    z -= 1.0
    z /= 2.0
    acc = torch.zeros(2, 3, dtype=torch.float64)
    acc.scatter_add_(1, torch.tensor([[2, 2, 0], [1, 0, 1]]), z)
    acc.index_add_(0, torch.tensor([1, 0]), y)
    return torch.cat([z, acc], dim=0)


def _flatten_unflatten(x, y):
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
    a, b = _unflatten_dense_tensors(_flatten_dense_tensors([x, y]) * 2, [x, y])
    return torch.cat([a.reshape(-1), b * 3])


CASES.update({
    "gather": ([(3, 4)], lambda x: torch.gather(x, 1, torch.tensor([[0, 2], [3, 3], [1, 0]])) * 2),
    "scatter": ([(3, 4), (3, 2)], lambda x, y: (x * 1.0).scatter(
        1, torch.tensor([[0, 2], [3, 1], [1, 0]]), y) + torch.zeros(3, 4).scatter(
        1, torch.tensor([[1], [2], [0]]), 1.5)),
    "scatter_add_index_add": ([(3, 4), (5, 4)], lambda x, y: (x * 1.0).scatter_add(
        0, torch.tensor([0, 2, 0, 1, 2]).unsqueeze(1).expand(-1, 4), y)
        + torch.zeros(3, 4, dtype=torch.float64).index_add(0, torch.tensor([2, 2, 0, 1, 0]), y, alpha=0.5)),
    "index_select_masked_select": ([(3, 4)], lambda x: torch.cat([
        x.index_select(1, torch.tensor([3, 0, 3])).reshape(-1),
        x.masked_select(torch.tensor([[True, False, True, False], [False, False, True, True],
                                      [True, True, False, False]]))])),
    "topk_argsort_concrete": ([(2, 4)], lambda x: x.gather(
        1, torch.tensor(_ROWS).topk(2, dim=1).indices) * torch.tensor(_ROWS).topk(2, dim=1).values
        + x.index_select(1, torch.tensor([3, 1, 0, 2]).argsort())[:, :2]),
    "bool_sum": ([(2,)], lambda x: x * torch.tensor([[True, False], [True, True], [False, True]]).sum(0)),
    "inplace_operators": ([(2, 3), (2, 3)], _inplace_operators),
    "flatten_unflatten": ([(2, 3), (4,)], _flatten_unflatten),
})


def _grad_accumulator_hook(x):
    # Megatron DDP's trick: the leaf's AccumulateGrad node, reached through a
    # throwaway view; its hook runs after .grad is written.
    acc = x.expand_as(x).grad_fn.next_functions[0][0]
    def hook(*unused):
        x.grad.mul_(3.0)

    acc.register_hook(hook)
    return x * x


CASES["grad_accumulator_hook"] = ([(3,)], _grad_accumulator_hook)


# ---- aliasing, requires_grad, extremes (lead) ------------------------------
# Each case is also checked for aliasing (does writing into the result change
# the input?) and for whether its result requires grad.
def _ties(x, first):
    both = torch.cat([x, x.detach()], dim=1)  # every maximum is tied
    return both.max(dim=1)[0] if first else both.amax(dim=1)


def _stable_softmax(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True)[0])
    return e / e.sum(dim=-1, keepdim=True)


CASES.update({
    "alias_view": ([(2, 3)], lambda x: x.view(3, 2)),
    "alias_reshape": ([(2, 3)], lambda x: x.reshape(-1)),
    "copy_reshape_of_transpose": ([(2, 3)], lambda x: x.t().reshape(-1)),
    "alias_transpose": ([(2, 3)], lambda x: x.t()),
    "alias_flatten_unsqueeze": ([(2, 3)], lambda x: x.unsqueeze(0).flatten()),
    "alias_narrow_select_slice": ([(3, 4)], lambda x: x[1:, :2].narrow(1, 1, 1).select(0, 1)),
    "copy_advanced_index": ([(3, 4)], lambda x: x[[0, 2]]),
    "error_expand": ([(1, 3)], lambda x: x.expand(2, 3)),
    "alias_contiguous": ([(2, 3)], lambda x: x.contiguous()),
    "copy_contiguous_of_transpose": ([(2, 3)], lambda x: x.t().contiguous()),
    "copy_clone": ([(2, 3)], lambda x: x.clone()),
    "alias_to_same_dtype": ([(2, 3)], lambda x: x.to(torch.float64)),
    "copy_to_copy": ([(2, 3)], lambda x: x.to(torch.float64, copy=True)),
    "alias_detach": ([(2, 3)], lambda x: x.detach()),
    "alias_data": ([(2, 3)], lambda x: x.data),
    "no_grad_through_data": ([(2, 3)], lambda x: x.data * 2 + x.detach()),
    "alias_chunk": ([(4, 2)], lambda x: x.chunk(2)[1]),
    "amax_grad": ([(3, 4)], lambda x: x.amax(dim=1) * 2),
    "max_dim_grad": ([(3, 4)], lambda x: x.max(dim=0, keepdim=True)[0] * 3),
    "max_full_grad": ([(3, 4)], lambda x: x.max() * x),
    "min_dim_grad": ([(3, 4)], lambda x: x.min(-1)[0] + x.amin(0).sum()),
    "amax_ties_split_evenly": ([(2, 3)], lambda x: _ties(x, first=False)),
    "max_dim_ties_first": ([(2, 3)], lambda x: _ties(x, first=True)),
    "softmax_shifted_by_max": ([(2, 4)], _stable_softmax),
})


# ---- custom Functions, saved tensors, hooks (lead) -------------------------
class _SavesInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


def _saved_then_written(x):
    y = x * 1.0
    out = _SavesInput.apply(y)
    y.add_(1.0)  # PyTorch: modified by an inplace operation
    return out


def _copy_of_saved_written(x):
    y = (x * 1.0).t()
    out = _SavesInput.apply(y)
    buf = y.contiguous()  # a copy: writing it leaves the saved tensor alone
    buf.mul_(3.0)
    return out.t() + buf.t()


class _DoublesInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2.0)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def _mark_dirty(x):
    y = x * 1.0
    out = _DoublesInPlace.apply(y)
    return out * y + x  # y is out: it carries the Function's history


class _WithIndex(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        marks = (x > 0).to(x.dtype)
        ctx.mark_non_differentiable(marks)
        return x * 3.0, marks

    @staticmethod
    def backward(ctx, g, g_marks):
        return g * 3.0


class _TooFewGradients(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, g):
        return g


def _hook_once(x):
    y = x * 2.0
    y.register_hook(lambda g: g * g)  # nonlinear: runs once, on the whole gradient
    return y * y + y


def _retain_grad(x):
    y = x * 2.0
    y.retain_grad()
    (y * y).sum().backward(retain_graph=True)
    return x * y.grad.detach()


CASES.update({
    "saved_tensor_written_in_place": ([(2, 3)], _saved_then_written),
    "builtin_saved_tensor_written": ([(2, 3)], lambda x: _builtin_saved_written(x)),
    "exp_result_written": ([(3,)], lambda x: _exp_result_written(x)),
    "contiguous_copy_of_saved_written": ([(2, 3)], _copy_of_saved_written),
    "mark_dirty": ([(2, 3)], _mark_dirty),
    "mark_non_differentiable": ([(4,)], lambda x: _WithIndex.apply(x)[0] + _WithIndex.apply(x)[1]),
    "backward_too_few_gradients": ([(3,), (3,)], _TooFewGradients.apply),
    "tensor_hook_runs_once": ([(3,)], _hook_once),
    "retain_grad": ([(3,)], _retain_grad),
})


def _builtin_saved_written(x):
    y = x * 1.0
    z = y * y  # mul saves y
    y.add_(1.0)
    return z


def _exp_result_written(x):
    y = x.exp()  # exp saves its result
    y.add_(1.0)
    return y
