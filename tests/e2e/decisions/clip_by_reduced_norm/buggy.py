# The partial norm of each rank's partition of the gradients is not
# all-reduced: every rank clips by the norm of its own partition, so the
# replicas are scaled by different coefficients (or one clips and another
# does not) and drift apart.
import torch
import torch.distributed as dist

BATCH, HIDDEN, OUTPUTS = 4, 3, 2
MAX_NORM = 1.0


def clip_grad_norm(parameters, max_norm, all_reduce):
    grads = [p.grad for p in parameters]
    flat = torch.cat([g.reshape(-1) for g in grads])
    partition = flat.chunk(dist.get_world_size())[dist.get_rank()]
    norm_sq = (partition * partition).sum()
    total = norm_sq.clone()
    all_reduce(total)
    coeff = max_norm / (total.sqrt() + 1e-6)
    if coeff < 1.0:
        for g in grads:
            g.mul_(coeff)
    return total.sqrt()


def data_parallel(all_reduce_norm):
    model = torch.nn.Linear(HIDDEN, OUTPUTS)
    batch = torch.randn(BATCH, HIDDEN)
    world = dist.get_world_size()

    def average_gradients():
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad.div_(world)

    def sgd_step():
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-0.1)

    return {"model": model, "inputs": (batch.chunk(world)[dist.get_rank()],),
            "loss": lambda out: (out * out).sum() / out.shape[0],
            "finalize_grads": average_gradients,
            "grad_norm": lambda: clip_grad_norm(model.parameters(), MAX_NORM,
                                                all_reduce_norm),
            "step": sgd_step}


def entry():
    return data_parallel(lambda total: None)  # the partial norm stays the rank's
