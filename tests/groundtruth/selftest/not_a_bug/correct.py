# Megatron-style tensor-parallel MLP: column-parallel -> GeLU -> row-parallel.
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


def _set_tp_attributes(param, dim):
    param.tensor_model_parallel = True
    param.partition_dim = dim
    param.partition_stride = 1


class ColumnParallelLinear(torch.nn.Module):
    def __init__(self, input_size, output_size):
        super().__init__()
        per_partition = output_size // dist.get_world_size()
        self.weight = torch.nn.Parameter(torch.empty(per_partition, input_size))
        self.bias = torch.nn.Parameter(torch.empty(per_partition))
        _set_tp_attributes(self.weight, 0)
        _set_tp_attributes(self.bias, 0)

    def forward(self, input_):
        input_parallel = _CopyToModelParallelRegion.apply(input_)
        return F.linear(input_parallel, self.weight, self.bias)


class RowParallelLinear(torch.nn.Module):
    def __init__(self, input_size, output_size):
        super().__init__()
        per_partition = input_size // dist.get_world_size()
        self.weight = torch.nn.Parameter(torch.empty(output_size, per_partition))
        self.bias = torch.nn.Parameter(torch.empty(output_size))
        _set_tp_attributes(self.weight, 1)

    def forward(self, input_parallel):
        output_parallel = F.linear(input_parallel, self.weight)
        output_ = _ReduceFromModelParallelRegion.apply(output_parallel)
        return output_ + self.bias


class ParallelMLP(torch.nn.Module):
    def __init__(self, hidden_size, ffn_hidden_size):
        super().__init__()
        self.dense_h_to_4h = ColumnParallelLinear(hidden_size, ffn_hidden_size)
        self.dense_4h_to_h = RowParallelLinear(ffn_hidden_size, hidden_size)

    def forward(self, hidden_states):
        intermediate = F.gelu(self.dense_h_to_4h(hidden_states))
        return self.dense_4h_to_h(intermediate)


def entry():
    hidden_states = torch.randn(2, 4)
    return ParallelMLP(hidden_size=4, ffn_hidden_size=8), (hidden_states,)
