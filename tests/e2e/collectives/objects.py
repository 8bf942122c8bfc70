# all_gather_object / broadcast_object_list: plain Python objects, pickled
# and exchanged as PyTorch does; the results are Python values the code may
# branch on and size tensors with.
import torch
import torch.distributed as dist


class RowsFromEveryRank(torch.nn.Module):
    """Each rank holds a slice of the batch; the slices' sizes are exchanged
    as Python objects and decide how the gathered batch is put together."""

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        counts = [None] * world
        dist.all_gather_object(counts, {"rank": rank, "rows": x.shape[0]})
        if [c["rank"] for c in counts] != list(range(world)):
            raise RuntimeError("all_gather_object lost the rank order")
        whole = torch.empty(sum(c["rows"] for c in counts), x.shape[1])
        # all_gather writes into views of `whole`, cut at the exchanged sizes.
        dist.all_gather(list(whole.split([c["rows"] for c in counts])), x.contiguous())
        return whole * 2


def all_gather_object_counts():
    world, rank = dist.get_world_size(), dist.get_rank()
    return RowsFromEveryRank(), (torch.randn(8, 3).chunk(world)[rank],)


class ConfigFromRankZero(torch.nn.Module):
    """Rank 0 decides the scale; the others learn it by broadcast_object_list."""

    def forward(self, x):
        config = [{"scale": 3.0, "name": "from rank 0"}] if dist.get_rank() == 0 \
            else [None]
        dist.broadcast_object_list(config, src=0)
        return x * config[0]["scale"]


class ConfigFromLastRank(torch.nn.Module):
    """The bug: the broadcast names the last rank, which never set the scale."""

    def forward(self, x):
        config = [{"scale": 3.0}] if dist.get_rank() == 0 else [{"scale": 1.0}]
        dist.broadcast_object_list(config, src=dist.get_world_size() - 1)
        return x * config[0]["scale"]


def broadcast_object_list_config():
    return ConfigFromRankZero(), (torch.randn(2, 3),)


def broadcast_object_list_wrong_src():
    return ConfigFromLastRank(), (torch.randn(2, 3),)


class GatherTensorObjects(torch.nn.Module):
    def forward(self, x):
        gathered = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, x)
        return torch.cat(gathered)


def all_gather_object_of_a_tensor():
    return GatherTensorObjects(), (torch.randn(2, 3),)
