# The op of all_reduce / reduce_scatter: each modelled one reduces as
# PyTorch does; the others stop the proof.
import torch
import torch.distributed as dist


def _slice(x):
    rank, world = dist.get_rank(), dist.get_world_size()
    return x.chunk(world, dim=0)[rank]


class LocalThenReduce(torch.nn.Module):
    """local(x slice), all-reduced with `op`: the reference's global(x)."""

    def __init__(self, local, op):
        super().__init__()
        self.local, self.op = local, op

    def forward(self, x):
        out = self.local(x).contiguous()
        dist.all_reduce(out, op=self.op)
        return out


def max_of_maxima():
    return LocalThenReduce(lambda x: x.amax(dim=0), dist.ReduceOp.MAX), \
        (_slice(torch.randn(4, 3)),)


def min_of_minima():
    return LocalThenReduce(lambda x: x.amin(dim=0), dist.ReduceOp.MIN), \
        (_slice(torch.randn(4, 3)),)


def _product_of_rows(x):
    out = x[0]
    for row in x[1:]:
        out = out * row
    return out


def product_of_products():
    return LocalThenReduce(_product_of_rows, dist.ReduceOp.PRODUCT), \
        (_slice(torch.randn(4, 3)),)


def avg_of_means():
    return LocalThenReduce(lambda x: x.mean(dim=0), dist.ReduceOp.AVG), \
        (_slice(torch.randn(4, 3)),)


def sum_where_max_is_needed():
    return LocalThenReduce(lambda x: x.amax(dim=0), dist.ReduceOp.SUM), \
        (_slice(torch.randn(4, 3)),)


def premul_sum_of_sums():
    """NCCL's PREMUL_SUM with 1/world: the mean of the local sums... times
    world, so the whole sum over the batch divided by the world size."""
    op = dist._make_nccl_premul_sum(1.0 / dist.get_world_size())
    return LocalThenReduce(lambda x: x.sum(dim=0) * dist.get_world_size(), op), \
        (_slice(torch.randn(4, 3)),)


def bitwise_and():
    return LocalThenReduce(lambda x: x.sum(dim=0), dist.ReduceOp.BAND), \
        (_slice(torch.randn(4, 3)),)


def op_given_as_a_string():
    return LocalThenReduce(lambda x: x.sum(dim=0), "sum"), (_slice(torch.randn(4, 3)),)


def avg_on_gloo():
    """gloo has no AVG: PyTorch raises."""
    group = dist.new_group(list(range(dist.get_world_size())), backend="gloo")

    class AvgOnGloo(torch.nn.Module):
        def forward(self, x):
            out = x.mean(dim=0).contiguous()
            dist.all_reduce(out, op=dist.ReduceOp.AVG, group=group)
            return out
    return AvgOnGloo(), (_slice(torch.randn(4, 3)),)


class ReduceScatterMax(torch.nn.Module):
    def forward(self, x):
        local = x.amax(dim=0).contiguous()
        out = torch.empty(8 // dist.get_world_size())
        dist.reduce_scatter_tensor(out, local, op=dist.ReduceOp.MAX)
        return out


def reduce_scatter_max():
    """The output is this rank's chunk of the reference's amax."""
    return ReduceScatterMax(), (_slice(torch.randn(4, 8)),)


class SquaresOnTheFirstRank(torch.nn.Module):
    """Rank 0 sums the squares of its slice into a 0-dim tensor; the others
    start from zeros of `others` elements (DeepSpeed's clip_grad_norm_ on a
    rank whose gradients it leaves out: FloatTensor([0.0])), all-reduced.
    A 0-dim tensor and a [1] one are one element each: NCCL and gloo count
    elements, so they sum as one."""

    def __init__(self, others):
        super().__init__()
        self.others = others

    def forward(self, x):
        if dist.get_rank() == 0:
            total = (x * x).sum()
        else:
            total = torch.zeros(self.others)
        dist.all_reduce(total)
        return total.reshape(-1)[:1]


def scalar_and_one_element():
    return SquaresOnTheFirstRank(1), (torch.randn(3),)


def scalar_and_two_elements():
    return SquaresOnTheFirstRank(2), (torch.randn(3),)
