# A loss scaler's overflow check under data parallelism, in the style of a
# ZeRO optimizer: each rank inspects its partition of the averaged gradients
# only, takes the largest magnitude there, and the ranks all-reduce it with
# MAX; every rank then skips the step when the largest magnitude over the
# whole gradient is past what the half-precision copy holds (LIMIT, scaled
# down to the inputs' range), as all do. The decision reads a collective's
# result, known only once the ranks are linked.
import torch
import torch.distributed as dist

BATCH, HIDDEN, OUTPUTS = 4, 3, 2
LIMIT = 3.0


def overflowed(parameters):
    flat = torch.cat([p.grad.reshape(-1) for p in parameters])
    partition = flat.chunk(dist.get_world_size())[dist.get_rank()]
    found_inf = partition.abs().amax().reshape(1)
    dist.all_reduce(found_inf, op=dist.ReduceOp.MAX)
    return found_inf.item() > LIMIT


def entry():
    model = torch.nn.Linear(HIDDEN, OUTPUTS)
    batch = torch.randn(BATCH, HIDDEN)
    world = dist.get_world_size()

    def average_gradients():
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad.div_(world)

    def step_unless_overflow():
        parameters = list(model.parameters())
        if overflowed(parameters):
            return  # skipped, as the scaler skips a step with inf in it
        with torch.no_grad():
            for p in parameters:
                p.add_(p.grad, alpha=-0.1)

    return {"model": model, "inputs": (batch.chunk(world)[dist.get_rank()],),
            "loss": lambda out: (out * out).sum() / out.shape[0],
            "finalize_grads": average_gradients, "step": step_unless_overflow}
