# A Megatron-style SwiGLU MLP whose fc1 holds, on each rank, its slice of the
# gate half and its slice of the up half ([gate_r; up_r]): the shards of the
# whole fc1 weight are interleaved, stride 2. `declared_stride` is what the
# parameters say (Megatron's 2024 trees said nothing, i.e. 1).
import torch
import torch.distributed as dist
import torch.nn.functional as F


class _CopyToModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        if dist.get_world_size() > 1:
            dist.all_reduce(grad_output)
        return grad_output


class _ReduceFromModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        if dist.get_world_size() > 1:
            dist.all_reduce(input_)
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


def _shard(param, dim, stride):
    param.tensor_model_parallel = True
    param.partition_dim = dim
    param.partition_stride = stride
    return param


class SwiGLUMLP(torch.nn.Module):
    def __init__(self, hidden, ffn, declared_stride, reduce_output=True):
        super().__init__()
        local = ffn // dist.get_world_size()
        self.fc1_weight = _shard(torch.nn.Parameter(torch.empty(2 * local, hidden)), 0,
                                 declared_stride)
        self.fc1_bias = _shard(torch.nn.Parameter(torch.empty(2 * local)), 0, declared_stride)
        self.fc2_weight = _shard(torch.nn.Parameter(torch.empty(hidden, local)), 1, 1)
        self.reduce_output = reduce_output

    def forward(self, x):
        h = F.linear(_CopyToModelParallelRegion.apply(x), self.fc1_weight, self.fc1_bias)
        gate, up = torch.chunk(h, 2, dim=-1)
        partial = F.linear(F.silu(gate) * up, self.fc2_weight)
        if not self.reduce_output:
            return partial
        return _ReduceFromModelParallelRegion.apply(partial)


def _entry(**options):
    return SwiGLUMLP(hidden=4, ffn=8, **options), (torch.randn(2, 4).requires_grad_(),)


def declared():
    """Stride 2 declared: proved, nothing to say."""
    return _entry(declared_stride=2)


def undeclared():
    """No stride declared (1): proved under stride 2, with SP011."""
    return _entry(declared_stride=1)


def undeclared_unreduced():
    """No stride declared and fc2's all-reduce missing: the inference must
    not hide the real bug."""
    return _entry(declared_stride=1, reduce_output=False)
