# The list forms of the collectives: each tensor goes where PyTorch sends it,
# and a list of the wrong length or shape is PyTorch's error.
import torch
import torch.distributed as dist


def _slice(x, dim=0):
    rank, world = dist.get_rank(), dist.get_world_size()
    return x.chunk(world, dim=dim)[rank]


class GatherList(torch.nn.Module):
    """all_gather into a list, concatenated: the whole batch everywhere."""

    def __init__(self, slots=None):
        super().__init__()
        self.slots = slots

    def forward(self, x):
        world = dist.get_world_size()
        parts = [torch.empty_like(x) for _ in range(self.slots or world)]
        dist.all_gather(parts, x.contiguous())
        return torch.cat(parts, dim=0)


def all_gather_list():
    return GatherList(), (_slice(torch.randn(4, 3)),)


def all_gather_list_too_short():
    return GatherList(slots=1), (_slice(torch.randn(4, 3)),)


class SwapHalves(torch.nn.Module):
    """all_to_all with lists: piece j of this rank's slice goes to rank j, so
    rank r ends with piece r of every rank's slice, in rank order (its slice
    of the columns, over the whole batch)."""

    def __init__(self, reverse=False):
        super().__init__()
        self.reverse = reverse

    def forward(self, x):
        world = dist.get_world_size()
        sends = [p.contiguous() for p in x.chunk(world, dim=1)]
        received = [torch.empty_like(p) for p in sends]
        dist.all_to_all(received, sends[::-1] if self.reverse else sends)
        return torch.cat(received, dim=0)


def all_to_all_list():
    return SwapHalves(), (_slice(torch.randn(4, 8)),)


def all_to_all_list_wrong_destinations():
    return SwapHalves(reverse=True), (_slice(torch.randn(4, 8)),)


class UnevenExchange(torch.nn.Module):
    """Rank r sends r + 1 + j rows to rank j: the list tensors differ in size."""

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        sizes = [rank + 1 + j for j in range(world)]
        sends = list(x[:sum(sizes)].split(sizes, dim=0))
        received = [torch.empty(j + 1 + rank, 3) for j in range(world)]
        dist.all_to_all(received, [s.contiguous() for s in sends])
        # Back again: every rank gets its rows returned, in order.
        back = [torch.empty(s.shape[0], 3) for s in sends]
        dist.all_to_all(back, received)
        return torch.cat(back + [x[sum(sizes):]], dim=0)


def all_to_all_uneven_round_trip():
    return UnevenExchange(), (torch.randn(24, 3),)


class ScatterThenGather(torch.nn.Module):
    """Rank 0 scatters the batch, every rank doubles its piece, rank 0
    gathers them back and broadcasts the result."""

    def __init__(self, gather_dst=0):
        super().__init__()
        self.gather_dst = gather_dst

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        piece = torch.empty(x.shape[0] // world, x.shape[1])
        dist.scatter(piece, [p.contiguous() for p in x.chunk(world)] if rank == 0
                     else None, src=0)
        piece = piece * 2
        dst = self.gather_dst
        parts = [torch.empty_like(piece) for _ in range(world)] if rank == dst else None
        dist.gather(piece, parts, dst=dst)
        out = torch.cat(parts) if rank == dst else torch.empty_like(x)
        dist.broadcast(out, src=0)
        return out


def scatter_then_gather():
    return ScatterThenGather(), (torch.randn(4, 3),)


def gather_to_the_wrong_rank():
    """Gathered on the last rank, broadcast from rank 0 (which holds only
    its own empty buffer): never proved."""
    return ScatterThenGather(gather_dst=dist.get_world_size() - 1), (torch.randn(4, 3),)


class IntoTensor(torch.nn.Module):
    def __init__(self, extra_rows=0):
        super().__init__()
        self.extra_rows = extra_rows

    def forward(self, x):
        world = dist.get_world_size()
        out = torch.empty(world * x.shape[0] + self.extra_rows, x.shape[1])
        dist.all_gather_into_tensor(out, x.contiguous())
        return out


def all_gather_into_tensor_wrong_size():
    return IntoTensor(extra_rows=1), (_slice(torch.randn(4, 3)),)


class NonContiguous(torch.nn.Module):
    def forward(self, x):
        y = x.t()  # a transposed view
        dist.all_reduce(y)
        return y


def non_contiguous_all_reduce():
    return NonContiguous(), (torch.randn(2, 3),)


def all_to_all_on_gloo():
    """gloo has no list all_to_all: PyTorch raises."""
    group = dist.new_group(list(range(dist.get_world_size())), backend="gloo")

    class OnGloo(torch.nn.Module):
        def forward(self, x):
            sends = [p.contiguous() for p in x.chunk(dist.get_world_size(), dim=1)]
            received = [torch.empty_like(p) for p in sends]
            dist.all_to_all(received, sends, group=group)
            return torch.cat(received, dim=0)
    return OnGloo(), (_slice(torch.randn(4, 8)),)


def _uneven_rows(world):
    """Rank r's rows of a batch when rank r holds r + 1 of them (an MoE
    dispatcher's per-rank token counts): (start, count) per rank."""
    starts = [sum(range(1, r + 1)) for r in range(world)]
    return [(start, r + 1) for r, start in enumerate(starts)]


class UnevenGather(torch.nn.Module):
    """Every rank reduce-scatters its (replicated) batch, divided by the
    world, into uneven pieces (rank j gets j + 1 rows, summed back to the
    batch's rows), then all-gathers the uneven pieces: the batch again,
    rows past the pieces passed through. `receive_even` makes every rank
    expect one row from each: not what the senders send."""

    def __init__(self, receive_even=False):
        super().__init__()
        self.receive_even = receive_even

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        rows = _uneven_rows(world)
        share = x / world
        inputs = [share[start:start + count].contiguous() for start, count in rows]
        mine = torch.empty(rank + 1, x.shape[1])
        dist.reduce_scatter(mine, inputs)
        parts = [torch.empty(1 if self.receive_even else count, x.shape[1])
                 for _, count in rows]
        dist.all_gather(parts, mine)
        used = sum(count for _, count in rows)
        return torch.cat(parts + [x[used:]], dim=0)


def uneven_reduce_scatter_then_all_gather():
    return UnevenGather(), (torch.randn(10, 3),)


def uneven_all_gather_wrong_sizes():
    return UnevenGather(receive_even=True), (torch.randn(10, 3),)


class UnevenWithEmptyRanks(torch.nn.Module):
    """Uneven exchanges in which a rank has no rows (one an MoE dispatcher
    routes no tokens to): rank r holds r rows of the batch, reduce-scattered
    and all-gathered as in UnevenGather (rank 0 sends an empty tensor, the
    others rows); then a reduce_scatter of nothing at all on every rank."""

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        rows = [(sum(range(r)), r) for r in range(world)]
        share = x / world
        mine = torch.empty(rank, x.shape[1])
        dist.reduce_scatter(mine, [share[start:start + count].contiguous()
                                   for start, count in rows])
        parts = [torch.empty(count, x.shape[1]) for _, count in rows]
        dist.all_gather(parts, mine)
        nothing = torch.empty(0, x.shape[1])
        dist.reduce_scatter(nothing, [x[:0].contiguous() for _ in range(world)])
        used = sum(count for _, count in rows)
        return torch.cat(parts + [nothing, x[used:]], dim=0)


def uneven_with_empty_ranks():
    return UnevenWithEmptyRanks(), (torch.randn(10, 3),)
