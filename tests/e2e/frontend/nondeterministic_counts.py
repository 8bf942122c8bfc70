# A count that changes from run to run, all-gathered and used as a Python
# size: a second tracing pass cannot reuse what the first one linked, so
# shardproof must not trust either pass.
import random

import torch
import torch.distributed as dist


class Pad(torch.nn.Module):
    def forward(self, x):
        count = torch.tensor([random.randint(1, 1000)])
        counts = [torch.zeros(1, dtype=torch.int64) for _ in range(dist.get_world_size())]
        dist.all_gather(counts, count)
        longest = max(int(c.item()) for c in counts)
        return x * (longest > 0)


def entry():
    return Pad(), (torch.randn(2, 2),)
