"""Op cases checked against real PyTorch. Each case: input shapes and a
function of the inputs written against the torch API; it runs under Debian's
python3-torch (torch_reference.py) and under shardproof's stand-in
(standin_check.py), and the outputs and input gradients must agree."""
import contextlib
import math

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
    "torch_relu_and_method": ([(6,)], lambda x: torch.relu(x) + x.relu() * 2),
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
    "nonzero_gather": ([(3, 2)], lambda x: x[torch.tensor([[0.0, 1.0], [2.0, 0.0], [0.0, 3.0]])
                                             .nonzero()[:, 0]] + x[torch.nonzero(torch.tensor(
                                                 [1, 0, 1]), as_tuple=True)[0]].sum()),
    "histc_counts_scale": ([(4,)], lambda x: x * torch.histc(
        torch.tensor([0.0, 3.0, 1.0, 1.0, 2.5, 7.0]), bins=4, min=0, max=4)
        + torch.histc(torch.tensor([1.0, 2.0, 2.0]), bins=4)),
    # The legacy constructor (Megatron's 2023 FusedLayerNorm builds its
    # parameters so): uninitialised float32 of a shape, or a copy of data.
    "legacy_tensor_constructor": ([(3,)], lambda x: x * torch.Tensor([1.0, 2.0, 3.0])
                                  + torch.Tensor(3).fill_(0.5)
                                  + torch.Tensor(torch.Size([3])).zero_()
                                  + torch.Tensor(1, 3).fill_(0.25)[0]),
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


def _function_with_backward(backward):
    """y * x through a custom Function whose backward is `backward(g, x, y)`."""
    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return y * x

        @staticmethod
        def backward(ctx, g):
            return backward(g, *ctx.saved_tensors)
    return Function.apply


# What PyTorch's engine does with a custom backward's results: casts a
# gradient to its input's dtype, and refuses one of a shape the input does not
# broadcast to, or too few of them.
CASES["function_grad_of_another_dtype"] = ([(3,), (3,)], _function_with_backward(
    lambda g, x, y: ((g * y).float(), g * x)))
CASES["function_grad_of_another_shape_raises"] = ([(2, 3), (2, 3)], _function_with_backward(
    lambda g, x, y: ((g * y)[:1], g * x)))
CASES["function_too_few_grads_raises"] = ([(3,), (3,)], _function_with_backward(
    lambda g, x, y: (g * y,)))


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


# ---- core surface (h1) -----------------------------------------------------
# Creation ops (requires_grad, dtype, copy or alias), out= forms, the other
# forms of torch.* functions, grad-mode switches, optimizer steps with every
# option, LR schedules, activation checkpointing.
def _grads_of_created_leaves(x):
    """Created leaves that require grad get their gradients (the x they were
    multiplied by)."""
    f64 = torch.float64
    vectors = [torch.zeros(3, dtype=f64, requires_grad=True),
               torch.ones(3, dtype=f64, requires_grad=True),
               torch.full((3,), 2.0, dtype=f64, requires_grad=True),
               torch.tensor([1.0, 2.0, 3.0], dtype=f64, requires_grad=True),
               torch.arange(3.0, dtype=f64, requires_grad=True),
               torch.linspace(0, 1, 3, dtype=f64, requires_grad=True),
               torch.zeros_like(x, requires_grad=True),
               torch.full_like(x, 0.5, requires_grad=True)]
    matrix = torch.eye(3, dtype=f64, requires_grad=True)
    total = sum((v * x.detach() * (k + 1)).sum() for k, v in enumerate(vectors))
    (total + (matrix * x.detach()).sum()).backward()
    return torch.cat([torch.stack([v.grad for v in vectors]), matrix.grad]) * x


def _tensor_of_tensor_is_a_copy(x):
    y = x * 1.0
    t = torch.tensor(y)
    t.mul_(3.0)  # y keeps its values
    return y * t


def _as_tensor_is_the_tensor(x):
    y = x * 1.0
    torch.as_tensor(y).mul_(2.0)  # y itself doubles
    return y + torch.as_tensor([1.0, 2.0, 3.0], dtype=torch.float64)


def _assign_grad(x, grad):
    """x times a leaf of x's kind whose .grad is set to grad(x)."""
    leaf = torch.zeros_like(x).requires_grad_()
    leaf.grad = grad(x)
    return x * leaf.grad


def _out_forms(x, y):
    z = torch.empty(3, dtype=torch.float64)
    torch.add(x.detach(), y.detach(), alpha=2.0, out=z)
    w = torch.zeros(3, dtype=torch.float64)
    torch.mul(z, 3.0, out=w)
    v = torch.ones(2, 3, dtype=torch.float64)
    torch.stack([z, w], out=v)
    u = torch.zeros(6, dtype=torch.float64)
    torch.cat([z, w], out=u)
    t = torch.zeros(3, dtype=torch.float64)
    torch.arange(0.5, 2, 0.5, dtype=torch.float64, out=t)
    return x * z + y * w + v.sum(0) + u[:3] * t


def _tensor_split_pieces(x):
    pieces = torch.tensor_split(x, [1, 3]) + torch.tensor_split(x, [3, 1])
    return torch.cat([p * (k + 1) for k, p in enumerate(pieces)])


def _set_grad_enabled_statement(x):
    torch.set_grad_enabled(False)  # a statement: grad is off until set again
    y = x * 3.0
    torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        z = x * 2.0
    return x * y + z * x


def _steps(x, g, make, steps=3, schedule=None, keep_grad_tensor=False):
    """x * the parameter after optimizer steps from x with gradients built
    from g (a different gradient each step)."""
    p = x.detach().clone().requires_grad_()
    optimizer = make([p])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule) if schedule else None
    for k in range(steps):
        grad = g.detach() * (k + 1) - p.detach()
        if keep_grad_tensor and p.grad is not None:
            optimizer.zero_grad(set_to_none=False)  # zeroed in place
            p.grad.add_(grad)
        else:
            p.grad = grad
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    return x * p.detach()


def _checkpointed_pair(a, b, scale):
    return (a * b).tanh() * scale, a.exp()


def _checkpoints(x, w):
    from torch.utils.checkpoint import checkpoint, checkpoint_sequential
    a, b = checkpoint(_checkpointed_pair, x, w, 3.0, use_reentrant=True)
    c, d = checkpoint(_checkpointed_pair, x * 2, w, 0.5, use_reentrant=False)
    e = checkpoint_sequential([torch.tanh, lambda t: t * w, torch.exp], 2, x)
    return a * b + c * d + e


