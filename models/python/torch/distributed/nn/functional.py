"""torch.distributed.nn.functional: collectives that autograd sees, with the
backward PyTorch gives them (the gradient of an all-reduce sum is the
all-reduce sum of the gradient)."""
from ... import _tracing
from ...autograd import Function
from .. import ReduceOp, all_reduce as _all_reduce, group as _group


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = tensor.clone()
        _all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        if ctx.op != ReduceOp.SUM:
            raise _tracing.Unsupported("the gradient of a differentiable all_reduce "
                                       "other than SUM")
        grad = grad_output.clone()
        _all_reduce(grad, op=ReduceOp.SUM, group=ctx.group)
        return None, None, grad


def all_reduce(tensor, op=ReduceOp.SUM, group=_group.WORLD):
    return _AllReduce.apply(op, group, tensor)
