"""A ZeRO-style optimizer set-up inside the entry: every weight is copied to
the CPU, its `.data` parked on a 1-element tensor, a flat buffer built from
the copies and each weight re-pointed at its view of it. The weights keep
their own symbolic values (so their gradients are checked as any other's);
`entry_initialised` re-points one at fresh zeros of its shape instead (an
initialisation: the weight keeps its own values), and `entry_left_parked`
ends the build with one still parked (a weight of another shape than the
reference's). `entry_sharded_step` is Megatron's DDP and distributed
optimizer in small: every weight re-pointed at its view of a flat parameter
buffer of zeros and copied in, each rank stepping its own shard of the
buffer and all-gathering it (`entry_sharded_step_ungathered` forgets the
all-gather: every rank keeps the others' shards unstepped)."""
import torch
import torch.distributed as dist


def _flatten_into_buffer(params, leave_parked=False):
    copies = []
    for p in params:
        p.cpu_data = p.data.cpu()
        p.data = torch.empty(1)
        copies.append(p.cpu_data)
    flat = torch.cat([c.reshape(-1) for c in copies])
    offset = 0
    for i, p in enumerate(params):
        n = p.cpu_data.numel()
        if not (leave_parked and i == 0):
            p.data = flat[offset:offset + n].view(p.cpu_data.shape)
        offset += n
        del p.cpu_data
    return flat


class Reduced(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.linear(x)


def _entry(leave_parked=False, initialise=False):
    model = Reduced()
    _flatten_into_buffer(list(model.parameters()), leave_parked)
    if initialise:
        model.linear.weight.data = torch.zeros(2, 2)
    x = torch.randn(4, 2)
    local = x.chunk(dist.get_world_size())[dist.get_rank()]

    def finalize_grads():
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()

    def loss(out):
        return (out * out).sum() / out.shape[0]

    return {"model": model, "inputs": (local,), "loss": loss, "finalize_grads": finalize_grads}


def entry():
    return _entry()


def entry_initialised():
    return _entry(initialise=True)


def entry_left_parked():
    return _entry(leave_parked=True)


class RowParallelWithoutReduce(torch.nn.Module):
    """Each rank's share of the input columns times its weight shard; the
    partial sums are never all-reduced (the bug)."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(2, 4))

    def forward(self, x):
        world, rank = dist.get_world_size(), dist.get_rank()
        return x.chunk(world, 1)[rank] @ self.weight.t()


def entry_resized_unreduced():
    model = RowParallelWithoutReduce()
    model.weight.data = torch.zeros(2, 4 // dist.get_world_size())
    model.weight.partition_dim = 1
    return model, (torch.randn(3, 4),)


def _sharded_step_entry(gather):
    model = Reduced()
    params = list(model.parameters())
    world, rank = dist.get_world_size(), dist.get_rank()
    total = sum(p.numel() for p in params)
    buffer = torch.zeros(total + (-total) % world)
    offset = 0
    for p in params:
        old = p.data
        p.data = buffer[offset:offset + p.numel()].view(old.shape)
        p.data.copy_(old)
        offset += p.numel()
    x = torch.randn(4, 2)
    local = x.chunk(world)[rank]

    def finalize_grads():
        for p in params:
            dist.all_reduce(p.grad)
            p.grad /= world

    def step():
        grads = torch.cat([p.grad.reshape(-1) for p in params])
        grads = torch.cat([grads, torch.zeros(buffer.numel() - total)])
        shard = buffer.numel() // world
        mine = slice(rank * shard, (rank + 1) * shard)
        with torch.no_grad():
            buffer[mine] -= 0.1 * grads[mine]
            if gather:
                dist.all_gather_into_tensor(buffer, buffer[mine].clone())

    def loss(out):
        return (out * out).sum() / out.shape[0]

    return {"model": model, "inputs": (local,), "loss": loss,
            "finalize_grads": finalize_grads, "step": step}


def entry_sharded_step():
    return _sharded_step_entry(gather=True)


def entry_sharded_step_ungathered():
    return _sharded_step_entry(gather=False)
