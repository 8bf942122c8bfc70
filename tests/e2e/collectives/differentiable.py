# torch.distributed.nn.functional: the collectives autograd sees, with
# PyTorch's own backward (which is not always the gradient a model needs).
import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_fn


class RowParallel(torch.nn.Module):
    """A row-parallel linear whose partial products are summed by the
    differentiable all_reduce. Its backward all-reduces the gradient too, so
    with every rank's loss on the replicated output the weight's gradient is
    world times too large (Megatron's own all-reduce passes the gradient
    through unchanged instead)."""

    def __init__(self, op=dist.ReduceOp.SUM):
        super().__init__()
        world = dist.get_world_size()
        self.weight = torch.nn.Parameter(torch.empty(2, 4 // world))
        self.weight.partition_dim = 1
        self.op = op

    def forward(self, x):
        return dist_fn.all_reduce(x @ self.weight.t(), op=self.op)


def row_parallel_all_reduce():
    rank, world = dist.get_rank(), dist.get_world_size()
    return RowParallel(), (torch.randn(3, 4).chunk(world, dim=1)[rank],)


class BroadcastFromZero(torch.nn.Module):
    """Rank 0's weight times the input, broadcast to all: the gradient of the
    broadcast is reduced to rank 0 (zero elsewhere)."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(3))

    def forward(self, x):
        return dist_fn.broadcast(x * self.weight, src=0)


def broadcast_backward():
    """Every rank's loss sums the broadcast output: rank 0's weight gets the
    gradient of all of them (world times the reference), the others none
    (zero): the weight's replicas disagree."""
    return BroadcastFromZero(), (torch.randn(3),)


class GatherFeatures(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(3))

    def forward(self, x):
        return torch.cat(dist_fn.all_gather(x * self.weight), dim=0)


def _own_rows_loss(everyone):
    return everyone.chunk(dist.get_world_size(), dim=0)[dist.get_rank()].sum()


def _allreduce_grads(model):
    return lambda: [dist.all_reduce(p.grad) for p in model.parameters()]


def all_gather_backward():
    """Each rank's loss covers its own rows: all_gather's backward
    (reduce_scatter of the gradients) gives each rank its rows' gradient,
    summed over the ranks by finalize_grads: the reference's."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = GatherFeatures()
    return {"model": model, "inputs": (torch.randn(4, 3).chunk(world)[rank],),
            "loss": _own_rows_loss, "finalize_grads": _allreduce_grads(model)}


class ScatterGather(torch.nn.Module):
    """Rank 0 scatters its weighted batch, each rank squares its piece, and
    the pieces are gathered back on rank 0 and broadcast."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(3))

    def forward(self, x):
        world = dist.get_world_size()
        piece = dist_fn.scatter(list((x * self.weight).chunk(world)), src=0)
        parts = dist_fn.gather(piece * piece, dst=0)
        return dist_fn.broadcast(torch.cat(parts), src=0)


def scatter_gather_forward():
    """The forward is the reference's (the gradients are PyTorch's
    broadcast-of-a-reduce, not the reference's: only the output is checked
    here, by a loss that does not reach the weight)."""
    return {"model": ScatterGather(), "inputs": (torch.randn(4, 3),),
            "loss": lambda out: out.detach().sum()}


class AllToAllRoundTrip(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(8))

    def forward(self, x):
        world = dist.get_world_size()
        pieces = [p.contiguous() for p in (x * self.weight).chunk(world, dim=1)]
        received = dist_fn.all_to_all([torch.empty_like(p) for p in pieces], pieces)
        mixed = torch.cat(received, dim=0) * 3
        back = dist_fn.all_to_all([torch.empty_like(p) for p in mixed.chunk(world)],
                                  [p.contiguous() for p in mixed.chunk(world)])
        return torch.cat(back, dim=1)


def all_to_all_round_trip():
    """x * w sent through an all_to_all and back: the output and the
    weight's gradient (summed over ranks' batch slices) are the reference's."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = AllToAllRoundTrip()
    return {"model": model, "inputs": (torch.randn(4, 8).chunk(world)[rank],),
            "finalize_grads": _allreduce_grads(model)}


class AllToAllOnGloo(AllToAllRoundTrip):
    """The same round trip on a gloo group, where PyTorch's differentiable
    all_to_all runs as one scatter from each rank."""

    def __init__(self):
        super().__init__()
        self.group = dist.new_group(list(range(dist.get_world_size())), backend="gloo")

    def forward(self, x):
        world = dist.get_world_size()
        pieces = [p.contiguous() for p in (x * self.weight).chunk(world, dim=1)]
        received = dist_fn.all_to_all([torch.empty_like(p) for p in pieces], pieces,
                                      group=self.group)
        mixed = torch.cat(received, dim=0) * 3
        back = dist_fn.all_to_all([torch.empty_like(p) for p in mixed.chunk(world)],
                                  [p.contiguous() for p in mixed.chunk(world)],
                                  group=self.group)
        return torch.cat(back, dim=1)


def all_to_all_round_trip_on_gloo():
    rank, world = dist.get_rank(), dist.get_world_size()
    model = AllToAllOnGloo()
    return {"model": model, "inputs": (torch.randn(4, 8).chunk(world)[rank],),
            "finalize_grads": _allreduce_grads(model)}
