# Decisions and finiteness questions on collectives' results, which a rank
# holds as placeholders until the ranks are linked: the next tracing pass
# gives the linked result as terms over the reference's inputs (or says why
# it cannot).
import torch
import torch.distributed as dist


class ClipByReducedNorm(torch.nn.Module):
    """Each rank sums the squares of its slice; the sum is all-reduced and a
    branch decides on it."""

    def forward(self, x):
        local = x.chunk(dist.get_world_size())[dist.get_rank()]
        total = (local * local).sum().reshape(1)
        dist.all_reduce(total)
        if total.item() > 1.0:
            return x * 2
        return x * 3


class InfFromOneRank(torch.nn.Module):
    """Rank 1 sends inf: the all-reduced flag is inf on every rank, though no
    rank's own value is (the reference, alone, sends 0)."""

    def forward(self, x):
        flag = x.sum().reshape(1) * 0
        if dist.get_rank() == 1:
            flag = flag + float("inf")
        dist.all_reduce(flag)
        if torch.isinf(flag).any():
            return x * 2
        return x * 3


class UninitialisedSum(torch.nn.Module):
    """The all-reduced values are uninitialised memory: no reference input
    gives them, so no pass can give them as terms."""

    def forward(self, x):
        scratch = torch.empty(1)
        dist.all_reduce(scratch)
        if torch.isfinite(scratch).all():
            return x * 2
        return x * 3


def entry():
    return ClipByReducedNorm(), (torch.randn(4),)


def entry_inf_from_one_rank():
    return InfFromOneRank(), (torch.randn(2),)


def entry_uninitialised():
    return UninitialisedSum(), (torch.randn(2),)
