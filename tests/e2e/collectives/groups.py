# Process groups: ranks outside a group get GroupMember.NON_GROUP_MEMBER, on
# which collectives do nothing; group ranks and global ranks are told apart.
import torch
import torch.distributed as dist


def _pairs():
    """Groups of two consecutive ranks (the world at world 2, the one rank
    of the reference run)."""
    world = dist.get_world_size()
    groups = [dist.new_group([r, r + 1][:world - r]) for r in range(0, world, 2)]
    return groups[dist.get_rank() // 2], groups


def _share(x):
    """This rank's share of x in its pair: the pair's shares sum to x."""
    if dist.get_world_size() == 1:
        return x
    return x * (0.25 if dist.get_rank() % 2 == 0 else 0.75)


class PairSum(torch.nn.Module):
    """Sums over this rank's pair; then the pair's first rank (a group rank
    turned global) broadcasts to the pair. Every other pair's group is a
    non-member here, and its collectives do nothing."""

    def __init__(self):
        super().__init__()
        self.mine, self.groups = _pairs()

    def forward(self, x):
        total = x.clone()
        for g in self.groups:
            dist.all_reduce(total, group=g)  # a no-op on the other pairs' groups
        if any(dist.get_world_size(g) != -1 for g in self.groups if g is not self.mine):
            raise RuntimeError("get_world_size of a group this rank is not in is -1")
        root = dist.get_global_rank(self.mine, 0)
        if dist.get_group_rank(self.mine, root) != 0:
            raise RuntimeError("get_group_rank is not the inverse of get_global_rank")
        dist.broadcast(total, src=root, group=self.mine)
        return total


def pair_sums():
    return PairSum(), (_share(torch.randn(3)),)


class SubgroupSum(torch.nn.Module):
    def __init__(self, size):
        super().__init__()
        self.group, _ = dist.new_subgroups(group_size=size)

    def forward(self, x):
        total = x.clone()
        dist.all_reduce(total, group=self.group)
        return total


def new_subgroups_of_two():
    return SubgroupSum(min(2, dist.get_world_size())), (_share(torch.randn(3)),)


def new_subgroups_of_the_world():
    """One subgroup of the whole world: the pairs' shares then sum to 2x at
    world 4 (a group of the wrong size); at world 2 it is the pair."""
    return SubgroupSum(dist.get_world_size()), (_share(torch.randn(3)),)


def destroyed_group():
    group = dist.new_group(list(range(dist.get_world_size())))
    dist.destroy_process_group(group)

    class UsesIt(torch.nn.Module):
        def forward(self, x):
            out = x.clone()
            dist.all_reduce(out, group=group)
            return out
    return UsesIt(), (torch.randn(3),)