_SGD, _ADAM, _ADAMW = torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW
CASES.update({
    "grads_of_created_leaves": ([(3,)], _grads_of_created_leaves),
    "copy_tensor_of_tensor": ([(3,)], lambda x: torch.tensor(x)),
    "tensor_of_tensor_is_a_copy": ([(3,)], _tensor_of_tensor_is_a_copy),
    "alias_as_tensor": ([(3,)], lambda x: torch.as_tensor(x)),
    "as_tensor_is_the_tensor": ([(3,)], _as_tensor_is_the_tensor),
    "as_tensor_new_dtype_converts": ([(3,)], lambda x: torch.as_tensor(x, dtype=torch.float64) * 2),
    "like_values": ([(3,)], lambda x: x * torch.full_like(x, 2.5) + torch.ones_like(x)
                    - torch.zeros_like(x, dtype=torch.float64) + torch.full_like(x, 3) * x),
    "creation_values": ([(3,)], lambda x: x * torch.arange(3) + torch.linspace(0, 1, 3)
                        + torch.eye(3, dtype=torch.float64)[1] * x + torch.full((3,), 7)
                        + torch.tensor([[1, 2, 3]]) * torch.arange(0.5, 2, 0.5)
                        + torch.zeros((1, 3)) + torch.ones(size=(3,))),
    "requires_grad_of_integers_raises": (
        [(3,)], lambda x: x * torch.zeros(3, dtype=torch.int64, requires_grad=True)),
    "out_that_would_need_grad_raises": (
        [(3,)], lambda x: torch.exp(x, out=torch.empty(3, dtype=torch.float64))),
    "out_forms": ([(3,), (3,)], _out_forms),
    # narrow and split check their ranges (numpy's slices would clamp).
    "narrow_from_the_end": ([(4, 2)], lambda x: x.narrow(0, -3, 2) * 2 + x.narrow(1, 1, 1)[1:3]),
    "narrow_past_the_end_raises": ([(4,)], lambda x: x.narrow(0, 2, 3)),
    "narrow_start_out_of_range_raises": ([(4,)], lambda x: x.narrow(0, 5, 0)),
    "split_sizes_not_summing_raises": ([(4,)], lambda x: torch.split(x, [1, 2])[0]),
    "split_sizes": ([(5, 2)], lambda x: torch.split(x, [2, 3])[1] * 3),
    # Shapes that do not broadcast: RuntimeError (numpy's would be ValueError).
    "add_of_unbroadcastable_shapes_raises": ([(2, 3), (2, 4)], lambda x, y: x + y),
    "mul_of_unbroadcastable_ranks_raises": ([(2, 3, 5), (4, 5)], lambda x, y: x * y),
    # PyTorch checks an assigned .grad: of the leaf's dtype and size.
    "grad_assigned": ([(3,)], lambda x: _assign_grad(x, lambda x: x.detach() * 2)),
    "grad_of_another_size_raises": (
        [(3,)], lambda x: _assign_grad(x, lambda x: x.detach()[:2])),
    "grad_of_another_dtype_raises": (
        [(3,)], lambda x: _assign_grad(x, lambda x: x.detach().float())),
    "grad_not_a_tensor_raises": ([(3,)], lambda x: _assign_grad(x, lambda x: 1.0)),
    "max_min_of_two_tensors": ([(3,), (3,)], lambda x, y: torch.max(x, y) * 2 + torch.min(x, y)),
    "tensor_split_indices": ([(5,)], _tensor_split_pieces),
    "addmm": ([(2, 2), (2, 3), (3, 2)], lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=2.0)),
    "mm_of_batches_raises": ([(2, 2, 2)], lambda x: torch.mm(x, x)),
    "div_floor_of_integers": ([(3,)], lambda x: x * torch.div(torch.tensor([-7, 7, 5]), 2,
                                                              rounding_mode="floor")),
    # DeepSpeed's gate: a capacity from token counts, comparisons as functions.
    "rounding_of_exact_numbers": ([(4,)], lambda x: x * (
        torch.ceil(torch.tensor([0.5, -1.5, 2.0, 2.5]))
        + torch.floor(torch.tensor([0.5, -1.5, 2.0, 2.5])) * 10
        + torch.tensor([0.5, -1.5, 2.0, 2.7]).trunc() * 100
        + torch.round(torch.tensor([0.4, -1.6, 2.0, 3.5])) * 1000)),
    "comparison_functions": ([(4,)], lambda x: x * (
        torch.lt(torch.tensor([1, 2, 3, 4]), 3).float()
        + torch.ge(torch.tensor([1, 2, 3, 4]), torch.tensor([2, 2, 2, 2])).float() * 2
        + torch.logical_and(torch.tensor([1, 0, 1, 0]) > 0, torch.eq(torch.arange(4), 2))
        .float() * 4 + torch.ne(torch.arange(4), 1).float() * 8)),
    "argmax_argmin_functions": ([(4,)], lambda x: x * (
        torch.argmax(torch.tensor([[1.0, 3.0, 2.0], [5.0, 4.0, 0.0]]), dim=1).float().sum()
        + torch.argmin(torch.tensor([3.0, 1.0, 2.0])).float())),
    "sub_alpha_subtract_divide": ([(3,), (3,)], lambda x, y: torch.sub(x, y, alpha=0.5)
                                  + torch.subtract(y, x) + torch.divide(x, y * y + 1)),
    "set_grad_enabled_statement": ([(3,)], _set_grad_enabled_statement),
    "calculate_gain": ([(3,)], lambda x: x * torch.nn.init.calculate_gain("leaky_relu", 0.2)
                       + x * torch.nn.init.calculate_gain("tanh")),
    "sgd": ([(3,), (3,)], lambda x, g: _steps(x, g, lambda ps: _SGD(ps, lr=0.1))),
    "sgd_momentum_dampening_decay": ([(3,), (3,)], lambda x, g: _steps(x, g, lambda ps: _SGD(
        ps, lr=0.1, momentum=0.9, dampening=0.25, weight_decay=0.1))),
    "sgd_nesterov_maximize": ([(3,), (3,)], lambda x, g: _steps(x, g, lambda ps: _SGD(
        ps, lr=0.1, momentum=0.9, nesterov=True, maximize=True, weight_decay=0.05))),
    "sgd_zero_grad_in_place": ([(3,), (3,)], lambda x, g: _steps(
        x, g, lambda ps: _SGD(ps, lr=0.1, momentum=0.5), keep_grad_tensor=True)),
    "adam": ([(3,), (3,)], lambda x, g: _steps(x, g, lambda ps: _ADAM(ps, lr=0.1))),
    "adam_every_option": ([(3,), (3,)], lambda x, g: _steps(x, g, lambda ps: _ADAM(
        ps, lr=0.1, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1, amsgrad=True,
        maximize=True))),
    "adamw": ([(3,), (3,)], lambda x, g: _steps(x, g, lambda ps: _ADAMW(ps, lr=0.1))),
    "adamw_amsgrad": ([(3,), (3,)], lambda x, g: _steps(x, g, lambda ps: _ADAMW(
        ps, lr=0.05, weight_decay=0.3, amsgrad=True))),
    "lambda_lr_schedule": ([(3,), (3,)], lambda x, g: _steps(
        x, g, lambda ps: _SGD(ps, lr=0.1, momentum=0.5), 4, lambda epoch: 1.0 / (epoch + 1))),
    "checkpoint": ([(3,), (3,)], _checkpoints),
})


