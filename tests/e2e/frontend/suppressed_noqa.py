# A known partial sum, suppressed on its line as ruff spells it (`# noqa:`,
# beside another tool's code): the run is "accepted", not proved.
import torch
import torch.distributed as dist


class Partial(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(2, 4 // dist.get_world_size()))
        self.weight.partition_dim = 1

    def forward(self, x):
        return torch.matmul(x, self.weight.t())  # noqa: E501, SP002


def entry():
    x = torch.randn(1, 4)
    return Partial(), (x.chunk(dist.get_world_size(), dim=1)[dist.get_rank()],)
