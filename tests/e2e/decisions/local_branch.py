# Each rank decides from its own shard of the input where the single-device
# run decides from the whole of it: on the paths where a shard's sum and the
# whole sum differ in sign, the rank computes the other branch.
import torch
import torch.distributed as dist


class ShardedGate(torch.nn.Module):
    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        local = x.chunk(world)[rank]
        if local.sum() > 0:  # BUG: the whole sum decides in the reference
            local = local * 2
        else:
            local = -local
        gathered = [torch.empty_like(local) for _ in range(world)]
        dist.all_gather(gathered, local)
        return torch.cat(gathered)


def entry():
    return ShardedGate(), (torch.randn(4).requires_grad_(),)
