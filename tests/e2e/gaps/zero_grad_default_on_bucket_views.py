# Gradients are views of one flat buffer, and zero_grad() is called without
# set_to_none: PyTorch 1.x zeroes the views in place (the buffer stays
# attached), 2.x drops them (the buffer is reduced for nothing). Which one the
# user runs is not in the source, so the call must say.
import torch
import torch.distributed as dist


def entry():
    x = torch.randn(4, 3)
    model = torch.nn.Linear(3, 2)
    flat = torch.zeros(sum(p.numel() for p in model.parameters()))
    offset = 0
    for p in model.parameters():
        p.grad = flat[offset:offset + p.numel()].view_as(p)
        offset += p.numel()
    model.zero_grad()  # gap: zero_grad\(\) without set_to_none

    def finalize_grads():
        dist.all_reduce(flat)
        flat.div_(dist.get_world_size())

    return {"model": model, "inputs": (x.chunk(dist.get_world_size())[dist.get_rank()],),
            "loss": lambda out: out.mean(), "finalize_grads": finalize_grads}
