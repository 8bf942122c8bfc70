# dist.reduce: dst gets the reduction; what the other ranks' buffers hold is
# unspecified (gloo leaves partial sums there), so reading one is never proved.
import torch
import torch.distributed as dist


def _share(x):
    """This rank's share of x: the shares of all ranks sum to x."""
    rank, world = dist.get_rank(), dist.get_world_size()
    return x * (rank + 1) * 2 / (world * (world + 1))


class ReduceThenBroadcast(torch.nn.Module):
    def __init__(self, op=dist.ReduceOp.SUM, group=None, group_dst=None):
        super().__init__()
        self.op, self.group, self.group_dst = op, group, group_dst

    def forward(self, x):
        total = x.clone()
        if self.group_dst is None:
            dist.reduce(total, dst=0, op=self.op)
            dist.broadcast(total, src=0)
        else:  # the root named by its rank in the group
            dist.reduce(total, op=self.op, group=self.group, group_dst=self.group_dst)
            dist.broadcast(total, group=self.group, group_src=self.group_dst)
        return total


class ReduceOnly(torch.nn.Module):
    def forward(self, x):
        total = x.clone()
        dist.reduce(total, dst=0)
        return total  # only rank 0 holds the sum


def to_dst_then_broadcast():
    return ReduceThenBroadcast(), (_share(torch.randn(3)),)


def group_dst_then_broadcast():
    """The world as a group of its own, its last rank as root."""
    group = dist.new_group(list(range(dist.get_world_size())))
    last = dist.get_world_size(group) - 1
    return ReduceThenBroadcast(group=group, group_dst=last), (_share(torch.randn(3)),)


def non_dst_read():
    return ReduceOnly(), (_share(torch.randn(3)),)


def max_instead_of_sum():
    """The shares differ per rank: their max is not their sum."""
    return ReduceThenBroadcast(op=dist.ReduceOp.MAX), (_share(torch.randn(3)),)


def dst_outside_group():
    """A global dst that is not in the group: PyTorch raises."""
    world = dist.get_world_size()
    groups = [dist.new_group([r]) for r in range(world)]
    mine = groups[dist.get_rank()]

    class ReduceInOwnGroup(torch.nn.Module):
        def forward(self, x):
            total = x.clone()
            dist.reduce(total, dst=world - 1 - dist.get_rank(), group=mine)
            return total
    return ReduceInOwnGroup(), (torch.randn(3),)


class ReduceToSelf(torch.nn.Module):
    def forward(self, x):
        total = x.clone()
        dist.reduce(total, dst=dist.get_rank())  # the ranks disagree on the root
        dist.broadcast(total, src=0)
        return total


def each_rank_its_own_dst():
    """A root the ranks do not agree on: a hang on hardware."""
    return ReduceToSelf(), (_share(torch.randn(3)),)
