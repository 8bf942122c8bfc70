# Causal self-attention under tensor parallelism (each rank owns whole heads;
# the row-parallel output projection sums them), its future positions masked
# with -inf before the softmax: the extended reals of a real training step
# (exp(-inf) = 0). Variants fill with torch.where/torch.full or finfo.min, and
# a few are wrong or undecidable on purpose (see tests/e2e/extended_reals_test.cpp).
import math

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


def masked_with_inf(scores, future):
    return scores.masked_fill(future, float("-inf"))


def masked_with_where(scores, future):
    return torch.where(future, torch.full(scores.shape, -math.inf), scores)


def masked_with_finfo_min(scores, future):
    return scores.masked_fill(future, torch.finfo(scores.dtype).min)


class CausalParallelAttention(torch.nn.Module):
    def __init__(self, hidden_size, num_heads, mask, log_probs=False, diagonal=1):
        super().__init__()
        world = dist.get_world_size()
        self.heads = num_heads // world
        self.head_dim = hidden_size // num_heads
        self.mask, self.log_probs, self.diagonal = mask, log_probs, diagonal
        self.query_key_value = torch.nn.Parameter(
            torch.empty(3 * self.heads * self.head_dim, hidden_size))
        self.query_key_value.tensor_model_parallel = True
        self.query_key_value.partition_dim = 0
        self.dense = torch.nn.Parameter(torch.empty(hidden_size, self.heads * self.head_dim))
        self.dense.tensor_model_parallel = True
        self.dense.partition_dim = 1

    def forward(self, hidden_states):
        s, b, _ = hidden_states.shape
        heads, d = self.heads, self.head_dim
        hidden_states = _CopyToModelParallelRegion.apply(hidden_states)
        mixed = F.linear(hidden_states, self.query_key_value).view(s, b, heads, 3 * d)
        query, key, value = (t.permute(1, 2, 0, 3) for t in mixed.split(d, dim=-1))
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(d)
        future = torch.ones(s, s, dtype=torch.bool).triu(self.diagonal)
        scores = self.mask(scores, future)
        if self.log_probs:  # masked positions are -inf in the output itself
            return F.log_softmax(scores, dim=-1)
        probs = torch.softmax(scores, dim=-1)
        context = torch.matmul(probs, value).permute(2, 0, 1, 3).reshape(s, b, heads * d)
        return _ReduceFromModelParallelRegion.apply(F.linear(context, self.dense))


def _entry(**options):
    hidden_states = torch.randn(3, 1, 4).requires_grad_()  # [sequence, batch, hidden]
    return CausalParallelAttention(4, 2, **options), (hidden_states,)


def entry():
    return _entry(mask=masked_with_inf)


def entry_where_full():
    return _entry(mask=masked_with_where)


def entry_finfo_min():
    return _entry(mask=masked_with_finfo_min)


def entry_log_softmax():
    return _entry(mask=masked_with_inf, log_probs=True)


def entry_rank_masks_diagonal():
    # Wrong on rank 1: it also masks the diagonal, so its first row is fully
    # masked (NaN, as PyTorch's softmax of only -inf) where the reference's is not.
    diagonal = 0 if dist.get_rank() == 1 else 1
    return _entry(mask=masked_with_inf, diagonal=diagonal)


class ScaledMask(CausalParallelAttention):
    """-inf times a learned temperature: its sign decides the result."""

    def __init__(self):
        super().__init__(4, 2, mask=self.scaled)
        self.temperature = torch.nn.Parameter(torch.empty(1))

    def scaled(self, scores, future):
        return masked_with_inf(scores, future) * self.temperature


def entry_inf_times_parameter():
    return ScaledMask(), (torch.randn(3, 1, 4).requires_grad_(),)