def _disabled_amp(x):
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    with torch.autocast("cuda", enabled=False):
        y = scaler.scale(x * 2)
    return y * scaler.get_scale()


def _typed_tensor_classes(x):
    checks = [isinstance(x, torch.DoubleTensor), isinstance(x, torch.FloatTensor),
              isinstance(torch.tensor([1, 2]), torch.LongTensor),
              (x.half() + x.bfloat16()).dtype == torch.float32]
    return x[:2] * torch.DoubleTensor([1, 2]) * torch.tensor(checks, dtype=torch.float64)[:2] \
        + torch.LongTensor([3, 4]) * torch.tensor(checks[2:], dtype=torch.float64)


CASES.update({
    "disabled_amp": ([(3,)], _disabled_amp),
    "typed_tensor_classes": ([(3,)], _typed_tensor_classes),
    "tensor_of_scalar_tensors": ([(3,)], lambda x: x[:2] * torch.tensor(
        [x[0].detach(), x[1].detach() * 2])),
    "einsum_operand_count_raises": ([(2, 3)], lambda x: torch.einsum("ij,jk->ik", x)),
    "where_float_condition_raises": ([(3,)], lambda x: torch.where(x, x, x * 2)),
})


def _float16_numpy(x):
    import numpy as np
    return torch.tensor(np.array([0.5, 1.5, -2.0], dtype=np.float16))


# The dtype PyTorch infers for created tensors (the result's dtype is compared).
CASES.update({
    "dtype_of_tensor_from_float16_numpy": ([(3,)], _float16_numpy),
    "dtype_of_tensor_of_ints_and_floats": ([(3,)], lambda x: torch.tensor([1, 2.5, True])),
    "dtype_of_tensor_of_float64_scalars": ([(3,)], lambda x: torch.tensor(
        [x[0].detach(), 1, 2])),
    "dtype_of_arange_of_floats": ([(3,)], lambda x: torch.arange(0, 1, 0.25)),
    "dtype_of_full_of_int": ([(3,)], lambda x: torch.full((2,), 3) + torch.tensor([True, False])),
    "dtype_of_zeros_like_int": ([(3,)], lambda x: torch.zeros_like(torch.tensor([1, 2])) + 1),
    "dtype_of_half_plus_bfloat16": ([(3,)], lambda x: torch.ones(2, dtype=torch.half)
                                    + torch.ones(2, dtype=torch.bfloat16)),
    "dtype_of_linspace_float64": ([(3,)], lambda x: torch.linspace(0, 1, 5, dtype=torch.float64)),
})


def _scheduled(x, g, make_scheduler, epochs=None):
    """x * the parameter after 6 SGD steps whose rate a scheduler sets; with
    `epochs`, the scheduler is stepped to those epochs (the closed form)."""
    p = x.detach().clone().requires_grad_()
    optimizer = torch.optim.SGD([p], lr=0.1, momentum=0.5)
    scheduler = make_scheduler(optimizer)
    for k in range(6):
        p.grad = g.detach() * (k + 1) - p.detach()
        optimizer.step()
        scheduler.step(epochs[k]) if epochs else scheduler.step()
    return x * p.detach() * scheduler.get_last_lr()[0]


_LR = torch.optim.lr_scheduler
CASES.update({
    "step_lr": ([(3,), (3,)], lambda x, g: _scheduled(x, g, lambda o: _LR.StepLR(o, 2, 0.5))),
    "multi_step_lr": ([(3,), (3,)], lambda x, g: _scheduled(
        x, g, lambda o: _LR.MultiStepLR(o, [1, 3, 3], 0.5))),
    "exponential_lr": ([(3,), (3,)], lambda x, g: _scheduled(
        x, g, lambda o: _LR.ExponentialLR(o, 0.8))),
    "constant_lr": ([(3,), (3,)], lambda x, g: _scheduled(
        x, g, lambda o: _LR.ConstantLR(o, 0.25, total_iters=3))),
    "linear_lr": ([(3,), (3,)], lambda x, g: _scheduled(
        x, g, lambda o: _LR.LinearLR(o, 0.25, 0.75, total_iters=4))),
    "step_lr_closed_form": ([(3,), (3,)], lambda x, g: _scheduled(
        x, g, lambda o: _LR.StepLR(o, 2, 0.5), epochs=[3, 1, 4, 4, 7, 2])),
    "linear_lr_closed_form": ([(3,), (3,)], lambda x, g: _scheduled(
        x, g, lambda o: _LR.LinearLR(o, 0.5, total_iters=3), epochs=[2, 5, 1, 0, 3, 6])),
})


def _constant_inits(x):
    """Constant initialisers write their value (under no_grad, so into a leaf
    that requires grad too)."""
    w = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    torch.nn.init.constant_(w, 1.5)
    b = torch.nn.init.ones_(torch.empty(3, dtype=torch.float64))
    z = torch.nn.init.zeros_(torch.ones(3, dtype=torch.float64))
    return x * w + b * x * torch.nn.init.calculate_gain("relu") + z


CASES["constant_inits"] = ([(3,)], _constant_inits)


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


