# Pipeline schedules written as picotron and nanotron write them: the
# schedule runs every micro-batch's forward and backward itself, inside the
# model's forward, passing activations and their gradients between stages
# with point-to-point messages, and returns a loss that needs no gradient
# (detached, broadcast from the last stage). Whatever calls backward, every
# gradient the step leaves must be checked against the single-device run:
# the correct schedule is proved on its gradients, each buggy one refuted.
#
# Stage r holds layer r of a two-layer model on rank r (world 2); at world 1
# one stage holds both layers. The batch is split into two micro-batches.
import torch
import torch.distributed as dist
import torch.nn as nn

MICRO_BATCHES = 2


class Stage(nn.Module):
    """This rank's layers, and where its neighbours are."""

    def __init__(self):
        super().__init__()
        world, rank = dist.get_world_size(), dist.get_rank()
        self.layers = nn.ModuleList(nn.Linear(2, 2) for _ in range(2 // world))
        self.offset = rank * len(self.layers)
        self.first, self.last = rank == 0, rank == world - 1
        self.previous, self.next = rank - 1, rank + 1

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


def _micro_batch_loss(out):
    return (out * out).sum() / MICRO_BATCHES


class AllForwardAllBackward(nn.Module):
    """GPipe: every micro-batch forward, then every micro-batch backward.
    `pop` picks which stored micro-batch a backward step takes: the
    oldest, as the next stage sends its gradients."""

    def __init__(self, stage, pop=lambda stored: stored.pop(0), after_backward=None):
        super().__init__()
        self.stage, self.pop, self.after_backward = stage, pop, after_backward

    def forward(self, batch):
        stage = self.stage
        stored, total = [], torch.zeros(())
        for micro_batch in batch.chunk(MICRO_BATCHES):
            if stage.first:
                inp = micro_batch
            else:
                inp = torch.empty(micro_batch.shape)
                dist.recv(inp, src=stage.previous)
                inp.requires_grad_()
            out = stage(inp)
            if not stage.last:
                dist.send(out.detach(), dst=stage.next)
            stored.append((inp, out))
        for _ in range(MICRO_BATCHES):
            inp, out = self.pop(stored)
            if stage.last:
                loss = _micro_batch_loss(out)
                total = total + loss.detach()
                loss.backward()
            else:
                grad = torch.empty(out.shape)
                dist.recv(grad, src=stage.next)
                out.backward(grad)
            if not stage.first:
                dist.send(inp.grad, dst=stage.previous)
        if self.after_backward is not None:
            self.after_backward(stage)
        if dist.get_world_size() > 1:
            dist.broadcast(total, src=dist.get_world_size() - 1)
        return total


def _global_name(stage):
    """A stage's layer i is the reference's layer offset + i."""
    def name(local):
        parts = local.split(".")
        if parts[:2] == ["stage", "layers"] and len(parts) > 2:
            parts[2] = str(int(parts[2]) + stage.offset)
        return ".".join(parts)
    return name


def _entry(schedule, finalize_grads=None):
    """`finalize_grads(model)`, when given, runs after backward."""
    stage = Stage()
    model = schedule(stage)
    return {
        "model": model,
        "inputs": (torch.randn(4, 2),),
        "parameter_names": _global_name(stage),
        "finalize_grads": finalize_grads and (lambda: finalize_grads(model)),
    }


def schedule_inside_forward():
    return _entry(AllForwardAllBackward)


def newest_first_on_one_stage():
    """Stage 0 pops the newest micro-batch while the last stage sends the
    oldest's gradient first: activations paired with another micro-batch's
    output gradient."""
    def pop(stored):
        return stored.pop(-1) if dist.get_rank() == 0 else stored.pop(0)
    return _entry(lambda stage: AllForwardAllBackward(stage, pop=pop))


def gradients_tripled_inside_forward():
    """The schedule rescales the gradients it made (a loss-scale factor
    never undone) on every stage but the reference's."""
    def triple(stage):
        if dist.get_world_size() > 1:
            for p in stage.parameters():
                p.grad.mul_(3)
    return _entry(lambda stage: AllForwardAllBackward(stage, after_backward=triple))


def finalize_averages_over_stages():
    """finalize_grads averages over the pipeline's stages as if they were
    data-parallel replicas: every gradient divided by the world size."""
    def finalize(model):
        for p in model.parameters():
            p.grad.div_(dist.get_world_size())
    return _entry(AllForwardAllBackward, finalize_grads=finalize)
