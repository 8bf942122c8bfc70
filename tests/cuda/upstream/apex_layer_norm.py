# apex's fused layer norm extension (csrc/layer_norm_cuda.cpp and its
# kernel), built as apex's setup builds fused_layer_norm_cuda and called as
# its FusedLayerNormAffineFunction calls it, with the rows (tokens) split
# over the ranks as sequence parallelism splits them. The sources come from
# the apex tree APEX_CSRC names (never committed); they need the toolkit's
# headers (`--cuda-path`). `rows_with_wrong_eps` is its twin whose ranks
# normalise with another epsilon.
import os

import torch
import torch.distributed as dist
from torch.utils import cpp_extension

SOURCES = os.environ.get("APEX_CSRC", "")
fused_layer_norm_cuda = cpp_extension.load(
    name="fused_layer_norm_cuda",
    sources=[os.path.join(SOURCES, "layer_norm_cuda.cpp"),
             os.path.join(SOURCES, "layer_norm_cuda_kernel.cu")])


class _GatherRows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local):
        parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, local.contiguous())
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        return grad.chunk(dist.get_world_size())[dist.get_rank()].contiguous()


class RowsLayerNorm(torch.nn.Module):
    def __init__(self, hidden, eps, rank_eps=None):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.bias = torch.nn.Parameter(torch.zeros(hidden))
        self.eps, self.rank_eps = eps, rank_eps

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        rows = x.shape[0] // world
        local = x[rank * rows:(rank + 1) * rows].contiguous()
        eps = self.eps if world == 1 or self.rank_eps is None else self.rank_eps
        out, mean, invvar = fused_layer_norm_cuda.forward_affine(
            local, list(self.weight.shape), self.weight, self.bias, eps)
        return out if world == 1 else _GatherRows.apply(out)


def rows():
    return {"model": RowsLayerNorm(4, 1e-5), "inputs": (torch.randn(4, 4),)}


def rows_with_wrong_eps():
    return {"model": RowsLayerNorm(4, 1e-5, rank_eps=1.0), "inputs": (torch.randn(4, 4),)}
