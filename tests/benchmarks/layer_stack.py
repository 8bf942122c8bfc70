# A stack of identical tensor-parallel blocks (Megatron style: layer norm,
# column-parallel fc1, gelu, row-parallel fc2, residual), for measuring how
# proof time grows with depth, with and without module-boundary lemmas:
#   tests/benchmarks/run.sh
import torch
import torch.distributed as dist
import torch.nn.functional as F


class _CopyToRegion(torch.autograd.Function):
    """Identity forward, all-reduce of the gradient in backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        if dist.get_world_size() > 1:
            dist.all_reduce(grad)
        return grad


class _ReduceFromRegion(torch.autograd.Function):
    """All-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        if dist.get_world_size() > 1:
            dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class Block(torch.nn.Module):
    def __init__(self, hidden, ffn, copy_region=True):
        super().__init__()
        self.copy_region = copy_region
        world = dist.get_world_size()
        self.norm = torch.nn.LayerNorm(hidden)
        self.fc1 = torch.nn.Parameter(torch.empty(ffn // world, hidden))
        self.fc1.tensor_model_parallel, self.fc1.partition_dim = True, 0
        self.fc2 = torch.nn.Parameter(torch.empty(hidden, ffn // world))
        self.fc2.tensor_model_parallel, self.fc2.partition_dim = True, 1

    def forward(self, x):
        h = self.norm(x)
        if self.copy_region:  # without it the input gradient stays partial
            h = _CopyToRegion.apply(h)
        h = F.gelu(F.linear(h, self.fc1))
        return x + _ReduceFromRegion.apply(F.linear(h, self.fc2))


class Stack(torch.nn.Module):
    def __init__(self, depth, hidden=4, ffn=8, broken_layer=-1):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            Block(hidden, ffn, copy_region=k != broken_layer) for k in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _entry(depth, broken_layer=-1):
    x = torch.randn(2, 4)
    return {"model": Stack(depth, broken_layer=broken_layer), "inputs": (x,),
            "loss": lambda out: (out * out).sum()}


def layers_1():
    return _entry(1)


def layers_2():
    return _entry(2)


def layers_4():
    return _entry(4)


def layers_8():
    return _entry(8)


def layers_16():
    return _entry(16)


def layers_8_missing_copy_in_layer_5():
    """A bug in one layer of eight: its copy region is missing."""
    return _entry(8, broken_layer=5)


def layers_3_missing_copy_in_layer_1():
    return _entry(3, broken_layer=1)
