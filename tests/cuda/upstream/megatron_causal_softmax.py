# Megatron-LM's fused causal softmax extension (megatron/fused_kernels,
# 2022-2023 trees), built as Megatron builds it and called as its
# FusedScaleMaskSoftmax calls it, with the attention heads split over the
# tensor-parallel ranks: every rank's kernel runs on its own heads. The
# sources come from the tree MEGATRON_FUSED_KERNELS names (never committed).
# `heads_with_wrong_scale` is its twin whose ranks scale by half as much.
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


class _GatherHeads(torch.autograd.Function):
    @staticmethod
    def forward(ctx, local):
        parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, local.contiguous())
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        return grad.chunk(dist.get_world_size())[dist.get_rank()].contiguous()


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
        return probs if world == 1 else _GatherHeads.apply(probs)


# The kernel takes a multiple of its 64 batches per block (seq 4): 128 at
# world 1, 64 a rank at world 2.
def heads():
    return {"model": CausalSoftmaxOverHeads(0.5), "inputs": (torch.randn(128, 4, 4).half(),)}


def heads_with_wrong_scale():
    return {"model": CausalSoftmaxOverHeads(0.5, rank_scale=0.25),
            "inputs": (torch.randn(128, 4, 4).half(),)}
