# Dropout of a tensor-parallel shard under a rank-dependent seed (what
# Megatron's tracker gives the model-parallel region): each rank's mask has
# no counterpart in the single-device run, which draws one mask for the whole
# tensor. Equal in distribution, not value by value: nothing is claimed.
import torch
import torch.distributed as dist
import torch.nn.functional as F


class ColumnDropout(torch.nn.Module):
    def __init__(self):
        super().__init__()
        # Its gradient goes through the masks: not related to the reference's.
        self.weight = torch.nn.Parameter(torch.empty(8 // dist.get_world_size(), 4))  # gap: random draw 'rng:dropout:cuda=10[01]/
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 0

    def forward(self, x):
        shard = F.linear(x, self.weight)
        with torch.random.fork_rng():
            torch.manual_seed(100 + dist.get_rank())
            return F.dropout(shard, 0.5)


def entry():
    return ColumnDropout(), (torch.randn(2, 4),)
