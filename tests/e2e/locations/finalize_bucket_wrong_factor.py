# Bug: under tensor x data parallelism (tp 2), finalize_grads flattens the
# gradients into one bucket, sums it over the data-parallel group and
# divides it by the world size where the data-parallel size belongs.
import torch
import torch.distributed as dist

from tp_layers import Block, groups


def finalize_grads(model, dp_group):
    params = [p for p in model.parameters() if p.grad is not None]
    bucket = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(bucket, group=dp_group)
    bucket.div_(dist.get_world_size())  # expect: SP005
    offset = 0
    for p in params:
        p.grad.copy_(bucket[offset:offset + p.numel()].view_as(p))
        offset += p.numel()


def entry():
    tp, dp = groups()
    dp_size, dp_rank = dist.get_world_size(dp), dist.get_rank(dp)
    batch = torch.randn(4, 4)
    model = Block(group=tp)
    return {"model": model, "inputs": (batch.chunk(dp_size)[dp_rank],),
            "loss": lambda out: out.sum() / out.shape[0],
            "finalize_grads": lambda: finalize_grads(model, dp),
            "tensor_parallel_group": tp, "data_parallel_group": dp}
