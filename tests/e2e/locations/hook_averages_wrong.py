# Bug: under tensor x data parallelism (tp 2), the data-parallel hook on each
# parameter sums its gradient over the data-parallel group and divides it by
# the world size where the data-parallel size belongs.
import torch
import torch.distributed as dist

from tp_layers import Block, groups


def averaging_hook(dp_group):
    def hook(grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=dp_group)
        return grad / dist.get_world_size()  # expect: SP005
    return hook


def entry():
    tp, dp = groups()
    dp_size, dp_rank = dist.get_world_size(dp), dist.get_rank(dp)
    batch = torch.randn(4, 4)
    model = Block(group=tp)
    for p in model.parameters():
        p.register_hook(averaging_hook(dp))
    return {"model": model, "inputs": (batch.chunk(dp_size)[dp_rank],),
            "loss": lambda out: out.sum() / out.shape[0],
            "tensor_parallel_group": tp, "data_parallel_group": dp}
