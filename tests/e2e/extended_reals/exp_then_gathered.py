# An unshifted exp in bf16 whose result is cast back and gathered across the
# tensor-parallel ranks: one hazard, said at the exp, not at every cast, copy
# and gather its values travel through.
import torch
import torch.distributed as dist


def gather_last(x):
    world = dist.get_world_size()
    if world == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts, dim=-1)


class ExpThenGather(torch.nn.Module):
    def forward(self, x):
        local = x.chunk(dist.get_world_size(), dim=-1)[dist.get_rank()]
        y = torch.exp(local.float()).to(x.dtype)
        return gather_last(y)


def entry():
    x = torch.randn(4, 8).to(torch.bfloat16)
    return {"model": ExpThenGather(), "inputs": (x,)}
