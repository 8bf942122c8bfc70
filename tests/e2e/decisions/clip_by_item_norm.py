# Gradient clipping in the style of Megatron's clip_grads.py before
# Transformer Engine: the summed squares come back to Python with .item(),
# the root and the clipping coefficient are Python arithmetic, and whether
# to clip is a Python branch on that number. Both sides of the branch are
# explored: clipped (a large gradient) and left alone.
import math

import torch
import torch.distributed as dist

HIDDEN, OUTPUTS, MAX_NORM, LR = 2, 4, 1.0, 0.1


class _CopyToModelParallelRegion(torch.autograd.Function):
    """Identity forward; the input gradient is summed over ranks."""

    @staticmethod
    def forward(ctx, input_):
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        grad = grad_output.clone()
        dist.all_reduce(grad)
        return grad


class NormedColumnParallel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_weight = torch.nn.Parameter(torch.ones(HIDDEN))
        self.weight = torch.nn.Parameter(
            torch.empty(OUTPUTS // dist.get_world_size(), HIDDEN))
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 0

    def forward(self, x):
        x = _CopyToModelParallelRegion.apply(x * self.norm_weight)
        return torch.matmul(x, self.weight.t())


def counted_once(param):
    return getattr(param, "tensor_model_parallel", False) or dist.get_rank() == 0


def get_grad_norm(parameters, counted=counted_once):
    total = torch.zeros(1)
    for p in parameters:
        if counted(p):
            total += p.grad.norm() ** 2.0
    dist.all_reduce(total)
    return total.item() ** (1.0 / 2.0)


def clip_grad_by_total_norm(parameters, total_norm):
    clip_coeff = MAX_NORM / (total_norm + 1.0e-6)
    if clip_coeff < 1.0:
        for p in parameters:
            p.grad.detach().mul_(clip_coeff)


def sgd_step(parameters):
    with torch.no_grad():
        for p in parameters:
            p.add_(p.grad, alpha=-LR)


def _entry(norm):
    model = NormedColumnParallel()
    params = list(model.parameters())

    def grad_norm():
        total_norm = norm(params)
        clip_grad_by_total_norm(params, total_norm)
        return total_norm

    return {"model": model, "inputs": (torch.randn(2, HIDDEN),),
            "loss": lambda out: (out * out).sum(),
            "grad_norm": grad_norm, "step": lambda: sgd_step(params)}


def entry():
    return _entry(get_grad_norm)


def entry_counts_duplicates():
    """BUG: the replicated norm weight's gradient is counted on every rank."""
    return _entry(lambda params: get_grad_norm(params, counted=lambda p: True))


def entry_logs_the_norm():
    """A log line formats the norm: no effect on what is computed."""
    def logged(params):
        total_norm = get_grad_norm(params)
        print(f"grad norm: {total_norm:.3f}")
        return total_norm
    return _entry(logged)


def entry_root_by_math():
    """math.sqrt reads the number as a C double: a symbolic value has none."""
    def by_math(params):
        total = torch.zeros(1)
        for p in params:
            if counted_once(p):
                total += p.grad.norm() ** 2.0
        dist.all_reduce(total)
        return math.sqrt(total.item())
    return _entry(by_math)
