# Megatron-LM's fused softmax extensions (megatron/fused_kernels, 2022-2023
# trees): the causal one and the one with a boolean mask, built as Megatron
# builds them and called as its FusedScaleMaskSoftmax calls them, with the
# attention heads split over the tensor-parallel ranks: every rank's kernel
# runs on its own heads. The sources come from the tree
# MEGATRON_FUSED_KERNELS names (never committed). The twins: ranks that
# scale by half as much, ranks given no mask.
import os

import torch
import torch.distributed as dist
from torch.utils import cpp_extension

SOURCES = os.environ.get("MEGATRON_FUSED_KERNELS", "")
softmax_cuda = cpp_extension.load(
    name="scaled_upper_triang_masked_softmax_cuda",
    sources=[os.path.join(SOURCES, "scaled_upper_triang_masked_softmax.cpp"),
             os.path.join(SOURCES, "scaled_upper_triang_masked_softmax_cuda.cu")],
    extra_cuda_cflags=["-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
                       "--expt-relaxed-constexpr", "--expt-extended-lambda"])
masked_softmax_cuda = cpp_extension.load(
    name="scaled_masked_softmax_cuda",
    sources=[os.path.join(SOURCES, "scaled_masked_softmax.cpp"),
             os.path.join(SOURCES, "scaled_masked_softmax_cuda.cu")],
    extra_cuda_cflags=["-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__"])


class _GatherHeads(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local, dim):
        ctx.dim = dim
        parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, local.contiguous())
        return torch.cat(parts, dim=dim)

    @staticmethod
    def backward(ctx, grad):
        rank_part = grad.chunk(dist.get_world_size(), dim=ctx.dim)[dist.get_rank()]
        return rank_part.contiguous(), None


class CausalSoftmaxOverHeads(torch.nn.Module):
    def __init__(self, scale, rank_scale=None):
        super().__init__()
        self.scale, self.rank_scale = scale, rank_scale

    def forward(self, scores):  # [heads x batch, seq, seq]
        world, rank = dist.get_world_size(), dist.get_rank()
        per_rank = scores.shape[0] // world
        local = scores[rank * per_rank:(rank + 1) * per_rank].contiguous()
        scale = self.scale if world == 1 or self.rank_scale is None else self.rank_scale
        probs = softmax_cuda.forward(local, scale)
        return probs if world == 1 else _GatherHeads.apply(probs, 0)


class MaskedSoftmaxOverHeads(torch.nn.Module):
    def __init__(self, scale, mask_on_ranks=True):
        super().__init__()
        self.scale, self.mask_on_ranks = scale, mask_on_ranks

    def forward(self, scores, mask):  # [batch, heads, sq, sk], mask [batch, 1, sq, sk]
        world, rank = dist.get_world_size(), dist.get_rank()
        heads = scores.shape[1] // world
        local = scores[:, rank * heads:(rank + 1) * heads].contiguous()
        if world > 1 and not self.mask_on_ranks:
            mask = torch.zeros_like(mask)
        b, _, sq, sk = scores.shape
        assert sq % masked_softmax_cuda.get_batch_per_block(sq, sk, b, heads) == 0
        probs = masked_softmax_cuda.forward(local, mask, self.scale)
        return probs if world == 1 else _GatherHeads.apply(probs, 1)


# The kernel takes a multiple of its 64 batches per block (seq 4): 128 at
# world 1, 64 a rank at world 2.
def heads():
    return {"model": CausalSoftmaxOverHeads(0.5), "inputs": (torch.randn(128, 4, 4).half(),)}


def heads_with_wrong_scale():
    return {"model": CausalSoftmaxOverHeads(0.5, rank_scale=0.25),
            "inputs": (torch.randn(128, 4, 4).half(),)}


# The masked kernel takes query rows in multiples of its batches per block
# (8 at sk = 32).
def _causal_mask():
    return torch.ones(1, 1, 8, 32, dtype=torch.bool).triu(diagonal=1)


def masked_heads():
    return {"model": MaskedSoftmaxOverHeads(0.5),
            "inputs": (torch.randn(1, 4, 8, 32).half(), _causal_mask())}


def masked_heads_without_mask():
    return {"model": MaskedSoftmaxOverHeads(0.5, mask_on_ranks=False),
            "inputs": (torch.randn(1, 4, 8, 32).half(), _causal_mask())}