# nn (h2) ---------------------------------------------------------------------
# Losses, attention, the reductions and orderings independent modules use,
# and module hooks (those torch 1.13 has: forward pre/post, full backward).
_TARGETS = torch.tensor([1, 0, 3])


def _sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):
    """F.scaled_dot_product_attention where torch has it (the stand-in);
    under torch 1.13 PyTorch's documented math reference of it."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                              is_causal=is_causal, scale=scale)
    L, S = q.size(-2), k.size(-2)
    factor = 1 / (q.size(-1) ** 0.5) if scale is None else scale
    bias = torch.zeros(L, S, dtype=q.dtype)
    if is_causal:
        bias = bias.masked_fill(torch.ones(L, S, dtype=torch.bool).tril().logical_not(),
                                float("-inf"))
    if attn_mask is not None:
        bias = bias.masked_fill(attn_mask.logical_not(), float("-inf")) \
            if attn_mask.dtype == torch.bool else attn_mask + bias
    return torch.softmax(q @ k.transpose(-2, -1) * factor + bias, dim=-1) @ v


class _Scale(torch.nn.Module):
    def forward(self, x, y=None):
        return x * (2.0 if y is None else y)


def _module_hooks(x, y):
    m = _Scale()
    m.register_forward_pre_hook(lambda mod, args: (args[0] + 1.0,))
    m.register_forward_hook(lambda mod, args, out: out * 3.0)
    m.register_forward_hook(lambda mod, args, out: None)
    # grad_input holds the positional inputs only; y (a keyword) is not in it.
    m.register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 10.0 + gout[0],))
    return m(x, y=y) + m(y)


def _backward_hook_tuple_output(x, y):
    class Pair(torch.nn.Module):
        def forward(self, a, b):
            return a * b, a + b
    m = Pair()
    seen = []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(len(gin) + len(gout)))
    p, q = m(x, y)
    return p * q * (1.0 if seen == [] else 0.0)  # the hook runs in the backward only


def _backward_hook_no_input_grad(x):
    m = _Scale()
    got = []
    m.register_full_backward_hook(lambda mod, gin, gout: got.append(gin) or None)
    return m(torch.ones(3, dtype=torch.float64)) * x


def _global_forward_hook(x):
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda mod, args, out: out + 1.0)
    with handle:
        return _Scale()(x)


_HOOKS_2X = "with_kwargs" in torch.nn.Module.register_forward_hook.__code__.co_varnames


def _hooks_2x(x, y):
    """torch 2.x hook options (with_kwargs, prepend, always_call, backward
    pre-hooks); under torch 1.13 the same computation spelled with 1.13's
    hooks, so both must agree."""
    m = _Scale()
    if _HOOKS_2X:
        m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 2.0,), {"y": y}),
                                    with_kwargs=True)
        m.register_forward_hook(lambda mod, args, kwargs, out: out + kwargs["y"],
                                with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: out * 3.0, prepend=True,
                                always_call=True)
        m.register_full_backward_pre_hook(lambda mod, gout: (gout[0] * 0.25,))
        return m(x)
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 2.0, y))
    m.register_forward_hook(lambda mod, args, out: out * 3.0)
    m.register_forward_hook(lambda mod, args, out: out + y)
    # The backward pre-hook scales the gradient of what the module returns
    # after its forward hooks.
    return _ScaleGrad.apply(m(x), 0.25)


class _ScaleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t, factor):
        ctx.factor = factor
        return t * 1.0

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None


def _relu_inplace(x):
    y = x * 1.0
    z = F.relu(y, inplace=True)
    return z + y


CASES.update({
    "cross_entropy": ([(3, 4)], lambda x: F.cross_entropy(x, _TARGETS)),
    "cross_entropy_weight_ignore_smoothing": ([(4, 3)], lambda x: F.cross_entropy(
        x, torch.tensor([2, -100, 0, 1]), weight=torch.tensor([0.5, 2.0, 1.0], dtype=torch.float64),
        label_smoothing=0.1)),
    "cross_entropy_reductions": ([(3, 4)], lambda x: F.cross_entropy(x, _TARGETS, reduction="none")
                                 + F.cross_entropy(x, _TARGETS, reduction="sum", ignore_index=0)
                                 + F.cross_entropy(x, _TARGETS, ignore_index=3,
                                                   label_smoothing=0.3, reduction="none")),
    "cross_entropy_probabilities": ([(2, 3), (2, 3)], lambda x, y: F.cross_entropy(
        x, F.softmax(y, 1), label_smoothing=0.2) + F.cross_entropy(
        x, F.softmax(y, 1), weight=torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64),
        reduction="sum")),
    "cross_entropy_k_dim": ([(2, 3, 2)], lambda x: F.cross_entropy(
        x, torch.tensor([[0, 2], [1, 1]]), weight=torch.tensor([0.5, 1.0, 3.0], dtype=torch.float64))),
    "cross_entropy_unbatched": ([(4,)], lambda x: F.cross_entropy(x, torch.tensor(2),
                                                                 label_smoothing=0.25)),
    "cross_entropy_module_legacy_flags": ([(3, 4)], lambda x: torch.nn.CrossEntropyLoss(
        reduce=False)(x, _TARGETS) * torch.nn.CrossEntropyLoss(size_average=False)(x, _TARGETS)),
    "nll_loss": ([(3, 4)], lambda x: F.nll_loss(F.log_softmax(x, 1), _TARGETS,
                                               weight=torch.tensor([1.0, 2.0, 0.5, 1.5], dtype=torch.float64))
                 + F.nll_loss(x, _TARGETS, reduction="sum", ignore_index=1)),
    "one_hot": ([(3, 4)], lambda x: x * F.one_hot(torch.tensor([0, 3, 1]))
                + x * F.one_hot(torch.tensor([2, 2, 0]), num_classes=4)),
    "mse_l1_loss": ([(2, 3), (2, 3)], lambda x, y: F.mse_loss(x, y) + F.mse_loss(x, y, reduction="sum")
                    + F.l1_loss(x, y) + torch.nn.L1Loss(reduction="sum")(x, torch.cat([x[:1].detach(), y[1:]]))
                    + torch.nn.MSELoss()(x, y * 2)),
    "l1_loss_none_broadcast": ([(2, 3), (3,)], lambda x, y: F.l1_loss(x, y.expand(2, 3),
                                                                       reduction="none")),
    "sdpa": ([(2, 3, 4), (2, 5, 4), (2, 5, 2)], lambda q, k, v: _sdpa(q, k, v)),
    "sdpa_causal_scale": ([(2, 3, 4), (2, 3, 4), (2, 3, 2)],
                          lambda q, k, v: _sdpa(q, k, v, is_causal=True, scale=0.3)),
    "sdpa_bool_mask": ([(1, 3, 2), (1, 4, 2), (1, 4, 3)], lambda q, k, v: _sdpa(
        q, k, v, attn_mask=torch.tensor([[True, False, True, False], [False, False, False, True],
                                         [True, True, True, True]]))),
    "sdpa_float_mask": ([(1, 2, 2), (1, 3, 2), (1, 3, 2)], lambda q, k, v: _sdpa(
        q, k, v, attn_mask=torch.tensor([[0.5, -3.0, -1.0], [0.0, 0.25, 2.0]],
                                        dtype=torch.float64))),
    "logsumexp": ([(2, 3, 2)], lambda x: x.logsumexp(1) * 2
                  + torch.logsumexp(x, (0, 2), keepdim=True).reshape(3, 1)[:2]),
    "cumsum": ([(2, 3), (2, 3)], lambda x, y: x.cumsum(1) * y + torch.cumsum(x, 0)
               + torch.tensor([[True, False, True], [True, True, False]]).cumsum(-1)),
    "sort_concrete_keys": ([(2, 4)], lambda x: x.gather(1, torch.tensor(_ROWS).sort(1).indices)
                           * torch.tensor(_ROWS).sort(descending=True, stable=True).values
                           + x.index_select(1, torch.sort(torch.tensor([3.0, 1.0, 0.5, 2.0]))[1])),
    "repeat_interleave": ([(2, 3)], lambda x: torch.cat([
        x.repeat_interleave(2, dim=0).reshape(-1),
        x.repeat_interleave(torch.tensor([1, 0, 2]), dim=1).reshape(-1),
        torch.repeat_interleave(x, 2),
        x[torch.repeat_interleave(torch.tensor([2, 1]))].reshape(-1)])),
    "embedding_padding_idx": ([(5, 2)], lambda w: F.embedding(
        torch.tensor([[1, 4], [1, 0]]), w, padding_idx=1) * 2
        + torch.nn.functional.embedding(torch.tensor([3]), w, padding_idx=-2)),
    "softmax_dtype_implicit_dim": ([(2, 3), (2, 2, 3)], lambda x, y: F.softmax(x, dtype=torch.float64)
                                   + F.log_softmax(y, dtype=torch.float64)[0]
                                   + torch.nn.Softmax()(y)[1]),
    "pad_modes": ([(1, 2, 4), (2, 3)], lambda x, y: torch.cat([
        F.pad(x, (2, 1), mode="reflect").reshape(-1), F.pad(y, (1, 2), mode="replicate").reshape(-1),
        F.pad(x, (1, 3), mode="circular").reshape(-1), F.pad(y, (1, 0, 0, 2)).reshape(-1)])),
    "gelu_bad_approximate": ([(3,)], lambda x: F.gelu(x, approximate="tan")),
    "relu_inplace": ([(2, 3)], _relu_inplace),
    "layer_norm_eps_no_affine": ([(2, 4)], lambda x: F.layer_norm(x, (4,), eps=1e-3)),
    "module_hooks": ([(3,), (3,)], _module_hooks),
    "backward_hook_tuple_output": ([(3,), (3,)], _backward_hook_tuple_output),
    "backward_hook_no_input_grad": ([(3,)], _backward_hook_no_input_grad),
    "global_forward_hook": ([(3,)], _global_forward_hook),
    "hooks_2x_options": ([(3,), (3,)], _hooks_2x),
    "leaky_relu": ([(6,)], lambda x: F.leaky_relu(x, 0.2) + torch.nn.LeakyReLU()(x * 2)
                   + F.leaky_relu(x - x.detach(), 0.3)),
    "normalize": ([(2, 3)], lambda x: F.normalize(x) + F.normalize(x, dim=0, eps=0.5)),
    "linalg_vector_norm": ([(2, 3)], lambda x: torch.linalg.vector_norm(x)
                           + torch.linalg.vector_norm(x, 2, dim=1).sum()
                           + torch.linalg.vector_norm(x, ord=2.0, dim=0, keepdim=True).sum()),
    # Finite inputs: every flag is decided (inf and NaN themselves are
    # extended values, tests/e2e/extended_reals).
    "isinf_isnan_isfinite": ([(4,)], lambda x: torch.where(
        x.isinf() | torch.isnan(x * 2), x, x * x) + torch.isfinite(x) * x),
    "linalg_vector_norm_in_double": ([(3,)], lambda x: torch.linalg.vector_norm(
        x.double(), dtype=torch.float64)),
    "flatten_unflatten_modules": ([(2, 3, 2)], lambda x: torch.nn.Unflatten(1, (2, 3))(
        torch.nn.Flatten()(x)) * 2),
})


# ---- type promotion and in-place formats (lead) ----------------------------
# Values stay exact in every format here (0 and 1), so only dtypes can differ.
def _inplace_keeps_format(x, copy):
    buf = torch.zeros(2, 3, dtype=torch.float16)
    if copy:
        buf.copy_(x * 0.0 + 1.0)
    else:
        buf.add_(x * 0.0)
    return buf


_MASK = [[True, False, True], [False, True, True]]

CASES.update({
    "dtype_int32_plus_python_int": ([(2, 3)], lambda x: torch.tensor(_MASK).to(torch.int32) + 1),
    "dtype_bool_plus_python_int": ([(2, 3)], lambda x: torch.tensor(_MASK) + 1),
    "dtype_int_times_python_float": ([(2, 3)], lambda x: torch.tensor(_MASK).long() * 0.5),
    "dtype_half_times_zero_dim_float": ([(2, 3)], lambda x: x.half() * 0.0 + torch.tensor(1.0)),
    "dtype_int_times_zero_dim_double": ([(2, 3)], lambda x: torch.tensor(_MASK).to(torch.int32) *
                                        torch.tensor(2.0, dtype=torch.float64)),
    "dtype_inplace_add_keeps_buffer_format": ([(2, 3)], lambda x: _inplace_keeps_format(x, False)),
    "dtype_copy_into_narrower_buffer": ([(2, 3)], lambda x: _inplace_keeps_format(x, True)),
})


# ---- extended reals (h6) ------------------------------------------------------
# -inf fills and what softmax, log_softmax, exp and max make of them; a fully
# masked row is NaN as PyTorch computes it (max is -inf, -inf - -inf is NaN).
_CAUSAL = torch.ones(3, 3, dtype=torch.bool).triu(1)
_ROW_MASKED = torch.tensor([[True, True, True], [False, True, False]])

CASES.update({
    "causal_masked_softmax": ([(2, 3, 3)], lambda x: F.softmax(
        x.masked_fill(_CAUSAL, float("-inf")), dim=-1)),
    "fully_masked_row_softmax": ([(2, 3)], lambda x: torch.softmax(
        x.masked_fill(_ROW_MASKED, float("-inf")), -1)),
    "masked_log_softmax": ([(2, 3)], lambda x: F.log_softmax(
        x.masked_fill(torch.tensor([[False, True, False], [True, False, False]]),
                      float("-inf")), dim=-1)),
    "where_full_inf_exp_max": ([(3, 3)], lambda x: torch.where(
        _CAUSAL, torch.full((3, 3), -math.inf), x).exp()
        + torch.maximum(x, torch.full((3, 3), float("-inf")))
        + x.masked_fill(_CAUSAL, float("-inf")).amax(-1, keepdim=True)),
    "finfo_min_fully_masked_row": ([(2, 3)], lambda x: F.softmax(
        x.masked_fill(_ROW_MASKED, torch.finfo(x.dtype).min), dim=-1)),
    "inf_arithmetic_with_constants": ([(2, 3)], lambda x: (
        x.masked_fill(_ROW_MASKED, float("-inf")) * 2.0 - 1.0).exp() / 4.0
        + (x.masked_fill(_ROW_MASKED, float("inf")) < 3.0).float()),
})


# ---- Tensor.to forms (lead) -------------------------------------------------
CASES.update({
    "to_device_object": ([(2, 3)], lambda x: x.to(torch.device("cpu"))),
    "to_device_string_and_dtype": ([(2, 3)], lambda x: x.to("cpu", torch.float64) * 2),
    "to_other_tensor": ([(2, 3)], lambda x: x.to(torch.zeros(1, dtype=torch.float64))),
    "to_dtype_keyword_non_blocking": ([(2, 3)], lambda x: x.to(dtype=torch.float64,
                                                                non_blocking=True) + 1),
})


# ---- rng (h5) -----------------------------------------------------------------
# Deterministic results of random ops: dropout that draws nothing (p = 0,
# eval mode: the input itself; p = 1: zeros), and draws repeated from one
# generator state. standin_check gives the stand-in's draws fixed nonzero
# values, twice over: an output that depends on which draw was made fails.
def _eval_dropouts(x):
    dropouts = [torch.nn.Dropout(0.4), torch.nn.Dropout2d(0.5), torch.nn.Dropout1d(0.5)]
    for d in dropouts:
        d.eval()
    planes = x.reshape(1, 2, 3, 1)
    return dropouts[0](x) + dropouts[1](planes).reshape(2, 3) \
        + dropouts[2](x.reshape(1, 2, 3)).reshape(2, 3) + F.dropout2d(planes, 0.3, False).reshape(2, 3)


def _seeded_masks_repeat(x):
    torch.manual_seed(7)
    first = F.dropout(x, 0.5)
    torch.manual_seed(7)
    again = F.dropout(x, 0.5)
    torch.manual_seed(7)
    channels = F.dropout2d(x.reshape(1, 2, 3, 1), 0.5)
    torch.manual_seed(7)
    channels_again = F.dropout2d(x.reshape(1, 2, 3, 1), 0.5)
    return first - again + (channels - channels_again).reshape(2, 3) + x


def _generator_state_repeats(x):
    g = torch.Generator().manual_seed(3)
    state = g.get_state()
    u = torch.rand(2, 3, generator=g)
    n = torch.randn(2, 3, generator=g)
    g.set_state(state)
    return x + (torch.rand(2, 3, generator=g) - u) + (torch.randn(2, 3, generator=g) - n)


def _rng_states_compare(x):
    torch.manual_seed(11)
    torch.rand(3)
    first = torch.get_rng_state()
    torch.manual_seed(11)
    torch.rand(3)
    again = torch.get_rng_state()
    torch.rand(3)
    moved = torch.get_rng_state()
    with torch.random.fork_rng():
        torch.manual_seed(1)
        torch.rand(3)
    restored = torch.get_rng_state()
    torch.set_rng_state(first)
    same = lambda a, b: bool((a == b).all())  # noqa: E731
    flags = [same(first, again), same(first, moved), same(moved, restored),
             same(first, torch.get_rng_state()), torch.initial_seed() == 11]
    return x * sum(float(f) * 2 ** k for k, f in enumerate(flags))


def _inplace_fill_repeats(x):
    torch.manual_seed(5)
    a = torch.empty(2, 3).uniform_(-1, 1)
    b = torch.empty(2, 3).bernoulli_(0.3)
    torch.manual_seed(5)
    return x + (torch.empty(2, 3).uniform_(-1, 1) - a) + (torch.empty(2, 3).bernoulli_(0.3) - b)


CASES.update({
    "dropout_p0_is_input": ([(2, 3)], lambda x: F.dropout(x, 0.0, True)),
    "dropout_eval_is_input": ([(2, 3)], lambda x: F.dropout(x, 0.5, training=False)),
    "dropout_modules_eval": ([(2, 3)], _eval_dropouts),
    "dropout_p1_zeros": ([(2, 3)], lambda x: F.dropout(x, 1.0) + x),
    "seeded_masks_repeat": ([(2, 3)], _seeded_masks_repeat),
    "generator_state_repeats": ([(2, 3)], _generator_state_repeats),
    "rng_states_compare": ([(2, 3)], _rng_states_compare),
    "inplace_fill_repeats": ([(2, 3)], _inplace_fill_repeats),
})


# ---- clamp (h2 probe) ---------------------------------------------------------
# PyTorch's clamp passes the whole gradient at a tie with a bound (x - x.detach()
# is 0 with gradient 1; torch.maximum would pass half), max wins where min > max,
# tensor bounds get gradients, NaN propagates, and the clamp of concrete
# integers is concrete (it indexes, as Megatron's clamped target ids do).
CASES.update({
    "clamp_tie_gradient": ([(3,)], lambda x: (x - x.detach()).clamp(min=0.0) * 2
                           + (x - x.detach()).clamp(-1.0, 0.0)
                           + torch.clamp(x - x.detach() + 1.0, 0.0, 1.0) * 4),
    "clamp_tensor_bounds": ([(4,), (4,), (4,)], lambda x, lo, hi: x.clamp(lo, hi)
                            + torch.clamp(x, min=lo) * 2 + x.clamp(max=hi - 1.0) * 3
                            + torch.clamp(x.unsqueeze(1), min=lo) .sum(1)),
    "clamp_min_max_methods": ([(4,)], lambda x: x.clamp_min(0.1) + torch.clamp_max(x, -0.2)
                              + (x * 1.0).clamp_(-0.5, 0.5) + (x * 1.0).clip_(min=0.0)
                              + (x * 1.0).clamp_min_(0.3) + torch.clamp_max_(x * 1.0, 0.2)),
    "clamp_integer_index": ([(5, 2)], lambda w: w[(torch.tensor([0, 5, 3, 7]) - 2).clamp(0, 4)]
                            + w.gather(0, torch.tensor([[9, -3], [1, 2], [4, 0], [0, 9]]).clamp(0, 4))),
    "clamp_nan_propagates": ([(3,)], lambda x: torch.cat(
        [x, torch.tensor([float("nan")], dtype=torch.float64)]).clamp(-0.5, 0.5)
        + torch.maximum(torch.tensor([float("nan"), 1.0, 0.0, 2.0], dtype=torch.float64),
                        torch.cat([x, x[:1]]))),
})


# ---- gradient clipping (torch.nn.utils) -------------------------------------
# The norm is taken outside autograd, so the output's gradient is the norm
# (a constant) and the clipped gradients' values are compared: scaled by
# max_norm / norm where the norm is larger (x * 3), left where it is not.
def _clip_grad_norm(x, y):
    p = torch.nn.Parameter(torch.zeros(2, 3, dtype=x.dtype))
    q = torch.nn.Parameter(torch.zeros(3, dtype=x.dtype))
    p.grad, q.grad = (x * 3).detach(), y.detach().clone()
    total = torch.nn.utils.clip_grad_norm_([p, q], max_norm=1.0)
    r = torch.nn.Parameter(torch.zeros(3, dtype=x.dtype))
    r.grad = y.detach() * 1e-3
    small = torch.nn.utils.clip_grad_norm_(r, 1.0)
    return x * total + p.grad.sum() + q.grad + r.grad * small


CASES["clip_grad_norm"] = ([(2, 3), (3,)], _clip_grad_norm)


# Integer formats of flags (ZeRO's overflow count as a byte, all-reduced).
CASES["byte_char_short"] = ([(4,)], lambda x: x * torch.isfinite(x).byte()
                            + torch.isinf(x).char() * 2 + torch.isnan(x).short()
                            + torch.isfinite(x).float().byte().bool() * x)


# ---- the ops optimizers and frameworks use (issue 31) -----------------------
# addcmul / addcdiv / lerp as torch functions, methods and in place, value= and
# weight= as numbers and tensors, broadcast; their input gradients.
def _addc_inplace(x, a, b):
    z = x * 1.0
    z.addcmul_(a, b, value=2.0)
    z.addcdiv_(tensor1=a, tensor2=b * b + 1, value=-0.5)
    z.addcmul_(b, b)  # value's default
    return z


def _lerp_inplace(x, a, b):
    z = x * 1.0
    z.lerp_(a, 0.75)
    z.lerp_(end=b.expand(2, 3), weight=a.sigmoid())
    return z


def _adam_steps(p, g, under_no_grad=True):
    """Two textbook Adam steps written with the in-place ops, under no_grad
    as an optimizer runs them (p times the stepped copy: p's gradient is the
    stepped values); with autograd on, the second step's lerp_ writes the m
    that the first addcdiv_ saved: PyTorch's in-place error."""
    with torch.no_grad() if under_no_grad else contextlib.nullcontext():
        q = p.detach().clone() if under_no_grad else p * 1.0
        m, v = torch.zeros_like(q), torch.zeros_like(q)
        for t in (1, 2):
            grad = g.detach() * t + q
            m.lerp_(grad, 0.1)
            v.mul_(0.999).addcmul_(grad, grad, value=0.001)
            denom = (v / (1 - 0.999 ** t)).sqrt().add_(1e-3)
            q.addcdiv_(m, denom, value=-0.01 / (1 - 0.9 ** t))
    return p * q if under_no_grad else q


