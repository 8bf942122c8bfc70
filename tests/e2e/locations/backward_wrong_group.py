# Bug: under tensor x data parallelism (tp 2, dp 2), the copy-to-region
# Function's backward all-reduces the input gradient over the data-parallel
# group where the tensor-parallel group belongs.
import torch
import torch.distributed as dist

from tp_layers import Block, groups

dp_group = None


class CopyToRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=dp_group)  # expect: SP007
        return grad, None


def entry():
    global dp_group
    tp, dp_group = groups()
    dp_size, dp_rank = dist.get_world_size(dp_group), dist.get_rank(dp_group)
    batch = torch.randn(4, 4)
    model = Block(CopyToRegion, tp)

    def finalize_grads():
        for p in model.parameters():
            dist.all_reduce(p.grad, group=dp_group)
            p.grad /= dp_size

    return {"model": model, "inputs": (batch.chunk(dp_size)[dp_rank],),
            "loss": lambda out: out.sum() / out.shape[0],
            "finalize_grads": finalize_grads,
            "tensor_parallel_group": tp, "data_parallel_group": dp_group}
