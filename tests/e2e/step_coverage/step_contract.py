# The whole step is checked whoever runs it: a pipeline whose backward is the
# entry's `backward` callable (the first stage's local loss needs no
# gradient, yet its backward runs and receives its output's gradient), a
# gradient kept only in Megatron-style `main_grad`, an optimizer step the
# schedule runs inside forward, a gradient moved into a framework buffer
# where nothing checks it (never a silent pass), and a forward-only module
# (the summary says so).
import torch
import torch.distributed as dist
import torch.nn as nn


class TwoStages(nn.Module):
    """Layer r on rank r (world 2); both layers at world 1. The forward
    keeps what the backward needs and returns the loss every rank logs."""

    def __init__(self):
        super().__init__()
        world, rank = dist.get_world_size(), dist.get_rank()
        self.layers = nn.ModuleList(nn.Linear(2, 2) for _ in range(2 // world))
        self.offset = rank * len(self.layers)
        self.first, self.last = rank == 0, rank == world - 1

    def forward(self, x):
        if not self.first:
            x = torch.empty(x.shape)
            dist.recv(x, src=dist.get_rank() - 1)
            x.requires_grad_()
        self.received = x
        for layer in self.layers:
            x = torch.sigmoid(layer(x))
        self.output = x
        if not self.last:
            dist.send(x.detach(), dst=dist.get_rank() + 1)
            self.local_loss = torch.zeros(())  # needs no gradient here
        else:
            self.local_loss = (x * x).sum()
        logged = self.local_loss.detach().clone()
        if dist.get_world_size() > 1:
            dist.broadcast(logged, src=dist.get_world_size() - 1)
        return logged


def _backward_through_stages(model, scale_received=1.0):
    def backward(loss):
        if model.last:
            loss.backward()
        else:
            grad = torch.empty(model.output.shape)
            dist.recv(grad, src=dist.get_rank() + 1)
            model.output.backward(grad * scale_received)
        if not model.first:
            dist.send(model.received.grad, dst=dist.get_rank() - 1)
    return backward


def _global_name(model):
    def name(local):
        parts = local.split(".")
        if parts[0] == "layers":
            parts[1] = str(int(parts[1]) + model.offset)
        return ".".join(parts)
    return name


def _pipeline(scale_received=1.0):
    model = TwoStages()
    return {"model": model, "inputs": (torch.randn(3, 2),),
            "loss": lambda _: model.local_loss,
            "backward": _backward_through_stages(model, scale_received),
            "parameter_names": _global_name(model)}


def backward_callable_on_every_stage():
    return _pipeline()


def backward_callable_drops_half_the_gradient():
    """The first stage halves the gradient it receives."""
    return _pipeline(scale_received=0.5 if dist.get_world_size() > 1 else 1.0)


class DataParallelLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 2)

    def forward(self, x):
        rows = x.chunk(dist.get_world_size())[dist.get_rank()]
        return self.proj(rows)


def _main_grad_entry(divide):
    """Megatron-style DDP: finalize_grads moves each .grad into main_grad,
    all-reduces it and leaves .grad None, as Megatron's buffers do."""
    model = DataParallelLinear()

    def finalize():
        for p in model.parameters():
            p.main_grad = p.grad.clone()
            p.grad = None
            dist.all_reduce(p.main_grad)
            if divide:
                p.main_grad.div_(dist.get_world_size())
    return {"model": model, "inputs": (torch.randn(4, 2),),
            "loss": lambda out: out.sum() / out.shape[0],
            "finalize_grads": finalize}


def main_grad_averaged():
    return _main_grad_entry(divide=True)


def main_grad_summed():
    """A mean loss whose gradients are summed, not averaged."""
    return _main_grad_entry(divide=False)


def _custom_backward_entry(divide):
    """Megatron's custom_backward: the schedule runs the backward through
    the autograd engine directly (Variable._execution_engine.run_backward),
    then finalize_grads averages (or sums) the data-parallel gradients."""
    from torch.autograd.variable import Variable
    entry = _main_grad_entry(divide)

    def backward(loss):
        Variable._execution_engine.run_backward(
            tensors=(loss,), grad_tensors=(torch.ones_like(loss),), keep_graph=False,
            create_graph=False, inputs=tuple(), allow_unreachable=True,
            accumulate_grad=True)
    entry["backward"] = backward
    return entry


def custom_backward_averaged():
    return _custom_backward_entry(divide=True)


def custom_backward_summed():
    return _custom_backward_entry(divide=False)


def _owned_shards_entry(divide=True, claim=lambda rank, ranges: ranges):
    """A distributed optimizer's gradients: every parameter's gradient is
    flattened into one buffer, reduce-scattered, and each rank holds the
    reduced (averaged) gradient only in its shard of the buffer; main_grad
    views the buffer, and each parameter carries the flat ranges of it this
    rank owns (shardproof_grad_ranges). The rest of a rank's main_grad is
    its own partial sum, never read."""
    model = DataParallelLinear()

    def finalize():
        world, rank = dist.get_world_size(), dist.get_rank()
        params = list(model.parameters())
        buffer = torch.cat([p.grad.reshape(-1) for p in params])
        size = buffer.numel() // world
        shard = torch.empty(size)
        dist.reduce_scatter_tensor(shard, buffer)
        if divide:
            shard = shard / world
        buffer[rank * size:(rank + 1) * size] = shard
        start = 0
        for p in params:
            end = start + p.numel()
            p.main_grad = buffer[start:end].view(p.shape)
            p.grad = None
            first, last = max(start, rank * size), min(end, (rank + 1) * size)
            ranges = [(first - start, last - start)] if first < last else []
            p.shardproof_grad_ranges = claim(rank, ranges)
            start = end
    return {"model": model, "inputs": (torch.randn(4, 2),),
            "loss": lambda out: out.sum() / out.shape[0],
            "finalize_grads": finalize}


def owned_shards_averaged():
    return _owned_shards_entry()


def owned_shards_summed():
    """The shard is summed over the replicas where the loss is a mean."""
    return _owned_shards_entry(divide=False)


def owned_shards_leave_a_gap():
    """Rank 1 claims none of its shard: the elements it holds are checked by
    no rank."""
    return _owned_shards_entry(claim=lambda rank, ranges: ranges if rank == 0 else [])


def gradient_moved_out_of_sight():
    """The gradients go into a buffer of the framework's own and .grad is
    None: nothing is left to compare, which is never "proved"."""
    model = DataParallelLinear()
    buffers = {}

    def finalize():
        for name, p in model.named_parameters():
            buffers[name] = p.grad
            p.grad = None
    return {"model": model, "inputs": (torch.randn(4, 2),),
            "loss": lambda out: out.sum() / out.shape[0],
            "finalize_grads": finalize}


class StepInsideForward(nn.Module):
    """A training loop inside forward: backward, gradient averaging and an
    SGD step, returning the detached loss. The updated weights are checked."""

    def __init__(self, average):
        super().__init__()
        self.inner = DataParallelLinear()
        self.average = average

    def forward(self, x):
        out = self.inner(x)
        loss = out.sum() / out.shape[0]
        loss.backward()
        with torch.no_grad():
            for p in self.inner.parameters():
                dist.all_reduce(p.grad)
                if self.average:
                    p.grad.div_(dist.get_world_size())
                p.sub_(0.1 * p.grad)
                p.grad = None
        logged = loss.detach().clone()
        dist.all_reduce(logged)
        return logged / dist.get_world_size()


def step_inside_forward():
    return StepInsideForward(average=True), (torch.randn(4, 2),)


def step_inside_forward_gradients_summed():
    return StepInsideForward(average=False), (torch.randn(4, 2),)


class Inference(DataParallelLinear):
    def forward(self, x):
        with torch.no_grad():
            return super().forward(x)


def forward_only():
    """Inference: nothing produces a gradient."""
    return Inference(), (torch.randn(4, 2),)