def _strides(x):
    """PyTorch's strides of views, as numbers in the output."""
    y = x.reshape(2, 3, 4)
    found = [y.stride(), y.transpose(0, 2).stride(), y[:, ::2, 1:].stride(),
             y.select(1, 1).stride(), y.narrow(2, 1, 2).stride(), y.unsqueeze(1).stride(),
             y[:, :1].expand(2, 5, 4).stride(), y.permute(1, 0, 2).stride(),
             y.view(6, 4).stride(), y.transpose(1, 2).unsqueeze(0).stride(),
             (y.stride(-1), y.stride(dim=0), y.t().stride(1) if y.ndim == 2 else 0),
             y.transpose(0, 1).contiguous().stride(), (y * 2).stride(),
             torch.matmul(y.transpose(1, 2), y).stride(), y.detach().stride(),
             y[1].stride(), y.chunk(2, dim=2)[1].stride()]
    flat = [float(s) for group in found for s in group]
    return x.sum() * 0 + torch.tensor(flat, dtype=x.dtype)


def _storage_layout(x, w):
    """Storage offsets of views, a linear's layout (row-major whatever its
    weight's transpose), a receive buffer of bytes viewed as floats (its
    shape), as_strided at a row-major layout (differentiable), is_complex:
    what nanotron's point-to-point protocol reads."""
    y = x.reshape(2, 3, 4)
    numbers = [y[1].storage_offset(), y[:, 1:].storage_offset(),
               y.narrow(2, 1, 2).storage_offset(), y.storage_offset(),
               y.chunk(2, dim=2)[1].storage_offset(), *F.linear(y, w).stride(),
               *torch.empty(48, dtype=torch.int8).view(dtype=torch.float32).shape,
               *torch.empty(2, 8, dtype=torch.int8).view(torch.float64).shape,
               float(x.is_complex())]
    # The strides of a gradient through a linear (nanotron sends them).
    rows, seen = x.detach().reshape(6, 4).requires_grad_(), []
    rows.register_hook(lambda g: seen.append(g.stride()))
    F.linear(rows, w.detach()).sum().backward()
    numbers += [*seen[0]]
    strided = (x * 2).as_strided((4, 6), (6, 1)) + x.clone().as_strided(
        size=(2, 5), stride=(5, 1), storage_offset=3).sum()
    return torch.cat([strided.reshape(-1), torch.tensor(numbers, dtype=x.dtype)])


