# Reductions in a narrower format than the values they reduce, by default
# (no --reduce-dtype): fp32 gradients cast to fp16 and pre-divided by the
# world size before the all-reduce lose precision the single-device run
# keeps (a warning: the values are right over the reals); reduced in fp32
# they are proved without one.
import torch
import torch.distributed as dist
import torch.nn as nn


class DataParallelLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 2)

    def forward(self, x):
        return self.proj(x.chunk(dist.get_world_size())[dist.get_rank()])


def _entry(communication_dtype):
    model = DataParallelLinear()

    def finalize():
        for p in model.parameters():
            bucket = p.grad.to(communication_dtype)
            bucket.div_(dist.get_world_size())
            dist.all_reduce(bucket)
            p.grad.copy_(bucket)
    return {"model": model, "inputs": (torch.randn(4, 2),),
            "loss": lambda out: out.sum() / out.shape[0], "finalize_grads": finalize}


def pre_divided_in_fp16():
    return _entry(torch.float16)


def pre_divided_in_fp32():
    return _entry(torch.float32)
