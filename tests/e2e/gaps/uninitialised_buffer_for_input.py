"""A rank that computes from an uninitialised buffer where the reference
computes from its input: both are the first symbolic tensor the run makes,
but an `empty` is never the reference's `randn` (leaves are matched by op
and creation order), so nothing may be proved from it."""
import torch
import torch.distributed as dist


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2  # gap: created at .*uninitialised_buffer_for_input.py:16 on one rank with no counterpart


def entry():
    if dist.get_world_size() > 1:
        x = torch.empty(4)
    else:
        x = torch.randn(4)
    return Double(), (x,)
