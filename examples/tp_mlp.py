# A Megatron-style tensor-parallel MLP: column-parallel linear -> GeLU ->
# row-parallel linear, with the copy/reduce autograd functions that carry its
# collectives. Check it with
#   build/shardproof check examples/tp_mlp.py::entry --world 2
# and see the refutation of the variant whose row-parallel all-reduce is gone:
#   build/shardproof check examples/tp_mlp.py::entry_missing_allreduce --world 2
import torch
import torch.distributed as dist
import torch.nn.functional as F


def tp_size():
    return dist.get_world_size()


def tp_rank():
    return dist.get_rank()


class CopyToTensorParallelRegion(torch.autograd.Function):
    """Identity in forward; all-reduce of the gradient in backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        if tp_size() > 1:
            grad = grad.clone()
            dist.all_reduce(grad)
        return grad


class ReduceFromTensorParallelRegion(torch.autograd.Function):
    """All-reduce in forward; identity in backward."""

    @staticmethod
    def forward(ctx, x):
        if tp_size() > 1:
            x = x.clone()
            dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class ColumnParallelLinear(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(out_features // tp_size(), in_features))
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 0
        self.bias = torch.nn.Parameter(torch.empty(out_features // tp_size()))
        self.bias.tensor_model_parallel = True
        self.bias.partition_dim = 0

    def forward(self, x):
        x = CopyToTensorParallelRegion.apply(x)
        return F.linear(x, self.weight, self.bias)


class RowParallelLinear(torch.nn.Module):
    def __init__(self, in_features, out_features, skip_allreduce=False):
        super().__init__()
        self.skip_allreduce = skip_allreduce
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features // tp_size()))
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 1
        self.bias = torch.nn.Parameter(torch.empty(out_features))

    def forward(self, x):
        partial = F.linear(x, self.weight)
        if self.skip_allreduce:
            out = partial  # the bug: every rank keeps its partial sum
        else:
            out = ReduceFromTensorParallelRegion.apply(partial)
        return out + self.bias


class ParallelMLP(torch.nn.Module):
    def __init__(self, hidden, ffn, skip_allreduce=False):
        super().__init__()
        self.fc1 = ColumnParallelLinear(hidden, ffn)
        self.fc2 = RowParallelLinear(ffn, hidden, skip_allreduce)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def entry():
    # symbolic: the proof covers every input; it requires grad, so its
    # gradient is checked too
    x = torch.randn(2, 4).requires_grad_()
    return ParallelMLP(hidden=4, ffn=8), (x,)


def entry_missing_allreduce():
    x = torch.randn(2, 4).requires_grad_()
    return ParallelMLP(hidden=4, ffn=8, skip_allreduce=True), (x,)