def _layer_norm_reset(x, w):
    norm = torch.nn.LayerNorm(3).double()
    with torch.no_grad():
        norm.weight.copy_(w)
        norm.bias.copy_(w * 2)
    before = norm(x)
    norm.reset_parameters()  # ones and zeros again
    return before + norm(x) * 3


def _linear_forward_by_keyword(x, w, b):
    lin = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        lin.weight.copy_(w)
        lin.bias.copy_(b)
    return lin.forward(input=x) + lin(input=x)


CASES.update({
    "addcmul_broadcast": ([(2, 3), (3,), (2, 1)],
                          lambda x, a, b: torch.addcmul(x, a, b, value=0.5)),
    "addcmul_keywords_and_method": ([(2, 3), (3,), (2, 1)], lambda x, a, b: torch.addcmul(
        input=x, tensor1=a, tensor2=b) + x.addcmul(a, b, value=-2) + torch.addcmul(
        x, a, b, value=torch.tensor(0.25, dtype=torch.float64))),
    "addcmul_value_of_one_dim_raises": ([(2, 3), (3,)], lambda x, a: torch.addcmul(
        x, a, a, value=torch.tensor([0.5], dtype=torch.float64))),
    "addcmul_value_needing_grad_raises": ([(2, 3), (3,)], lambda x, a: torch.addcmul(
        x, a, a, value=a[0])),
    "addcdiv_broadcast": ([(2, 3), (3,), (2, 1)],
                          lambda x, a, b: torch.addcdiv(x, a, b * b + 1, value=2)),
    "addcdiv_keywords_and_method": ([(2, 3), (2, 3)], lambda x, a: torch.addcdiv(
        input=x, tensor1=a, tensor2=x * x + 1, value=0.5) + x.addcdiv(tensor1=a, tensor2=a * a + 2)),
    "addcdiv_of_integers_raises": ([(2,)], lambda x: x + torch.addcdiv(
        torch.ones(2, dtype=torch.long), torch.ones(2, dtype=torch.long),
        torch.ones(2, dtype=torch.long))),
    "addcmul_addcdiv_in_place": ([(2, 3), (3,), (2, 1)], _addc_inplace),
    "addcmul_in_place_broadcast_grows_raises": ([(2, 3), (3,)], lambda x, a: (
        a * 1.0).addcmul_(x, a)),
    "lerp_number_weight": ([(2, 3), (3,)], lambda x, a: torch.lerp(x, a, 0.3)),
    "lerp_tensor_weight_broadcast": ([(2, 3), (3,), (2, 1)], lambda x, a, b: torch.lerp(
        input=x, end=a, weight=b) + x.lerp(a.expand(2, 3), b.sigmoid())),
    "lerp_in_place": ([(2, 3), (3,), (2, 1)], _lerp_inplace),
    "lerp_weight_of_another_dtype_raises": ([(2, 3), (3,)], lambda x, a: torch.lerp(
        x, a, torch.tensor(0.5, dtype=torch.float32))),
    "lerp_end_of_another_dtype_raises": ([(2, 3), (3,)], lambda x, a: torch.lerp(
        x, a.float(), 0.5)),
    "adam_steps_in_place_ops": ([(3,), (3,)], _adam_steps),
    "adam_steps_with_autograd_raises": ([(3,), (3,)], lambda p, g: _adam_steps(p, g, False)),
    "logsigmoid": ([(5,)], lambda x: F.logsigmoid(x) + torch.nn.LogSigmoid()(x * 2)
                   + F.logsigmoid(input=x) * 3),
    "strides": ([(24,)], _strides),
    "storage_layout": ([(24,), (5, 4)], _storage_layout),
    "stride_dim_out_of_range_raises": ([(2, 3)], lambda x: x * x.stride(2)),
    "layer_norm_reset_parameters": ([(2, 3), (3,)], _layer_norm_reset),
    "linear_forward_by_keyword": ([(2, 3), (2, 3), (2,)], _linear_forward_by_keyword),
    "keyword_forms": ([(2, 3), (3, 2), (2, 2)], lambda x, w, i: torch.addmm(
        input=i, mat1=x, mat2=w, beta=0.5, alpha=2.0) + torch.matmul(input=x, other=w)
        + F.linear(input=x, weight=w.t(), bias=i[0]) + torch.mm(input=x, mat2=w)
        + torch.add(input=i, other=i, alpha=2) + torch.mul(input=i, other=3.0)
        + torch.sub(input=i, other=i * 2, alpha=0.5) + torch.div(input=i, other=2.0)
        + torch.where(condition=i > 0, input=i, other=-i) + torch.maximum(input=i, other=i * i)
        + torch.exp(input=i) + torch.sum(input=x, dim=1, keepdim=True)
        + torch.clamp(input=i, min=-0.5, max=0.5) + torch.max(input=i, other=i.t())
        + x.matmul(other=w) + x.mm(mat2=w) + i.add(other=i, alpha=3) + i.mul(other=i)
        + i.div(other=i * i + 1) + torch.softmax(input=i, dim=-1)
        + F.softmax(input=i, dim=0) + F.gelu(input=i) + F.relu(input=i)
        + torch.transpose(input=i, dim0=0, dim1=1) + torch.reshape(input=x, shape=(3, 2))[:2]
        + torch.cat(tensors=[i], dim=0) + torch.baddbmm(
            input=i.unsqueeze(0), batch1=x.unsqueeze(0), batch2=w.unsqueeze(0))[0]),
    "keyword_forms_in_place": ([(2, 2), (2, 2)], lambda x, y: (x * 1.0).add_(
        other=y, alpha=2).mul_(other=y).sub_(other=x, alpha=0.5).div_(other=2.0).copy_(
        other=y * 3) + torch.bmm(input=x.unsqueeze(0), mat2=y.unsqueeze(0))[0]),
})
