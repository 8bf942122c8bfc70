# Whether a collective's result is finite is known only once the ranks are
# linked: a rank may send inf (a loss scaler's overflow) while no rank's own
# value is one. The rank stops at the question, and the next tracing pass
# gives it the linked result (a constant, or terms over the reference's
# inputs) to answer it from.
import math

import torch
import torch.distributed as dist


class InfFromOneRank(torch.nn.Module):
    """Rank 1's gradients overflowed: the all-reduced sum is inf on every
    rank, so every rank takes the overflow branch; the reference, alone,
    sends 0 and does not (real PyTorch at world 2: x * 2 on both ranks,
    x * 3 at world 1)."""

    def forward(self, x):
        found_inf = torch.zeros(1)
        if dist.get_rank() == 1:
            found_inf[0] = float("inf")
        dist.all_reduce(found_inf)
        if torch.isinf(found_inf).any():
            return x * 2
        return x * 3


class FiniteNorm(torch.nn.Module):
    """The all-reduced squares of each rank's slice are a finite real: the
    overflow checks (Megatron's isnan/isinf, DeepSpeed's comparisons with
    inf and with itself) never take the overflow side."""

    def forward(self, x):
        local = x.chunk(dist.get_world_size())[dist.get_rank()]
        total = (local * local).sum().reshape(1)
        dist.all_reduce(total)
        norm = total.item()
        if torch.isnan(total).any() or math.isinf(norm) or norm == float("inf") \
                or norm != norm:
            return x * 0
        return x * 2


class Uninitialised(torch.nn.Module):
    """The all-reduced values are uninitialised memory: no reference input
    gives them, so whether they are finite is never known."""

    def forward(self, x):
        scratch = torch.empty(1)
        dist.all_reduce(scratch)
        if torch.isfinite(scratch).all():
            return x * 2
        return x * 3


def entry():
    return InfFromOneRank(), (torch.randn(2),)


def entry_finite():
    return FiniteNorm(), (torch.randn(4),)


def entry_uninitialised():
    return Uninitialised(), (torch.randn(2),)
