"""torch.distributed.nn.functional: collectives that autograd sees, each with
the backward PyTorch gives it (torch/distributed/nn/functional.py): the
gradient of an all_reduce is the all_reduce of the gradient with the same op
(even MAX or MIN, whose true gradient it is not), of a broadcast the reduce of
the gradient to src (zero elsewhere), of an all_gather a reduce_scatter, of an
all_to_all the all_to_all back. Like PyTorch, roots are compared with this
rank's rank in the group. Collectives a backward issues are reported at the
forward's call site."""
import functools

from ...autograd import Function
from .. import Backend, ReduceOp, _called_at, _site, group as _group_namespace
from .. import (all_gather as _all_gather, all_reduce as _all_reduce,
                all_to_all as _all_to_all, all_to_all_single as _all_to_all_single,
                broadcast as _broadcast, gather as _gather, get_backend, get_rank,
                get_world_size, reduce as _reduce, reduce_scatter as _reduce_scatter,
                reduce_scatter_tensor as _reduce_scatter_tensor, scatter as _scatter,
                all_gather_into_tensor as _all_gather_into_tensor)

_WORLD = _group_namespace.WORLD


def _at_forward_site(cls):
    """Runs the Function's backward as if at the line that called it."""
    forward, backward = cls.forward, cls.backward

    @functools.wraps(forward)
    def located_forward(ctx, *args):
        ctx.site = _site()
        return forward(ctx, *args)

    @functools.wraps(backward)
    def located_backward(ctx, *grads):
        with _called_at(ctx.site):
            return backward(ctx, *grads)
    cls.forward, cls.backward = staticmethod(located_forward), staticmethod(located_backward)
    return cls


def _torch():
    import torch
    return torch


def broadcast(tensor, src, group=_WORLD):
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=_WORLD):
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=_WORLD):
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=ReduceOp.SUM, group=_WORLD):
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=_WORLD):
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=_WORLD):
    return _AllGather.apply(group, tensor)


def _all_gather_base(output_tensor, input_tensor, group=_WORLD):
    return _AllGatherBase.apply(output_tensor, input_tensor, group)


def all_to_all(output_tensor_list, input_tensor_list, group=_WORLD):
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=_WORLD):
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes,
                                 input)


def all_reduce(tensor, op=ReduceOp.SUM, group=_WORLD):
    return _AllReduce.apply(op, group, tensor)


@_at_forward_site
class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group, ctx.rank = src, group, get_rank()
        out = tensor.clone()
        _broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        grad = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad_output)
        if ctx.src != ctx.rank:
            grad.zero_()
        return None, None, grad


@_at_forward_site
class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst, ctx.group = dst, group
        torch = _torch()
        received = [torch.zeros_like(tensor) for _ in range(get_world_size(group=group))]
        tensor = tensor.contiguous()
        here = get_rank(group=group) == dst
        _gather(tensor, received if here else None, dst, group=group)
        return tuple(received)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return None, None, _Scatter.apply(ctx.dst, ctx.group, *grad_outputs)


@_at_forward_site
class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src, ctx.group = src, group
        if any(t.size() != tensors[0].size() for t in tensors):
            raise AssertionError("scatter: the tensors differ in size")
        out = _torch().zeros_like(tensors[0])
        here = get_rank(group=group) == src
        _scatter(out, list(tensors) if here else None, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad_output)


@_at_forward_site
class _Reduce(Function):
    @staticmethod
    def forward(ctx, dst, op, group, tensor):
        ctx.dst, ctx.group = dst, group
        out = tensor.clone()
        _reduce(out, dst, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad_output)


@_at_forward_site
class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, op, group, output, *input_list):
        ctx.group = group
        output = output.contiguous()
        _reduce_scatter(output, [t.contiguous() for t in input_list], op=op, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None) + _AllGather.apply(ctx.group, grad_output)


@_at_forward_site
class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        tensor = tensor.contiguous()
        torch = _torch()
        received = [torch.empty_like(tensor) for _ in range(get_world_size(group=group))]
        _all_gather(received, tensor, group=group)
        return tuple(received)

    @staticmethod
    def backward(ctx, *grad_outputs):
        torch = _torch()
        if get_backend(group=ctx.group) == Backend.NCCL:
            mine = torch.empty_like(grad_outputs[get_rank(group=ctx.group)])
            grad = _ReduceScatter.apply(ReduceOp.SUM, ctx.group, mine, *grad_outputs)
        else:  # PyTorch's emulation of reduce_scatter where the backend has none
            exchanged = _AllToAll.apply(ctx.group,
                                        [torch.empty_like(g) for g in grad_outputs],
                                        *grad_outputs)
            grad = torch.sum(torch.stack(exchanged), dim=0)
        return None, grad


@_at_forward_site
class _AllGatherBase(Function):
    @staticmethod
    def forward(ctx, output_tensor, input_tensor, group):
        ctx.group = group
        _all_gather_into_tensor(output_tensor, input_tensor.contiguous(), group=group)
        return output_tensor

    @staticmethod
    def backward(ctx, grad_output):
        if get_backend(group=ctx.group) != Backend.NCCL:
            raise RuntimeError("Backend not supported!")
        world = get_world_size(group=ctx.group)
        shape = list(grad_output.size())
        if shape[0] % world:
            raise RuntimeError(f"Tensor with dimensions: {shape} does not have first "
                               f"dimension divisible by world_size: {world}")
        shape[0] //= world
        grad = _torch().empty(shape, dtype=grad_output.dtype)
        _reduce_scatter_tensor(grad, grad_output, ReduceOp.SUM, ctx.group)
        return None, grad, None


@_at_forward_site
class _AllToAll(Function):
    @staticmethod
    def forward(ctx, group, output_list, *tensors):
        ctx.group = group
        world = get_world_size(group=group)
        ctx.sizes = [tensors[i].size() for i in range(world)]
        tensors = [t.contiguous() for t in tensors]
        if get_backend(group=group) == Backend.GLOO:  # gloo has no all_to_all
            me = get_rank(group=group)
            for i in range(world):
                _scatter(output_list[i], tensors if i == me else None, i, group=group)
        else:
            _all_to_all(output_list, tensors, group=group)
        return tuple(output_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        torch = _torch()
        received = [torch.empty(size, dtype=grad_outputs[0].dtype) for size in ctx.sizes]
        return (None, None) + _AllToAll.apply(ctx.group, received, *grad_outputs)


@_at_forward_site
class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group, ctx.input_shape = group, input.size()
        # The way back sends what came and receives what went.
        ctx.output_split_sizes, ctx.input_split_sizes = input_split_sizes, \
            output_split_sizes
        _all_to_all_single(output, input, output_split_sizes=output_split_sizes,
                           input_split_sizes=input_split_sizes, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        grad = _torch().empty(ctx.input_shape, dtype=grad_output.dtype)
        return (None, None, None, None,
                _AllToAllSingle.apply(ctx.group, grad, ctx.output_split_sizes,
                                      ctx.input_split_sizes, grad_output.contiguous()))


@_at_forward_site
class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = tensor.clone(memory_format=_torch().contiguous_format)
        _all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad_output)

