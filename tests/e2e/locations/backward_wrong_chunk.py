# Bug: the gather-from-region Function's backward hands every rank the first
# chunk of the output gradient instead of its own.
import torch
import torch.distributed as dist


class GatherFromRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        world = dist.get_world_size()
        pieces = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(pieces, x.contiguous())
        return torch.cat(pieces, dim=-1)

    @staticmethod
    def backward(ctx, grad):
        piece = grad.chunk(dist.get_world_size(), dim=-1)[0]  # expect: SP006
        return piece.contiguous()


class ColumnParallelLinear(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        world = dist.get_world_size()
        self.weight = torch.nn.Parameter(torch.empty(out_features // world, in_features))
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 0

    def forward(self, x):
        return torch.tanh(GatherFromRegion.apply(x @ self.weight.t()))


def entry():
    return ColumnParallelLinear(4, 8), (torch.randn(2, 4),)
